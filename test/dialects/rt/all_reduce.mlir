// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The shapes may differ as long as the element counts match; stream 0 is
// the default and is left out when printed.
// CHECK-LABEL: func.func @all_reduce
// CHECK:         rt.all_reduce sum %arg0, %arg1 stream = 1 : memref<16x8xf32>, memref<16x8xf32>
// CHECK:         rt.all_reduce avg %arg0, %arg0 : memref<16x8xf32>, memref<16x8xf32>
// CHECK:         rt.all_reduce max %arg0, %arg2 : memref<16x8xf32>, memref<128xf32>
func.func @all_reduce(%x: memref<16x8xf32>, %y: memref<16x8xf32>, %z: memref<128xf32>) {
  rt.all_reduce sum %x, %y stream = 1 : memref<16x8xf32>, memref<16x8xf32>
  rt.all_reduce avg %x, %x stream = 0 : memref<16x8xf32>, memref<16x8xf32>
  rt.all_reduce max %x, %z : memref<16x8xf32>, memref<128xf32>
  return
}

// -----

func.func @element_count(%x: memref<16x8xf32>, %y: memref<8x8xf32>) {
  // expected-error @+1 {{input and output must hold the same number of elements, got 128 and 64}}
  rt.all_reduce sum %x, %y : memref<16x8xf32>, memref<8x8xf32>
  return
}

// -----

func.func @element_type(%x: memref<16x8xf32>, %y: memref<16x8xbf16>) {
  // expected-error @+1 {{input element type 'f32' differs from output element type 'bf16'}}
  rt.all_reduce sum %x, %y : memref<16x8xf32>, memref<16x8xbf16>
  return
}

// -----

func.func @negative_stream(%x: memref<16x8xf32>) {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -2}}
  rt.all_reduce sum %x, %x stream = -2 : memref<16x8xf32>, memref<16x8xf32>
  return
}

// -----

func.func @dynamic(%x: memref<?x8xf32>, %y: memref<16x8xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<?x8xf32>'}}
  rt.all_reduce sum %x, %y : memref<?x8xf32>, memref<16x8xf32>
  return
}

// -----

func.func @unknown_reduction(%x: memref<16x8xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduce' [sum, avg, max]}}
  rt.all_reduce min %x, %x : memref<16x8xf32>, memref<16x8xf32>
  return
}
