// RUN: gpt-opt %s -split-input-file -fp8-transpose-casts | FileCheck %s

// The three GEMMs of one layer under current scaling. The forward reads
// both operands K-contiguous and keeps its casts. grad_input's weight
// (b, not transposed) and both operands of grad_weight (a transposed, b
// K x N) are cast transposed, and the GEMMs' flags flip: every FP8 GEMM
// ends up "TN".
// CHECK-LABEL: func.func @layer
// CHECK: %[[QX:.*]] = fp8.quantize "fc" %arg0, %arg3 : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
// CHECK: %[[QW:.*]] = fp8.quantize "fc" %arg1, %arg4 : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc" %[[QX]], %[[QW]] scales(%arg3, %arg4) transpose_b fast_accum
// CHECK: %[[QDY:.*]] = fp8.quantize "fc" %arg2, %arg5 : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
// CHECK: %[[QWT:.*]] = fp8.quantize "fc" %arg1, %arg4 transpose : tensor<48x16xf32> -> tensor<16x48xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc" %[[QDY]], %[[QWT]] scales(%arg5, %arg4) transpose_b {gpt.role = "grad_input"}
// CHECK: %[[QDYT:.*]] = fp8.quantize "fc" %arg2, %arg5 transpose : tensor<32x48xf32> -> tensor<48x32xf8E5M2>
// CHECK: %[[QXT:.*]] = fp8.quantize "fc" %arg0, %arg3 transpose : tensor<32x16xf32> -> tensor<16x32xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc" %[[QDYT]], %[[QXT]] scales(%arg5, %arg3) transpose_b {gpt.role = "grad_weight"}
// CHECK-SAME: tensor<48x32xf8E5M2>, tensor<16x32xf8E4M3FN> -> tensor<48x16xf32>
func.func @layer(%x: tensor<32x16xf32>, %w: tensor<48x16xf32>, %dy: tensor<32x48xf32>, %sx: tensor<f32>, %sw: tensor<f32>, %sdy: tensor<f32>) -> (tensor<32x48xf32>, tensor<32x16xf32>, tensor<48x16xf32>) {
  %qx = fp8.quantize "fc" %x, %sx : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
  %qw = fp8.quantize "fc" %w, %sw : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
  %y = fp8.scaled_matmul "fc" %qx, %qw scales(%sx, %sw) transpose_b fast_accum {gpt.role = "forward"} : tensor<32x16xf8E4M3FN>, tensor<48x16xf8E4M3FN> -> tensor<32x48xf32>
  %qdy = fp8.quantize "fc" %dy, %sdy : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
  %qw2 = fp8.quantize "fc" %w, %sw : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
  %dx = fp8.scaled_matmul "fc" %qdy, %qw2 scales(%sdy, %sw) {gpt.role = "grad_input"} : tensor<32x48xf8E5M2>, tensor<48x16xf8E4M3FN> -> tensor<32x16xf32>
  %qdy2 = fp8.quantize "fc" %dy, %sdy : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
  %qx2 = fp8.quantize "fc" %x, %sx : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
  %dw = fp8.scaled_matmul "fc" %qdy2, %qx2 scales(%sdy, %sx) transpose_a {gpt.role = "grad_weight"} : tensor<32x48xf8E5M2>, tensor<32x16xf8E4M3FN> -> tensor<48x16xf32>
  return %y, %dx, %dw : tensor<32x48xf32>, tensor<32x16xf32>, tensor<48x16xf32>
}

// -----

// Left alone: a cast read by two GEMMs (one layout cannot serve both), a
// 3-D operand (the batched a of grad_input is M x K already; a 3-D one
// the GEMM would transpose is not rewritten), and a cast already
// transposed.
// CHECK-LABEL: func.func @negative
// CHECK: %[[Q:.*]] = fp8.quantize "fc" %arg1, %arg3 : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc" %{{.*}}, %[[Q]] scales(%arg4, %arg3) :
// CHECK: fp8.scaled_matmul "fc" %{{.*}}, %[[Q]] scales(%arg4, %arg3) :
// CHECK: %[[B3:.*]] = fp8.quantize "fc" %arg2, %arg3 : tensor<2x8x16xf32> -> tensor<2x8x16xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc" %{{.*}}, %[[B3]] scales(%arg4, %arg3) :
// CHECK: %[[T:.*]] = fp8.quantize "fc" %arg1, %arg3 transpose : tensor<48x16xf32> -> tensor<16x48xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc" %{{.*}}, %[[T]] scales(%arg4, %arg3) transpose_b :
func.func @negative(%x: tensor<32x48xf32>, %w: tensor<48x16xf32>, %w3: tensor<2x8x16xf32>, %sw: tensor<f32>, %sx: tensor<f32>, %a3: tensor<2x4x8xf8E5M2>) -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<2x4x16xf32>, tensor<32x16xf32>) {
  %qx = fp8.quantize "fc" %x, %sx : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
  %q = fp8.quantize "fc" %w, %sw : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
  %d1 = fp8.scaled_matmul "fc" %qx, %q scales(%sx, %sw) : tensor<32x48xf8E5M2>, tensor<48x16xf8E4M3FN> -> tensor<32x16xf32>
  %d2 = fp8.scaled_matmul "fc" %qx, %q scales(%sx, %sw) : tensor<32x48xf8E5M2>, tensor<48x16xf8E4M3FN> -> tensor<32x16xf32>
  %b3 = fp8.quantize "fc" %w3, %sw : tensor<2x8x16xf32> -> tensor<2x8x16xf8E4M3FN>
  %d3 = fp8.scaled_matmul "fc" %a3, %b3 scales(%sx, %sw) : tensor<2x4x8xf8E5M2>, tensor<2x8x16xf8E4M3FN> -> tensor<2x4x16xf32>
  %t = fp8.quantize "fc" %w, %sw transpose : tensor<48x16xf32> -> tensor<16x48xf8E4M3FN>
  %d4 = fp8.scaled_matmul "fc" %qx, %t scales(%sx, %sw) transpose_b : tensor<32x48xf8E5M2>, tensor<16x48xf8E4M3FN> -> tensor<32x16xf32>
  return %d1, %d2, %d3, %d4 : tensor<32x16xf32>, tensor<32x16xf32>, tensor<2x4x16xf32>, tensor<32x16xf32>
}

// -----

// Rowwise casts too: the transposed codes keep their rows' (here columns')
// scales, so the scale vectors and the GEMM's row_scales do not change.
// CHECK-LABEL: func.func @rowwise
// CHECK: %[[Q:.*]] = fp8.quantize_rows "fc" %arg0, %arg1 along cols transpose : tensor<32x48xf32>, tensor<48xf32> -> tensor<48x32xf8E5M2>
// CHECK: fp8.scaled_matmul "fc" %[[Q]], %arg2 scales(%arg1, %arg3) row_scales(tensor<48xf32>, tensor<16xf32>) transpose_b :
func.func @rowwise(%dy: tensor<32x48xf32>, %s: tensor<48xf32>, %x: tensor<16x32xf8E4M3FN>, %sx: tensor<16xf32>) -> tensor<48x16xf32> {
  %q = fp8.quantize_rows "fc" %dy, %s along cols : tensor<32x48xf32>, tensor<48xf32> -> tensor<32x48xf8E5M2>
  %dw = fp8.scaled_matmul "fc" %q, %x scales(%s, %sx) row_scales(tensor<48xf32>, tensor<16xf32>) transpose_a transpose_b : tensor<32x48xf8E5M2>, tensor<16x32xf8E4M3FN> -> tensor<48x16xf32>
  return %dw : tensor<48x16xf32>
}
