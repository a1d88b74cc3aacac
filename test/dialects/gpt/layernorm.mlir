// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The default eps (1e-5) is left out when printed, another one is kept.
// CHECK-LABEL: func.func @layernorm
// CHECK:         %{{.*}} = gpt.layernorm "h.0.ln_1" %arg0, %arg1, %arg2 : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.layernorm "h.0.ln_2" %arg0, %arg1, %arg2 : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.layernorm "ln_f" %arg0, %arg1, %arg2 {eps = 9.99999997E-7 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
func.func @layernorm(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  %0 = gpt.layernorm "h.0.ln_1" %x, %w, %b : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  %1 = gpt.layernorm "h.0.ln_2" %x, %w, %b {eps = 1.0e-5 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  %2 = gpt.layernorm "ln_f" %x, %w, %b {eps = 1.0e-6 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0, %1, %2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

// 1-D input, bf16 activations with f32 affine parameters, dynamic width.
// CHECK-LABEL: func.func @layernorm_mixed
// CHECK:         %{{.*}} = gpt.layernorm "ln" %arg0, %arg1, %arg1 : tensor<16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<16xbf16>
// CHECK:         %{{.*}} = gpt.layernorm "ln" %arg2, %arg1, %arg1 : tensor<4x?xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x?xf32>
func.func @layernorm_mixed(%x: tensor<16xbf16>, %w: tensor<16xf32>, %y: tensor<4x?xf32>) -> (tensor<16xbf16>, tensor<4x?xf32>) {
  %0 = gpt.layernorm "ln" %x, %w, %w : tensor<16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<16xbf16>
  %1 = gpt.layernorm "ln" %y, %w, %w : tensor<4x?xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x?xf32>
  return %0, %1 : tensor<16xbf16>, tensor<4x?xf32>
}

// -----

// The training form (made by gpt-autodiff) also returns the mean and rstd of
// each row: f32 even for bf16 activations, one entry per row, 0-D for a 1-D
// input. Results print with their names.
// CHECK-LABEL: func.func @layernorm_training
// CHECK:         %normalized, %stats:2 = gpt.layernorm "ln" %arg0, %arg1, %arg2 : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// CHECK:         %{{.*}}, %{{.*}}:2 = gpt.layernorm "ln_f" %arg0, %arg1, %arg2 {eps = 9.99999997E-7 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x?xf32>, tensor<4x8xf32>
// CHECK:         %{{.*}}, %{{.*}}:2 = gpt.layernorm "ln" %arg3, %arg1, %arg1 : tensor<16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<16xbf16>, tensor<f32>, tensor<f32>
func.func @layernorm_training(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>, %v: tensor<16xbf16>) -> (tensor<?x8x16xf32>, tensor<?x8xf32>, tensor<4x8xf32>, tensor<f32>) {
  %y, %s:2 = gpt.layernorm "ln" %x, %w, %b : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %y2, %mean, %rstd = gpt.layernorm "ln_f" %x, %w, %b {eps = 1.0e-6 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x?xf32>, tensor<4x8xf32>
  %y3, %t:2 = gpt.layernorm "ln" %v, %w, %w : tensor<16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<16xbf16>, tensor<f32>, tensor<f32>
  return %y, %s#1, %rstd, %t#0 : tensor<?x8x16xf32>, tensor<?x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

func.func @scalar_input(%x: tensor<f32>, %w: tensor<16xf32>) -> tensor<f32> {
  // expected-error @+1 {{input must have at least one dimension}}
  %0 = gpt.layernorm "ln" %x, %w, %w : tensor<f32>, tensor<16xf32>, tensor<16xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @weight_width(%x: tensor<?x8x16xf32>, %w: tensor<32xf32>, %b: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{weight must be 1-D of the input width [16], got [32]}}
  %0 = gpt.layernorm "ln" %x, %w, %b : tensor<?x8x16xf32>, tensor<32xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @weight_rank(%x: tensor<?x8x16xf32>, %w: tensor<1x16xf32>, %b: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{weight must be 1-D of the input width [16], got [1, 16]}}
  %0 = gpt.layernorm "ln" %x, %w, %b : tensor<?x8x16xf32>, tensor<1x16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @bias_width(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>, %b: tensor<8xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{bias must be 1-D of the input width [16], got [8]}}
  %0 = gpt.layernorm "ln" %x, %w, %b : tensor<?x8x16xf32>, tensor<16xf32>, tensor<8xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

// A bf16 input normalised into bf16 storage (gpt-bf16-kernels); the
// statistics and the affine parameters stay f32.
// CHECK-LABEL: func.func @storage
// CHECK: gpt.layernorm "ln" %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8x16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xbf16>
// CHECK: gpt.layernorm "ln" %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xbf16>
func.func @storage(%x: tensor<?x8x16xbf16>, %y: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> (tensor<?x8x16xbf16>, tensor<?x8x16xbf16>) {
  %0 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xbf16>
  %1 = gpt.layernorm "ln" %y, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xbf16>
  return %0, %1 : tensor<?x8x16xbf16>, tensor<?x8x16xbf16>
}

// -----

func.func @result_type(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf16> {
  // expected-error @+1 {{result element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %0 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf16>
  return %0 : tensor<?x8x16xf16>
}

// -----

func.func @result_shape(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{result shape [4, 8, 16] must equal the input shape [?, 8, 16]}}
  %0 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// -----

func.func @zero_eps(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{eps must be positive, got 0}}
  %0 = gpt.layernorm "ln" %x, %w, %w {eps = 0.0 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @negative_eps(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{eps must be positive}}
  %0 = gpt.layernorm "ln" %x, %w, %w {eps = -1.0e-5 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @nan_eps(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{eps must be positive}}
  %0 = gpt.layernorm "ln" %x, %w, %w {eps = 0x7FC00000 : f32} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @no_layer(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.layernorm "" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @integer_input(%x: tensor<?x8x16xi32>, %w: tensor<16xf32>) -> tensor<?x8x16xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<?x8x16xi32>'}}
  %0 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xi32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xi32>
  return %0 : tensor<?x8x16xi32>
}

// -----

func.func @f64_eps(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{attribute 'eps' failed to satisfy constraint: 32-bit float attribute}}
  %0 = gpt.layernorm "ln" %x, %w, %w {eps = 1.0e-5 : f64} : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

// The training form saves both statistics or none.
func.func @one_stat(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{saves the mean and rstd of each row: expected 2 extra result(s), got 1}}
  %y, %s = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// -----

func.func @three_stats(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{saves the mean and rstd of each row: expected 2 extra result(s), got 3}}
  %y, %s:3 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  return %s#0 : tensor<?x8xf32>
}

// -----

func.func @mean_shape(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{saves the mean and rstd of each row of shape [?, 8], got [?, 16]}}
  %y, %s:2 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x16xf32>, tensor<?x8xf32>
  return %s#0 : tensor<?x16xf32>
}

// -----

func.func @rstd_shape(%x: tensor<4x8x16xf32>, %w: tensor<16xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{saves the mean and rstd of each row of shape [4, 8], got [2, 8]}}
  %y, %s:2 = gpt.layernorm "ln" %x, %w, %w : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<2x8xf32>
  return %s#1 : tensor<2x8xf32>
}

// -----

// Statistics of the input's shape rather than one per row.
func.func @stats_rank(%x: tensor<?x8x16xf32>, %w: tensor<16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{saves the mean and rstd of each row of shape [?, 8], got [?, 8, 16]}}
  %y, %s:2 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
  return %s#0 : tensor<?x8x16xf32>
}

// -----

func.func @stats_1d_input(%x: tensor<16xf32>, %w: tensor<16xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{saves the mean and rstd of each row of shape [], got [1]}}
  %y, %s:2 = gpt.layernorm "ln" %x, %w, %w : tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>, tensor<1xf32>, tensor<1xf32>
  return %s#0 : tensor<1xf32>
}

// -----

func.func @bf16_stats(%x: tensor<?x8x16xbf16>, %w: tensor<16xf32>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{result #1 must be variadic of ranked tensor of 32-bit float values, but got 'tensor<?x8xbf16>'}}
  %y, %s:2 = gpt.layernorm "ln" %x, %w, %w : tensor<?x8x16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x16xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>
  return %s#0 : tensor<?x8xbf16>
}
