// RUN: gpt-opt %s -fp8-precision="policy=fp8-delayed history=4" | FileCheck %s
// RUN: gpt-opt %s -fp8-precision="policy=fp8-delayed history=4" -rt-bufferize | FileCheck %s --check-prefix=RT

// Delayed scaling: one state per layer, GEMM and operand, declared once;
// train_step reads the scale from the history and records this step's amax;
// eval_step only reads.
// CHECK-DAG: fp8.state @fc.forward.a "fc" history = 4 reduction = max recipe = <format = e4m3>
// CHECK-DAG: fp8.state @fc.forward.b "fc" history = 4 reduction = max recipe = <format = e4m3>
// CHECK-LABEL: func.func @train_step
// CHECK: %[[S:.*]] = fp8.state_scale @fc.forward.a
// CHECK: %[[A:.*]] = fp8.amax "fc" %arg0
// CHECK: fp8.state_update @fc.forward.a, %[[A]]
// CHECK: fp8.quantize "fc" %arg0, %[[S]] : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
// CHECK: fp8.state_scale @fc.forward.b
// CHECK: fp8.state_update @fc.forward.b
// CHECK: fp8.scaled_matmul "fc"
// CHECK-LABEL: func.func @eval_step
// CHECK: fp8.state_scale @fc.forward.a
// CHECK-NOT: fp8.state_update
// CHECK: fp8.scaled_matmul "fc"

// The histories live in the fp8_state arena (checkpointed with the rest).
// RT: rt.arena @fp8_state fp8_state size = 128
// RT-LABEL: func.func @train_step
// RT: %[[H:.*]] = rt.view @fp8_state[{{0|64}}] : memref<4xf32>
// RT: rt.kernel "fp8_state_scale" ins(%[[H]] : memref<4xf32>) outs(%{{.*}} : memref<f32>) consts [4, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
// RT: rt.kernel "fp8_state_update" ins(%{{.*}} : memref<f32>) outs(%{{.*}} : memref<4xf32>) consts [4]
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
func.func @train_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<32x48xf32> {gpt.output = "y"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %y : tensor<32x48xf32>
}
func.func @eval_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<32x48xf32> {gpt.output = "y"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %y : tensor<32x48xf32>
}
