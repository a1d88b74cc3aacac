// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

rt.arena @act activations size = 1024

// A view may end exactly at the end of its arena; sub-byte and 8-bit
// elements take one byte each.
// CHECK-LABEL: func.func @view
// CHECK:         %{{.*}} = rt.view @act[0] : memref<16x8xf32>
// CHECK:         %{{.*}} = rt.view @act[512] : memref<16x8xf32>
// CHECK:         %{{.*}} = rt.view @act[1022] : memref<bf16>
// CHECK:         %{{.*}} = rt.view @act[1023] : memref<1xf8E4M3FN>
// CHECK:         %{{.*}} = rt.view @act[3] : memref<8xi1>
func.func @view() {
  %0 = rt.view @act[0] : memref<16x8xf32>
  %1 = rt.view @act[512] : memref<16x8xf32>
  %2 = rt.view @act[1022] : memref<bf16>
  %3 = rt.view @act[1023] : memref<1xf8E4M3FN>
  %4 = rt.view @act[3] : memref<8xi1>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @negative_offset() {
  // expected-error @+1 {{offset -4 must be a non-negative multiple of the element size (4 bytes)}}
  %0 = rt.view @act[-4] : memref<4xf32>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @misaligned() {
  // expected-error @+1 {{offset 2 must be a non-negative multiple of the element size (4 bytes)}}
  %0 = rt.view @act[2] : memref<4xf32>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @index_elements() {
  // expected-error @+1 {{element type 'index' has no size in bytes; a view holds integers or floats}}
  %0 = rt.view @act[0] : memref<4xindex>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @vector_elements() {
  // expected-error @+1 {{element type 'vector<4xf32>' has no size in bytes}}
  %0 = rt.view @act[0] : memref<4xvector<4xf32>>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @zero_width_elements() {
  // expected-error @+1 {{element type 'i0' has no size in bytes}}
  %0 = rt.view @act[0] : memref<4xi0>
  return
}

// -----

func.func @missing_arena() {
  // expected-error @+1 {{refers to @act, which is not an rt.arena in this module}}
  %0 = rt.view @act[0] : memref<4xf32>
  return
}

// -----

gpt.param @act : tensor<4xf32> init <zeros> layer "x"

func.func @not_an_arena() {
  // expected-error @+1 {{refers to @act, which is not an rt.arena in this module}}
  %0 = rt.view @act[0] : memref<4xf32>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @past_the_end() {
  // expected-error @+1 {{view of 512 bytes at offset 516 runs past the end of arena @act (1024 bytes)}}
  %0 = rt.view @act[516] : memref<16x8xf32>
  return
}

// -----

rt.arena @small activations size = 8

func.func @larger_than_arena() {
  // expected-error @+1 {{view of 16 bytes at offset 0 runs past the end of arena @small (8 bytes)}}
  %0 = rt.view @small[0] : memref<4xf32>
  return
}

// -----

// offset + size does not fit in 64 bits.
rt.arena @act activations size = 1024

func.func @overflow() {
  // expected-error @+1 {{view of 16 bytes at offset 9223372036854775800 runs past the end of arena @act (1024 bytes)}}
  %0 = rt.view @act[9223372036854775800] : memref<4xf32>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @dynamic_shape() {
  // expected-error @+1 {{result #0 must be statically shaped memref with identity layout, but got 'memref<?x8xf32>'}}
  %0 = rt.view @act[0] : memref<?x8xf32>
  return
}

// -----

rt.arena @act activations size = 1024

func.func @strided_layout() {
  // expected-error @+1 {{result #0 must be statically shaped memref with identity layout, but got 'memref<4x4xf32, strided<[8, 1]>>'}}
  %0 = rt.view @act[0] : memref<4x4xf32, strided<[8, 1]>>
  return
}
