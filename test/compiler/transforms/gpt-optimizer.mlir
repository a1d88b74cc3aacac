// RUN: gpt-opt %s -split-input-file -gpt-optimizer -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -gpt-optimizer="beta2=0.999 weight-decay=0.01 max-grad-norm=0.5" -verify-diagnostics | FileCheck %s --check-prefix=OPTIONS

gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte"
gpt.param @ln.bias : tensor<8xf32> init <zeros> layer "ln"
gpt.param @lm_head.weight : tensor<64x8xf32> tied_to @wte layer "lm_head"

// CHECK-LABEL: func.func @optimizer_step() -> (tensor<f32> {gpt.output = "grad_norm"})
// CHECK: %[[NORM:[0-9]+]] = gpt.grad_norm
// CHECK: %[[SCALE:[0-9]+]] = gpt.clip_scale %[[NORM]] max_norm = 1.000000e+00
// CHECK: %[[LR:[0-9]+]] = gpt.step_scalar learning_rate
// CHECK: %[[STEP:[0-9]+]] = gpt.step_scalar step
// Matrices decay, vectors don't; the tied lm_head is updated through @wte.
// CHECK: gpt.adamw @wte lr = %[[LR]] step = %[[STEP]] grad_scale = %[[SCALE]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK: gpt.adamw @ln.bias {{.*}} weight_decay = 0.000000e+00 : f64
// CHECK-NOT: gpt.adamw @lm_head.weight
// CHECK: gpt.zero_grads
// CHECK: return %[[NORM]] : tensor<f32>

// OPTIONS: gpt.clip_scale %{{[0-9]+}} max_norm = 5.000000e-01
// OPTIONS: gpt.adamw @wte {{.*}} beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64

// -----

// expected-error @+1 {{has no gpt.param to optimize}}
module {
}

// -----

// expected-error @+1 {{already has an @optimizer_step; run gpt-optimizer once}}
module {
  gpt.param @w : tensor<4xf32> init <zeros> layer "w"
  func.func @optimizer_step() {
    return
  }
}
