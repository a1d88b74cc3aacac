// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// As gpt-autodiff makes it: seeded with d loss = 1, from the per-row lse of
// the training-form cross_entropy. The default ignore_index (-1) is left out
// when printed, another one is kept.
// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK:         %{{.*}} = gpt.cross_entropy_grad "loss" %arg0, %arg1, %arg2, %arg3 {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
// CHECK:         %{{.*}} = gpt.cross_entropy_grad "loss" %arg0, %arg1, %arg2, %arg3 {vocab_size = 64 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
// CHECK:         %{{.*}} = gpt.cross_entropy_grad "loss" %arg0, %arg1, %arg2, %arg3 {ignore_index = -100 : i64, vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
func.func @cross_entropy_grad(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %targets: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> (tensor<?x4x64xf32>, tensor<?x4x64xf32>, tensor<?x4x64xf32>) {
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %targets, %lse {vocab_size = 60 : i64, ignore_index = -1 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  %1 = gpt.cross_entropy_grad "loss" %dl, %logits, %targets, %lse {vocab_size = 64 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  %2 = gpt.cross_entropy_grad "loss" %dl, %logits, %targets, %lse {vocab_size = 60 : i64, ignore_index = -100 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0, %1, %2 : tensor<?x4x64xf32>, tensor<?x4x64xf32>, tensor<?x4x64xf32>
}

// -----

// bf16 logits (the lse stays f32); an ignore_index in the padding columns
// is not a real token; a dynamic vocabulary dimension; 2-D logits; dynamic
// rows against static ones.
// CHECK-LABEL: func.func @cross_entropy_grad_forms
// CHECK:         %{{.*}} = gpt.cross_entropy_grad "loss" %arg0, %arg1, %arg2, %arg3 {ignore_index = 50 : i64, vocab_size = 50 : i64} : tensor<8x64xbf16>, tensor<8xi32>, tensor<8xf32>
// CHECK:         %{{.*}} = gpt.cross_entropy_grad "loss" %arg0, %arg4, %arg2, %arg5 {vocab_size = 50 : i64} : tensor<8x?xf32>, tensor<8xi32>, tensor<?xf32>
func.func @cross_entropy_grad_forms(%dl: tensor<f32>, %logits: tensor<8x64xbf16>, %targets: tensor<8xi32>, %lse: tensor<8xf32>, %dyn: tensor<8x?xf32>, %dlse: tensor<?xf32>) -> (tensor<8x64xbf16>, tensor<8x?xf32>) {
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %targets, %lse {vocab_size = 50 : i64, ignore_index = 50 : i64} : tensor<8x64xbf16>, tensor<8xi32>, tensor<8xf32>
  %1 = gpt.cross_entropy_grad "loss" %dl, %dyn, %targets, %dlse {vocab_size = 50 : i64} : tensor<8x?xf32>, tensor<8xi32>, tensor<?xf32>
  return %0, %1 : tensor<8x64xbf16>, tensor<8x?xf32>
}

// -----

// Logits need a vocabulary dimension and at least one row dimension.
func.func @logits_1d(%dl: tensor<f32>, %logits: tensor<64xf32>, %t: tensor<i32>, %lse: tensor<f32>) -> tensor<64xf32> {
  // expected-error @+1 {{logits must be [..., vocab], got [64]}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 50 : i64} : tensor<64xf32>, tensor<i32>, tensor<f32>
  return %0 : tensor<64xf32>
}

// -----

func.func @logits_0d(%dl: tensor<f32>, %t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{logits must be [..., vocab], got []}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %dl, %t, %dl {vocab_size = 1 : i64} : tensor<f32>, tensor<i32>, tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @targets_shape(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x8xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{targets and lse must have one entry per row [?, 4]}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x8xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @targets_rank(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4x64xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{targets and lse must have one entry per row [?, 4]}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4x64xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @lse_shape(%dl: tensor<f32>, %logits: tensor<2x4x64xf32>, %t: tensor<2x4xi32>, %lse: tensor<2x3xf32>) -> tensor<2x4x64xf32> {
  // expected-error @+1 {{targets and lse must have one entry per row [2, 4]}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64} : tensor<2x4x64xf32>, tensor<2x4xi32>, tensor<2x3xf32>
  return %0 : tensor<2x4x64xf32>
}

// -----

// The lse is per row, not a scalar.
func.func @lse_scalar(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{targets and lse must have one entry per row [?, 4]}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %dl {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<f32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @vocab_too_large(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{vocab_size 65 must be in 1..(the logits width)}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 65 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @vocab_zero(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{vocab_size 0 must be in 1..(the logits width)}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 0 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @vocab_negative_dynamic(%dl: tensor<f32>, %logits: tensor<?x4x?xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x?xf32> {
  // expected-error @+1 {{vocab_size -3 must be in 1..(the logits width)}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = -3 : i64} : tensor<?x4x?xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x?xf32>
}

// -----

func.func @ignore_real_token(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{ignore_index 0 is a real token id (vocab_size 60); use a negative value such as -1}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64, ignore_index = 0 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @ignore_last_token(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{ignore_index 59 is a real token id (vocab_size 60)}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64, ignore_index = 59 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @no_layer(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.cross_entropy_grad "" %dl, %logits, %t, %lse {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @no_vocab_size(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{requires attribute 'vocab_size'}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @i64_targets(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi64>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{operand #2 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x4xi64>'}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi64>, tensor<?x4xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

func.func @bf16_lse(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xbf16>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<?x4xbf16>'}}
  %0 = gpt.cross_entropy_grad "loss" %dl, %logits, %t, %lse {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xbf16>
  return %0 : tensor<?x4x64xf32>
}

// -----

// The loss_grad type is implied by the custom form; the generic form can
// give another.
func.func @loss_grad_type(%dl: tensor<1xf32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x64xf32> {
  // expected-error @+1 {{operand #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = "gpt.cross_entropy_grad"(%dl, %logits, %t, %lse) <{layer = "loss", vocab_size = 60 : i64}> : (tensor<1xf32>, tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>) -> tensor<?x4x64xf32>
  return %0 : tensor<?x4x64xf32>
}

// -----

// So is the logits_grad type.
func.func @logits_grad_type(%dl: tensor<f32>, %logits: tensor<?x4x64xf32>, %t: tensor<?x4xi32>, %lse: tensor<?x4xf32>) -> tensor<?x4x60xf32> {
  // expected-error @+1 {{failed to verify that all of {logits, logits_grad} have same type}}
  %0 = "gpt.cross_entropy_grad"(%dl, %logits, %t, %lse) <{layer = "loss", vocab_size = 60 : i64}> : (tensor<f32>, tensor<?x4x64xf32>, tensor<?x4xi32>, tensor<?x4xf32>) -> tensor<?x4x60xf32>
  return %0 : tensor<?x4x60xf32>
}
