// RUN: gpt-opt %s -split-input-file -rt-fuse-producer-cast | FileCheck %s

// The attention output under delayed scaling: its cast's scale is made
// from the history after the attention (as rt-bufferize emits it), with
// the history's update in between. The scale kernel moves in front of the
// attention, whose epilogue (it took only the amax, rows x cols of the
// output and its dtype) gains the cast: the scale one more input, the
// codes (q) one more output, the descriptor's format, transpose 0 and the
// statistics slot; the GEMM still reads the scale.
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @attention
// CHECK: rt.kernel "fp8_state_scale" ins(%{{.*}} : memref<16xf32>) outs(%[[S:.*]] : memref<f32>)
// CHECK: %[[Q:.*]] = rt.alloc : memref<2x8x64xf8E4M3FN>
// CHECK-NEXT: rt.kernel "attention_fwd_packed" ins(%{{.*}}, %[[S]] : memref<2x8x192xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}}, %[[M:.*]], %[[Q]] : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>, memref<2x8x64xf8E4M3FN>) consts [2, 8, 64, 4, 1, 2, {cols = 64 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 16 : i64, stat_slot = 5 : i64, transpose = 0 : i64}] {rt.fp8_stat = {gemm = "forward", layer = "h.0.attn.proj", operand = "a", slot = 5 : i64}}
// CHECK: rt.kernel "fp8_state_update" ins(%[[M]]
// CHECK-NOT: quantize_fp8
// CHECK: rt.kernel "gemm" ins(%[[Q]], %{{.*}}, %[[S]], %{{.*}} :
func.func @attention() {
  %qkv = rt.alloc : memref<2x8x192xbf16>
  %o = rt.alloc : memref<2x8x64xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "attention_fwd_packed" ins(%qkv : memref<2x8x192xbf16>) outs(%o, %lse, %m : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {rows = 16, cols = 64, out_dtype = 2}]
  %s = rt.alloc : memref<f32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %h2 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  %q = rt.alloc : memref<2x8x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%o, %s : memref<2x8x64xbf16>, memref<f32>) outs(%q : memref<2x8x64xf8E4M3FN>) consts [1024, 0, 5, 2] {rt.fp8_stat = {gemm = "forward", layer = "h.0.attn.proj", operand = "a", slot = 5 : i64}}
  %w = rt.alloc : memref<64x64xf8E4M3FN>
  %sw = rt.alloc : memref<f32>
  %y = rt.alloc : memref<2x8x64xbf16>
  rt.kernel "gemm" ins(%q, %w, %s, %sw : memref<2x8x64xf8E4M3FN>, memref<64x64xf8E4M3FN>, memref<f32>, memref<f32>) outs(%y : memref<2x8x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 64, m = 16, n = 64, trans_b = 1}]
  return
}

// -----

// Left apart: a scale made from the amax the attention takes (current
// scaling, @current); a history written between the attention and its
// scale (@history_written); the output read by another kernel before the
// cast (@read_first); a cast of part of the output (@part).
rt.arena @fp8_state fp8_state size = 256
// CHECK-LABEL: func.func @current
// CHECK: rt.kernel "attention_fwd_packed" ins(%{{.*}} : memref<2x8x192xbf16>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {cols = 64 : i64, out_dtype = 2 : i64, rows = 16 : i64}]{{$}}
// CHECK: rt.kernel "quantize_fp8"
// CHECK-LABEL: func.func @history_written
// CHECK: rt.kernel "attention_fwd_packed" ins(%{{.*}} : memref<2x8x192xbf16>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {cols = 64 : i64, out_dtype = 2 : i64, rows = 16 : i64}]{{$}}
// CHECK: rt.kernel "quantize_fp8"
// CHECK-LABEL: func.func @read_first
// CHECK: rt.kernel "attention_fwd_packed" ins(%{{.*}} : memref<2x8x192xbf16>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {cols = 64 : i64, out_dtype = 2 : i64, rows = 16 : i64}]{{$}}
// CHECK: rt.kernel "quantize_fp8"
// CHECK-LABEL: func.func @part
// CHECK: rt.kernel "attention_fwd_packed" ins(%{{.*}} : memref<2x8x192xbf16>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {cols = 64 : i64, out_dtype = 2 : i64, rows = 16 : i64}]{{$}}
// CHECK: rt.kernel "quantize_fp8"
// CHECK-NOT: format =
func.func @current() {
  %qkv = rt.alloc : memref<2x8x192xbf16>
  %o = rt.alloc : memref<2x8x64xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "attention_fwd_packed" ins(%qkv : memref<2x8x192xbf16>) outs(%o, %lse, %m : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {rows = 16, cols = 64, out_dtype = 2}]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %q = rt.alloc : memref<2x8x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%o, %s : memref<2x8x64xbf16>, memref<f32>) outs(%q : memref<2x8x64xf8E4M3FN>) consts [1024, 0, -1, 2]
  return
}
func.func @history_written() {
  %qkv = rt.alloc : memref<2x8x192xbf16>
  %o = rt.alloc : memref<2x8x64xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "attention_fwd_packed" ins(%qkv : memref<2x8x192xbf16>) outs(%o, %lse, %m : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {rows = 16, cols = 64, out_dtype = 2}]
  %h2 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  %s = rt.alloc : memref<f32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %q = rt.alloc : memref<2x8x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%o, %s : memref<2x8x64xbf16>, memref<f32>) outs(%q : memref<2x8x64xf8E4M3FN>) consts [1024, 0, -1, 2]
  return
}
func.func @read_first() {
  %qkv = rt.alloc : memref<2x8x192xbf16>
  %o = rt.alloc : memref<2x8x64xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "attention_fwd_packed" ins(%qkv : memref<2x8x192xbf16>) outs(%o, %lse, %m : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {rows = 16, cols = 64, out_dtype = 2}]
  %s = rt.alloc : memref<f32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %z = rt.alloc : memref<2x8x64xbf16>
  rt.kernel "add" ins(%o, %o : memref<2x8x64xbf16>, memref<2x8x64xbf16>) outs(%z : memref<2x8x64xbf16>) consts [1024, 1, 0, 2, 2, 2]
  %q = rt.alloc : memref<2x8x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%o, %s : memref<2x8x64xbf16>, memref<f32>) outs(%q : memref<2x8x64xf8E4M3FN>) consts [1024, 0, -1, 2]
  return
}
func.func @part() {
  %qkv = rt.alloc : memref<2x8x192xbf16>
  %o = rt.alloc : memref<2x8x64xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "attention_fwd_packed" ins(%qkv : memref<2x8x192xbf16>) outs(%o, %lse, %m : memref<2x8x64xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 64, 4, 1, 2, {rows = 16, cols = 64, out_dtype = 2}]
  %s = rt.alloc : memref<f32>
  %h = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_scale" ins(%h : memref<16xf32>) outs(%s : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %q = rt.alloc : memref<2x8x64xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%o, %s : memref<2x8x64xbf16>, memref<f32>) outs(%q : memref<2x8x64xf8E4M3FN>) consts [512, 0, -1, 2]
  return
}
