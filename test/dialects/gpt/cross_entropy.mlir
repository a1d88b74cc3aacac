// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The default ignore_index (-1) is left out when printed, another is kept.
// CHECK-LABEL: func.func @cross_entropy
// CHECK:         %{{.*}} = gpt.cross_entropy "loss" %arg0, %arg1 {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
// CHECK:         %{{.*}} = gpt.cross_entropy "loss" %arg0, %arg1 {vocab_size = 64 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
// CHECK:         %{{.*}} = gpt.cross_entropy "loss" %arg0, %arg1 {ignore_index = -100 : i64, vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
func.func @cross_entropy(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64, ignore_index = -1 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  %1 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 64 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  %2 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64, ignore_index = -100 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// An ignore_index in the padding rows is not a real token; bf16 logits; a
// dynamic vocabulary dimension.
// CHECK-LABEL: func.func @cross_entropy_padding
// CHECK:         %{{.*}} = gpt.cross_entropy "loss" %arg0, %arg1 {ignore_index = 50 : i64, vocab_size = 50 : i64} : tensor<8x64xbf16>, tensor<8xi32>
// CHECK:         %{{.*}} = gpt.cross_entropy "loss" %arg2, %arg1 {vocab_size = 50 : i64} : tensor<8x?xf32>, tensor<8xi32>
func.func @cross_entropy_padding(%logits: tensor<8x64xbf16>, %targets: tensor<8xi32>, %dyn: tensor<8x?xf32>) -> (tensor<f32>, tensor<f32>) {
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64, ignore_index = 50 : i64} : tensor<8x64xbf16>, tensor<8xi32>
  %1 = gpt.cross_entropy "loss" %dyn, %targets {vocab_size = 50 : i64} : tensor<8x?xf32>, tensor<8xi32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// The training form (made by gpt-autodiff) also returns each row's
// log-sum-exp, f32 even for bf16 logits. Results print with their names.
// CHECK-LABEL: func.func @cross_entropy_training
// CHECK:         %loss, %lse = gpt.cross_entropy "loss" %arg0, %arg1 {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32> -> tensor<?x8xf32>
// CHECK:         %{{.*}}, %{{.*}} = gpt.cross_entropy "loss" %arg2, %arg3 {ignore_index = -100 : i64, vocab_size = 50 : i64} : tensor<8x64xbf16>, tensor<8xi32> -> tensor<?xf32>
func.func @cross_entropy_training(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>, %flat: tensor<8x64xbf16>, %t: tensor<8xi32>) -> (tensor<f32>, tensor<?x8xf32>, tensor<?xf32>) {
  %0, %lse0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32> -> tensor<?x8xf32>
  %1, %lse1 = gpt.cross_entropy "loss" %flat, %t {vocab_size = 50 : i64, ignore_index = -100 : i64} : tensor<8x64xbf16>, tensor<8xi32> -> tensor<?xf32>
  return %0, %lse0, %lse1 : tensor<f32>, tensor<?x8xf32>, tensor<?xf32>
}

// -----

func.func @logits_1d(%logits: tensor<64xf32>, %targets: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{logits must be [..., vocab], got [64]}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<64xf32>, tensor<i32>
  return %0 : tensor<f32>
}

// -----

func.func @targets_shape(%logits: tensor<?x8x64xf32>, %targets: tensor<?x4xi32>) -> tensor<f32> {
  // expected-error @+1 {{targets shape [?, 4] must equal the logits shape without the vocab dimension [?, 8]}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x4xi32>
  return %0 : tensor<f32>
}

// -----

func.func @targets_rank(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8x64xi32>) -> tensor<f32> {
  // expected-error @+1 {{targets shape [?, 8, 64] must equal the logits shape without the vocab dimension [?, 8]}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8x64xi32>
  return %0 : tensor<f32>
}

// -----

func.func @vocab_too_large(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{vocab_size 65 must be in 1..64 (the logits width)}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 65 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @vocab_zero(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{vocab_size 0 must be in 1..64 (the logits width)}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 0 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @vocab_zero_dynamic(%logits: tensor<?x8x?xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{vocab_size -3 must be in 1..? (the logits width)}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = -3 : i64} : tensor<?x8x?xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @ignore_real_token(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{ignore_index 0 is a real token id (vocab_size 50); use a negative value such as -1}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64, ignore_index = 0 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @ignore_last_token(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{ignore_index 49 is a real token id (vocab_size 50)}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64, ignore_index = 49 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @no_layer(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.cross_entropy "" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @no_vocab_size(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<f32> {
  // expected-error @+1 {{requires attribute 'vocab_size'}}
  %0 = gpt.cross_entropy "loss" %logits, %targets : tensor<?x8x64xf32>, tensor<?x8xi32>
  return %0 : tensor<f32>
}

// -----

func.func @i64_targets(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi64>) -> tensor<f32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x8xi64>'}}
  %0 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi64>
  return %0 : tensor<f32>
}

// -----

// The loss type is implied by the custom form; the generic form can give another.
func.func @loss_type(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<1xf32> {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = "gpt.cross_entropy"(%logits, %targets) <{layer = "loss", vocab_size = 50 : i64}> : (tensor<?x8x64xf32>, tensor<?x8xi32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @two_lse(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each row: expected 1 extra result(s), got 2}}
  %0, %lse:2 = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return %lse#0 : tensor<?x8xf32>
}

// -----

func.func @lse_shape(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each row of shape [?, 8], got [?, 4]}}
  %0, %lse = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32> -> tensor<?x4xf32>
  return %lse : tensor<?x4xf32>
}

// -----

// The logits' shape rather than one entry per row.
func.func @lse_rank(%logits: tensor<?x8x64xf32>, %targets: tensor<?x8xi32>) -> tensor<?x8x64xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each row of shape [?, 8], got [?, 8, 64]}}
  %0, %lse = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xf32>, tensor<?x8xi32> -> tensor<?x8x64xf32>
  return %lse : tensor<?x8x64xf32>
}

// -----

func.func @lse_scalar(%logits: tensor<8x64xf32>, %targets: tensor<8xi32>) -> tensor<f32> {
  // expected-error @+1 {{saves the log-sum-exp of each row of shape [8], got []}}
  %0, %lse = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<8x64xf32>, tensor<8xi32> -> tensor<f32>
  return %lse : tensor<f32>
}

// -----

func.func @bf16_lse(%logits: tensor<?x8x64xbf16>, %targets: tensor<?x8xi32>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{result #1 must be variadic of ranked tensor of 32-bit float values, but got 'tensor<?x8xbf16>'}}
  %0, %lse = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 50 : i64} : tensor<?x8x64xbf16>, tensor<?x8xi32> -> tensor<?x8xbf16>
  return %lse : tensor<?x8xbf16>
}
