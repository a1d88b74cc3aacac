// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @transpose
// CHECK:         %{{.*}} = gpt.transpose "h.0.attn" %arg0 perm = [0, 2, 1, 3] : tensor<?x8x4x4xf32> -> tensor<?x4x8x4xf32>
// CHECK:         %{{.*}} = gpt.transpose "id" %arg0 perm = [0, 1, 2, 3] : tensor<?x8x4x4xf32> -> tensor<?x8x4x4xf32>
func.func @transpose(%x: tensor<?x8x4x4xf32>) -> (tensor<?x4x8x4xf32>, tensor<?x8x4x4xf32>) {
  %0 = gpt.transpose "h.0.attn" %x perm = [0, 2, 1, 3] : tensor<?x8x4x4xf32> -> tensor<?x4x8x4xf32>
  %1 = gpt.transpose "id" %x perm = [0, 1, 2, 3] : tensor<?x8x4x4xf32> -> tensor<?x8x4x4xf32>
  return %0, %1 : tensor<?x4x8x4xf32>, tensor<?x8x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_2d
// CHECK:         %{{.*}} = gpt.transpose "w" %arg0 perm = [1, 0] : tensor<48x16xbf16> -> tensor<16x48xbf16>
func.func @transpose_2d(%w: tensor<48x16xbf16>) -> tensor<16x48xbf16> {
  %0 = gpt.transpose "w" %w perm = [1, 0] : tensor<48x16xbf16> -> tensor<16x48xbf16>
  return %0 : tensor<16x48xbf16>
}

// -----

func.func @perm_size(%x: tensor<?x8x16xf32>) -> tensor<?x16x8xf32> {
  // expected-error @+1 {{perm has 2 entries, expected one per input dimension (3)}}
  %0 = gpt.transpose "x" %x perm = [1, 0] : tensor<?x8x16xf32> -> tensor<?x16x8xf32>
  return %0 : tensor<?x16x8xf32>
}

// -----

func.func @perm_out_of_range(%x: tensor<?x8x16xf32>) -> tensor<?x16x8xf32> {
  // expected-error @+1 {{perm must be a permutation of 0..2, got [0, 3, 1]}}
  %0 = gpt.transpose "x" %x perm = [0, 3, 1] : tensor<?x8x16xf32> -> tensor<?x16x8xf32>
  return %0 : tensor<?x16x8xf32>
}

// -----

func.func @perm_negative(%x: tensor<?x8x16xf32>) -> tensor<?x16x8xf32> {
  // expected-error @+1 {{perm must be a permutation of 0..2, got [0, -1, 1]}}
  %0 = gpt.transpose "x" %x perm = [0, -1, 1] : tensor<?x8x16xf32> -> tensor<?x16x8xf32>
  return %0 : tensor<?x16x8xf32>
}

// -----

func.func @perm_repeated(%x: tensor<?x8x16xf32>) -> tensor<?x16x16xf32> {
  // expected-error @+1 {{perm must be a permutation of 0..2, got [0, 2, 2]}}
  %0 = gpt.transpose "x" %x perm = [0, 2, 2] : tensor<?x8x16xf32> -> tensor<?x16x16xf32>
  return %0 : tensor<?x16x16xf32>
}

// -----

func.func @result_shape(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{result shape [?, 8, 16] does not match the permuted input [?, 16, 8]}}
  %0 = gpt.transpose "x" %x perm = [0, 2, 1] : tensor<?x8x16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @element_type(%x: tensor<8x16xf32>) -> tensor<16x8xbf16> {
  // expected-error @+1 {{result element type 'bf16' differs from 'f32'}}
  %0 = gpt.transpose "x" %x perm = [1, 0] : tensor<8x16xf32> -> tensor<16x8xbf16>
  return %0 : tensor<16x8xbf16>
}

// -----

func.func @no_layer(%x: tensor<8x16xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.transpose "" %x perm = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

func.func @integer(%x: tensor<8x16xi32>) -> tensor<16x8xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<8x16xi32>'}}
  %0 = gpt.transpose "x" %x perm = [1, 0] : tensor<8x16xi32> -> tensor<16x8xi32>
  return %0 : tensor<16x8xi32>
}
