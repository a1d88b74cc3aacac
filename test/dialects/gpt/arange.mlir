// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @arange
// CHECK:         %{{.*}} = gpt.arange "wpe" : tensor<1024xi32>
// CHECK:         %{{.*}} = gpt.arange "pos" : tensor<1xi32>
func.func @arange() -> (tensor<1024xi32>, tensor<1xi32>) {
  %0 = gpt.arange "wpe" : tensor<1024xi32>
  %1 = gpt.arange "pos" : tensor<1xi32>
  return %0, %1 : tensor<1024xi32>, tensor<1xi32>
}

// -----

func.func @dynamic() -> tensor<?xi32> {
  // expected-error @+1 {{needs a static, positive length, got [?]}}
  %0 = gpt.arange "wpe" : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @empty() -> tensor<0xi32> {
  // expected-error @+1 {{needs a static, positive length, got [0]}}
  %0 = gpt.arange "wpe" : tensor<0xi32>
  return %0 : tensor<0xi32>
}

// -----

func.func @no_layer() -> tensor<8xi32> {
  // expected-error @+1 {{needs the name of the layer it belongs to (e.g. "h.3.mlp.fc"), got an empty string}}
  %0 = gpt.arange "" : tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @i64() -> tensor<8xi64> {
  // expected-error @+1 {{result #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<8xi64>'}}
  %0 = gpt.arange "wpe" : tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

func.func @two_d() -> tensor<2x8xi32> {
  // expected-error @+1 {{result #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<2x8xi32>'}}
  %0 = gpt.arange "wpe" : tensor<2x8xi32>
  return %0 : tensor<2x8xi32>
}
