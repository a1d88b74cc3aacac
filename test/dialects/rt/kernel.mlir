// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Every call is checked against its row of the kernel table
// (runtime/abi/gptrt_kernels.def): buffers read, buffers written, then the
// named constants. Stream 0 is the default and is left out when printed.
// CHECK-LABEL: func.func @kernel
// CHECK:         rt.kernel "gelu_fwd" ins(%arg0 : memref<8x16xbf16>) outs(%arg1 : memref<8x16xbf16>) consts [128, 2, 2]{{$}}
// CHECK:         rt.kernel "fill" outs(%arg2 : memref<16xf32>) stream = 2 consts [16, 0.000000e+00] {note = "x"}{{$}}
func.func @kernel(%x: memref<8x16xbf16>, %y: memref<8x16xbf16>, %w: memref<16xf32>) {
  rt.kernel "gelu_fwd" ins(%x : memref<8x16xbf16>) outs(%y : memref<8x16xbf16>) stream = 0 consts [128, 2, 2]
  rt.kernel "fill" outs(%w : memref<16xf32>) stream = 2 consts [16, 0.0 : f64] {note = "x"}
  return
}

// -----

// Constants are i64, f64 or i64 tables, passed after the buffers in order;
// they print without their (default) types, the full i64 range included.
// `void` buffers (layernorm's x and out) take any element type, FP8 buffers
// either FP8 format.
// CHECK-LABEL: func.func @kernel_consts
// CHECK:         rt.kernel "layernorm_fwd" ins(%arg0, %arg1, %arg1 : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%arg2, %arg3, %arg3 : memref<8x16xbf16>, memref<8xf32>, memref<8xf32>) consts [8, 16, 1.000000e-05, 1, 2]{{$}}
// CHECK:         rt.kernel "arange" outs(%arg4 : memref<4xi32>) stream = 1 consts [-9223372036854775808]{{$}}
// CHECK:         rt.kernel "adamw_multi" ins(%arg1, %arg5, %arg5, %arg5 : memref<16xf32>, memref<1xf32>, memref<1xf32>, memref<1xf32>) outs(%arg6, %arg6, %arg6 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01, 2, array<i64: 0, 4, 8, 16>]{{$}}
// CHECK:         rt.kernel "gemm" ins(%arg7, %arg8, %arg5, %arg5 : memref<16xf8E4M3FN>, memref<16xf8E5M2>, memref<1xf32>, memref<1xf32>) outs(%arg6 : memref<16xf32>) consts [{a_dtype = 4 : i64, b_dtype = 5 : i64, k = 1 : i64, m = 4 : i64, n = 4 : i64, trans_b = 1 : i64}]{{$}}
func.func @kernel_consts(%x: memref<8x16xf32>, %w: memref<16xf32>, %y: memref<8x16xbf16>, %m: memref<8xf32>, %ids: memref<4xi32>, %s: memref<1xf32>, %p: memref<16xf32>, %qa: memref<16xf8E4M3FN>, %qb: memref<16xf8E5M2>) {
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%y, %m, %m : memref<8x16xbf16>, memref<8xf32>, memref<8xf32>) consts [8 : i64, 16, 1.0e-5 : f64, 1, 2]
  rt.kernel "arange" outs(%ids : memref<4xi32>) stream = 1 consts [-9223372036854775808]
  rt.kernel "adamw_multi" ins(%w, %s, %s, %s : memref<16xf32>, memref<1xf32>, memref<1xf32>, memref<1xf32>) outs(%p, %p, %p : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 0.9 : f64, 0.95 : f64, 1.0e-8 : f64, 0.1 : f64, 2, array<i64: 0, 4, 8, 16>]
  rt.kernel "gemm" ins(%qa, %qb, %s, %s : memref<16xf8E4M3FN>, memref<16xf8E5M2>, memref<1xf32>, memref<1xf32>) outs(%p : memref<16xf32>) consts [{m = 4, n = 4, k = 1, trans_b = 1, a_dtype = 4, b_dtype = 5}]
  return
}

// -----

// Optional buffers (GPTRT_IN_OPT, GPTRT_OUT_OPT): one in the middle that the
// call has none for is an rt.null, trailing ones may be left out. The
// epilogue descriptor is a dictionary of i64 fields, printed sorted by name;
// the fields it leaves out take their defaults (rt-to-llvm fills them in).
// CHECK-LABEL: func.func @kernel_epilogue
// CHECK:         %[[NULL:.*]] = rt.null : memref<0xbf16>
// CHECK:         rt.kernel "gelu_fwd" ins(%arg0, %arg1 : memref<8x16xbf16>, memref<1xf32>) outs(%[[NULL]], %arg2, %arg3, %arg4 : memref<0xbf16>, memref<1xf32>, memref<8x16xf8E4M3FN>, memref<16x8xf8E4M3FN>) consts [128, 2, 2, {cols = 16 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 8 : i64, stat_slot = 3 : i64, stat_slot_t = 4 : i64}]{{$}}
// CHECK:         %[[NULL32:.*]] = rt.null : memref<0xf32>
// CHECK:         rt.kernel "gemm" ins(%arg5, %arg5 : memref<16x16xf32>, memref<16x16xf32>) outs(%arg6, %[[NULL32]], %[[NULL32]], %arg2 : memref<16x16xf32>, memref<0xf32>, memref<0xf32>, memref<1xf32>) consts [{k = 16 : i64, m = 16 : i64, n = 16 : i64}, {cols = 16 : i64, out_dtype = 1 : i64, rows = 16 : i64}]{{$}}
// CHECK:         rt.kernel "gelu_bwd" ins(%arg0, %arg0, %arg1 : memref<8x16xbf16>, memref<8x16xbf16>, memref<1xf32>) outs(%[[NULL]], %arg2, %arg7, %arg8, %arg9 : memref<0xbf16>, memref<1xf32>, memref<8x16xf8E5M2>, memref<16x8xf8E5M2>, memref<16xf32>) consts [128, 2, 2, 2, {cols = 16 : i64, db_dtype = 257 : i64, format = 1 : i64, out_dtype = 2 : i64, rows = 8 : i64, stat_slot = 5 : i64, stat_slot_t = 6 : i64}]{{$}}
func.func @kernel_epilogue(%x: memref<8x16xbf16>, %s: memref<1xf32>, %a: memref<1xf32>, %q: memref<8x16xf8E4M3FN>, %qt: memref<16x8xf8E4M3FN>, %m: memref<16x16xf32>, %c: memref<16x16xf32>, %q2: memref<8x16xf8E5M2>, %qt2: memref<16x8xf8E5M2>, %db: memref<16xf32>) {
  %n = rt.null : memref<0xbf16>
  rt.kernel "gelu_fwd" ins(%x, %s : memref<8x16xbf16>, memref<1xf32>) outs(%n, %a, %q, %qt : memref<0xbf16>, memref<1xf32>, memref<8x16xf8E4M3FN>, memref<16x8xf8E4M3FN>) consts [128, 2, 2, {rows = 8, cols = 16, out_dtype = 2, format = 0, stat_slot = 3, stat_slot_t = 4}]
  %n32 = rt.null : memref<0xf32>
  rt.kernel "gemm" ins(%m, %m : memref<16x16xf32>, memref<16x16xf32>) outs(%c, %n32, %n32, %a : memref<16x16xf32>, memref<0xf32>, memref<0xf32>, memref<1xf32>) consts [{m = 16, n = 16, k = 16}, {rows = 16, cols = 16, out_dtype = 1}]
  rt.kernel "gelu_bwd" ins(%x, %x, %s : memref<8x16xbf16>, memref<8x16xbf16>, memref<1xf32>) outs(%n, %a, %q2, %qt2, %db : memref<0xbf16>, memref<1xf32>, memref<8x16xf8E5M2>, memref<16x8xf8E5M2>, memref<16xf32>) consts [128, 2, 2, 2, {rows = 8, cols = 16, out_dtype = 2, format = 1, stat_slot = 5, stat_slot_t = 6, db_dtype = 257}]
  return
}

// -----

func.func @unknown_kernel(%x: memref<4xf32>) {
  // expected-error @+1 {{calls unknown runtime kernel "gelu_forward": runtime/abi/gptrt_kernels.def has no row for it; fix the name, or add the kernel to the table and the runtime}}
  rt.kernel "gelu_forward" outs(%x : memref<4xf32>)
  return
}

// -----

func.func @entry_not_kernel(%x: memref<4xf32>) {
  // expected-error @+1 {{"arena_base" is a runtime entry point that rt-to-llvm calls itself, not a kernel rt.kernel can call}}
  rt.kernel "arena_base" outs(%x : memref<4xf32>) consts [0]
  return
}

// -----

// Too few buffers: the missing one (b) is required; only those after it
// (scale) may be left out.
func.func @too_few_inputs(%x: memref<8x16xf32>, %w: memref<16xf32>, %y: memref<8x16xf32>, %m: memref<8xf32>) {
  // expected-error @+1 {{kernel "layernorm_fwd" takes 3 to 4 input buffers (x, w, b, scale; those after the first 3 are optional), got 2; the kernel table runtime/abi/gptrt_kernels.def is the reference}}
  rt.kernel "layernorm_fwd" ins(%x, %w : memref<8x16xf32>, memref<16xf32>) outs(%y, %m, %m : memref<8x16xf32>, memref<8xf32>, memref<8xf32>) consts [8, 16, 1.0e-5 : f64, 1, 1]
  return
}

// -----

func.func @too_few_outputs(%x: memref<8x16xf32>, %w: memref<16xf32>, %y: memref<8x16xf32>, %m: memref<8xf32>) {
  // expected-error @+1 {{kernel "layernorm_fwd" takes 3 to 6 output buffers (out, mean, rstd, amax, q, q_t; those after the first 3 are optional), got 2; the kernel table runtime/abi/gptrt_kernels.def is the reference}}
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%y, %m : memref<8x16xf32>, memref<8xf32>) consts [8, 16, 1.0e-5 : f64, 1, 1]
  return
}

// -----

// rt.null only stands for an optional buffer.
func.func @null_required_input(%y: memref<4xbf16>) {
  %n = rt.null : memref<0xbf16>
  // expected-error @+1 {{input 0 ('x') of kernel "gelu_fwd" is required, got rt.null; only the table's optional buffers (GPTRT_IN_OPT, GPTRT_OUT_OPT) may be left empty}}
  rt.kernel "gelu_fwd" ins(%n : memref<0xbf16>) outs(%y : memref<4xbf16>) consts [4, 2, 2]
  return
}

// -----

func.func @null_required_output(%x: memref<8x16xf32>, %w: memref<16xf32>, %y: memref<8x16xf32>, %m: memref<8xf32>) {
  %n = rt.null : memref<0xf32>
  // expected-error @+1 {{output 1 ('mean') of kernel "layernorm_fwd" is required, got rt.null; only the table's optional buffers (GPTRT_IN_OPT, GPTRT_OUT_OPT) may be left empty}}
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%y, %n, %m : memref<8x16xf32>, memref<0xf32>, memref<8xf32>) consts [8, 16, 1.0e-5 : f64, 1, 1]
  return
}

// -----

func.func @descriptor_not_dictionary(%x: memref<4xbf16>, %y: memref<4xbf16>, %a: memref<1xf32>) {
  // expected-error @+1 {{constant 3 ('epilogue') of kernel "gelu_fwd" must be a dictionary of gptrt_epilogue's fields (rows, cols, out_dtype, format, transpose, stat_slot, stat_slot_t, db_dtype), got 4 : i64}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y, %a : memref<4xbf16>, memref<1xf32>) consts [4, 2, 2, 4]
  return
}

// -----

func.func @descriptor_unknown_field(%x: memref<4xbf16>, %y: memref<4xbf16>, %a: memref<1xf32>) {
  // expected-error @+1 {{constant 3 ('epilogue') of kernel "gelu_fwd" sets 'width', which gptrt_epilogue does not have; its fields: rows, cols, out_dtype, format, transpose, stat_slot, stat_slot_t, db_dtype}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y, %a : memref<4xbf16>, memref<1xf32>) consts [4, 2, 2, {rows = 1, width = 4}]
  return
}

// -----

func.func @descriptor_field_not_i64(%x: memref<4xbf16>, %y: memref<4xbf16>, %a: memref<1xf32>) {
  // expected-error @+1 {{field 'cols' of constant 3 ('epilogue') of kernel "gelu_fwd" must be an i64, got 4 : i32}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y, %a : memref<4xbf16>, memref<1xf32>) consts [4, 2, 2, {rows = 1, cols = 4 : i32}]
  return
}

// -----

// The epilogue's buffers say what it does: amax comes with the descriptor.
func.func @amax_without_descriptor(%x: memref<4xbf16>, %y: memref<4xbf16>, %a: memref<1xf32>) {
  // expected-error @+1 {{kernel "gelu_fwd": an amax buffer without an epilogue descriptor (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y, %a : memref<4xbf16>, memref<1xf32>) consts [4, 2, 2]
  return
}

// -----

func.func @descriptor_without_amax(%x: memref<4xbf16>, %y: memref<4xbf16>) {
  // expected-error @+1 {{kernel "gelu_fwd": an epilogue descriptor without its amax buffer (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y : memref<4xbf16>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2}]
  return
}

// -----

func.func @scale_without_q(%x: memref<4xbf16>, %s: memref<1xf32>, %y: memref<4xbf16>, %a: memref<1xf32>) {
  // expected-error @+1 {{kernel "gelu_fwd": the epilogue's cast needs both scale and q (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x, %s : memref<4xbf16>, memref<1xf32>) outs(%y, %a : memref<4xbf16>, memref<1xf32>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2}]
  return
}

// -----

func.func @q_without_scale(%x: memref<4xbf16>, %y: memref<4xbf16>, %a: memref<1xf32>, %q: memref<4xf8E4M3FN>) {
  %n = rt.null : memref<0xf32>
  // expected-error @+1 {{kernel "gelu_fwd": the epilogue's cast needs both scale and q (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x, %n : memref<4xbf16>, memref<0xf32>) outs(%y, %a, %q : memref<4xbf16>, memref<1xf32>, memref<4xf8E4M3FN>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2}]
  return
}

// -----

func.func @q_t_without_q(%x: memref<4xbf16>, %a: memref<1xf32>, %qt: memref<4xf8E4M3FN>) {
  %n = rt.null : memref<0xbf16>
  %nq = rt.null : memref<0xf8E4M3FN>
  // expected-error @+1 {{kernel "gelu_fwd": q_t without q (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%n, %a, %nq, %qt : memref<0xbf16>, memref<1xf32>, memref<0xf8E4M3FN>, memref<4xf8E4M3FN>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2}]
  return
}

// -----

func.func @db_without_q_t(%dout: memref<8x16xbf16>, %x: memref<8x16xbf16>, %s: memref<1xf32>, %dx: memref<8x16xbf16>, %a: memref<1xf32>, %q: memref<8x16xf8E5M2>, %db: memref<16xf32>) {
  %nqt = rt.null : memref<0xf8E5M2>
  // expected-error @+1 {{kernel "gelu_bwd": db without q_t (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_bwd" ins(%dout, %x, %s : memref<8x16xbf16>, memref<8x16xbf16>, memref<1xf32>) outs(%dx, %a, %q, %nqt, %db : memref<8x16xbf16>, memref<1xf32>, memref<8x16xf8E5M2>, memref<0xf8E5M2>, memref<16xf32>) consts [128, 2, 2, 2, {rows = 8, cols = 16, out_dtype = 2, format = 1, db_dtype = 1}]
  return
}

// -----

// The dual cast (q_t) does not store the producer's own output: it is
// rt.null exactly then.
func.func @dual_cast_stores_output(%x: memref<8x16xbf16>, %s: memref<1xf32>, %y: memref<8x16xbf16>, %a: memref<1xf32>, %q: memref<8x16xf8E4M3FN>, %qt: memref<16x8xf8E4M3FN>) {
  // expected-error @+1 {{kernel "gelu_fwd": its output 'out' must be rt.null with q_t (the dual cast does not store it) (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x, %s : memref<8x16xbf16>, memref<1xf32>) outs(%y, %a, %q, %qt : memref<8x16xbf16>, memref<1xf32>, memref<8x16xf8E4M3FN>, memref<16x8xf8E4M3FN>) consts [128, 2, 2, {rows = 8, cols = 16, out_dtype = 2}]
  return
}

// -----

func.func @dual_cast_output_in_dx(%dout: memref<8x16xbf16>, %x: memref<8x16xbf16>, %s: memref<1xf32>, %dx: memref<8x16xbf16>, %a: memref<1xf32>, %q: memref<8x16xf8E5M2>, %qt: memref<16x8xf8E5M2>) {
  // expected-error @+1 {{kernel "gelu_bwd": its output 'dx' must be rt.null with q_t (the dual cast does not store it) (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_bwd" ins(%dout, %x, %s : memref<8x16xbf16>, memref<8x16xbf16>, memref<1xf32>) outs(%dx, %a, %q, %qt : memref<8x16xbf16>, memref<1xf32>, memref<8x16xf8E5M2>, memref<16x8xf8E5M2>) consts [128, 2, 2, 2, {rows = 8, cols = 16, out_dtype = 2, format = 1}]
  return
}

// -----

func.func @output_missing_without_q_t(%x: memref<4xbf16>, %a: memref<1xf32>) {
  %n = rt.null : memref<0xbf16>
  // expected-error @+1 {{kernel "gelu_fwd": its output 'out' is missing, which only the dual cast (q_t) allows (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%n, %a : memref<0xbf16>, memref<1xf32>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2}]
  return
}

// -----

// The same when the output is left out of layernorm_fwd's outs: the call
// that leaves out everything after it (mean, rstd) is refused already.
func.func @layernorm_output_missing(%x: memref<8x16xf32>, %w: memref<16xf32>, %m: memref<8xf32>, %a: memref<1xf32>) {
  %n = rt.null : memref<0xbf16>
  // expected-error @+1 {{kernel "layernorm_fwd": its output 'out' is missing, which only the dual cast (q_t) allows (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)}}
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%n, %m, %m, %a : memref<0xbf16>, memref<8xf32>, memref<8xf32>, memref<1xf32>) consts [8, 16, 1.0e-5 : f64, 1, 2, {rows = 8, cols = 16, out_dtype = 2}]
  return
}

// -----

// The descriptor's `format` says what q holds, its `db_dtype` what a `void`
// db holds, as the constants of the same names do.
func.func @descriptor_format_contradicts_q(%x: memref<4xbf16>, %s: memref<1xf32>, %y: memref<4xbf16>, %a: memref<1xf32>, %q: memref<4xf8E5M2>) {
  // expected-error @+1 {{field 'format' of constant 3 ('epilogue') of kernel "gelu_fwd" says q holds 'f8E4M3FN', but it is 'memref<4xf8E5M2>'}}
  rt.kernel "gelu_fwd" ins(%x, %s : memref<4xbf16>, memref<1xf32>) outs(%y, %a, %q : memref<4xbf16>, memref<1xf32>, memref<4xf8E5M2>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2, format = 0}]
  return
}

// -----

func.func @descriptor_format_not_a_format(%x: memref<4xbf16>, %s: memref<1xf32>, %y: memref<4xbf16>, %a: memref<1xf32>, %q: memref<4xf8E5M2>) {
  // expected-error @+1 {{field 'format' of constant 3 ('epilogue') of kernel "gelu_fwd" is 2, expected an FP8 format: 0 (E4M3) or 1 (E5M2)}}
  rt.kernel "gelu_fwd" ins(%x, %s : memref<4xbf16>, memref<1xf32>) outs(%y, %a, %q : memref<4xbf16>, memref<1xf32>, memref<4xf8E5M2>) consts [4, 2, 2, {rows = 1, cols = 4, out_dtype = 2, format = 2}]
  return
}

// -----

func.func @descriptor_db_dtype_contradicts_db(%dout: memref<8x16xbf16>, %x: memref<8x16xbf16>, %s: memref<1xf32>, %a: memref<1xf32>, %q: memref<8x16xf8E5M2>, %qt: memref<16x8xf8E5M2>, %db: memref<16xbf16>) {
  %n = rt.null : memref<0xbf16>
  // expected-error @+1 {{field 'db_dtype' of constant 4 ('epilogue') of kernel "gelu_bwd" says db holds 'f32', but it is 'memref<16xbf16>'}}
  rt.kernel "gelu_bwd" ins(%dout, %x, %s : memref<8x16xbf16>, memref<8x16xbf16>, memref<1xf32>) outs(%n, %a, %q, %qt, %db : memref<0xbf16>, memref<1xf32>, memref<8x16xf8E5M2>, memref<16x8xf8E5M2>, memref<16xbf16>) consts [128, 2, 2, 2, {rows = 8, cols = 16, out_dtype = 2, format = 1, db_dtype = 257}]
  return
}

// -----

func.func @too_many_outputs(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{kernel "fill" takes 1 output buffer (out), got 2}}
  rt.kernel "fill" outs(%x, %y : memref<4xf32>, memref<4xf32>) consts [4, 0.0 : f64]
  return
}

// -----

func.func @missing_constant(%x: memref<4xbf16>, %y: memref<4xbf16>) {
  // expected-error @+1 {{kernel "gelu_fwd" takes 4 constants (n, x_dtype, out_dtype, epilogue), the descriptor optional, got 2; the kernel table runtime/abi/gptrt_kernels.def is the reference}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y : memref<4xbf16>) consts [4, 2]
  return
}

// -----

func.func @wrong_element_type(%a: memref<16xbf16>) {
  // expected-error @+1 {{output 0 ('out') of kernel "fill" holds f32, got 'memref<16xbf16>'}}
  rt.kernel "fill" outs(%a : memref<16xbf16>) consts [16, 0.0 : f64]
  return
}

// -----

func.func @fp8_output_not_fp8(%x: memref<16xf32>, %s: memref<1xf32>, %q: memref<16xi8>) {
  // expected-error @+1 {{output 0 ('q') of kernel "quantize_fp8" holds an FP8 format (f8E4M3FN or f8E5M2), got 'memref<16xi8>'}}
  rt.kernel "quantize_fp8" ins(%x, %s : memref<16xf32>, memref<1xf32>) outs(%q : memref<16xi8>) consts [16, 0, -1, 1]
  return
}

// -----

// A GEMM operand's dtype field must say what the buffer holds.
func.func @gemm_dtype_contradicts_operand(%a: memref<16xf32>, %b: memref<16xbf16>, %c: memref<16xf32>) {
  // expected-error @+1 {{field 'a_dtype' of constant 0 ('gemm_desc') of kernel "gemm" says a holds 'bf16', but it is 'memref<16xf32>'}}
  rt.kernel "gemm" ins(%a, %b : memref<16xf32>, memref<16xbf16>) outs(%c : memref<16xf32>) consts [{m = 4, n = 4, k = 1, a_dtype = 2, b_dtype = 2}]
  return
}

// -----

// The GEMM's descriptor is required; its epilogue is not.
func.func @gemm_without_descriptor(%a: memref<16xf32>, %c: memref<16xf32>) {
  // expected-error @+1 {{kernel "gemm" takes 2 constants (gemm_desc, epilogue), the descriptor optional, got 0}}
  rt.kernel "gemm" ins(%a, %a : memref<16xf32>, memref<16xf32>) outs(%c : memref<16xf32>)
  return
}

// -----

func.func @ids_not_i32(%t: memref<8x4xf32>, %ids: memref<2xi64>, %y: memref<2x4xf32>) {
  // expected-error @+1 {{input 1 ('ids') of kernel "embedding_fwd" holds i32, got 'memref<2xi64>'}}
  rt.kernel "embedding_fwd" ins(%t, %ids : memref<8x4xf32>, memref<2xi64>) outs(%y : memref<2x4xf32>) consts [2, 4, 1]
  return
}

// -----

// Constants that say what a buffer holds must agree with it: a dtype named
// after a buffer (x_dtype, out_dtype), `dtype` for the buffers without
// their own, format_<b> and `format` for FP8 buffers.
func.func @dtype_contradicts_buffer(%x: memref<4xbf16>, %y: memref<4xbf16>) {
  // expected-error @+1 {{constant 1 ('x_dtype') of kernel "gelu_fwd" says x holds 'f32', but it is 'memref<4xbf16>'}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y : memref<4xbf16>) consts [4, 1, 2]
  return
}

// -----

func.func @not_a_dtype(%x: memref<4xbf16>, %y: memref<4xbf16>) {
  // expected-error @+1 {{constant 2 ('out_dtype') of kernel "gelu_fwd" is 3, expected a dtype: 1 (f32), 2 (bf16), 4 (E4M3), 5 (E5M2) or 257 (f32, accumulated)}}
  rt.kernel "gelu_fwd" ins(%x : memref<4xbf16>) outs(%y : memref<4xbf16>) consts [4, 2, 3]
  return
}

// -----

func.func @shared_dtype(%t: memref<8x4xbf16>, %ids: memref<2xi32>, %y: memref<2x4xf32>) {
  // expected-error @+1 {{constant 2 ('dtype') of kernel "embedding_fwd" says out holds 'bf16', but it is 'memref<2x4xf32>'}}
  rt.kernel "embedding_fwd" ins(%t, %ids : memref<8x4xbf16>, memref<2xi32>) outs(%y : memref<2x4xf32>) consts [2, 4, 2]
  return
}

// -----

func.func @format_contradicts_buffer(%x: memref<16xf32>, %s: memref<1xf32>, %q: memref<16xf8E5M2>) {
  // expected-error @+1 {{constant 1 ('format') of kernel "quantize_fp8" says q holds 'f8E4M3FN', but it is 'memref<16xf8E5M2>'}}
  rt.kernel "quantize_fp8" ins(%x, %s : memref<16xf32>, memref<1xf32>) outs(%q : memref<16xf8E5M2>) consts [16, 0, -1, 1]
  return
}

// -----

func.func @gemm_fp8_dtype_contradicts_operand(%qa: memref<16xf8E4M3FN>, %qb: memref<16xf8E5M2>, %s: memref<1xf32>, %c: memref<16xf32>) {
  // expected-error @+1 {{field 'b_dtype' of constant 0 ('gemm_desc') of kernel "gemm" says b holds 'f8E4M3FN', but it is 'memref<16xf8E5M2>'}}
  rt.kernel "gemm" ins(%qa, %qb, %s, %s : memref<16xf8E4M3FN>, memref<16xf8E5M2>, memref<1xf32>, memref<1xf32>) outs(%c : memref<16xf32>) consts [{m = 4, n = 4, k = 1, a_dtype = 4, b_dtype = 4}]
  return
}

// -----

func.func @cast_format(%x: memref<16xbf16>, %s: memref<1xf32>, %q: memref<16xf8E4M3FN>) {
  // expected-error @+1 {{constant 1 ('format') of kernel "quantize_fp8" is 2, expected an FP8 format: 0 (E4M3) or 1 (E5M2)}}
  rt.kernel "quantize_fp8" ins(%x, %s : memref<16xbf16>, memref<1xf32>) outs(%q : memref<16xf8E4M3FN>) consts [16, 2, -1, 2]
  return
}

// -----

func.func @output_element_type(%x: memref<4xbf16>) {
  // expected-error @+1 {{output 0 ('out') of kernel "fill" holds f32, got 'memref<4xbf16>'}}
  rt.kernel "fill" outs(%x : memref<4xbf16>) consts [4, 0.0 : f64]
  return
}

// -----

func.func @scalar_input(%n: index, %y: memref<4xbf16>) {
  // expected-error @+1 {{input 0 ('x') of kernel "gelu_fwd" must be a buffer (memref), got 'index'}}
  rt.kernel "gelu_fwd" ins(%n : index) outs(%y : memref<4xbf16>) consts [4, 2, 2]
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
  // expected-error @+1 {{input 0 ('src') of kernel "accumulate" must be a buffer (memref), got 'tensor<4xf32>'}}
  rt.kernel "accumulate" ins(%t : tensor<4xf32>) outs(%x : memref<4xf32>) consts [4, 1]
  return
}

// -----

func.func @event_input(%e: !rt.event, %x: memref<4xf32>) {
  // expected-error @+1 {{input 0 ('src') of kernel "accumulate" must be a buffer (memref), got '!rt.event'}}
  rt.kernel "accumulate" ins(%e : !rt.event) outs(%x : memref<4xf32>) consts [4, 1]
  return
}

// -----

func.func @negative_stream(%x: memref<4xf32>) {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -1}}
  rt.kernel "fill" outs(%x : memref<4xf32>) stream = -1 consts [4, 0.0 : f64]
  return
}

// -----

func.func @dynamic_output(%x: memref<?xf32>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped memref with identity layout, but got 'memref<?xf32>'}}
  rt.kernel "fill" outs(%x : memref<?xf32>)
  return
}

// -----

func.func @i32_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got 4 : i32}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [4 : i32, 0.0 : f64]
  return
}

// -----

func.func @integer_for_double(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 1 ('value') of kernel "fill" must be an f64 (the C ABI's double), got 0 : i64}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [4, 0]
  return
}

// -----

func.func @f32_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 1 ('value') of kernel "fill" must be an f64 (the C ABI's double), got 5.000000e-01 : f32}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [4, 0.5 : f32]
  return
}

// -----

func.func @i32_table_const(%g: memref<16xf32>, %s: memref<1xf32>, %w: memref<16xf32>) {
  // expected-error @+1 {{constant 6 ('decay_ranges') of kernel "adamw_multi" must be an array<i64: ...> (the C ABI's const int64_t *), got array<i32: 0, 4>}}
  rt.kernel "adamw_multi" ins(%g, %s, %s, %s : memref<16xf32>, memref<1xf32>, memref<1xf32>, memref<1xf32>) outs(%w, %w, %w : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 0.9 : f64, 0.95 : f64, 1.0e-8 : f64, 0.1 : f64, 1, array<i32: 0, 4>]
  return
}

// -----

func.func @table_for_integer(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got array<i64: 4>}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [array<i64: 4>, 0.0 : f64]
  return
}

// -----

// Signed or unsigned 64-bit integers are not i64: llvm.mlir.constant would
// reject them in rt-to-llvm.
func.func @ui64_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got 5 : ui64}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [5 : ui64, 0.0 : f64]
  return
}

// -----

func.func @si64_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got 5 : si64}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [5 : si64, 0.0 : f64]
  return
}

// -----

func.func @index_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got 5 : index}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [5 : index, 0.0 : f64]
  return
}

// -----

func.func @string_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 1 ('value') of kernel "fill" must be an f64 (the C ABI's double), got "eps"}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [4, "eps"]
  return
}

// -----

func.func @nested_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got [1]}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [[1], 0.0 : f64]
  return
}

// -----

func.func @unit_const(%x: memref<4xf32>) {
  // expected-error @+1 {{constant 0 ('n') of kernel "fill" must be an i64 (the C ABI's int64_t), got unit}}
  rt.kernel "fill" outs(%x : memref<4xf32>) consts [unit, 0.0 : f64]
  return
}

// -----

func.func @not_a_list(%x: memref<4xf32>) {
  // expected-error @+1 {{Invalid attribute `consts` in property conversion: 5 : i64}}
  "rt.kernel"(%x) <{consts = 5 : i64, kernel = "fill", operandSegmentSizes = array<i32: 0, 1>, stream = 0 : i32}> : (memref<4xf32>) -> ()
  return
}
