// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @split_qkv
// CHECK:         %{{.*}}:3 = gpt.split "h.0.attn" %arg0 along 2 : tensor<?x8x48xf32> -> tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
func.func @split_qkv(%qkv: tensor<?x8x48xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  %0:3 = gpt.split "h.0.attn" %qkv along 2 : tensor<?x8x48xf32> -> tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
  return %0#0, %0#1, %0#2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

// Along a dynamic dimension the parts stay dynamic (or are given statically).
// CHECK-LABEL: func.func @split_dynamic
// CHECK:         %{{.*}}:2 = gpt.split "x" %arg0 along 0 : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<4x8xbf16>
func.func @split_dynamic(%x: tensor<?x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>) {
  %0:2 = gpt.split "x" %x along 0 : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<4x8xbf16>
  return %0#0, %0#1 : tensor<?x8xbf16>, tensor<4x8xbf16>
}

// -----

// Parts are equal even when the input dimension is dynamic.
func.func @unequal_dynamic_parts(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<4x8xf32>, tensor<6x8xf32>) {
  // expected-error @+1 {{each result must have shape [4, 8], got [6, 8]}}
  %0:3 = gpt.split "x" %x along 0 : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<4x8xf32>, tensor<6x8xf32>
  return %0#0, %0#1, %0#2 : tensor<?x8xf32>, tensor<4x8xf32>, tensor<6x8xf32>
}

// -----

func.func @axis_too_large(%x: tensor<?x8x48xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  // expected-error @+1 {{axis 3 is out of range for a 3-D input}}
  %0:3 = gpt.split "x" %x along 3 : tensor<?x8x48xf32> -> tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
  return %0#0, %0#1, %0#2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

func.func @negative_axis(%x: tensor<?x8x48xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  // expected-error @+1 {{axis -1 is out of range for a 3-D input}}
  %0:3 = gpt.split "x" %x along -1 : tensor<?x8x48xf32> -> tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
  return %0#0, %0#1, %0#2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

func.func @one_result(%x: tensor<?x8x48xf32>) -> tensor<?x8x48xf32> {
  // expected-error @+1 {{needs at least 2 results, got 1}}
  %0 = gpt.split "x" %x along 2 : tensor<?x8x48xf32> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

func.func @no_results(%x: tensor<?x8x48xf32>) {
  // expected-error @+1 {{needs at least 2 results, got 0}}
  "gpt.split"(%x) <{axis = 2 : i64, layer = "x"}> : (tensor<?x8x48xf32>) -> ()
  return
}

// -----

func.func @uneven(%x: tensor<?x8x48xf32>) -> (tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>) {
  // expected-error @+1 {{dimension 2 of size 48 does not split into 5 equal parts}}
  %0:5 = gpt.split "x" %x along 2 : tensor<?x8x48xf32> -> tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>
  return %0#0, %0#1, %0#2, %0#3, %0#4 : tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>, tensor<?x8x10xf32>
}

// -----

func.func @result_shape(%x: tensor<?x8x48xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x32xf32>) {
  // expected-error @+1 {{each result must have shape [?, 8, 24], got [?, 8, 16]}}
  %0:2 = gpt.split "x" %x along 2 : tensor<?x8x48xf32> -> tensor<?x8x16xf32>, tensor<?x8x32xf32>
  return %0#0, %0#1 : tensor<?x8x16xf32>, tensor<?x8x32xf32>
}

// -----

func.func @result_rank(%x: tensor<?x8x48xf32>) -> (tensor<?x8x24xf32>, tensor<8x24xf32>) {
  // expected-error @+1 {{each result must have shape [?, 8, 24], got [8, 24]}}
  %0:2 = gpt.split "x" %x along 2 : tensor<?x8x48xf32> -> tensor<?x8x24xf32>, tensor<8x24xf32>
  return %0#0, %0#1 : tensor<?x8x24xf32>, tensor<8x24xf32>
}

// -----

func.func @result_element_type(%x: tensor<?x8x48xf32>) -> (tensor<?x8x24xf32>, tensor<?x8x24xbf16>) {
  // expected-error @+1 {{result element type 'bf16' differs from 'f32'}}
  %0:2 = gpt.split "x" %x along 2 : tensor<?x8x48xf32> -> tensor<?x8x24xf32>, tensor<?x8x24xbf16>
  return %0#0, %0#1 : tensor<?x8x24xf32>, tensor<?x8x24xbf16>
}

// -----

func.func @no_layer(%x: tensor<?x8x48xf32>) -> (tensor<?x8x24xf32>, tensor<?x8x24xf32>) {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0:2 = gpt.split "" %x along 2 : tensor<?x8x48xf32> -> tensor<?x8x24xf32>, tensor<?x8x24xf32>
  return %0#0, %0#1 : tensor<?x8x24xf32>, tensor<?x8x24xf32>
}

// -----

func.func @integer(%x: tensor<8x48xi32>) -> (tensor<8x24xi32>, tensor<8x24xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<8x48xi32>'}}
  %0:2 = gpt.split "x" %x along 1 : tensor<8x48xi32> -> tensor<8x24xi32>, tensor<8x24xi32>
  return %0#0, %0#1 : tensor<8x24xi32>, tensor<8x24xi32>
}
