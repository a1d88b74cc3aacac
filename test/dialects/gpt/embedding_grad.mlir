// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// As gpt-autodiff makes them: the token table from [batch, seq] ids, the
// position table from the arange's [seq] ids.
// CHECK-LABEL: func.func @embedding_grad
// CHECK:         %{{.*}} = gpt.embedding_grad "wte" %arg0, %arg1 : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
// CHECK:         %{{.*}} = gpt.embedding_grad "wpe" %arg2, %arg3 : tensor<4x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
func.func @embedding_grad(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi32>, %dpos: tensor<4x8xf32>, %pos: tensor<4xi32>) -> (tensor<64x8xf32>, tensor<4x8xf32>) {
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
  %1 = gpt.embedding_grad "wpe" %dpos, %pos : tensor<4x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  return %0, %1 : tensor<64x8xf32>, tensor<4x8xf32>
}

// -----

// bf16; 0-D ids (one row of the table); a dynamic width in result_grad.
// CHECK-LABEL: func.func @embedding_grad_forms
// CHECK:         %{{.*}} = gpt.embedding_grad "wte" %arg0, %arg1 : tensor<2x4x16xbf16>, tensor<2x4xi32> -> tensor<100x16xbf16>
// CHECK:         %{{.*}} = gpt.embedding_grad "wte" %arg2, %arg3 : tensor<16xf32>, tensor<i32> -> tensor<100x16xf32>
// CHECK:         %{{.*}} = gpt.embedding_grad "wte" %arg4, %arg1 : tensor<2x4x?xf32>, tensor<2x4xi32> -> tensor<100x16xf32>
func.func @embedding_grad_forms(%dy: tensor<2x4x16xbf16>, %ids: tensor<2x4xi32>, %row: tensor<16xf32>, %id: tensor<i32>, %dyn: tensor<2x4x?xf32>) -> (tensor<100x16xbf16>, tensor<100x16xf32>, tensor<100x16xf32>) {
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<2x4x16xbf16>, tensor<2x4xi32> -> tensor<100x16xbf16>
  %1 = gpt.embedding_grad "wte" %row, %id : tensor<16xf32>, tensor<i32> -> tensor<100x16xf32>
  %2 = gpt.embedding_grad "wte" %dyn, %ids : tensor<2x4x?xf32>, tensor<2x4xi32> -> tensor<100x16xf32>
  return %0, %1, %2 : tensor<100x16xbf16>, tensor<100x16xf32>, tensor<100x16xf32>
}

// -----

func.func @dynamic_rows(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{table_grad must be a static [rows, width], got [?, 8]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @dynamic_width(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi32>) -> tensor<64x?xf32> {
  // expected-error @+1 {{table_grad must be a static [rows, width], got [64, ?]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<64x?xf32>
  return %0 : tensor<64x?xf32>
}

// -----

func.func @table_1d(%dy: tensor<?x4xf32>, %ids: tensor<?x4xi32>) -> tensor<64xf32> {
  // expected-error @+1 {{table_grad must be a static [rows, width], got [64]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4xf32>, tensor<?x4xi32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

func.func @table_3d(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi32>) -> tensor<2x64x8xf32> {
  // expected-error @+1 {{table_grad must be a static [rows, width], got [2, 64, 8]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<2x64x8xf32>
  return %0 : tensor<2x64x8xf32>
}

// -----

func.func @result_grad_width(%dy: tensor<?x4x16xf32>, %ids: tensor<?x4xi32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{result_grad shape [?, 4, 16] must be the ids shape + table width [?, 4, 8]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x16xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}

// -----

func.func @result_grad_rows(%dy: tensor<?x8x8xf32>, %ids: tensor<?x4xi32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{result_grad shape [?, 8, 8] must be the ids shape + table width [?, 4, 8]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x8x8xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}

// -----

// The ids shape without the width: a rank short.
func.func @result_grad_rank(%dy: tensor<?x4xf32>, %ids: tensor<?x4xi32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{result_grad shape [?, 4] must be the ids shape + table width [?, 4, 8]}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}

// -----

func.func @no_layer(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.embedding_grad "" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}

// -----

func.func @i64_ids(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi64>) -> tensor<64x8xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x4xi64>'}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi64> -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}

// -----

func.func @integer_table(%dy: tensor<?x4x8xf32>, %ids: tensor<?x4xi32>) -> tensor<64x8xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of floating-point values, but got 'tensor<64x8xi32>'}}
  %0 = gpt.embedding_grad "wte" %dy, %ids : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<64x8xi32>
  return %0 : tensor<64x8xi32>
}
