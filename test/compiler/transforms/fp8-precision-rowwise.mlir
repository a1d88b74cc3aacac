// RUN: gpt-opt %s -fp8-precision="policy=fp8-rowwise" | FileCheck %s
// RUN: gpt-opt %s -fp8-precision="policy=fp8-rowwise" -rt-bufferize | FileCheck %s --check-prefix=RT

// fp8-rowwise: a power-of-two scale per row of each operand along the
// GEMM's non-contracted dimension -- a's M rows, b's N columns -- whatever
// the operands' layouts: the forward weight [N, K] (transpose_b) is scaled
// per row, the weight gradient's activations [M, N] (transpose_a) per
// column and its b [M, K] per column.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[AX:.*]] = fp8.amax_rows "fc" %arg0 along rows : tensor<32x16xf32> -> tensor<32xf32>
// CHECK: %[[SX:.*]] = fp8.row_scales "fc" %[[AX]] recipe <format = e4m3, power_of_two = true> : tensor<32xf32>
// CHECK: %[[QX:.*]] = fp8.quantize_rows "fc" %arg0, %[[SX]] along rows : tensor<32x16xf32>, tensor<32xf32> -> tensor<32x16xf8E4M3FN>
// CHECK: fp8.amax_rows "fc" %{{.*}} along rows : tensor<48x16xf32> -> tensor<48xf32>
// CHECK: fp8.scaled_matmul "fc" %[[QX]], %{{.*}} scales(%[[SX]], %{{.*}}) row_scales(tensor<32xf32>, tensor<48xf32>) transpose_b
// CHECK: fp8.amax_rows "fc" %arg1 along cols : tensor<32x48xf32> -> tensor<48xf32>
// CHECK: recipe <format = e5m2, power_of_two = true>
// CHECK: fp8.amax_rows "fc" %arg0 along cols : tensor<32x16xf32> -> tensor<16xf32>
// CHECK: fp8.scaled_matmul "fc" {{.*}} row_scales(tensor<48xf32>, tensor<16xf32>) transpose_a
// RT-LABEL: func.func @train_step
// RT: rt.kernel "amax_rows" ins(%{{.*}} : memref<32x16xf32>) outs(%{{.*}} : memref<32xf32>) consts [32, 16, 0, 1]
// RT: rt.kernel "row_scales" ins(%{{.*}} : memref<32xf32>) outs(%{{.*}} : memref<32xf32>) consts [32, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
// RT: rt.kernel "quantize_rows" {{.*}} consts [32, 16, 0, 0, 0, 1] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "a", slot = 0 : i64}}
// RT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x16xf8E4M3FN>, memref<48x16xf8E4M3FN>, memref<32xf32>, memref<48xf32>) outs(%{{.*}} : memref<32x48xf32>) consts [{a_dtype = 4 : i64, a_scaling = 1 : i64, b_dtype = 4 : i64, b_scaling = 1 : i64, fast_accum = 1 : i64, k = 16 : i64, m = 32 : i64, n = 48 : i64, trans_b = 1 : i64}]
// RT: rt.kernel "amax_rows" ins(%{{.*}} : memref<32x48xf32>) outs(%{{.*}} : memref<48xf32>) consts [32, 48, 1, 1]
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
func.func @train_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}, %dy: tensor<32x48xf32> {gpt.input = "targets"}) -> (tensor<32x48xf32> {gpt.output = "y"}, tensor<48x16xf32> {gpt.output = "dw"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  %dw = gpt.matmul "fc" %dy, %x transpose_a role = grad_weight {gpt.grad_operand = 0 : i64} : tensor<32x48xf32>, tensor<32x16xf32> -> tensor<48x16xf32>
  return %y, %dw : tensor<32x48xf32>, tensor<48x16xf32>
}
