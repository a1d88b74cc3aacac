// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Any statically shaped, identity-layout buffer: several ranks (0 included),
// element types and an empty shape; extra attributes survive.
// CHECK-LABEL: func.func @alloc
// CHECK:         %{{.*}} = rt.alloc : memref<4x64x128xf32>{{$}}
// CHECK:         %{{.*}} = rt.alloc : memref<4x64xi32>{{$}}
// CHECK:         %{{.*}} = rt.alloc : memref<f32>{{$}}
// CHECK:         %{{.*}} = rt.alloc : memref<8x16xbf16>{{$}}
// CHECK:         %{{.*}} = rt.alloc : memref<0x8xf32>{{$}}
// CHECK:         %{{.*}} = rt.alloc {note = "scratch"} : memref<16xf8E4M3FN>{{$}}
func.func @alloc() {
  %0 = rt.alloc : memref<4x64x128xf32>
  %1 = rt.alloc : memref<4x64xi32>
  %2 = rt.alloc : memref<f32>
  %3 = rt.alloc : memref<8x16xbf16>
  %4 = rt.alloc : memref<0x8xf32>
  %5 = rt.alloc {note = "scratch"} : memref<16xf8E4M3FN>
  return
}

// -----

// An alloc is a buffer like any other: kernels write it, reshapes alias it.
// CHECK-LABEL: func.func @alloc_uses
// CHECK:         %[[A:.*]] = rt.alloc : memref<4x8xf32>
// CHECK:         rt.kernel "gelu_fwd" ins(%arg0 : memref<4x8xf32>) outs(%[[A]] : memref<4x8xf32>) consts [32, 1, 1]
// CHECK:         %{{.*}} = rt.reshape %[[A]] : memref<4x8xf32> -> memref<32xf32>
func.func @alloc_uses(%x: memref<4x8xf32>) {
  %0 = rt.alloc : memref<4x8xf32>
  rt.kernel "gelu_fwd" ins(%x : memref<4x8xf32>) outs(%0 : memref<4x8xf32>) consts [32, 1, 1]
  %1 = rt.reshape %0 : memref<4x8xf32> -> memref<32xf32>
  return
}

// -----

func.func @dynamic_shape() {
  // expected-error @+1 {{'rt.alloc' op result #0 must be statically shaped memref with identity layout, but got 'memref<4x?xf32>'}}
  %0 = rt.alloc : memref<4x?xf32>
  return
}

// -----

func.func @unranked() {
  // expected-error @+1 {{result #0 must be statically shaped memref with identity layout, but got 'memref<*xf32>'}}
  %0 = "rt.alloc"() : () -> memref<*xf32>
  return
}

// -----

func.func @strided_layout() {
  // expected-error @+1 {{result #0 must be statically shaped memref with identity layout, but got 'memref<4x4xf32, strided<[8, 1]>>'}}
  %0 = rt.alloc : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

func.func @tensor_result() {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.memref, but found 'tensor<4xf32>'}}
  %0 = rt.alloc : tensor<4xf32>
  return
}
