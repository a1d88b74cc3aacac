// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Each rank gets a shard: input = world size x output.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:         rt.reduce_scatter avg %arg0, %arg1 stream = 1 : memref<16x8xf32>, memref<2x8xf32>
// CHECK:         rt.reduce_scatter sum %arg0, %arg2 : memref<16x8xf32>, memref<32xf32>
// CHECK:         rt.reduce_scatter max %arg0, %arg0 : memref<16x8xf32>, memref<16x8xf32>
func.func @reduce_scatter(%g: memref<16x8xf32>, %shard: memref<2x8xf32>, %flat: memref<32xf32>) {
  rt.reduce_scatter avg %g, %shard stream = 1 : memref<16x8xf32>, memref<2x8xf32>
  rt.reduce_scatter sum %g, %flat : memref<16x8xf32>, memref<32xf32>
  rt.reduce_scatter max %g, %g : memref<16x8xf32>, memref<16x8xf32>
  return
}

// -----

func.func @shard_mismatch(%g: memref<16x8xf32>, %shard: memref<3x8xf32>) {
  // expected-error @+1 {{input of 128 elements does not split into shards of 24 (input = world size x output)}}
  rt.reduce_scatter avg %g, %shard : memref<16x8xf32>, memref<3x8xf32>
  return
}

// -----

func.func @output_larger(%g: memref<16x8xf32>, %shard: memref<32x8xf32>) {
  // expected-error @+1 {{input of 128 elements does not split into shards of 256}}
  rt.reduce_scatter avg %g, %shard : memref<16x8xf32>, memref<32x8xf32>
  return
}

// -----

func.func @empty_output(%g: memref<16x8xf32>, %shard: memref<0xf32>) {
  // expected-error @+1 {{input of 128 elements does not split into shards of 0}}
  rt.reduce_scatter sum %g, %shard : memref<16x8xf32>, memref<0xf32>
  return
}

// -----

func.func @element_type(%g: memref<16x8xf32>, %shard: memref<2x8xbf16>) {
  // expected-error @+1 {{input element type 'f32' differs from output element type 'bf16'}}
  rt.reduce_scatter sum %g, %shard : memref<16x8xf32>, memref<2x8xbf16>
  return
}

// -----

func.func @negative_stream(%g: memref<16x8xf32>, %shard: memref<2x8xf32>) {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -1}}
  rt.reduce_scatter sum %g, %shard stream = -1 : memref<16x8xf32>, memref<2x8xf32>
  return
}

// -----

func.func @dynamic(%g: memref<16x8xf32>, %shard: memref<?x8xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped memref with identity layout, but got 'memref<?x8xf32>'}}
  rt.reduce_scatter sum %g, %shard : memref<16x8xf32>, memref<?x8xf32>
  return
}
