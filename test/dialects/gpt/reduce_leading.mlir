// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The gradients of a bias add (down to the width) and of the position
// embedding add (down to [seq, width]); a suffix of the full shape keeps it.
// CHECK-LABEL: func.func @reduce_leading
// CHECK:         %{{.*}} = gpt.reduce_leading "fc" %arg0 : tensor<?x4x24xf32> -> tensor<24xf32>
// CHECK:         %{{.*}} = gpt.reduce_leading "embed" %arg0 : tensor<?x4x24xf32> -> tensor<4x24xf32>
// CHECK:         %{{.*}} = gpt.reduce_leading "same" %arg0 : tensor<?x4x24xf32> -> tensor<?x4x24xf32>
// CHECK:         %{{.*}} = gpt.reduce_leading "all" %arg0 : tensor<?x4x24xf32> -> tensor<f32>
func.func @reduce_leading(%x: tensor<?x4x24xf32>) -> (tensor<24xf32>, tensor<4x24xf32>, tensor<?x4x24xf32>, tensor<f32>) {
  %0 = gpt.reduce_leading "fc" %x : tensor<?x4x24xf32> -> tensor<24xf32>
  %1 = gpt.reduce_leading "embed" %x : tensor<?x4x24xf32> -> tensor<4x24xf32>
  %2 = gpt.reduce_leading "same" %x : tensor<?x4x24xf32> -> tensor<?x4x24xf32>
  %3 = gpt.reduce_leading "all" %x : tensor<?x4x24xf32> -> tensor<f32>
  return %0, %1, %2, %3 : tensor<24xf32>, tensor<4x24xf32>, tensor<?x4x24xf32>, tensor<f32>
}

// -----

// Dynamic sizes are compatible with static ones either way; bf16.
// CHECK-LABEL: func.func @reduce_leading_dynamic
// CHECK:         %{{.*}} = gpt.reduce_leading "fc" %arg0 : tensor<2x4x?xbf16> -> tensor<16xbf16>
// CHECK:         %{{.*}} = gpt.reduce_leading "fc" %arg1 : tensor<2x4x16xbf16> -> tensor<?x?xbf16>
func.func @reduce_leading_dynamic(%x: tensor<2x4x?xbf16>, %y: tensor<2x4x16xbf16>) -> (tensor<16xbf16>, tensor<?x?xbf16>) {
  %0 = gpt.reduce_leading "fc" %x : tensor<2x4x?xbf16> -> tensor<16xbf16>
  %1 = gpt.reduce_leading "fc" %y : tensor<2x4x16xbf16> -> tensor<?x?xbf16>
  return %0, %1 : tensor<16xbf16>, tensor<?x?xbf16>
}

// -----

// The width is summed away but a middle dimension kept: not a suffix.
func.func @not_suffix(%x: tensor<?x4x24xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result shape [4] must be a suffix of the input shape [?, 4, 24]}}
  %0 = gpt.reduce_leading "fc" %x : tensor<?x4x24xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wrong_width(%x: tensor<?x4x24xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result shape [4, 8] must be a suffix of the input shape [?, 4, 24]}}
  %0 = gpt.reduce_leading "embed" %x : tensor<?x4x24xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @higher_rank(%x: tensor<4x24xf32>) -> tensor<1x4x24xf32> {
  // expected-error @+1 {{result shape [1, 4, 24] must be a suffix of the input shape [4, 24]}}
  %0 = gpt.reduce_leading "fc" %x : tensor<4x24xf32> -> tensor<1x4x24xf32>
  return %0 : tensor<1x4x24xf32>
}

// -----

func.func @element_type(%x: tensor<?x4x24xf32>) -> tensor<24xf16> {
  // expected-error @+1 {{result element type 'f16' differs from 'f32'; only f32 and bf16 storage may mix}}
  %0 = gpt.reduce_leading "fc" %x : tensor<?x4x24xf32> -> tensor<24xf16>
  return %0 : tensor<24xf16>
}

// -----

// A bf16 input summed into a bf16 result (gpt-bf16-kernels): f32 sums,
// one rounding.
// CHECK-LABEL: func.func @bf16_storage
// CHECK:         gpt.reduce_leading "fc" %arg0 : tensor<4x24xbf16> -> tensor<24xbf16>
func.func @bf16_storage(%x: tensor<4x24xbf16>) -> tensor<24xbf16> {
  %0 = gpt.reduce_leading "fc" %x : tensor<4x24xbf16> -> tensor<24xbf16>
  return %0 : tensor<24xbf16>
}

// -----

func.func @no_layer(%x: tensor<?x4x24xf32>) -> tensor<24xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.reduce_leading "" %x : tensor<?x4x24xf32> -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

func.func @integer(%x: tensor<?x4x24xi32>) -> tensor<24xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<?x4x24xi32>'}}
  %0 = gpt.reduce_leading "fc" %x : tensor<?x4x24xi32> -> tensor<24xi32>
  return %0 : tensor<24xi32>
}
