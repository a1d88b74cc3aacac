// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @embedding
// CHECK:         %{{.*}} = gpt.embedding "wte" %arg0[%arg1] : tensor<64x16xf32>, tensor<?x8xi32> -> tensor<?x8x16xf32>
func.func @embedding(%table: tensor<64x16xf32>, %ids: tensor<?x8xi32>) -> tensor<?x8x16xf32> {
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xf32>, tensor<?x8xi32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

// Positions: 1-D ids, a bf16 table.
// CHECK-LABEL: func.func @embedding_positions
// CHECK:         %{{.*}} = gpt.embedding "wpe" %arg0[%arg1] : tensor<32x16xbf16>, tensor<8xi32> -> tensor<8x16xbf16>
func.func @embedding_positions(%table: tensor<32x16xbf16>, %pos: tensor<8xi32>) -> tensor<8x16xbf16> {
  %0 = gpt.embedding "wpe" %table[%pos] : tensor<32x16xbf16>, tensor<8xi32> -> tensor<8x16xbf16>
  return %0 : tensor<8x16xbf16>
}

// -----

// A dynamic result dimension is compatible with a static one.
// CHECK-LABEL: func.func @embedding_dynamic_result
// CHECK:         %{{.*}} = gpt.embedding "wte" %arg0[%arg1] : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<?x8x16xf32>
func.func @embedding_dynamic_result(%table: tensor<64x16xf32>, %ids: tensor<4x8xi32>) -> tensor<?x8x16xf32> {
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xf32>, tensor<4x8xi32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @table_1d(%table: tensor<64xf32>, %ids: tensor<?x8xi32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{table must be 2-D [rows, width], got [64]}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64xf32>, tensor<?x8xi32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @table_3d(%table: tensor<2x64x16xf32>, %ids: tensor<?x8xi32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{table must be 2-D [rows, width], got [2, 64, 16]}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<2x64x16xf32>, tensor<?x8xi32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @wrong_width(%table: tensor<64x16xf32>, %ids: tensor<?x8xi32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{result shape [?, 8, 32] does not match ids shape + table width [?, 8, 16]}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xf32>, tensor<?x8xi32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @wrong_rank(%table: tensor<64x16xf32>, %ids: tensor<?x8xi32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{result shape [?, 16] does not match ids shape + table width [?, 8, 16]}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xf32>, tensor<?x8xi32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @wrong_element_type(%table: tensor<64x16xf32>, %ids: tensor<?x8xi32>) -> tensor<?x8x16xbf16> {
  // expected-error @+1 {{result element type 'bf16' differs from 'f32'}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xf32>, tensor<?x8xi32> -> tensor<?x8x16xbf16>
  return %0 : tensor<?x8x16xbf16>
}

// -----

func.func @no_layer(%table: tensor<64x16xf32>, %ids: tensor<?x8xi32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.embedding "" %table[%ids] : tensor<64x16xf32>, tensor<?x8xi32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @i64_ids(%table: tensor<64x16xf32>, %ids: tensor<?x8xi64>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x8xi64>'}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xf32>, tensor<?x8xi64> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @integer_table(%table: tensor<64x16xi32>, %ids: tensor<?x8xi32>) -> tensor<?x8x16xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<64x16xi32>'}}
  %0 = gpt.embedding "wte" %table[%ids] : tensor<64x16xi32>, tensor<?x8xi32> -> tensor<?x8x16xi32>
  return %0 : tensor<?x8x16xi32>
}
