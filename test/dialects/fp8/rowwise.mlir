// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Rowwise scaling: amax per row (or column), a scale per entry, and a cast
// with the scale of each element's row (or column).
// CHECK-LABEL: func.func @rowwise
// CHECK: %[[A:.*]] = fp8.amax_rows "fc" %arg0 along rows : tensor<2x8x16xf32> -> tensor<16xf32>
// CHECK: %[[S:.*]] = fp8.row_scales "fc" %[[A]] recipe <format = e4m3, power_of_two = true> : tensor<16xf32>
// CHECK: fp8.quantize_rows "fc" %arg0, %[[S]] along rows : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf8E4M3FN>
// CHECK: fp8.amax_rows "fc" %arg1 along cols : tensor<16x4xbf16> -> tensor<4xf32>
func.func @rowwise(%x: tensor<2x8x16xf32>, %w: tensor<16x4xbf16>) -> (tensor<2x8x16xf8E4M3FN>, tensor<4xf32>) {
  %a = fp8.amax_rows "fc" %x along rows : tensor<2x8x16xf32> -> tensor<16xf32>
  %s = fp8.row_scales "fc" %a recipe <format = e4m3, power_of_two = true> : tensor<16xf32>
  %q = fp8.quantize_rows "fc" %x, %s along rows : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf8E4M3FN>
  %c = fp8.amax_rows "fc" %w along cols : tensor<16x4xbf16> -> tensor<4xf32>
  return %q, %c : tensor<2x8x16xf8E4M3FN>, tensor<4xf32>
}

// -----

func.func @amax_length(%x: tensor<2x8x16xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{result has 8 entries, expected 16 (one per row of [2, 8, 16] seen as rows x last dim)}}
  %a = fp8.amax_rows "fc" %x along rows : tensor<2x8x16xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

func.func @scales_length(%x: tensor<8x16xf32>, %s: tensor<8xf32>) -> tensor<8x16xf8E4M3FN> {
  // expected-error @+1 {{scales has 8 entries, expected 16 (one per column of [8, 16] seen as rows x last dim)}}
  %q = fp8.quantize_rows "fc" %x, %s along cols : tensor<8x16xf32>, tensor<8xf32> -> tensor<8x16xf8E4M3FN>
  return %q : tensor<8x16xf8E4M3FN>
}

// -----

func.func @cast_shape(%x: tensor<8x16xf32>, %s: tensor<8xf32>) -> tensor<16x8xf8E4M3FN> {
  // expected-error @+1 {{result shape [16, 8] must equal the input shape [8, 16]}}
  %q = fp8.quantize_rows "fc" %x, %s along rows : tensor<8x16xf32>, tensor<8xf32> -> tensor<16x8xf8E4M3FN>
  return %q : tensor<16x8xf8E4M3FN>
}

// -----

// With transpose the result is the input's shape swapped; the scales still
// follow the input's rows.
// CHECK-LABEL: func.func @transposed
// CHECK: fp8.quantize_rows "fc" %arg0, %arg1 along rows transpose : tensor<8x16xf32>, tensor<8xf32> -> tensor<16x8xf8E4M3FN>
func.func @transposed(%x: tensor<8x16xf32>, %s: tensor<8xf32>) -> tensor<16x8xf8E4M3FN> {
  %q = fp8.quantize_rows "fc" %x, %s along rows transpose : tensor<8x16xf32>, tensor<8xf32> -> tensor<16x8xf8E4M3FN>
  return %q : tensor<16x8xf8E4M3FN>
}

// -----

func.func @transposed_shape(%x: tensor<8x16xf32>, %s: tensor<8xf32>) -> tensor<8x16xf8E4M3FN> {
  // expected-error @+1 {{with transpose has result shape [8, 16], expected [16, 8] (the input's shape swapped)}}
  %q = fp8.quantize_rows "fc" %x, %s along rows transpose : tensor<8x16xf32>, tensor<8xf32> -> tensor<8x16xf8E4M3FN>
  return %q : tensor<8x16xf8E4M3FN>
}

// -----

func.func @scalar_input(%x: tensor<f32>) -> tensor<1xf32> {
  // expected-error @+1 {{needs an input of rank >= 1 for rowwise scaling}}
  %a = fp8.amax_rows "fc" %x along rows : tensor<f32> -> tensor<1xf32>
  return %a : tensor<1xf32>
}

// -----

func.func @no_layer(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs the name of the layer it scales}}
  %s = fp8.row_scales "" %a recipe <format = e5m2> : tensor<4xf32>
  return %s : tensor<4xf32>
}
