// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @dequantize
// CHECK:         %{{.*}} = fp8.dequantize "h.0.mlp.fc" %arg0, %arg2 : tensor<?x8x16xf8E4M3FN> -> tensor<?x8x16xbf16>
// CHECK:         %{{.*}} = fp8.dequantize "h.0.mlp.fc.grad" %arg1, %arg2 : tensor<4x64xf8E5M2> -> tensor<4x64xf32>
// CHECK:         %{{.*}} = fp8.dequantize "x" %arg1, %arg2 : tensor<4x64xf8E5M2> -> tensor<?x64xf16>
func.func @dequantize(%q: tensor<?x8x16xf8E4M3FN>, %g: tensor<4x64xf8E5M2>, %scale: tensor<f32>) -> (tensor<?x8x16xbf16>, tensor<4x64xf32>, tensor<?x64xf16>) {
  %0 = fp8.dequantize "h.0.mlp.fc" %q, %scale : tensor<?x8x16xf8E4M3FN> -> tensor<?x8x16xbf16>
  %1 = fp8.dequantize "h.0.mlp.fc.grad" %g, %scale : tensor<4x64xf8E5M2> -> tensor<4x64xf32>
  %2 = fp8.dequantize "x" %g, %scale : tensor<4x64xf8E5M2> -> tensor<?x64xf16>
  return %0, %1, %2 : tensor<?x8x16xbf16>, tensor<4x64xf32>, tensor<?x64xf16>
}

// -----

func.func @from_bf16(%x: tensor<4x16xbf16>, %scale: tensor<f32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dequantizes f8E4M3FN or f8E5M2, got 'bf16'}}
  %0 = fp8.dequantize "x" %x, %scale : tensor<4x16xbf16> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @from_i8(%x: tensor<4x16xi8>, %scale: tensor<f32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dequantizes f8E4M3FN or f8E5M2, got 'i8'}}
  %0 = fp8.dequantize "x" %x, %scale : tensor<4x16xi8> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @shape(%q: tensor<4x16xf8E4M3FN>, %scale: tensor<f32>) -> tensor<16x4xbf16> {
  // expected-error @+1 {{result shape [16, 4] must equal the input shape [4, 16]}}
  %0 = fp8.dequantize "x" %q, %scale : tensor<4x16xf8E4M3FN> -> tensor<16x4xbf16>
  return %0 : tensor<16x4xbf16>
}

// -----

func.func @no_layer(%q: tensor<4x16xf8E4M3FN>, %scale: tensor<f32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{needs the name of the layer it scales (e.g. "h.3.mlp.fc"), got an empty string}}
  %0 = fp8.dequantize "" %q, %scale : tensor<4x16xf8E4M3FN> -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

func.func @to_fp8(%q: tensor<4x16xf8E4M3FN>, %scale: tensor<f32>) -> tensor<4x16xf8E5M2> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x16xf8E5M2>'}}
  %0 = fp8.dequantize "x" %q, %scale : tensor<4x16xf8E4M3FN> -> tensor<4x16xf8E5M2>
  return %0 : tensor<4x16xf8E5M2>
}

// -----

func.func @to_f64(%q: tensor<4x16xf8E4M3FN>, %scale: tensor<f32>) -> tensor<4x16xf64> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x16xf64>'}}
  %0 = fp8.dequantize "x" %q, %scale : tensor<4x16xf8E4M3FN> -> tensor<4x16xf64>
  return %0 : tensor<4x16xf64>
}

// -----

func.func @scale_type(%q: tensor<4x16xf8E4M3FN>, %scale: tensor<f16>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit float values, but got 'tensor<f16>'}}
  %0 = "fp8.dequantize"(%q, %scale) <{layer = "x"}> : (tensor<4x16xf8E4M3FN>, tensor<f16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}
