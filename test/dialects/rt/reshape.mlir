// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Any shape with the same element type and count: flatten, split, to and
// from rank 0, the same shape, chains, and empty buffers.
// CHECK-LABEL: func.func @reshape
// CHECK:         %[[A:.*]] = rt.reshape %arg0 : memref<4x64x128xf32> -> memref<256x128xf32>{{$}}
// CHECK:         %[[B:.*]] = rt.reshape %[[A]] : memref<256x128xf32> -> memref<2x128x2x64xf32>{{$}}
// CHECK:         %{{.*}} = rt.reshape %arg0 : memref<4x64x128xf32> -> memref<4x64x128xf32>{{$}}
// CHECK:         %[[S:.*]] = rt.reshape %arg1 : memref<f32> -> memref<1x1xf32>{{$}}
// CHECK:         %{{.*}} = rt.reshape %[[S]] : memref<1x1xf32> -> memref<f32>{{$}}
// CHECK:         %{{.*}} = rt.reshape %arg2 : memref<4x64xi32> -> memref<256xi32>{{$}}
// CHECK:         %{{.*}} = rt.reshape %arg3 {note = "empty"} : memref<0x8xbf16> -> memref<4x0xbf16>{{$}}
func.func @reshape(%x: memref<4x64x128xf32>, %s: memref<f32>, %t: memref<4x64xi32>, %e: memref<0x8xbf16>) {
  %0 = rt.reshape %x : memref<4x64x128xf32> -> memref<256x128xf32>
  %1 = rt.reshape %0 : memref<256x128xf32> -> memref<2x128x2x64xf32>
  %2 = rt.reshape %x : memref<4x64x128xf32> -> memref<4x64x128xf32>
  %3 = rt.reshape %s : memref<f32> -> memref<1x1xf32>
  %4 = rt.reshape %3 : memref<1x1xf32> -> memref<f32>
  %5 = rt.reshape %t : memref<4x64xi32> -> memref<256xi32>
  %6 = rt.reshape %e {note = "empty"} : memref<0x8xbf16> -> memref<4x0xbf16>
  return
}

// -----

func.func @more_elements(%x: memref<4x8xf32>) {
  // expected-error @+1 {{'rt.reshape' op reinterprets 'memref<4x8xf32>' as 'memref<4x16xf32>'; both must hold the same elements}}
  %0 = rt.reshape %x : memref<4x8xf32> -> memref<4x16xf32>
  return
}

// -----

func.func @fewer_elements(%x: memref<4x8xf32>) {
  // expected-error @+1 {{reinterprets 'memref<4x8xf32>' as 'memref<31xf32>'; both must hold the same elements}}
  %0 = rt.reshape %x : memref<4x8xf32> -> memref<31xf32>
  return
}

// -----

func.func @to_empty(%x: memref<f32>) {
  // expected-error @+1 {{reinterprets 'memref<f32>' as 'memref<0xf32>'; both must hold the same elements}}
  %0 = rt.reshape %x : memref<f32> -> memref<0xf32>
  return
}

// -----

// Same count and the same bytes, but another element type: a bitcast, not a
// reshape.
func.func @element_type(%x: memref<4x8xf32>) {
  // expected-error @+1 {{reinterprets 'memref<4x8xf32>' as 'memref<32xi32>'; both must hold the same elements}}
  %0 = rt.reshape %x : memref<4x8xf32> -> memref<32xi32>
  return
}

// -----

// Same total bytes, other element type and count.
func.func @same_bytes(%x: memref<4x8xf32>) {
  // expected-error @+1 {{reinterprets 'memref<4x8xf32>' as 'memref<64xbf16>'; both must hold the same elements}}
  %0 = rt.reshape %x : memref<4x8xf32> -> memref<64xbf16>
  return
}

// -----

func.func @dynamic_source(%x: memref<?x8xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<?x8xf32>'}}
  %0 = rt.reshape %x : memref<?x8xf32> -> memref<32xf32>
  return
}

// -----

func.func @dynamic_result(%x: memref<4x8xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped memref with identity layout, but got 'memref<?xf32>'}}
  %0 = rt.reshape %x : memref<4x8xf32> -> memref<?xf32>
  return
}

// -----

func.func @strided_source(%x: memref<4x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<4x4xf32, strided<[8, 1]>>'}}
  %0 = rt.reshape %x : memref<4x4xf32, strided<[8, 1]>> -> memref<16xf32>
  return
}

// -----

func.func @strided_result(%x: memref<16xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped memref with identity layout, but got 'memref<4x4xf32, strided<[8, 1]>>'}}
  %0 = rt.reshape %x : memref<16xf32> -> memref<4x4xf32, strided<[8, 1]>>
  return
}
