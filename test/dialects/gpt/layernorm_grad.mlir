// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// As gpt-autodiff makes it: the mean and rstd saved by the training-form
// layernorm, one per row. Results print with their names.
// CHECK-LABEL: func.func @layernorm_grad
// CHECK:         %input_grad, %weight_grad, %bias_grad = gpt.layernorm_grad "ln" %arg0, %arg1, %arg2, %arg3, %arg4 : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
func.func @layernorm_grad(%dy: tensor<?x4x8xf32>, %x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %mean: tensor<?x4xf32>, %rstd: tensor<?x4xf32>) -> (tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = gpt.layernorm_grad "ln" %dy, %x, %w, %mean, %rstd : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %dx, %dw, %db : tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A 1-D input has one row: 0-D mean and rstd. bf16 activations with f32
// weight and weight gradients; statistics are f32 always.
// CHECK-LABEL: func.func @layernorm_grad_1d
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = gpt.layernorm_grad "ln_f" %arg0, %arg0, %arg1, %arg2, %arg2 : tensor<16xbf16>, tensor<16xbf16>, tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xbf16>, tensor<16xf32>, tensor<16xf32>
func.func @layernorm_grad_1d(%x: tensor<16xbf16>, %w: tensor<16xf32>, %s: tensor<f32>) -> tensor<16xbf16> {
  %r:3 = gpt.layernorm_grad "ln_f" %x, %x, %w, %s, %s : tensor<16xbf16>, tensor<16xbf16>, tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xbf16>, tensor<16xf32>, tensor<16xf32>
  return %r#0 : tensor<16xbf16>
}

// -----

// Dynamic sizes in the weight, its gradients and the statistics are
// compatible with static ones.
// CHECK-LABEL: func.func @layernorm_grad_dynamic
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = gpt.layernorm_grad "ln" %arg0, %arg0, %arg1, %arg2, %arg2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<2x4x8xf32>, tensor<?xf32>, tensor<8xf32>
func.func @layernorm_grad_dynamic(%x: tensor<2x4x8xf32>, %w: tensor<?xf32>, %s: tensor<?x?xf32>) -> tensor<2x4x8xf32> {
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %s, %s : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<2x4x8xf32>, tensor<?xf32>, tensor<8xf32>
  return %r#0 : tensor<2x4x8xf32>
}

// -----

// 0-D input: no last dimension to normalise over (and no rows to drop it from).
func.func @scalar_input(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{input must have at least one dimension}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %x, %x, %x : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>, tensor<f32>
  return %r#0 : tensor<f32>
}

// -----

// f32 and bf16 storage mix (gpt-bf16-kernels): a bf16 gradient against an
// f32 input, bf16 gradients out.
// CHECK-LABEL: func.func @storage
// CHECK: gpt.layernorm_grad "ln" %arg0, %arg1, %arg2, %arg3, %arg3 : tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
func.func @storage(%dy: tensor<?x4x8xbf16>, %x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xbf16> {
  %r:3 = gpt.layernorm_grad "ln" %dy, %x, %w, %s, %s : tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  return %r#0 : tensor<?x4x8xbf16>
}

// -----

func.func @result_grad_type(%dy: tensor<?x4x8xf16>, %x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{result_grad element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %r:3 = gpt.layernorm_grad "ln" %dy, %x, %w, %s, %s : tensor<?x4x8xf16>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

// Shapes must be equal, not merely compatible: [2, 4, 8] is not [?, 4, 8].
func.func @result_grad_shape(%dy: tensor<2x4x8xf32>, %x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{result_grad and input_grad must have the input shape [?, 4, 8], got [2, 4, 8]}}
  %r:3 = gpt.layernorm_grad "ln" %dy, %x, %w, %s, %s : tensor<2x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @input_grad_type(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x16xf32> {
  // expected-error @+1 {{result_grad and input_grad must have the input shape [?, 4, 8], got [?, 4, 16]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x16xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x16xf32>
}

// -----

func.func @weight_width(%x: tensor<?x4x8xf32>, %w: tensor<16xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{weight and its gradients must be 1-D of the input width, got [16]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<16xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @weight_rank(%x: tensor<?x4x8xf32>, %w: tensor<1x8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{weight and its gradients must be 1-D of the input width, got [1, 8]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<1x8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @weight_grad_width(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{weight and its gradients must be 1-D of the input width, got [4]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<4xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @bias_grad_rank(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{weight and its gradients must be 1-D of the input width, got []}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<f32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @mean_shape(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %mean: tensor<?x8xf32>, %rstd: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{mean and rstd must have one entry per row [?, 4], got [?, 8]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %mean, %rstd : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

// The input's shape, not the row shape.
func.func @mean_rank(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %mean: tensor<?x4x8xf32>, %rstd: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{mean and rstd must have one entry per row [?, 4], got [?, 4, 8]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %mean, %rstd : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @rstd_shape(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %mean: tensor<2x4xf32>, %rstd: tensor<3x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{mean and rstd must have one entry per row [2, 4], got [3, 4]}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %mean, %rstd : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<2x4x8xf32>
}

// -----

func.func @bf16_mean(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %mean: tensor<?x4xbf16>, %rstd: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<?x4xbf16>'}}
  %r:3 = gpt.layernorm_grad "ln" %x, %x, %w, %mean, %rstd : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xbf16>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @no_layer(%x: tensor<?x4x8xf32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %r:3 = gpt.layernorm_grad "" %x, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @integer_input(%dy: tensor<?x4x8xf32>, %x: tensor<?x4x8xi32>, %w: tensor<8xf32>, %s: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of floating-point values, but got 'tensor<?x4x8xi32>'}}
  %r:3 = gpt.layernorm_grad "ln" %dy, %x, %w, %s, %s : tensor<?x4x8xf32>, tensor<?x4x8xi32>, tensor<8xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %r#0 : tensor<?x4x8xf32>
}
