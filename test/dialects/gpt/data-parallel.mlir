// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: gpt.grad_bucket_ready 0 [@a, @b]
// CHECK: gpt.grad_bucket_ready 1 [@c] fp8
// CHECK: gpt.grad_bucket_ready 2 [@c] scatter
// CHECK: gpt.grad_bucket_ready 3 [@c] fp8 scatter
// CHECK: gpt.grad_sync 2
gpt.param @a : tensor<4xf32> init <zeros> layer "a"
gpt.param @b : tensor<4xf32> init <zeros> layer "b"
gpt.param @c : tensor<4xf32> init <zeros> layer "c"
func.func @train_step() {
  gpt.grad_bucket_ready 0 [@a, @b]
  gpt.grad_bucket_ready 1 [@c] fp8
  gpt.grad_bucket_ready 2 [@c] scatter
  gpt.grad_bucket_ready 3 [@c] fp8 scatter
  gpt.grad_sync 2
  return
}

// -----

// CHECK-LABEL: func.func @optimizer_step
// CHECK: gpt.grad_norm sharded
// CHECK: gpt.adamw @w lr = %{{.*}} step = %{{.*}} grad_scale = %{{.*}} sharded {
// CHECK: gpt.gather_params
gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @optimizer_step() -> tensor<f32> {
  %n = gpt.grad_norm sharded
  %s = gpt.clip_scale %n max_norm = 1.0
  %lr = gpt.step_scalar learning_rate
  %t = gpt.step_scalar step
  gpt.adamw @w lr = %lr step = %t grad_scale = %s sharded {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64}
  gpt.gather_params
  gpt.zero_grads
  return %n : tensor<f32>
}

// -----

func.func @unknown() {
  // expected-error @+1 {{bucket 0 names @nothing, which is not a gpt.param}}
  gpt.grad_bucket_ready 0 [@nothing]
  return
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
gpt.param @t : tensor<4xf32> tied_to @w layer "t"
func.func @tied() {
  // expected-error @+1 {{bucket 3 names @t, which is tied to @w (its gradient lives there): name @w}}
  gpt.grad_bucket_ready 3 [@t]
  return
}

// -----

func.func @empty() {
  // expected-error @+1 {{bucket 0 names no parameters, expected at least one}}
  gpt.grad_bucket_ready 0 []
  return
}

// -----

func.func @no_buckets() {
  // expected-error @+1 {{waits for 0 buckets, expected at least 1}}
  gpt.grad_sync 0
  return
}
