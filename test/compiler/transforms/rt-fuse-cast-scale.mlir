// RUN: gpt-opt %s -split-input-file -rt-fuse-cast-scale | FileCheck %s

// Current scaling's scale, first read by the cast: one scale_quantize_fp8
// where the cast was, reading the amax and writing the scale after the
// codes (the GEMM after it reads the scale as before), with the cast's
// statistics slot and the scale's constants after the cast's.
// CHECK-LABEL: func.func @cast
// CHECK-NOT: scale_from_amax
// CHECK: rt.kernel "scale_quantize_fp8" ins(%[[X:.*]], %[[M:.*]] : memref<32x64xbf16>, memref<f32>) outs(%[[Q:.*]], %[[S:.*]] : memref<32x64xf8E4M3FN>, memref<f32>) consts [2048, 0, 3, 2, 4.480000e+02, 0, 0, 9.9999999999999998E-13] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "a", slot = 3 : i64}}
// CHECK: rt.kernel "gemm" ins(%[[Q]], %{{.*}}, %[[S]], %{{.*}} : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>)
func.func @cast() {
  %x = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<32x64xbf16>) outs(%m : memref<f32>) consts [2048, 2]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%q : memref<32x64xf8E4M3FN>) consts [2048, 0, 3, 2] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "a", slot = 3 : i64}}
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %sw = rt.alloc : memref<f32>
  %y = rt.alloc : memref<32x48xbf16>
  rt.kernel "gemm" ins(%q, %w, %s, %sw : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  return
}

// -----

// An output gradient's dual cast with its bias gradient (E5M2, margin 1,
// power-of-two scales): the scale joins as the last output.
// CHECK-LABEL: func.func @dual_bgrad
// CHECK-NOT: scale_from_amax
// CHECK: rt.kernel "scale_quantize_fp8_dual_bgrad" ins(%[[G:.*]], %[[M:.*]] : memref<32x64xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %[[S:.*]] : memref<32x64xf8E5M2>, memref<64x32xf8E5M2>, memref<64xf32>, memref<f32>) consts [32, 64, 1, 4, 6, 2, 257, 5.734400e+04, 1, 1, 9.9999999999999998E-13] {rt.fp8_stat = [{gemm = "grad_input", layer = "fc", operand = "a", slot = 4 : i64}, {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}]}
func.func @dual_bgrad() {
  %g = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%g : memref<32x64xbf16>) outs(%m : memref<f32>) consts [2048, 2]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [5.734400e+04, 1, 1, 9.9999999999999998E-13]
  %q = rt.alloc : memref<32x64xf8E5M2>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  %db = rt.alloc : memref<64xf32>
  rt.kernel "quantize_fp8_dual_bgrad" ins(%g, %s : memref<32x64xbf16>, memref<f32>) outs(%q, %qt, %db : memref<32x64xf8E5M2>, memref<64x32xf8E5M2>, memref<64xf32>) consts [32, 64, 1, 4, 6, 2, 257] {rt.fp8_stat = [{gemm = "grad_input", layer = "fc", operand = "a", slot = 4 : i64}, {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}]}
  return
}

// -----

// The plain dual cast folds too.
// CHECK-LABEL: func.func @dual
// CHECK: rt.kernel "scale_quantize_fp8_dual" ins(%{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xf8E5M2>, memref<64x32xf8E5M2>, memref<f32>) consts [32, 64, 1, -1, -1, 2, 5.734400e+04, 0, 0, 9.9999999999999998E-13]
func.func @dual() {
  %g = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [5.734400e+04, 0, 0, 9.9999999999999998E-13]
  %q = rt.alloc : memref<32x64xf8E5M2>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_dual" ins(%g, %s : memref<32x64xbf16>, memref<f32>) outs(%q, %qt : memref<32x64xf8E5M2>, memref<64x32xf8E5M2>) consts [32, 64, 1, -1, -1, 2]
  return
}

// -----

// Left apart, each case on its own buffers: the scale read by a GEMM
// before any cast; the amax written between the scale and the cast; the
// first reader a transposed cast (no scale_ form); the scale read as the
// cast's x. (A cast whose constants are not gptrt_quantize_fp8's no longer
// gets this far: the rt.kernel verifier refuses it.)
// CHECK-LABEL: func.func @apart
// CHECK-NOT: scale_quantize
// CHECK-COUNT-4: rt.kernel "scale_from_amax"
// CHECK-NOT: scale_quantize
func.func @apart() {
  %x = rt.alloc : memref<32x64xbf16>
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %y = rt.alloc : memref<32x48xbf16>

  %m1 = rt.alloc : memref<f32>
  %s1 = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m1 : memref<f32>) outs(%s1 : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %q0 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "gemm" ins(%q0, %w, %s1, %s1 : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  %q1 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s1 : memref<32x64xbf16>, memref<f32>) outs(%q1 : memref<32x64xf8E4M3FN>) consts [2048, 0, -1, 2]

  %m2 = rt.alloc : memref<f32>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m2 : memref<f32>) outs(%s2 : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  rt.kernel "amax" ins(%x : memref<32x64xbf16>) outs(%m2 : memref<f32>) consts [2048, 2]
  %q2 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s2 : memref<32x64xbf16>, memref<f32>) outs(%q2 : memref<32x64xf8E4M3FN>) consts [2048, 0, -1, 2]

  %m3 = rt.alloc : memref<f32>
  %s3 = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m3 : memref<f32>) outs(%s3 : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %q3 = rt.alloc : memref<64x32xf8E4M3FN>
  rt.kernel "quantize_fp8_transposed" ins(%x, %s3 : memref<32x64xbf16>, memref<f32>) outs(%q3 : memref<64x32xf8E4M3FN>) consts [32, 64, 0, -1, 2]

  %m4 = rt.alloc : memref<f32>
  %s4 = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m4 : memref<f32>) outs(%s4 : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %q4 = rt.alloc : memref<f8E4M3FN>
  rt.kernel "quantize_fp8" ins(%s4, %s4 : memref<f32>, memref<f32>) outs(%q4 : memref<f8E4M3FN>) consts [1, 0, -1, 1]

  return
}

// -----

// Delayed scaling: the scale made from a state's amax history folds into
// the weight's cast the same way (state_ forms, the state's constants
// after the cast's); the update recording the weight's amax in that
// history, between the two, moves after the cast, which still makes the
// scale from the history before it.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @delayed
// CHECK-NOT: fp8_state_scale
// CHECK: rt.kernel "state_quantize_fp8" ins(%[[W:.*]], %[[H:.*]] : memref<48x64xf32>, memref<16xf32>) outs(%{{.*}}, %{{.*}} : memref<48x64xf8E4M3FN>, memref<f32>) consts [3072, 0, 1, 1, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
// CHECK-NEXT: rt.kernel "fp8_state_update" ins(%[[WM:.*]] : memref<f32>) outs(%{{.*}} : memref<16xf32>) consts [16]
// CHECK: rt.kernel "state_quantize_fp8_transposed_bgrad" ins(%{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<16xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<64x32xf8E5M2>, memref<64xf32>, memref<f32>) consts [32, 64, 1, 6, 2, 257, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
func.func @delayed() {
  %w = rt.alloc : memref<48x64xf32>
  %wm = rt.alloc : memref<f32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %h2 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%wm : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  %q = rt.alloc : memref<48x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%w, %s : memref<48x64xf32>, memref<f32>) outs(%q : memref<48x64xf8E4M3FN>) consts [3072, 0, 1, 1]

  %g = rt.alloc : memref<32x64xbf16>
  %hg = rt.view @fp8_state[64] : memref<16xf32>
  %sg = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%hg : memref<16xf32>) outs(%sg : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %qt = rt.alloc : memref<64x32xf8E5M2>
  %db = rt.alloc : memref<64xf32>
  rt.kernel "quantize_fp8_transposed_bgrad" ins(%g, %sg : memref<32x64xbf16>, memref<f32>) outs(%qt, %db : memref<64x32xf8E5M2>, memref<64xf32>) consts [32, 64, 1, 6, 2, 257]
  return
}

// -----

// Delayed scaling left apart: a producer's fused cast (no state_ form);
// the history read by another kernel before the cast (whose own scale is
// read by a kernel other than a cast); an update between whose
// amax changes before the cast (it cannot move after the cast).
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @delayed_apart
// CHECK-NOT: state_quantize
// CHECK-COUNT-4: rt.kernel "fp8_state_scale"
// CHECK-NOT: state_quantize
func.func @delayed_apart() {
  %x = rt.alloc : memref<32x64xbf16>
  %h1 = rt.view @fp8_state[0] : memref<16xf32>
  %s1 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h1 : memref<16xf32>) outs(%s1 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  %q1 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s1 : memref<32x64xbf16>, memref<f32>) outs(%y, %m, %q1 : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]

  %h2 = rt.view @fp8_state[64] : memref<16xf32>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h2 : memref<16xf32>) outs(%s2 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %h2b = rt.view @fp8_state[64] : memref<16xf32>
  %other = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h2b : memref<16xf32>) outs(%other : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 1]
  %q2 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s2 : memref<32x64xbf16>, memref<f32>) outs(%q2 : memref<32x64xf8E4M3FN>) consts [2048, 0, -1, 2]
  %twice = rt.alloc : memref<f32>
  rt.kernel "scale" ins(%other : memref<f32>) outs(%twice : memref<f32>) consts [1, 2.0]

  %h3 = rt.view @fp8_state[128] : memref<16xf32>
  %s3 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h3 : memref<16xf32>) outs(%s3 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %m3 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_update" ins(%m3 : memref<f32>) outs(%h3 : memref<16xf32>) consts [16]
  rt.kernel "fill" outs(%m3 : memref<f32>) consts [1, 0.0]
  %q3 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s3 : memref<32x64xbf16>, memref<f32>) outs(%q3 : memref<32x64xf8E4M3FN>) consts [2048, 0, -1, 2]
  return
}

// -----

// Rowwise scaling along columns (a grad_weight operand): row_scales folds
// into the transposed cast, which makes a scale for each of x's columns
// and stores them after the codes for the GEMM; row_scales' count is the
// cast's column count and is not repeated. A scale count that is not the
// cast's (128 scales for 256 columns) stays apart.
// CHECK-LABEL: func.func @rowwise_columns
// CHECK-NOT: "row_scales"
// CHECK: rt.kernel "scale_quantize_rows_transposed" ins(%[[X:.*]], %[[M:.*]] : memref<256x128xbf16>, memref<128xf32>) outs(%[[Q:.*]], %[[S:.*]] : memref<128x256xf8E4M3FN>, memref<128xf32>) consts [256, 128, 1, 0, 7, 2, 4.480000e+02, 0, 1, 9.9999999999999998E-13] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "b", slot = 7 : i64}}
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[Q]], %{{.*}}, %[[S]] : memref<64x256xf8E5M2>, memref<128x256xf8E4M3FN>, memref<64xf32>, memref<128xf32>) {{.*}} consts [{a_dtype = 5 : i64, a_scaling = 1 : i64, b_dtype = 4 : i64, b_scaling = 1 : i64, {{.*}}}]
// CHECK: rt.kernel "row_scales" ins(%{{.*}} : memref<128xf32>) outs(%[[S2:.*]] : memref<128xf32>)
// CHECK: rt.kernel "quantize_rows_transposed" ins(%{{.*}}, %[[S2]] : memref<128x256xbf16>, memref<128xf32>)
func.func @rowwise_columns() {
  %x = rt.alloc : memref<256x128xbf16>
  %m = rt.alloc : memref<128xf32>
  rt.kernel "amax_rows" ins(%x : memref<256x128xbf16>) outs(%m : memref<128xf32>) consts [256, 128, 1, 2]
  %s = rt.alloc : memref<128xf32>
  rt.kernel "row_scales" ins(%m : memref<128xf32>) outs(%s : memref<128xf32>) consts [128, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
  %q = rt.alloc : memref<128x256xf8E4M3FN>
  rt.kernel "quantize_rows_transposed" ins(%x, %s : memref<256x128xbf16>, memref<128xf32>) outs(%q : memref<128x256xf8E4M3FN>) consts [256, 128, 1, 0, 7, 2] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "b", slot = 7 : i64}}
  %a = rt.alloc : memref<64x256xf8E5M2>
  %sa = rt.alloc : memref<64xf32>
  %dw = rt.alloc : memref<64x128xf32>
  rt.kernel "gemm" ins(%a, %q, %sa, %s : memref<64x256xf8E5M2>, memref<128x256xf8E4M3FN>, memref<64xf32>, memref<128xf32>) outs(%dw : memref<64x128xf32>) consts [{a_dtype = 5, a_scaling = 1, b_dtype = 4, b_scaling = 1, k = 256, m = 64, n = 128, trans_b = 1}]
  %y = rt.alloc : memref<128x256xbf16>
  %m2 = rt.alloc : memref<128xf32>
  %s2 = rt.alloc : memref<128xf32>
  rt.kernel "row_scales" ins(%m2 : memref<128xf32>) outs(%s2 : memref<128xf32>) consts [128, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
  %q2 = rt.alloc : memref<256x128xf8E4M3FN>
  rt.kernel "quantize_rows_transposed" ins(%y, %s2 : memref<128x256xbf16>, memref<128xf32>) outs(%q2 : memref<256x128xf8E4M3FN>) consts [128, 256, 1, 0, -1, 2]
  return
}

// -----

// The same cast with the bias gradient (rt-fuse-dual-cast's _bgrad form):
// the scales after the codes and the bias gradient.
// CHECK-LABEL: func.func @rowwise_columns_bias_gradient
// CHECK-NOT: "row_scales"
// CHECK: rt.kernel "scale_quantize_rows_transposed_bgrad" ins(%{{.*}}, %{{.*}} : memref<256x128xbf16>, memref<128xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<128x256xf8E5M2>, memref<128xf32>, memref<128xf32>) consts [256, 128, 1, 1, 9, 2, 257, 5.734400e+04, 0, 1, 9.9999999999999998E-13] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 9 : i64}}
func.func @rowwise_columns_bias_gradient() {
  %x = rt.alloc : memref<256x128xbf16>
  %m = rt.alloc : memref<128xf32>
  rt.kernel "amax_rows" ins(%x : memref<256x128xbf16>) outs(%m : memref<128xf32>) consts [256, 128, 1, 2]
  %s = rt.alloc : memref<128xf32>
  rt.kernel "row_scales" ins(%m : memref<128xf32>) outs(%s : memref<128xf32>) consts [128, 5.734400e+04, 0, 1, 9.9999999999999998E-13]
  %q = rt.alloc : memref<128x256xf8E5M2>
  %db = rt.alloc : memref<128xf32>
  rt.kernel "quantize_rows_transposed_bgrad" ins(%x, %s : memref<256x128xbf16>, memref<128xf32>) outs(%q, %db : memref<128x256xf8E5M2>, memref<128xf32>) consts [256, 128, 1, 1, 9, 2, 257] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 9 : i64}}
  return
}
