// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @gelu
// CHECK: gpt.gelu "h.0.mlp" %{{.*}} : tensor<?x8x16xf32>
func.func @gelu(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  %0 = gpt.gelu "h.0.mlp" %x : tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_bf16
// CHECK: gpt.gelu "h.1.mlp" %{{.*}} {note = "extra"} : tensor<4x64xbf16>
func.func @gelu_bf16(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  %0 = gpt.gelu "h.1.mlp" %x {note = "extra"} : tensor<4x64xbf16>
  return %0 : tensor<4x64xbf16>
}

// -----

// f32 and bf16 storage may mix (gpt-bf16-kernels); the result type is
// printed only when it differs from the input's.
// CHECK-LABEL: func.func @gelu_storage
// CHECK: gpt.gelu "h.1.mlp" %{{.*}} : tensor<4x64xbf16> -> tensor<4x64xf32>
// CHECK: gpt.gelu "h.1.mlp" %{{.*}} : tensor<4x64xf32> -> tensor<4x64xbf16>
func.func @gelu_storage(%x: tensor<4x64xbf16>, %y: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xbf16>) {
  %0 = gpt.gelu "h.1.mlp" %x : tensor<4x64xbf16> -> tensor<4x64xf32>
  %1 = gpt.gelu "h.1.mlp" %y : tensor<4x64xf32> -> tensor<4x64xbf16>
  return %0, %1 : tensor<4x64xf32>, tensor<4x64xbf16>
}

// -----

func.func @gelu_f16_result(%x: tensor<4x16xf32>) -> tensor<4x16xf16> {
  // expected-error @+1 {{result element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %0 = gpt.gelu "mlp" %x : tensor<4x16xf32> -> tensor<4x16xf16>
  return %0 : tensor<4x16xf16>
}

// -----

func.func @gelu_without_layer(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.gelu "" %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The result keeps the input's shape.
func.func @gelu_result_type(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = "gpt.gelu"(%x) <{layer = "mlp"}> : (tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gelu_integer(%x: tensor<4x16xi32>) -> tensor<4x16xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<4x16xi32>'}}
  %0 = gpt.gelu "mlp" %x : tensor<4x16xi32>
  return %0 : tensor<4x16xi32>
}
