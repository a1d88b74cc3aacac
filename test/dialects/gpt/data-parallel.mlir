// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: gpt.grad_bucket_ready 0 [@a, @b]
// CHECK: gpt.grad_bucket_ready 1 [@c] fp8
// CHECK: gpt.grad_sync 2
gpt.param @a : tensor<4xf32> init <zeros> layer "a"
gpt.param @b : tensor<4xf32> init <zeros> layer "b"
gpt.param @c : tensor<4xf32> init <zeros> layer "c"
func.func @train_step() {
  gpt.grad_bucket_ready 0 [@a, @b]
  gpt.grad_bucket_ready 1 [@c] fp8
  gpt.grad_sync 2
  return
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
