// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @concat
// CHECK:         %{{.*}} = gpt.concat "h.0.attn" %arg0, %arg1, %arg0 along 2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x48xf32>
// CHECK:         %{{.*}} = gpt.concat "one" %arg0 along 1 : tensor<?x8x16xf32> -> tensor<?x8x16xf32>
func.func @concat(%a: tensor<?x8x16xf32>, %b: tensor<?x8x16xf32>) -> (tensor<?x8x48xf32>, tensor<?x8x16xf32>) {
  %0 = gpt.concat "h.0.attn" %a, %b, %a along 2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x48xf32>
  %1 = gpt.concat "one" %a along 1 : tensor<?x8x16xf32> -> tensor<?x8x16xf32>
  return %0, %1 : tensor<?x8x48xf32>, tensor<?x8x16xf32>
}

// -----

// A dynamic input size makes the total dynamic; uneven parts are fine.
// CHECK-LABEL: func.func @concat_dynamic
// CHECK:         %{{.*}} = gpt.concat "x" %arg0, %arg1 along 0 : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x8xbf16>
// CHECK:         %{{.*}} = gpt.concat "x" %arg1, %arg2 along 1 : tensor<4x8xbf16>, tensor<4x24xbf16> -> tensor<4x32xbf16>
func.func @concat_dynamic(%a: tensor<?x8xbf16>, %b: tensor<4x8xbf16>, %c: tensor<4x24xbf16>) -> (tensor<?x8xbf16>, tensor<4x32xbf16>) {
  %0 = gpt.concat "x" %a, %b along 0 : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x8xbf16>
  %1 = gpt.concat "x" %b, %c along 1 : tensor<4x8xbf16>, tensor<4x24xbf16> -> tensor<4x32xbf16>
  return %0, %1 : tensor<?x8xbf16>, tensor<4x32xbf16>
}

// -----

func.func @axis_too_large(%a: tensor<?x8x16xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{axis 3 is out of range for a 3-D result}}
  %0 = gpt.concat "x" %a, %a along 3 : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @negative_axis(%a: tensor<?x8x16xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{axis -1 is out of range for a 3-D result}}
  %0 = gpt.concat "x" %a, %a along -1 : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

// The custom form needs at least one input to parse; the generic form does not.
func.func @no_inputs() -> tensor<4xf32> {
  // expected-error @+1 {{needs at least one input}}
  %0 = "gpt.concat"() <{axis = 0 : i64, layer = "x"}> : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @other_dimension(%a: tensor<?x8x16xf32>, %b: tensor<?x4x16xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{input shape [?, 4, 16] must match the result [?, 8, 32] in every dimension but 2}}
  %0 = gpt.concat "x" %a, %b along 2 : tensor<?x8x16xf32>, tensor<?x4x16xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @input_rank(%a: tensor<?x8x16xf32>, %b: tensor<8x16xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{input shape [8, 16] must match the result [?, 8, 32] in every dimension but 2}}
  %0 = gpt.concat "x" %a, %b along 2 : tensor<?x8x16xf32>, tensor<8x16xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @input_element_type(%a: tensor<?x8x16xf32>, %b: tensor<?x8x16xbf16>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{input element type 'bf16' differs from 'f32'}}
  %0 = gpt.concat "x" %a, %b along 2 : tensor<?x8x16xf32>, tensor<?x8x16xbf16> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @wrong_total(%a: tensor<?x8x16xf32>) -> tensor<?x8x48xf32> {
  // expected-error @+1 {{result dimension 2 is 48 but the inputs add up to 32}}
  %0 = gpt.concat "x" %a, %a along 2 : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

func.func @no_layer(%a: tensor<?x8x16xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.concat "" %a, %a along 2 : tensor<?x8x16xf32>, tensor<?x8x16xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @integer(%a: tensor<8x16xi32>) -> tensor<8x32xi32> {
  // expected-error @+1 {{operand #0 must be variadic of ranked tensor of floating-point values, but got 'tensor<8x16xi32>'}}
  %0 = gpt.concat "x" %a, %a along 1 : tensor<8x16xi32>, tensor<8x16xi32> -> tensor<8x32xi32>
  return %0 : tensor<8x32xi32>
}
