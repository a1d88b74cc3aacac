// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @quantize
// CHECK:         %{{.*}} = fp8.quantize "h.0.mlp.fc" %arg0, %arg3 : tensor<?x8x16xf32> -> tensor<?x8x16xf8E4M3FN>
// CHECK:         %{{.*}} = fp8.quantize "h.0.mlp.fc.grad" %arg1, %arg3 : tensor<4x64xbf16> -> tensor<4x64xf8E5M2>
// CHECK:         %{{.*}} = fp8.quantize "x" %arg2, %arg3 : tensor<16xf16> -> tensor<16xf8E4M3FN>
func.func @quantize(%x: tensor<?x8x16xf32>, %g: tensor<4x64xbf16>, %h: tensor<16xf16>, %scale: tensor<f32>) -> (tensor<?x8x16xf8E4M3FN>, tensor<4x64xf8E5M2>, tensor<16xf8E4M3FN>) {
  %0 = fp8.quantize "h.0.mlp.fc" %x, %scale : tensor<?x8x16xf32> -> tensor<?x8x16xf8E4M3FN>
  %1 = fp8.quantize "h.0.mlp.fc.grad" %g, %scale : tensor<4x64xbf16> -> tensor<4x64xf8E5M2>
  %2 = fp8.quantize "x" %h, %scale : tensor<16xf16> -> tensor<16xf8E4M3FN>
  return %0, %1, %2 : tensor<?x8x16xf8E4M3FN>, tensor<4x64xf8E5M2>, tensor<16xf8E4M3FN>
}

// -----

// A dynamic dimension on either side is compatible.
// CHECK-LABEL: func.func @quantize_dynamic
// CHECK:         %{{.*}} = fp8.quantize "x" %arg0, %arg1 : tensor<4x16xf32> -> tensor<?x16xf8E4M3FN>
func.func @quantize_dynamic(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<?x16xf8E4M3FN> {
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf32> -> tensor<?x16xf8E4M3FN>
  return %0 : tensor<?x16xf8E4M3FN>
}

// -----

// transpose writes the codes of a 2-D input transposed.
// CHECK-LABEL: func.func @quantize_transposed
// CHECK:         %{{.*}} = fp8.quantize "x" %arg0, %arg1 transpose : tensor<4x16xbf16> -> tensor<16x4xf8E5M2>
func.func @quantize_transposed(%x: tensor<4x16xbf16>, %scale: tensor<f32>) -> tensor<16x4xf8E5M2> {
  %0 = fp8.quantize "x" %x, %scale transpose : tensor<4x16xbf16> -> tensor<16x4xf8E5M2>
  return %0 : tensor<16x4xf8E5M2>
}

// -----

func.func @transpose_shape(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<4x16xf8E4M3FN> {
  // expected-error @+1 {{with transpose has result shape [4, 16], expected [16, 4] (the input's shape swapped)}}
  %0 = fp8.quantize "x" %x, %scale transpose : tensor<4x16xf32> -> tensor<4x16xf8E4M3FN>
  return %0 : tensor<4x16xf8E4M3FN>
}

// -----

func.func @transpose_rank(%x: tensor<2x4x16xf32>, %scale: tensor<f32>) -> tensor<2x16x4xf8E4M3FN> {
  // expected-error @+1 {{transposes only 2-D inputs, got [2, 4, 16]; reshape it to rows x columns first}}
  %0 = fp8.quantize "x" %x, %scale transpose : tensor<2x4x16xf32> -> tensor<2x16x4xf8E4M3FN>
  return %0 : tensor<2x16x4xf8E4M3FN>
}

// -----

func.func @to_bf16(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{quantizes to f8E4M3FN or f8E5M2, got 'bf16'; for other types use a plain cast}}
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf32> -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Other 8-bit float formats are not what the GEMMs take.
func.func @to_f8E4M3FNUZ(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<4x16xf8E4M3FNUZ> {
  // expected-error @+1 {{quantizes to f8E4M3FN or f8E5M2, got 'f8E4M3FNUZ'}}
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf32> -> tensor<4x16xf8E4M3FNUZ>
  return %0 : tensor<4x16xf8E4M3FNUZ>
}

// -----

func.func @to_i8(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<4x16xi8> {
  // expected-error @+1 {{quantizes to f8E4M3FN or f8E5M2, got 'i8'}}
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf32> -> tensor<4x16xi8>
  return %0 : tensor<4x16xi8>
}

// -----

func.func @shape(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<4x8xf8E4M3FN> {
  // expected-error @+1 {{result shape [4, 8] must equal the input shape [4, 16]}}
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf32> -> tensor<4x8xf8E4M3FN>
  return %0 : tensor<4x8xf8E4M3FN>
}

// -----

func.func @rank(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<64xf8E4M3FN> {
  // expected-error @+1 {{result shape [64] must equal the input shape [4, 16]}}
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf32> -> tensor<64xf8E4M3FN>
  return %0 : tensor<64xf8E4M3FN>
}

// -----

func.func @no_layer(%x: tensor<4x16xf32>, %scale: tensor<f32>) -> tensor<4x16xf8E4M3FN> {
  // expected-error @+1 {{needs the name of the layer it scales (e.g. "h.3.mlp.fc"), got an empty string}}
  %0 = fp8.quantize "" %x, %scale : tensor<4x16xf32> -> tensor<4x16xf8E4M3FN>
  return %0 : tensor<4x16xf8E4M3FN>
}

// -----

func.func @fp8_input(%x: tensor<4x16xf8E5M2>, %scale: tensor<f32>) -> tensor<4x16xf8E4M3FN> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x16xf8E5M2>'}}
  %0 = fp8.quantize "x" %x, %scale : tensor<4x16xf8E5M2> -> tensor<4x16xf8E4M3FN>
  return %0 : tensor<4x16xf8E4M3FN>
}

// -----

// The custom form implies tensor<f32> for the scale; the generic form can
// give another type.
func.func @scale_type(%x: tensor<4x16xf32>, %scale: tensor<4xf32>) -> tensor<4x16xf8E4M3FN> {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit float values, but got 'tensor<4xf32>'}}
  %0 = "fp8.quantize"(%x, %scale) <{layer = "x"}> : (tensor<4x16xf32>, tensor<4xf32>) -> tensor<4x16xf8E4M3FN>
  return %0 : tensor<4x16xf8E4M3FN>
}
