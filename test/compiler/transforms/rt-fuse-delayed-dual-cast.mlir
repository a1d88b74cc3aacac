// RUN: gpt-opt %s -split-input-file -rt-fuse-delayed-dual-cast | FileCheck %s

// A weight's forward cast and, in the backward after other GEMMs, its
// transposed cast for grad_input, both reading one amax history (two views
// of it): one state_quantize_fp8_dual where the first was, its
// transposed copy's buffer moved up, both statistics slots kept; the
// grad_input GEMM reads the first cast's scale, the second scale's buffer
// and the second views go.
rt.arena @params params size = 12288
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @weight
// CHECK: %[[WT:.*]] = rt.alloc : memref<64x48xf8E4M3FN>
// CHECK-NEXT: rt.kernel "state_quantize_fp8_dual" ins(%[[W:.*]], %[[H:.*]] : memref<48x64xf32>, memref<16xf32>) outs(%[[Q:.*]], %[[WT]], %[[S:.*]] : memref<48x64xf8E4M3FN>, memref<64x48xf8E4M3FN>, memref<f32>) consts [48, 64, 0, 1, 7, 1, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0] {rt.fp8_stat = [{gemm = "forward", layer = "fc", operand = "b", slot = 1 : i64}, {gemm = "grad_input", layer = "fc", operand = "b", slot = 7 : i64}]}
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[Q]], %{{.*}}, %[[S]] :
// CHECK: rt.kernel "gemm" ins(
// CHECK-NOT: state_quantize_fp8_transposed
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[WT]], %{{.*}}, %[[S]] :
// CHECK-NOT: rt.view @fp8_state
// CHECK: return
func.func @weight() {
  %w = rt.view @params[0] : memref<48x64xf32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %q = rt.alloc : memref<48x64xf8E4M3FN>
  %s = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8" ins(%w, %h : memref<48x64xf32>, memref<16xf32>) outs(%q, %s : memref<48x64xf8E4M3FN>, memref<f32>) consts [3072, 0, 1, 1, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "b", slot = 1 : i64}}
  %x = rt.alloc : memref<32x64xf8E4M3FN>
  %y = rt.alloc : memref<32x48xbf16>
  rt.kernel "gemm" ins(%x, %q, %s, %s : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  %a = rt.alloc : memref<32x48xf8E4M3FN>
  %b = rt.alloc : memref<16x48xf8E4M3FN>
  %z = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%a, %b, %s, %s : memref<32x48xf8E4M3FN>, memref<16x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%z : memref<32x16xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 48, m = 32, n = 16, trans_b = 1}]
  %w2 = rt.view @params[0] : memref<48x64xf32>
  %h2 = rt.view @fp8_state[0] : memref<16xf32>
  %wt = rt.alloc : memref<64x48xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%w2, %h2 : memref<48x64xf32>, memref<16xf32>) outs(%wt, %s2 : memref<64x48xf8E4M3FN>, memref<f32>) consts [48, 64, 0, 7, 1, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0] {rt.fp8_stat = {gemm = "grad_input", layer = "fc", operand = "b", slot = 7 : i64}}
  %dy = rt.alloc : memref<32x48xf8E5M2>
  %dx = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%dy, %wt, %s, %s2 : memref<32x48xf8E5M2>, memref<64x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dx : memref<32x64xbf16>) consts [{a_dtype = 5, b_dtype = 4, c_dtype = 2, k = 48, m = 32, n = 64, trans_b = 1}]
  return
}

// -----

// An output gradient's grad_input cast and, through a reshape, its
// grad_weight cast with the bias gradient, from one history: one
// state_quantize_fp8_dual_bgrad (the bias gradient's dtype after the
// dtypes), the GEMM between reading the first copy.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @gradient
// CHECK: %[[DB:.*]] = rt.alloc : memref<64xf32>
// CHECK-NEXT: rt.kernel "state_quantize_fp8_dual_bgrad" ins(%{{.*}}, %{{.*}} : memref<2x16x64xbf16>, memref<16xf32>) outs(%[[Q:.*]], %[[QT:.*]], %[[DB]], %[[S:.*]] : memref<2x16x64xf8E5M2>, memref<64x32xf8E5M2>, memref<64xf32>, memref<f32>) consts [32, 64, 1, -1, -1, 2, 257, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
// CHECK: rt.kernel "gemm" ins(%[[Q]],
// CHECK-NOT: state_quantize_fp8_transposed_bgrad
// CHECK: rt.kernel "gemm" ins(%[[QT]], %{{.*}}, %[[S]], {{.*}} consts [{{{.*}}c_dtype = 257 : i64{{.*}}}]
func.func @gradient() {
  %g = rt.alloc : memref<2x16x64xbf16>
  %h = rt.view @fp8_state[64] : memref<16xf32>
  %q = rt.alloc : memref<2x16x64xf8E5M2>
  %s = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8" ins(%g, %h : memref<2x16x64xbf16>, memref<16xf32>) outs(%q, %s : memref<2x16x64xf8E5M2>, memref<f32>) consts [2048, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %dx = rt.alloc : memref<2x16x48xbf16>
  rt.kernel "gemm" ins(%q, %w, %s, %s : memref<2x16x64xf8E5M2>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dx : memref<2x16x48xbf16>) consts [{a_dtype = 5, b_dtype = 4, batch = 2, c_dtype = 2, k = 64, m = 16, n = 48, stride_a = 1024, stride_c = 768, trans_b = 1}]
  %flat = rt.reshape %g : memref<2x16x64xbf16> -> memref<32x64xbf16>
  %h2 = rt.view @fp8_state[64] : memref<16xf32>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  %db = rt.alloc : memref<64xf32>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed_bgrad" ins(%flat, %h2 : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %db, %s2 : memref<64x32xf8E5M2>, memref<64xf32>, memref<f32>) consts [32, 64, 1, -1, 2, 257, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %x = rt.alloc : memref<48x32xf8E4M3FN>
  %dw = rt.alloc : memref<64x48xf32>
  rt.kernel "gemm" ins(%qt, %x, %s2, %s : memref<64x32xf8E5M2>, memref<48x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dw : memref<64x48xf32>) consts [{a_dtype = 5, b_dtype = 4, c_dtype = 257, k = 32, m = 64, n = 48, trans_b = 1}]
  return
}

// -----

// Left as two casts, each case on its own buffers: histories at other
// offsets (two states), the history written in between (an update not
// yet batched to the end of the step), another recipe (most_recent), and
// an activation read again after its transposed cast with a GEMM that
// does not read the first copy in between (attention's output: both FP8
// copies would live through the step besides it).
rt.arena @fp8_state fp8_state size = 512
// CHECK-LABEL: func.func @apart
// CHECK-NOT: state_quantize_fp8_dual
// CHECK-COUNT-4: rt.kernel "state_quantize_fp8_transposed"
// CHECK-NOT: state_quantize_fp8_dual
func.func @apart() {
  %g = rt.alloc : memref<32x64xbf16>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %q = rt.alloc : memref<32x64xf8E5M2>
  %s = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8" ins(%g, %h : memref<32x64xbf16>, memref<16xf32>) outs(%q, %s : memref<32x64xf8E5M2>, memref<f32>) consts [2048, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %h2 = rt.view @fp8_state[64] : memref<16xf32>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%g, %h2 : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E5M2>, memref<f32>) consts [32, 64, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]

  %g3 = rt.alloc : memref<32x64xbf16>
  %h3 = rt.view @fp8_state[128] : memref<16xf32>
  %q3 = rt.alloc : memref<32x64xf8E5M2>
  %s3 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8" ins(%g3, %h3 : memref<32x64xbf16>, memref<16xf32>) outs(%q3, %s3 : memref<32x64xf8E5M2>, memref<f32>) consts [2048, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %m = rt.alloc : memref<f32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%h3 : memref<16xf32>) consts [16]
  %qt3 = rt.alloc : memref<64x32xf8E5M2>
  %s4 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%g3, %h3 : memref<32x64xbf16>, memref<16xf32>) outs(%qt3, %s4 : memref<64x32xf8E5M2>, memref<f32>) consts [32, 64, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]

  %g5 = rt.alloc : memref<32x64xbf16>
  %h5 = rt.view @fp8_state[192] : memref<16xf32>
  %q5 = rt.alloc : memref<32x64xf8E5M2>
  %s5 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8" ins(%g5, %h5 : memref<32x64xbf16>, memref<16xf32>) outs(%q5, %s5 : memref<32x64xf8E5M2>, memref<f32>) consts [2048, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %qt5 = rt.alloc : memref<64x32xf8E5M2>
  %s6 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%g5, %h5 : memref<32x64xbf16>, memref<16xf32>) outs(%qt5, %s6 : memref<64x32xf8E5M2>, memref<f32>) consts [32, 64, 1, -1, 2, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 1]

  %x = rt.alloc : memref<32x64xbf16>
  %h7 = rt.view @fp8_state[256] : memref<16xf32>
  %qx = rt.alloc : memref<32x64xf8E4M3FN>
  %s7 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8" ins(%x, %h7 : memref<32x64xbf16>, memref<16xf32>) outs(%qx, %s7 : memref<32x64xf8E4M3FN>, memref<f32>) consts [2048, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %a = rt.alloc : memref<32x48xf8E4M3FN>
  %b = rt.alloc : memref<16x48xf8E4M3FN>
  %z = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%a, %b, %s7, %s7 : memref<32x48xf8E4M3FN>, memref<16x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%z : memref<32x16xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 48, m = 32, n = 16, trans_b = 1}]
  %qxt = rt.alloc : memref<64x32xf8E4M3FN>
  %s8 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%x, %h7 : memref<32x64xbf16>, memref<16xf32>) outs(%qxt, %s8 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %again = rt.alloc : memref<32x64xbf16>
  rt.kernel "gelu_fwd" ins(%x : memref<32x64xbf16>) outs(%again : memref<32x64xbf16>) consts [2048, 2, 2]
  return
}
