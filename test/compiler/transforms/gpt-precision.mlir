// RUN: gpt-opt %s -gpt-precision -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -gpt-precision=precision=fp32 -verify-diagnostics | FileCheck %s --check-prefix=FP32

// bf16 storage: each activation is rounded to bf16 right after its producer
// and widened in front of each consumer; the weight gets a bf16 compute
// copy; statistics, the loss and the master weight stay f32.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[W:.*]] = gpt.param_ref @w : tensor<8x8xf32>
// CHECK: %[[WB:.*]] = gpt.cast "w" %[[W]] : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK: %[[Y:.*]], %[[STATS:.*]]:2 = gpt.layernorm "ln" %arg0, %[[G:.*]], %[[G]] : {{.*}} -> tensor<2x8xf32>, tensor<2xf32>, tensor<2xf32>
// CHECK: %[[YB:.*]] = gpt.cast "ln" %[[Y]] : tensor<2x8xf32> -> tensor<2x8xbf16>
// CHECK: %[[WF:.*]] = gpt.cast "w" %[[WB]] : tensor<8x8xbf16> -> tensor<8x8xf32>
// CHECK: %[[YF:.*]] = gpt.cast "ln" %[[YB]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK: %[[H:.*]] = gpt.matmul "fc" %[[YF]], %[[WF]] transpose_b
// CHECK: %[[HB:.*]] = gpt.cast "fc" %[[H]] : tensor<2x8xf32> -> tensor<2x8xbf16>
// Each consumer gets its own widened copy, so no f32 copy outlives an op.
// CHECK: %[[H1:.*]] = gpt.cast "fc" %[[HB]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK: gpt.gelu "act" %[[H1]]
// CHECK: %[[H2:.*]] = gpt.cast "fc" %[[HB]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK: gpt.gelu_grad "act" %{{.*}}, %[[H2]]
// CHECK: gpt.layernorm_grad "ln" {{.*}}, %[[STATS]]#0, %[[STATS]]#1
// The optimizer works on f32 master weights and is left alone.
// CHECK-LABEL: func.func @optimizer_step
// CHECK-NOT: gpt.cast
// FP32-NOT: gpt.cast
gpt.param @g : tensor<8xf32> init <ones> layer "ln"
gpt.param @w : tensor<8x8xf32> init <normal, std = 0.02> layer "fc"
func.func @train_step(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %g = gpt.param_ref @g : tensor<8xf32>
  %w = gpt.param_ref @w : tensor<8x8xf32>
  %y, %s:2 = gpt.layernorm "ln" %x, %g, %g : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>, tensor<2xf32>, tensor<2xf32>
  %h = gpt.matmul "fc" %y, %w transpose_b : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %a = gpt.gelu "act" %h : tensor<2x8xf32>
  %d = gpt.gelu_grad "act" %a, %h : tensor<2x8xf32>
  %dx, %dg, %db = gpt.layernorm_grad "ln" %d, %x, %g, %s#0, %s#1 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %dx : tensor<2x8xf32>
}
func.func @optimizer_step() -> tensor<f32> {
  %n = gpt.grad_norm
  return %n : tensor<f32>
}
