// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @add
// CHECK:         %{{.*}} = gpt.add "h.0.res" %arg0, %arg0 : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.add "bias" %arg0, %arg1 : tensor<?x8x16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.add "wpe" %arg0, %arg2 : tensor<?x8x16xf32>, tensor<8x16xf32> -> tensor<?x8x16xf32>
func.func @add(%x: tensor<?x8x16xf32>, %b: tensor<16xf32>, %p: tensor<8x16xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  %0 = gpt.add "h.0.res" %x, %x : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x16xf32>
  %1 = gpt.add "bias" %x, %b : tensor<?x8x16xf32>, tensor<16xf32> -> tensor<?x8x16xf32>
  %2 = gpt.add "wpe" %x, %p : tensor<?x8x16xf32>, tensor<8x16xf32> -> tensor<?x8x16xf32>
  return %0, %1, %2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

// A dynamic rhs dimension is compatible; so is a scalar rhs.
// CHECK-LABEL: func.func @add_dynamic
// CHECK:         %{{.*}} = gpt.add "x" %arg0, %arg1 : tensor<4x16xbf16>, tensor<?x16xbf16> -> tensor<4x16xbf16>
// CHECK:         %{{.*}} = gpt.add "x" %arg0, %arg2 : tensor<4x16xbf16>, tensor<bf16> -> tensor<4x16xbf16>
func.func @add_dynamic(%x: tensor<4x16xbf16>, %y: tensor<?x16xbf16>, %s: tensor<bf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %0 = gpt.add "x" %x, %y : tensor<4x16xbf16>, tensor<?x16xbf16> -> tensor<4x16xbf16>
  %1 = gpt.add "x" %x, %s : tensor<4x16xbf16>, tensor<bf16> -> tensor<4x16xbf16>
  return %0, %1 : tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// f32 and bf16 storage mix freely (gpt-bf16-kernels): the kernel widens
// bf16 operands and rounds a bf16 result once.
// CHECK-LABEL: func.func @add_mixed_storage
// CHECK:         gpt.add "res" %arg0, %arg1 : tensor<4x16xbf16>, tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:         gpt.add "bias" %arg1, %arg2 : tensor<4x16xf32>, tensor<16xbf16> -> tensor<4x16xf32>
func.func @add_mixed_storage(%x: tensor<4x16xbf16>, %y: tensor<4x16xf32>, %b: tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xf32>) {
  %0 = gpt.add "res" %x, %y : tensor<4x16xbf16>, tensor<4x16xf32> -> tensor<4x16xbf16>
  %1 = gpt.add "bias" %y, %b : tensor<4x16xf32>, tensor<16xbf16> -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xbf16>, tensor<4x16xf32>
}

// -----

func.func @rhs_rank(%x: tensor<8x16xf32>, %y: tensor<2x8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{rhs shape [2, 8, 16] must equal lhs shape [8, 16] or a suffix of it (broadcast over leading dimensions)}}
  %0 = gpt.add "x" %x, %y : tensor<8x16xf32>, tensor<2x8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// Broadcasting is over leading dimensions only: [8] is not a suffix of [8, 16].
func.func @rhs_not_suffix(%x: tensor<8x16xf32>, %y: tensor<8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{rhs shape [8] must equal lhs shape [8, 16] or a suffix of it}}
  %0 = gpt.add "x" %x, %y : tensor<8x16xf32>, tensor<8xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @result_type(%x: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{result shape [?, 16] must equal the lhs shape [8, 16]}}
  %0 = gpt.add "x" %x, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @rhs_element_type(%x: tensor<8x16xf32>, %y: tensor<16xf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{rhs element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %0 = gpt.add "x" %x, %y : tensor<8x16xf32>, tensor<16xf16> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @result_element_type(%x: tensor<8x16xf32>) -> tensor<8x16xf16> {
  // expected-error @+1 {{result element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %0 = gpt.add "x" %x, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf16>
  return %0 : tensor<8x16xf16>
}

// -----

func.func @no_layer(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.add "" %x, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @integer(%x: tensor<8x16xi32>) -> tensor<8x16xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<8x16xi32>'}}
  %0 = gpt.add "x" %x, %x : tensor<8x16xi32>, tensor<8x16xi32> -> tensor<8x16xi32>
  return %0 : tensor<8x16xi32>
}
