// RUN: gpt-opt %s -split-input-file -rt-fuse-dual-cast | FileCheck %s

// An output gradient cast for grad_input and, through a 2-D reshape,
// transposed for grad_weight with the same scale: one kernel where the
// first cast was, writing both copies (the second's buffer moves up), each
// keeping its statistics slot. The grad_input GEMM between reads the first
// copy.
// CHECK-LABEL: func.func @dual
// CHECK: %[[QT:.*]] = rt.alloc : memref<64x32xf8E5M2>
// CHECK-NEXT: rt.kernel "quantize_fp8_dual" ins(%[[G:.*]], %[[S:.*]] : memref<2x16x64xbf16>, memref<f32>) outs(%[[Q:.*]], %[[QT]] : memref<2x16x64xf8E5M2>, memref<64x32xf8E5M2>) consts [32, 64, 1, 4, 6, 2] {rt.fp8_stat = [{gemm = "grad_input", layer = "fc", operand = "a", slot = 4 : i64}, {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}]}
// CHECK: rt.kernel "gemm" ins(%[[Q]]
// CHECK-NOT: rt.reshape
// CHECK-NOT: quantize_fp8_transposed
// CHECK: rt.kernel "gemm" ins(%[[QT]]
func.func @dual() {
  %g = rt.alloc : memref<2x16x64xbf16>
  %s = rt.alloc : memref<f32>
  %q = rt.alloc : memref<2x16x64xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g, %s : memref<2x16x64xbf16>, memref<f32>) outs(%q : memref<2x16x64xf8E5M2>) consts [2048, 1, 4, 2] {rt.fp8_stat = {gemm = "grad_input", layer = "fc", operand = "a", slot = 4 : i64}}
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %sw = rt.alloc : memref<f32>
  %dx = rt.alloc : memref<2x16x48xbf16>
  rt.kernel "gemm" ins(%q, %w, %s, %sw : memref<2x16x64xf8E5M2>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dx : memref<2x16x48xbf16>) consts [{a_dtype = 5, b_dtype = 4, batch = 2, c_dtype = 2, k = 64, m = 16, n = 48, stride_a = 1024, stride_c = 768, trans_b = 1}]
  %flat = rt.reshape %g : memref<2x16x64xbf16> -> memref<32x64xbf16>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_transposed" ins(%flat, %s : memref<32x64xbf16>, memref<f32>) outs(%qt : memref<64x32xf8E5M2>) consts [32, 64, 1, 6, 2] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}}
  %x = rt.alloc : memref<48x32xf8E4M3FN>
  %dw = rt.alloc : memref<64x48xf32>
  rt.kernel "gemm" ins(%qt, %x, %s, %sw : memref<64x32xf8E5M2>, memref<48x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dw : memref<64x48xf32>) consts [{a_dtype = 5, b_dtype = 4, k = 32, m = 64, n = 48, trans_b = 1}]
  return
}

// -----

// Left as two casts, each case on its own buffers: another scale (delayed
// scaling's per-GEMM states), the gradient written in between, the scale
// written in between, and a forward activation whose transposed cast comes
// after other GEMMs and which is read again after it (as attention's
// output is by attention's backward: its FP8 copy would live through the
// GEMMs besides it).
// CHECK-LABEL: func.func @apart
// CHECK-NOT: quantize_fp8_dual
func.func @apart() {
  %g = rt.alloc : memref<32x64xbf16>
  %s = rt.alloc : memref<f32>
  %s2 = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g, %s : memref<32x64xbf16>, memref<f32>) outs(%q : memref<32x64xf8E5M2>) consts [2048, 1, -1, 2]
  %qt = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_transposed" ins(%g, %s2 : memref<32x64xbf16>, memref<f32>) outs(%qt : memref<64x32xf8E5M2>) consts [32, 64, 1, -1, 2]

  %g2 = rt.alloc : memref<32x64xbf16>
  %q2 = rt.alloc : memref<32x64xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g2, %s : memref<32x64xbf16>, memref<f32>) outs(%q2 : memref<32x64xf8E5M2>) consts [2048, 1, -1, 2]
  %flat = rt.reshape %g2 : memref<32x64xbf16> -> memref<2048xbf16>
  %flat_f32 = rt.alloc : memref<2048xf32>
  rt.kernel "convert" ins(%flat_f32 : memref<2048xf32>) outs(%flat : memref<2048xbf16>) consts [2048, 1, 2]
  %qt2 = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_transposed" ins(%g2, %s : memref<32x64xbf16>, memref<f32>) outs(%qt2 : memref<64x32xf8E5M2>) consts [32, 64, 1, -1, 2]

  %g3 = rt.alloc : memref<32x64xbf16>
  %s3 = rt.alloc : memref<f32>
  %q3 = rt.alloc : memref<32x64xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g3, %s3 : memref<32x64xbf16>, memref<f32>) outs(%q3 : memref<32x64xf8E5M2>) consts [2048, 1, -1, 2]
  rt.kernel "fill" outs(%s3 : memref<f32>) consts [1, 2.0]
  %qt3 = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_transposed" ins(%g3, %s3 : memref<32x64xbf16>, memref<f32>) outs(%qt3 : memref<64x32xf8E5M2>) consts [32, 64, 1, -1, 2]

  %x = rt.alloc : memref<32x64xbf16>
  %qx = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%qx : memref<32x64xf8E4M3FN>) consts [2048, 0, -1, 2]
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %y = rt.alloc : memref<32x48xbf16>
  rt.kernel "gemm" ins(%qx, %w, %s, %s : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  %q4 = rt.alloc : memref<32x48xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%y, %s : memref<32x48xbf16>, memref<f32>) outs(%q4 : memref<32x48xf8E4M3FN>) consts [1536, 0, -1, 2]
  %w2 = rt.alloc : memref<16x48xf8E4M3FN>
  %z = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%q4, %w2, %s, %s : memref<32x48xf8E4M3FN>, memref<16x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%z : memref<32x16xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 48, m = 32, n = 16, trans_b = 1}]
  %qxt = rt.alloc : memref<64x32xf8E4M3FN>
  rt.kernel "quantize_fp8_transposed" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%qxt : memref<64x32xf8E4M3FN>) consts [32, 64, 0, -1, 2]
  %again = rt.alloc : memref<32x64xbf16>
  rt.kernel "gelu_fwd" ins(%x : memref<32x64xbf16>) outs(%again : memref<32x64xbf16>) consts [2048, 2, 2]
  return
}

// -----

// A forward activation that nothing but its transposed cast (in the
// backward, after other GEMMs) reads after its forward cast: both copies
// are made in the forward, the transposed one saved for grad_weight in
// place of the activation.
// CHECK-LABEL: func.func @saved_activation
// CHECK: %[[QXT:.*]] = rt.alloc : memref<64x32xf8E4M3FN>
// CHECK-NEXT: rt.kernel "quantize_fp8_dual" ins(%{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<f32>) outs(%[[QX:.*]], %[[QXT]] : memref<32x64xf8E4M3FN>, memref<64x32xf8E4M3FN>) consts [32, 64, 0, -1, -1, 2]
// CHECK: rt.kernel "gemm" ins(%[[QX]],
// CHECK-NOT: quantize_fp8_transposed
// CHECK: rt.kernel "gemm" ins(%[[QXT]],
func.func @saved_activation() {
  %s = rt.alloc : memref<f32>
  %x = rt.alloc : memref<32x64xbf16>
  %qx = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%qx : memref<32x64xf8E4M3FN>) consts [2048, 0, -1, 2]
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %y = rt.alloc : memref<32x48xbf16>
  rt.kernel "gemm" ins(%qx, %w, %s, %s : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  %q4 = rt.alloc : memref<32x48xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%y, %s : memref<32x48xbf16>, memref<f32>) outs(%q4 : memref<32x48xf8E4M3FN>) consts [1536, 0, -1, 2]
  %w2 = rt.alloc : memref<16x48xf8E4M3FN>
  %z = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%q4, %w2, %s, %s : memref<32x48xf8E4M3FN>, memref<16x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%z : memref<32x16xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 48, m = 32, n = 16, trans_b = 1}]
  %qxt = rt.alloc : memref<64x32xf8E4M3FN>
  rt.kernel "quantize_fp8_transposed" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%qxt : memref<64x32xf8E4M3FN>) consts [32, 64, 0, -1, 2]
  %dy = rt.alloc : memref<48x32xf8E5M2>
  %dw = rt.alloc : memref<48x64xbf16>
  rt.kernel "gemm" ins(%qxt, %dy, %s, %s : memref<64x32xf8E4M3FN>, memref<48x32xf8E5M2>, memref<f32>, memref<f32>) outs(%dw : memref<48x64xbf16>) consts [{a_dtype = 4, b_dtype = 5, c_dtype = 2, fast_accum = 1, k = 32, m = 64, n = 48, trans_b = 1}]
  return
}

// -----

// The bias gradient of the same GEMM (reduce_rows of the whole output
// gradient, through a reshape) joins the dual cast: its buffer moves up,
// the statistics stay those of the two FP8 copies. A second gradient whose
// reduce_rows sums only part of it, and a third written before its
// reduce_rows, keep reduce_rows apart.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: %[[DB:.*]] = rt.alloc : memref<64xbf16>
// CHECK-NEXT: rt.kernel "quantize_fp8_dual_bgrad" ins(%{{.*}}, %{{.*}} : memref<2x16x64xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}}, %[[DB]] : memref<2x16x64xf8E5M2>, memref<64x32xf8E5M2>, memref<64xbf16>) consts [32, 64, 1, 4, 6, 2, 2] {rt.fp8_stat = [{gemm = "grad_input", layer = "fc", operand = "a", slot = 4 : i64}, {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}]}
// CHECK-NOT: rt.kernel "reduce_rows" ins(%[[DB]]
// CHECK: rt.kernel "accumulate" ins(%[[DB]]
// CHECK: rt.kernel "quantize_fp8_dual" ins
// CHECK: rt.kernel "reduce_rows"
// CHECK: rt.kernel "quantize_fp8_dual" ins
// CHECK: rt.kernel "convert"
// CHECK: rt.kernel "reduce_rows"
// CHECK-NOT: quantize_fp8_dual_bgrad
func.func @bias_gradient() {
  %g = rt.alloc : memref<2x16x64xbf16>
  %s = rt.alloc : memref<f32>
  %q = rt.alloc : memref<2x16x64xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g, %s : memref<2x16x64xbf16>, memref<f32>) outs(%q : memref<2x16x64xf8E5M2>) consts [2048, 1, 4, 2] {rt.fp8_stat = {gemm = "grad_input", layer = "fc", operand = "a", slot = 4 : i64}}
  %flat = rt.reshape %g : memref<2x16x64xbf16> -> memref<32x64xbf16>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_transposed" ins(%flat, %s : memref<32x64xbf16>, memref<f32>) outs(%qt : memref<64x32xf8E5M2>) consts [32, 64, 1, 6, 2] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}}
  %flat2 = rt.reshape %g : memref<2x16x64xbf16> -> memref<32x64xbf16>
  %db = rt.alloc : memref<64xbf16>
  rt.kernel "reduce_rows" ins(%flat2 : memref<32x64xbf16>) outs(%db : memref<64xbf16>) consts [32, 64, 2, 2]
  %acc = rt.alloc : memref<64xf32>
  rt.kernel "accumulate" ins(%db : memref<64xbf16>) outs(%acc : memref<64xf32>) consts [64, 2]

  %g2 = rt.alloc : memref<32x64xbf16>
  %q2 = rt.alloc : memref<32x64xf8E5M2>
  %qt2 = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g2, %s : memref<32x64xbf16>, memref<f32>) outs(%q2 : memref<32x64xf8E5M2>) consts [2048, 1, -1, 2]
  rt.kernel "quantize_fp8_transposed" ins(%g2, %s : memref<32x64xbf16>, memref<f32>) outs(%qt2 : memref<64x32xf8E5M2>) consts [32, 64, 1, -1, 2]
  %db2 = rt.alloc : memref<64xbf16>
  rt.kernel "reduce_rows" ins(%g2 : memref<32x64xbf16>) outs(%db2 : memref<64xbf16>) consts [16, 64, 2, 2]

  %g3 = rt.alloc : memref<32x64xbf16>
  %q3 = rt.alloc : memref<32x64xf8E5M2>
  %qt3 = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8" ins(%g3, %s : memref<32x64xbf16>, memref<f32>) outs(%q3 : memref<32x64xf8E5M2>) consts [2048, 1, -1, 2]
  rt.kernel "quantize_fp8_transposed" ins(%g3, %s : memref<32x64xbf16>, memref<f32>) outs(%qt3 : memref<64x32xf8E5M2>) consts [32, 64, 1, -1, 2]
  %g3_f32 = rt.alloc : memref<2048xf32>
  rt.kernel "convert" ins(%g3_f32 : memref<2048xf32>) outs(%g3 : memref<32x64xbf16>) consts [2048, 1, 2]
  %db3 = rt.alloc : memref<64xbf16>
  rt.kernel "reduce_rows" ins(%g3 : memref<32x64xbf16>) outs(%db3 : memref<64xbf16>) consts [32, 64, 2, 2]
  return
}

// -----

// Delayed scaling: the transposed cast stays alone (its own scale), and
// the bias gradient joins it; the grad_weight GEMM between reads its copy.
// CHECK-LABEL: func.func @transposed_bias_gradient
// CHECK: %[[DB:.*]] = rt.alloc : memref<64xf32>
// CHECK-NEXT: rt.kernel "quantize_fp8_transposed_bgrad" ins(%{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<f32>) outs(%[[QT:.*]], %[[DB]] : memref<64x32xf8E5M2>, memref<64xf32>) consts [32, 64, 1, 6, 2, 1] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}}
// CHECK: rt.kernel "gemm" ins(%[[QT]]
// CHECK-NOT: rt.kernel "reduce_rows"
func.func @transposed_bias_gradient() {
  %g = rt.alloc : memref<32x64xbf16>
  %s = rt.alloc : memref<f32>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_fp8_transposed" ins(%g, %s : memref<32x64xbf16>, memref<f32>) outs(%qt : memref<64x32xf8E5M2>) consts [32, 64, 1, 6, 2] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 6 : i64}}
  %x = rt.alloc : memref<48x32xf8E4M3FN>
  %sx = rt.alloc : memref<f32>
  %dw = rt.alloc : memref<64x48xf32>
  rt.kernel "gemm" ins(%qt, %x, %s, %sx : memref<64x32xf8E5M2>, memref<48x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dw : memref<64x48xf32>) consts [{a_dtype = 5, b_dtype = 4, k = 32, m = 64, n = 48, trans_b = 1}]
  %db = rt.alloc : memref<64xf32>
  rt.kernel "reduce_rows" ins(%g : memref<32x64xbf16>) outs(%db : memref<64xf32>) consts [32, 64, 2, 1]
  return
}

// -----

// Rowwise scaling: the grad_weight operand's transposed cast along columns
// (a scale per column) takes the bias gradient the same way; one whose
// reduce_rows sums another width, or whose gradient is rewritten first,
// keeps its reduce_rows.
// CHECK-LABEL: func.func @rowwise_transposed_bias_gradient
// CHECK: rt.alloc : memref<64x32xf8E5M2>
// CHECK-NEXT: %[[DB:.*]] = rt.alloc : memref<64xf32>
// CHECK-NEXT: rt.kernel "quantize_rows_transposed_bgrad" ins(%{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<64xf32>) outs(%[[QT:.*]], %[[DB]] : memref<64x32xf8E5M2>, memref<64xf32>) consts [32, 64, 1, 1, 7, 2, 1] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 7 : i64}}
// CHECK: rt.kernel "gemm" ins(%[[QT]], {{.*}} consts [{{{.*}}a_scaling = 1 : i64{{.*}}b_scaling = 1 : i64{{.*}}}]
// CHECK: rt.kernel "quantize_rows_transposed" ins
// CHECK: rt.kernel "reduce_rows" ins(%{{.*}} : memref<16x128xbf16>)
// CHECK: rt.kernel "quantize_rows_transposed" ins
// CHECK-NEXT: rt.alloc : memref<{{[0-9]+}}xf32>
// CHECK-NEXT: rt.kernel "convert"
// CHECK: rt.kernel "reduce_rows" ins(%{{.*}} : memref<32x64xbf16>)
func.func @rowwise_transposed_bias_gradient() {
  %g = rt.alloc : memref<32x64xbf16>
  %s = rt.alloc : memref<64xf32>
  %qt = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_rows_transposed" ins(%g, %s : memref<32x64xbf16>, memref<64xf32>) outs(%qt : memref<64x32xf8E5M2>) consts [32, 64, 1, 1, 7, 2] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc", operand = "a", slot = 7 : i64}}
  %x = rt.alloc : memref<48x32xf8E4M3FN>
  %sx = rt.alloc : memref<48xf32>
  %dw = rt.alloc : memref<64x48xf32>
  rt.kernel "gemm" ins(%qt, %x, %s, %sx : memref<64x32xf8E5M2>, memref<48x32xf8E4M3FN>, memref<64xf32>, memref<48xf32>) outs(%dw : memref<64x48xf32>) consts [{a_dtype = 5, a_scaling = 1, b_dtype = 4, b_scaling = 1, k = 32, m = 64, n = 48, trans_b = 1}]
  %db = rt.alloc : memref<64xf32>
  rt.kernel "reduce_rows" ins(%g : memref<32x64xbf16>) outs(%db : memref<64xf32>) consts [32, 64, 2, 1]

  %g2 = rt.alloc : memref<32x64xbf16>
  %qt2 = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_rows_transposed" ins(%g2, %s : memref<32x64xbf16>, memref<64xf32>) outs(%qt2 : memref<64x32xf8E5M2>) consts [32, 64, 1, 1, -1, 2]
  %g2wide = rt.reshape %g2 : memref<32x64xbf16> -> memref<16x128xbf16>
  %db2 = rt.alloc : memref<128xf32>
  rt.kernel "reduce_rows" ins(%g2wide : memref<16x128xbf16>) outs(%db2 : memref<128xf32>) consts [16, 128, 2, 1]

  %g3 = rt.alloc : memref<32x64xbf16>
  %qt3 = rt.alloc : memref<64x32xf8E5M2>
  rt.kernel "quantize_rows_transposed" ins(%g3, %s : memref<32x64xbf16>, memref<64xf32>) outs(%qt3 : memref<64x32xf8E5M2>) consts [32, 64, 1, 1, -1, 2]
  %g3_f32 = rt.alloc : memref<2048xf32>
  rt.kernel "convert" ins(%g3_f32 : memref<2048xf32>) outs(%g3 : memref<32x64xbf16>) consts [2048, 1, 2]
  %db3 = rt.alloc : memref<64xf32>
  rt.kernel "reduce_rows" ins(%g3 : memref<32x64xbf16>) outs(%db3 : memref<64xf32>) consts [32, 64, 2, 1]
  return
}

// -----

// A parameter that nothing in the entry point writes, cast for the forward
// and (after other GEMMs) transposed for grad_input with one scale: both
// copies where the first cast was, the transposed one held in place of a
// second read of the f32 weight.
rt.arena @params params size = 12288
// CHECK-LABEL: func.func @weight
// CHECK: rt.kernel "quantize_fp8_dual" ins(%{{.*}}, %{{.*}} : memref<48x64xf32>, memref<f32>) outs(%[[Q:.*]], %[[WT:.*]] : memref<48x64xf8E4M3FN>, memref<64x48xf8E4M3FN>) consts [48, 64, 0, -1, -1, 1]
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[Q]],
// CHECK-NOT: quantize_fp8_transposed
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[WT]],
func.func @weight() {
  %s = rt.alloc : memref<f32>
  %w = rt.view @params[0] : memref<48x64xf32>
  %q = rt.alloc : memref<48x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%w, %s : memref<48x64xf32>, memref<f32>) outs(%q : memref<48x64xf8E4M3FN>) consts [3072, 0, -1, 1]
  %x = rt.alloc : memref<32x64xf8E4M3FN>
  %y = rt.alloc : memref<32x48xbf16>
  rt.kernel "gemm" ins(%x, %q, %s, %s : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  %a = rt.alloc : memref<32x48xf8E4M3FN>
  %b = rt.alloc : memref<16x48xf8E4M3FN>
  %z = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%a, %b, %s, %s : memref<32x48xf8E4M3FN>, memref<16x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%z : memref<32x16xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 48, m = 32, n = 16, trans_b = 1}]
  %wt = rt.alloc : memref<64x48xf8E4M3FN>
  rt.kernel "quantize_fp8_transposed" ins(%w, %s : memref<48x64xf32>, memref<f32>) outs(%wt : memref<64x48xf8E4M3FN>) consts [48, 64, 0, -1, 1]
  %dy = rt.alloc : memref<32x48xf8E5M2>
  %dx = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%dy, %wt, %s, %s : memref<32x48xf8E5M2>, memref<64x48xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dx : memref<32x64xbf16>) consts [{a_dtype = 5, b_dtype = 4, c_dtype = 2, k = 48, m = 32, n = 64, trans_b = 1}]
  return
}
