// RUN: gpt-opt %s -split-input-file -rt-fuse-producer-dual-cast | FileCheck %s

// GELU's forward cast and, through a reshape, the transposed cast of its
// output for grad_weight, whose scale is made from the same history by
// the same recipe: one gelu_fwd with the dual-cast epilogue where the
// producer was, writing the amax, both layouts (q, q_t) and no bf16 output
// (rt.null in its place: its buffer and the cast's views go), both
// statistics slots kept (stat_slot, stat_slot_t); the grad_weight GEMM
// reads the producer's scale.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @gelu_fwd
// CHECK: rt.kernel "fp8_state_scale" ins(%[[H:.*]] : memref<16xf32>) outs(%[[S:.*]] : memref<f32>)
// CHECK-NOT: memref<4x8x64xbf16>
// CHECK: %[[QT:.*]] = rt.alloc : memref<64x32xf8E4M3FN>
// CHECK-NEXT: %[[NULL:.*]] = rt.null : memref<0xf32>
// CHECK-NEXT: rt.kernel "gelu_fwd" ins(%[[X:.*]], %[[S]] : memref<4x8x64xf32>, memref<f32>) outs(%[[NULL]], %[[M:.*]], %[[Q:.*]], %[[QT]] : memref<0xf32>, memref<f32>, memref<4x8x64xf8E4M3FN>, memref<64x32xf8E4M3FN>) consts [2048, 1, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = 6 : i64, stat_slot_t = 9 : i64, transpose = 0 : i64}] {rt.fp8_stat = [{gemm = "forward", layer = "fc2", operand = "a", slot = 6 : i64}, {gemm = "grad_weight", layer = "fc2", operand = "b", slot = 9 : i64}]}
// CHECK-NOT: state_quantize_fp8_transposed
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[QT]], %{{.*}}, %[[S]] :
// CHECK-NOT: rt.view @fp8_state
// CHECK: return
func.func @gelu_fwd() {
  %x = rt.alloc : memref<4x8x64xf32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<4x8x64xbf16>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<4x8x64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s : memref<4x8x64xf32>, memref<f32>) outs(%y, %m, %q : memref<4x8x64xbf16>, memref<f32>, memref<4x8x64xf8E4M3FN>) consts [2048, 1, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = 6}] {rt.fp8_stat = {gemm = "forward", layer = "fc2", operand = "a", slot = 6 : i64}}
  %y2 = rt.reshape %y : memref<4x8x64xbf16> -> memref<32x64xbf16>
  %h2 = rt.view @fp8_state[0] : memref<16xf32>
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y2, %h2 : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, 9, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc2", operand = "b", slot = 9 : i64}}
  %g = rt.alloc : memref<48x32xf8E5M2>
  %sg = rt.alloc : memref<f32>
  %dw = rt.alloc : memref<48x64xf32>
  rt.kernel "gemm" ins(%g, %qt, %sg, %s2 : memref<48x32xf8E5M2>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dw : memref<48x64xf32>) consts [{a_dtype = 5, b_dtype = 4, k = 32, m = 48, n = 64, stride_c = 1, trans_b = 1}]
  return
}

// -----

// GELU's gradient and its transposed cast with the bias gradient: one
// gelu_bwd with the dual cast and db (no dx: rt.null), the bias
// gradient's dtype in the descriptor's db_dtype.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @gelu_bwd
// CHECK: %[[NULL:.*]] = rt.null : memref<0xf32>
// CHECK-NEXT: rt.kernel "gelu_bwd" ins(%{{.*}}, %{{.*}}, %[[S:.*]] : memref<32x64xbf16>, memref<32x64xbf16>, memref<f32>) outs(%[[NULL]], %{{.*}}, %{{.*}}, %{{.*}}, %[[DB:.*]] : memref<0xf32>, memref<f32>, memref<32x64xf8E5M2>, memref<64x32xf8E5M2>, memref<64xf32>) consts [2048, 2, 2, 2, {cols = 64 : i64, db_dtype = 257 : i64, format = 1 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = 4 : i64, stat_slot_t = 5 : i64, transpose = 0 : i64}] {rt.fp8_stat = [{gemm = "grad_input", layer = "fc1", operand = "a", slot = 4 : i64}, {gemm = "grad_weight", layer = "fc1", operand = "a", slot = 5 : i64}]}
// CHECK-NOT: state_quantize_fp8_transposed_bgrad
// CHECK: return
func.func @gelu_bwd() {
  %dy = rt.alloc : memref<32x64xbf16>
  %x = rt.alloc : memref<32x64xbf16>
  %h = rt.view @fp8_state[64] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %dx = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E5M2>
  rt.kernel "gelu_bwd" ins(%dy, %x, %s : memref<32x64xbf16>, memref<32x64xbf16>, memref<f32>) outs(%dx, %m, %q : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E5M2>) consts [2048, 2, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 1, transpose = 0, stat_slot = 4}] {rt.fp8_stat = {gemm = "grad_input", layer = "fc1", operand = "a", slot = 4 : i64}}
  %qt = rt.alloc : memref<64x32xf8E5M2>
  %db = rt.alloc : memref<64xf32>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed_bgrad" ins(%dx, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %db, %s2 : memref<64x32xf8E5M2>, memref<64xf32>, memref<f32>) consts [32, 64, 1, 5, 2, 257, 16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0] {rt.fp8_stat = {gemm = "grad_weight", layer = "fc1", operand = "a", slot = 5 : i64}}
  return
}

// -----

// The layernorms: layernorm_fwd with a cast through a reshape, and the
// residual add in front (add_layernorm_fwd, whose sum x stays an output):
// one layernorm_fwd / add_layernorm_fwd with the dual cast, without the
// bf16 output (`out` is rt.null), its constants the producer's own (rows,
// width, eps, dtypes), then the descriptor: the output as rows x width,
// its dtype, format and both statistics slots; the GEMM reads the
// producer's scale.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @layernorm_fwd
// CHECK: rt.kernel "fp8_state_scale" ins(%{{.*}} : memref<16xf32>) outs(%[[S:.*]] : memref<f32>)
// CHECK-NOT: memref<4x8x64xbf16>
// CHECK: %[[QT:.*]] = rt.alloc : memref<64x32xf8E4M3FN>
// CHECK-NEXT: %[[NULL:.*]] = rt.null : memref<0xf32>
// CHECK-NEXT: rt.kernel "layernorm_fwd" ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[S]] : memref<4x8x64xbf16>, memref<64xf32>, memref<64xf32>, memref<f32>) outs(%[[NULL]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[QT]] : memref<0xf32>, memref<4x8xf32>, memref<4x8xf32>, memref<f32>, memref<4x8x64xf8E4M3FN>, memref<64x32xf8E4M3FN>) consts [32, 64, 1.000000e-05, 2, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = 3 : i64, stat_slot_t = 7 : i64, transpose = 0 : i64}] {rt.fp8_stat = [{gemm = "forward", layer = "h.0.attn.qkv", operand = "a", slot = 3 : i64}, {gemm = "grad_weight", layer = "h.0.attn.qkv", operand = "b", slot = 7 : i64}]}
// CHECK-NOT: state_quantize_fp8_transposed
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[QT]], %{{.*}}, %[[S]] :
// CHECK: return
func.func @layernorm_fwd() {
  %x = rt.alloc : memref<4x8x64xbf16>
  %w = rt.alloc : memref<64xf32>
  %b = rt.alloc : memref<64xf32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<4x8x64xbf16>
  %mean = rt.alloc : memref<4x8xf32>
  %rstd = rt.alloc : memref<4x8xf32>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<4x8x64xf8E4M3FN>
  rt.kernel "layernorm_fwd" ins(%x, %w, %b, %s : memref<4x8x64xbf16>, memref<64xf32>, memref<64xf32>, memref<f32>) outs(%y, %mean, %rstd, %m, %q : memref<4x8x64xbf16>, memref<4x8xf32>, memref<4x8xf32>, memref<f32>, memref<4x8x64xf8E4M3FN>) consts [32, 64, 1.0e-5, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = 3}] {rt.fp8_stat = {gemm = "forward", layer = "h.0.attn.qkv", operand = "a", slot = 3 : i64}}
  %y2 = rt.reshape %y : memref<4x8x64xbf16> -> memref<32x64xbf16>
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y2, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, 7, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0] {rt.fp8_stat = {gemm = "grad_weight", layer = "h.0.attn.qkv", operand = "b", slot = 7 : i64}}
  %g = rt.alloc : memref<192x32xf8E5M2>
  %sg = rt.alloc : memref<f32>
  %dw = rt.alloc : memref<192x64xf32>
  rt.kernel "gemm" ins(%g, %qt, %sg, %s2 : memref<192x32xf8E5M2>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dw : memref<192x64xf32>) consts [{a_dtype = 5, b_dtype = 4, k = 32, m = 192, n = 64, stride_c = 1, trans_b = 1}]
  return
}
// CHECK-LABEL: func.func @add_layernorm_fwd
// CHECK: %[[NULL:.*]] = rt.null : memref<0xf32>
// CHECK-NEXT: rt.kernel "add_layernorm_fwd" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<32x64xbf16>, memref<64xf32>, memref<64xf32>, memref<f32>) outs(%[[X:.*]], %[[NULL]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<0xf32>, memref<32xf32>, memref<32xf32>, memref<f32>, memref<32x64xf8E4M3FN>, memref<64x32xf8E4M3FN>) consts [32, 64, 1.000000e-05, 2, 2, 2, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = -1 : i64, stat_slot_t = -1 : i64, transpose = 0 : i64}]
// CHECK-NOT: state_quantize_fp8_transposed
// CHECK: rt.kernel "add" ins(%[[X]], %[[X]]
func.func @add_layernorm_fwd() {
  %a = rt.alloc : memref<32x64xbf16>
  %r = rt.alloc : memref<32x64xbf16>
  %w = rt.alloc : memref<64xf32>
  %b = rt.alloc : memref<64xf32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %x = rt.alloc : memref<32x64xbf16>
  %y = rt.alloc : memref<32x64xbf16>
  %mean = rt.alloc : memref<32xf32>
  %rstd = rt.alloc : memref<32xf32>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "add_layernorm_fwd" ins(%a, %r, %w, %b, %s : memref<32x64xbf16>, memref<32x64xbf16>, memref<64xf32>, memref<64xf32>, memref<f32>) outs(%x, %y, %mean, %rstd, %m, %q : memref<32x64xbf16>, memref<32x64xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>, memref<32x64xf8E4M3FN>) consts [32, 64, 1.0e-5, 2, 2, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %z = rt.alloc : memref<32x64xbf16>
  rt.kernel "add" ins(%x, %x : memref<32x64xbf16>, memref<32x64xbf16>) outs(%z : memref<32x64xbf16>) consts [2048, 1, 0, 2, 2, 2]
  return
}

// -----

// Left apart: a layernorm output whose casts see it as another 2-D shape
// than its rows x width (the transposed codes would not be the row-major
// codes transposed).
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @layernorm_other_shape
// CHECK: rt.kernel "layernorm_fwd" ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>, memref<32x64xf8E4M3FN>) consts [32, 64, 1.000000e-05, 2, 2, {cols = 128 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 16 : i64, stat_slot = -1 : i64, transpose = 0 : i64}]
// CHECK: rt.kernel "state_quantize_fp8_transposed" ins
// CHECK-NOT: rt.null
// CHECK-NOT: stat_slot_t
func.func @layernorm_other_shape() {
  %x = rt.alloc : memref<32x64xbf16>
  %w = rt.alloc : memref<64xf32>
  %b = rt.alloc : memref<64xf32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<32x64xbf16>
  %mean = rt.alloc : memref<32xf32>
  %rstd = rt.alloc : memref<32xf32>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "layernorm_fwd" ins(%x, %w, %b, %s : memref<32x64xbf16>, memref<64xf32>, memref<64xf32>, memref<f32>) outs(%y, %mean, %rstd, %m, %q : memref<32x64xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>, memref<32x64xf8E4M3FN>) consts [32, 64, 1.0e-5, 2, 2, {rows = 16, cols = 128, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %y2 = rt.reshape %y : memref<32x64xbf16> -> memref<16x128xbf16>
  %qt = rt.alloc : memref<128x16xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y2, %h : memref<16x128xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<128x16xf8E4M3FN>, memref<f32>) consts [16, 128, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  return
}

// -----

// Left apart: the output read again after the transposed cast (@reread);
// a scale made by another recipe (@other_recipe, margin 1); the history
// written between the scale and the cast (@history_written).
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @reread
// CHECK: rt.kernel "gelu_fwd" ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = -1 : i64, transpose = 0 : i64}]{{$}}
// CHECK: rt.kernel "state_quantize_fp8_transposed" ins
// CHECK-LABEL: func.func @other_recipe
// CHECK: rt.kernel "gelu_fwd" ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = -1 : i64, transpose = 0 : i64}]{{$}}
// CHECK: rt.kernel "state_quantize_fp8_transposed" ins
// CHECK-LABEL: func.func @history_written
// CHECK: rt.kernel "gelu_fwd" ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = -1 : i64, transpose = 0 : i64}]{{$}}
// CHECK: rt.kernel "state_quantize_fp8_transposed" ins
// CHECK-NOT: rt.null
// CHECK-NOT: stat_slot_t
func.func @reread() {
  %x = rt.alloc : memref<32x64xbf16>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%y, %m, %q : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %z = rt.alloc : memref<32x64xbf16>
  rt.kernel "add" ins(%y, %y : memref<32x64xbf16>, memref<32x64xbf16>) outs(%z : memref<32x64xbf16>) consts [2048, 1, 0, 2, 2, 2]
  return
}
func.func @other_recipe() {
  %x = rt.alloc : memref<32x64xbf16>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 1, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%y, %m, %q : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  return
}
func.func @history_written() {
  %x = rt.alloc : memref<32x64xbf16>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y = rt.alloc : memref<32x64xbf16>
  %m = rt.alloc : memref<f32>
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s : memref<32x64xbf16>, memref<f32>) outs(%y, %m, %q : memref<32x64xbf16>, memref<f32>, memref<32x64xf8E4M3FN>) consts [2048, 2, 2, {rows = 32, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%h : memref<16xf32>) consts [16]
  %qt = rt.alloc : memref<64x32xf8E4M3FN>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "state_quantize_fp8_transposed" ins(%y, %h : memref<32x64xbf16>, memref<16xf32>) outs(%qt, %s2 : memref<64x32xf8E4M3FN>, memref<f32>) consts [32, 64, 0, -1, 2, 16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  return
}
