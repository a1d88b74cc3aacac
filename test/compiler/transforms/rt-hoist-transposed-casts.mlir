// RUN: gpt-opt %s -split-input-file -rt-hoist-transposed-casts | FileCheck %s

// A forward activation (a GELU's output) whose row-major FP8 copy its
// producer makes, and which nothing but its transposed cast reads after
// that (in the backward, after other GEMMs): the cast moves to just after
// the producer, with the reshape, history view and outputs it uses, so
// the activation dies there.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @activation
// CHECK: rt.kernel "gelu_fwd" ins(%{{.*}}, %{{.*}} : memref<2x16x64xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x16x64xbf16>, memref<f32>, memref<2x16x64xf8E4M3FN>)
// CHECK-NEXT: rt.kernel "state_quantize_fp8_transposed" ins(%{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<16xf32>) outs(%[[QT:.*]], %{{.*}} : memref<64x32xf8E4M3FN>, memref<f32>)
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<2x16x64xf8E4M3FN>
// CHECK: rt.kernel "gemm" ins(%[[QT]],
func.func @activation() {
  %pre = rt.alloc : memref<2x16x64xbf16>
  %s = rt.alloc : memref<f32>
  %x = rt.alloc : memref<2x16x64xbf16>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<2x16x64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%pre, %s : memref<2x16x64xbf16>, memref<f32>) outs(%x, %m, %q : memref<2x16x64xbf16>, memref<f32>, memref<2x16x64xf8E4M3FN>) consts [2048, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %y = rt.alloc : memref<2x16x48xbf16>
  rt.kernel "gemm" ins(%q, %w, %s, %s : memref<2x16x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<2x16x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, batch = 2, c_dtype = 2, fast_accum = 1, k = 64, m = 16, n = 48, stride_a = 1024, stride_c = 768, trans_b = 1}]
  %flat = rt.reshape %x : memref<2x16x64xbf16> -> memref<32x64xbf16>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %st = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%flat, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %st : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %dy = rt.alloc : memref<48x32xf8E5M2>
  %dw = rt.alloc : memref<48x64xf32>
  rt.kernel "gemm" ins(%qt, %dy, %st, %s : memref<64x32xf8E4M3FN>, memref<48x32xf8E5M2>, memref<f32>, memref<f32>) outs(%dw : memref<48x64xf32>) consts [{a_dtype = 4, b_dtype = 5, k = 32, m = 64, n = 48, trans_b = 1}]
  return
}

// -----

// Left in place, each case on its own buffers: an activation read again
// after its transposed cast (attention's output: it stays alive anyway),
// one whose amax history is written between (an update not batched to
// the end of the step), and one whose scale is made between (current
// scaling's scale_from_amax).
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @stays
// CHECK: rt.kernel "gelu_fwd"
// CHECK: rt.kernel "gelu_fwd"
// CHECK: rt.kernel "gelu_fwd"
// CHECK: rt.kernel "fill"
// CHECK: rt.kernel "state_quantize_fp8_transposed"
// CHECK: rt.kernel "gelu_fwd"
// CHECK: rt.kernel "fp8_state_update"
// CHECK: rt.kernel "state_quantize_fp8_transposed"
// CHECK: rt.kernel "scale_from_amax"
// CHECK: rt.kernel "quantize_fp8_transposed"
func.func @stays() {
  %pre = rt.alloc : memref<32x64xbf16>
  %x1 = rt.alloc : memref<32x64xbf16>
  %x2 = rt.alloc : memref<32x64xbf16>
  %x3 = rt.alloc : memref<32x64xbf16>
  rt.kernel "gelu_fwd" ins(%pre : memref<32x64xbf16>) outs(%x1 : memref<32x64xbf16>) consts [2048, 2, 2]
  rt.kernel "gelu_fwd" ins(%pre : memref<32x64xbf16>) outs(%x2 : memref<32x64xbf16>) consts [2048, 2, 2]
  rt.kernel "gelu_fwd" ins(%pre : memref<32x64xbf16>) outs(%x3 : memref<32x64xbf16>) consts [2048, 2, 2]
  %other = rt.alloc : memref<4xf32>
  rt.kernel "fill" outs(%other : memref<4xf32>) consts [4, 0.0]
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %qt1 = rt.alloc : memref<64x32xf8E4M3FN>
  %s1 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%x1, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt1, %s1 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %again = rt.alloc : memref<32x64xbf16>
  rt.kernel "gelu_fwd" ins(%x1 : memref<32x64xbf16>) outs(%again : memref<32x64xbf16>) consts [2048, 2, 2]
  %m = rt.alloc : memref<f32>
  %h2 = rt.view @fp8_state[64] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  %qt2 = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%x2, %h2 : memref<32x64xbf16>, memref<16xf32>) outs(%qt2, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %s3 = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s3 : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %qt3 = rt.alloc : memref<64x32xf8E4M3FN>
  rt.kernel "quantize_fp8_transposed" ins(%x3, %s3 : memref<32x64xbf16>, memref<f32>) outs(%qt3 : memref<64x32xf8E4M3FN>) consts [32, 64, 0, -1, 2]
  return
}
