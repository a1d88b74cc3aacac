// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @mul
// CHECK:         %{{.*}} = gpt.mul "attn.scale" %arg0 by 5.000000e-01 : tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.mul "neg" %arg0 by -2.000000e+00 : tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.mul "zero" %arg0 by 0.000000e+00 : tensor<?x8x16xf32>
func.func @mul(%x: tensor<?x8x16xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  %0 = gpt.mul "attn.scale" %x by 0.5 : tensor<?x8x16xf32>
  %1 = gpt.mul "neg" %x by -2.0 : tensor<?x8x16xf32>
  %2 = gpt.mul "zero" %x by 0.0 : tensor<?x8x16xf32>
  return %0, %1, %2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @mul_bf16
// CHECK:         %{{.*}} = gpt.mul "x" %arg0 by 0.35355339059327379 : tensor<4xbf16>
func.func @mul_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = gpt.mul "x" %x by 0.35355339059327379 : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @infinite(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{scale must be a finite number}}
  %0 = gpt.mul "x" %x by 0x7FF0000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @nan(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{scale must be a finite number}}
  %0 = gpt.mul "x" %x by 0x7FF8000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.mul "" %x by 2.0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The custom form has one type; the generic form can give two.
func.func @result_type(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "gpt.mul"(%x) <{layer = "x", scale = 2.0 : f64}> : (tensor<4xf32>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @f32_scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "gpt.mul"(%x) <{layer = "x", scale = 2.0 : f32}> : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @integer(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = gpt.mul "x" %x by 2.0 : tensor<4xi32>
  return %0 : tensor<4xi32>
}
