// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Every rank gets all shards: output = world size x input.
// CHECK-LABEL: func.func @all_gather
// CHECK:         rt.all_gather %arg0, %arg1 stream = 1 : memref<2x8xbf16>, memref<16x8xbf16>
// CHECK:         rt.all_gather %arg0, %arg2 : memref<2x8xbf16>, memref<128xbf16>
// CHECK:         rt.all_gather %arg0, %arg0 : memref<2x8xbf16>, memref<2x8xbf16>
func.func @all_gather(%shard: memref<2x8xbf16>, %full: memref<16x8xbf16>, %flat: memref<128xbf16>) {
  rt.all_gather %shard, %full stream = 1 : memref<2x8xbf16>, memref<16x8xbf16>
  rt.all_gather %shard, %flat stream = 0 : memref<2x8xbf16>, memref<128xbf16>
  rt.all_gather %shard, %shard : memref<2x8xbf16>, memref<2x8xbf16>
  return
}

// -----

func.func @not_whole_shards(%shard: memref<3x8xbf16>, %full: memref<16x8xbf16>) {
  // expected-error @+1 {{output of 128 elements is not a whole number of input shards of 24 (output = world size x input)}}
  rt.all_gather %shard, %full : memref<3x8xbf16>, memref<16x8xbf16>
  return
}

// -----

func.func @output_smaller(%shard: memref<16x8xbf16>, %full: memref<2x8xbf16>) {
  // expected-error @+1 {{output of 16 elements is not a whole number of input shards of 128}}
  rt.all_gather %shard, %full : memref<16x8xbf16>, memref<2x8xbf16>
  return
}

// -----

func.func @empty_input(%shard: memref<0xbf16>, %full: memref<16x8xbf16>) {
  // expected-error @+1 {{output of 128 elements is not a whole number of input shards of 0}}
  rt.all_gather %shard, %full : memref<0xbf16>, memref<16x8xbf16>
  return
}

// -----

func.func @element_type(%shard: memref<2x8xf32>, %full: memref<16x8xbf16>) {
  // expected-error @+1 {{input element type 'f32' differs from output element type 'bf16'}}
  rt.all_gather %shard, %full : memref<2x8xf32>, memref<16x8xbf16>
  return
}

// -----

func.func @negative_stream(%shard: memref<2x8xbf16>, %full: memref<16x8xbf16>) {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -3}}
  rt.all_gather %shard, %full stream = -3 : memref<2x8xbf16>, memref<16x8xbf16>
  return
}

// -----

func.func @strided(%shard: memref<2x8xbf16, strided<[16, 1]>>, %full: memref<16x8xbf16>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<2x8xbf16, strided<[16, 1]>>'}}
  rt.all_gather %shard, %full : memref<2x8xbf16, strided<[16, 1]>>, memref<16x8xbf16>
  return
}
