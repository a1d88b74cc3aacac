// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The optimizer step's ops as gpt-optimizer writes them: the global
// gradient norm, the clipping factor and one AdamW update per parameter.
// CHECK-LABEL: func.func @optimizer_step
// CHECK: %[[N:.*]] = gpt.grad_norm
// CHECK: %[[S:.*]] = gpt.clip_scale %[[N]] max_norm = 1.000000e+00
// CHECK: %[[LR:.*]] = gpt.step_scalar learning_rate
// CHECK: %[[T:.*]] = gpt.step_scalar step
// CHECK: gpt.adamw @w lr = %[[LR]] step = %[[T]] grad_scale = %[[S]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
// Clipping disabled (max_norm 0) and beta1 0 (no momentum) are allowed.
// CHECK: gpt.clip_scale %[[N]] max_norm = 0.000000e+00
// CHECK: gpt.adamw @w {{.*}} {beta1 = 0.000000e+00 : f64, beta2 = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64}
gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @optimizer_step() -> tensor<f32> {
  %n = gpt.grad_norm
  %s = gpt.clip_scale %n max_norm = 1.0
  %lr = gpt.step_scalar learning_rate
  %t = gpt.step_scalar step
  gpt.adamw @w lr = %lr step = %t grad_scale = %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64}
  %off = gpt.clip_scale %n max_norm = 0.0
  gpt.adamw @w lr = %lr step = %t grad_scale = %off {beta1 = 0.0 : f64, beta2 = 0.0 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64}
  return %n : tensor<f32>
}

// -----

func.func @infinite_max_norm(%n: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{max_norm must be finite (0 or less disables clipping)}}
  %s = gpt.clip_scale %n max_norm = 0x7FF0000000000000
  return %s : tensor<f32>
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @beta_one(%x: tensor<f32>) {
  // expected-error @+1 {{beta1 and beta2 must be in [0, 1), got 9.000000e-01 and 1.000000e+00}}
  gpt.adamw @w lr = %x step = %x grad_scale = %x {beta1 = 0.9 : f64, beta2 = 1.0 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64}
  return
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @negative_beta(%x: tensor<f32>) {
  // expected-error @+1 {{beta1 and beta2 must be in [0, 1), got -1.000000e-01 and 9.500000e-01}}
  gpt.adamw @w lr = %x step = %x grad_scale = %x {beta1 = -0.1 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64}
  return
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @zero_eps(%x: tensor<f32>) {
  // expected-error @+1 {{eps must be positive, got 0.000000e+00}}
  gpt.adamw @w lr = %x step = %x grad_scale = %x {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 0.0 : f64, weight_decay = 0.0 : f64}
  return
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @negative_weight_decay(%x: tensor<f32>) {
  // expected-error @+1 {{weight_decay must be >= 0, got -1.000000e-01}}
  gpt.adamw @w lr = %x step = %x grad_scale = %x {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = -0.1 : f64}
  return
}
