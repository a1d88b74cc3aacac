// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Stream 0 is the default and is left out when printed; other attributes are
// constants for the kernel.
// CHECK-LABEL: func.func @kernel
// CHECK:         rt.kernel "layernorm_fwd" ins(%arg0, %arg1, %arg1 : memref<8x16xbf16>, memref<16xf32>, memref<16xf32>) outs(%arg2 : memref<8x16xbf16>) {eps = 9.99999974E-6 : f32}{{$}}
// CHECK:         rt.kernel "gelu_fwd" ins(%arg0 : memref<8x16xbf16>) outs(%arg2 : memref<8x16xbf16>){{$}}
// CHECK:         rt.kernel "adamw_step2" outs(%arg1 : memref<16xf32>) stream = 2{{$}}
func.func @kernel(%x: memref<8x16xbf16>, %w: memref<16xf32>, %y: memref<8x16xbf16>) {
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x16xbf16>, memref<16xf32>, memref<16xf32>) outs(%y : memref<8x16xbf16>) {eps = 1.0e-5 : f32}
  rt.kernel "gelu_fwd" ins(%x : memref<8x16xbf16>) outs(%y : memref<8x16xbf16>) stream = 0
  rt.kernel "adamw_step2" outs(%w : memref<16xf32>) stream = 2
  return
}

// -----

// Scalars (integers, floats, indices) and dynamically shaped buffers are
// valid inputs; several outputs.
// CHECK-LABEL: func.func @kernel_scalars
// CHECK:         rt.kernel "scale" ins(%arg0, %arg1, %arg2, %arg3 : index, f32, i32, memref<?xf32>) outs(%arg4, %arg5 : memref<4xf32>, memref<4xi32>) stream = 1{{$}}
func.func @kernel_scalars(%n: index, %s: f32, %i: i32, %d: memref<?xf32>, %o: memref<4xf32>, %p: memref<4xi32>) {
  rt.kernel "scale" ins(%n, %s, %i, %d : index, f32, i32, memref<?xf32>) outs(%o, %p : memref<4xf32>, memref<4xi32>) stream = 1
  return
}

// -----

func.func @upper_case(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel name "GeluFwd" must be lower_snake_case (the runtime symbol is gptrt_<name>)}}
  rt.kernel "GeluFwd" outs(%x : memref<4xf32>)
  return
}

// -----

func.func @dash(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel name "gelu-fwd" must be lower_snake_case}}
  rt.kernel "gelu-fwd" outs(%x : memref<4xf32>)
  return
}

// -----

func.func @empty_name(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel name "" must be lower_snake_case}}
  rt.kernel "" outs(%x : memref<4xf32>)
  return
}

// -----

// The custom form needs outs(...) with at least one buffer to parse; the
// generic form does not.
func.func @writes_nothing(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel "gelu_fwd" writes nothing; list the buffers it writes under outs(...)}}
  "rt.kernel"(%x) <{kernel = "gelu_fwd", operandSegmentSizes = array<i32: 1, 0>, stream = 0 : i32}> : (memref<4xf32>) -> ()
  return
}

// -----

func.func @in_and_out(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{a buffer of kernel "adamw" appears in both ins and outs; a kernel that updates a buffer in place lists it under outs only}}
  rt.kernel "adamw" ins(%y, %x : memref<4xf32>, memref<4xf32>) outs(%x : memref<4xf32>)
  return
}

// -----

func.func @tensor_input(%t: tensor<4xf32>, %x: memref<4xf32>) {
  // expected-error @+1 {{kernel inputs are buffers or scalars, got 'tensor<4xf32>'}}
  rt.kernel "k" ins(%t : tensor<4xf32>) outs(%x : memref<4xf32>)
  return
}

// -----

func.func @event_input(%e: !rt.event, %x: memref<4xf32>) {
  // expected-error @+1 {{kernel inputs are buffers or scalars, got '!rt.event'}}
  rt.kernel "k" ins(%e : !rt.event) outs(%x : memref<4xf32>)
  return
}

// -----

func.func @negative_stream(%x: memref<4xf32>) {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -1}}
  rt.kernel "k" outs(%x : memref<4xf32>) stream = -1
  return
}

// -----

func.func @dynamic_output(%x: memref<?xf32>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped memref with identity layout, but got 'memref<?xf32>'}}
  rt.kernel "k" outs(%x : memref<?xf32>)
  return
}

// -----

// Constants are i64 or f64, passed after the buffers in order; both print
// without their (default) types, the full i64 range included. An empty list
// is the default and is left out.
// CHECK-LABEL: func.func @kernel_consts
// CHECK:         rt.kernel "layernorm_fwd" ins(%arg0, %arg1, %arg2 : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%arg3 : memref<8x16xf32>) consts [8, 16, 1.000000e-05]{{$}}
// CHECK:         rt.kernel "arange" outs(%arg3 : memref<8x16xf32>) stream = 1 consts [0, -1, 9223372036854775807, -9223372036854775808]{{$}}
// CHECK:         rt.kernel "adamw" outs(%arg1 : memref<16xf32>) consts [1.000000e-03, 9.000000e-01, 0.99899999999999999, 1.000000e-08, 1.000000e-01] {note = "x"}{{$}}
// CHECK:         rt.kernel "adamw_multi" outs(%arg1 : memref<16xf32>) consts [2, array<i64: 0, 4, 8, 16>, array<i64>]{{$}}
// CHECK:         rt.kernel "gelu_fwd" ins(%arg0 : memref<8x16xf32>) outs(%arg3 : memref<8x16xf32>){{$}}
func.func @kernel_consts(%x: memref<8x16xf32>, %w: memref<16xf32>, %b: memref<16xf32>, %y: memref<8x16xf32>) {
  rt.kernel "layernorm_fwd" ins(%x, %w, %b : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%y : memref<8x16xf32>) consts [8 : i64, 16, 1.0e-5 : f64]
  rt.kernel "arange" outs(%y : memref<8x16xf32>) stream = 1 consts [0, -1, 9223372036854775807, -9223372036854775808]
  rt.kernel "adamw" outs(%w : memref<16xf32>) consts [1.0e-3, 0.9, 0.999, 1.0e-8, 0.1] {note = "x"}
  rt.kernel "adamw_multi" outs(%w : memref<16xf32>) consts [2, array<i64: 0, 4, 8, 16>, array<i64>]
  rt.kernel "gelu_fwd" ins(%x : memref<8x16xf32>) outs(%y : memref<8x16xf32>) consts []
  return
}

// -----

func.func @i32_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got 4 : i32}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [8, 4 : i32]
  return
}

// -----

func.func @i32_table_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got array<i32: 1, 2>}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [array<i32: 1, 2>]
  return
}

// -----

func.func @f32_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got 5.000000e-01 : f32}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [0.5 : f32]
  return
}

// -----

// Signed or unsigned 64-bit integers are not i64: llvm.mlir.constant would
// reject them in rt-to-llvm.
func.func @ui64_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got 5 : ui64}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [5 : ui64]
  return
}

// -----

func.func @si64_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got 5 : si64}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [5 : si64]
  return
}

// -----

func.func @index_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got 5 : index}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [5 : index]
  return
}

// -----

func.func @string_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got "eps"}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts ["eps"]
  return
}

// -----

func.func @nested_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got [1]}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [[1]]
  return
}

// -----

func.func @unit_const(%x: memref<4xf32>) {
  // expected-error @+1 {{kernel constants are i64, f64 or array<i64: ...> (the C ABI's int64_t, double and const int64_t *), got unit}}
  rt.kernel "k" outs(%x : memref<4xf32>) consts [unit]
  return
}

// -----

func.func @not_a_list(%x: memref<4xf32>) {
  // expected-error @+1 {{Invalid attribute `consts` in property conversion: 5 : i64}}
  "rt.kernel"(%x) <{consts = 5 : i64, kernel = "k", operandSegmentSizes = array<i32: 0, 1>, stream = 0 : i32}> : (memref<4xf32>) -> ()
  return
}
