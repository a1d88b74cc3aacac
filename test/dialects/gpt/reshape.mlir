// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @reshape
// CHECK:         %{{.*}} = gpt.reshape "h.0.attn" %arg0 : tensor<?x8x16xf32> -> tensor<?x8x4x4xf32>
// CHECK:         %{{.*}} = gpt.reshape "flat" %arg0 : tensor<?x8x16xf32> -> tensor<?x16xf32>
func.func @reshape(%x: tensor<?x8x16xf32>) -> (tensor<?x8x4x4xf32>, tensor<?x16xf32>) {
  %0 = gpt.reshape "h.0.attn" %x : tensor<?x8x16xf32> -> tensor<?x8x4x4xf32>
  %1 = gpt.reshape "flat" %x : tensor<?x8x16xf32> -> tensor<?x16xf32>
  return %0, %1 : tensor<?x8x4x4xf32>, tensor<?x16xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_static
// CHECK:         %{{.*}} = gpt.reshape "x" %arg0 : tensor<4x8xbf16> -> tensor<32xbf16>
// CHECK:         %{{.*}} = gpt.reshape "x" %arg1 : tensor<1xbf16> -> tensor<bf16>
func.func @reshape_static(%x: tensor<4x8xbf16>, %y: tensor<1xbf16>) -> (tensor<32xbf16>, tensor<bf16>) {
  %0 = gpt.reshape "x" %x : tensor<4x8xbf16> -> tensor<32xbf16>
  %1 = gpt.reshape "x" %y : tensor<1xbf16> -> tensor<bf16>
  return %0, %1 : tensor<32xbf16>, tensor<bf16>
}

// -----

func.func @element_count(%x: tensor<4x8xf32>) -> tensor<30xf32> {
  // expected-error @+1 {{cannot reshape [4, 8] (32 elements) to [30] (30 elements)}}
  %0 = gpt.reshape "x" %x : tensor<4x8xf32> -> tensor<30xf32>
  return %0 : tensor<30xf32>
}

// -----

func.func @dynamic_to_static(%x: tensor<?x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{a dynamic dimension must stay dynamic: [?, 8] -> [32]}}
  %0 = gpt.reshape "x" %x : tensor<?x8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @static_to_dynamic(%x: tensor<4x8xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{a dynamic dimension must stay dynamic: [4, 8] -> [?]}}
  %0 = gpt.reshape "x" %x : tensor<4x8xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @element_type(%x: tensor<4x8xf32>) -> tensor<32xbf16> {
  // expected-error @+1 {{result element type 'bf16' differs from 'f32'}}
  %0 = gpt.reshape "x" %x : tensor<4x8xf32> -> tensor<32xbf16>
  return %0 : tensor<32xbf16>
}

// -----

func.func @no_layer(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.reshape "" %x : tensor<4x8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @integer(%x: tensor<4x8xi32>) -> tensor<32xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<4x8xi32>'}}
  %0 = gpt.reshape "x" %x : tensor<4x8xi32> -> tensor<32xi32>
  return %0 : tensor<32xi32>
}
