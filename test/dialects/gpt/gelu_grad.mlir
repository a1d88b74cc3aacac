// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// One type for result_grad, input and input_grad.
// CHECK-LABEL: func.func @gelu_grad
// CHECK:         %{{.*}} = gpt.gelu_grad "act" %arg0, %arg1 : tensor<?x4x24xf32>
// CHECK:         %{{.*}} = gpt.gelu_grad "h.0.mlp.act" %arg1, %arg1 : tensor<?x4x24xf32>
func.func @gelu_grad(%dy: tensor<?x4x24xf32>, %x: tensor<?x4x24xf32>) -> (tensor<?x4x24xf32>, tensor<?x4x24xf32>) {
  %0 = gpt.gelu_grad "act" %dy, %x : tensor<?x4x24xf32>
  %1 = gpt.gelu_grad "h.0.mlp.act" %x, %x : tensor<?x4x24xf32>
  return %0, %1 : tensor<?x4x24xf32>, tensor<?x4x24xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_grad_types
// CHECK:         %{{.*}} = gpt.gelu_grad "act" %arg0, %arg0 : tensor<f32>
// CHECK:         %{{.*}} = gpt.gelu_grad "act" %arg1, %arg1 : tensor<8x16xbf16>
func.func @gelu_grad_types(%s: tensor<f32>, %b: tensor<8x16xbf16>) -> (tensor<f32>, tensor<8x16xbf16>) {
  %0 = gpt.gelu_grad "act" %s, %s : tensor<f32>
  %1 = gpt.gelu_grad "act" %b, %b : tensor<8x16xbf16>
  return %0, %1 : tensor<f32>, tensor<8x16xbf16>
}

// -----

func.func @no_layer(%x: tensor<?x4x24xf32>) -> tensor<?x4x24xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.gelu_grad "" %x, %x : tensor<?x4x24xf32>
  return %0 : tensor<?x4x24xf32>
}

// -----

// f32 and bf16 storage may mix (gpt-bf16-kernels): after the input's type,
// `, T` is result_grad's and `-> T` input_grad's where they differ.
// CHECK-LABEL: func.func @storage
// CHECK:         gpt.gelu_grad "act" %arg0, %arg1 : tensor<?x4x24xf32>, tensor<?x4x24xbf16>
// CHECK:         gpt.gelu_grad "act" %arg1, %arg0 : tensor<?x4x24xbf16>, tensor<?x4x24xf32>{{$}}
// CHECK:         gpt.gelu_grad "act" %arg0, %arg0 : tensor<?x4x24xbf16> -> tensor<?x4x24xf32>
func.func @storage(%dy: tensor<?x4x24xbf16>, %x: tensor<?x4x24xf32>) -> (tensor<?x4x24xf32>, tensor<?x4x24xbf16>, tensor<?x4x24xf32>) {
  %0 = gpt.gelu_grad "act" %dy, %x : tensor<?x4x24xf32>, tensor<?x4x24xbf16>
  %1 = gpt.gelu_grad "act" %x, %dy : tensor<?x4x24xbf16>, tensor<?x4x24xf32> -> tensor<?x4x24xbf16>
  %2 = gpt.gelu_grad "act" %dy, %dy : tensor<?x4x24xbf16> -> tensor<?x4x24xf32>
  return %0, %1, %2 : tensor<?x4x24xf32>, tensor<?x4x24xbf16>, tensor<?x4x24xf32>
}

// -----

func.func @grad_type(%dy: tensor<?x4x24xf16>, %x: tensor<?x4x24xf32>) -> tensor<?x4x24xf32> {
  // expected-error @+1 {{result_grad element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %0 = gpt.gelu_grad "act" %dy, %x : tensor<?x4x24xf32>, tensor<?x4x24xf16>
  return %0 : tensor<?x4x24xf32>
}

// -----

func.func @result_shape(%x: tensor<?x4x24xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{failed to verify that all of {result_grad, input, input_grad} have same shape}}
  %0 = "gpt.gelu_grad"(%x, %x) <{layer = "act"}> : (tensor<?x4x24xf32>, tensor<?x4x24xf32>) -> tensor<?x4x8xf32>
  return %0 : tensor<?x4x8xf32>
}

// -----

func.func @integer(%x: tensor<?x4x24xi32>) -> tensor<?x4x24xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<?x4x24xi32>'}}
  %0 = gpt.gelu_grad "act" %x, %x : tensor<?x4x24xi32>
  return %0 : tensor<?x4x24xi32>
}
