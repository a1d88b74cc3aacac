// RUN: gpt-opt %s -split-input-file -rt-fuse-add-layernorm | FileCheck %s

// The residual add and the layernorm reading its sum: one kernel where the
// layernorm was, still storing the sum.
// CHECK-LABEL: func.func @fused
// CHECK: %[[A:.*]] = rt.alloc : memref<8x32xbf16>
// CHECK-NEXT: %[[B:.*]] = rt.alloc : memref<8x32xf32>
// CHECK-NEXT: %[[X:.*]] = rt.alloc : memref<8x32xbf16>
// CHECK-NOT: rt.kernel "add"
// CHECK: rt.kernel "add_layernorm_fwd" ins(%[[A]], %[[B]], %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%[[X]], %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.000000e-05, 2, 1, 2, 2]
// CHECK-NOT: layernorm_fwd"
// CHECK: rt.kernel "convert" ins(%{{.*}}) outs(%[[X]]
func.func @fused() {
  %a = rt.alloc : memref<8x32xbf16>
  %b = rt.alloc : memref<8x32xf32>
  %x = rt.alloc : memref<8x32xbf16>
  rt.kernel "add" ins(%a, %b : memref<8x32xbf16>, memref<8x32xf32>) outs(%x : memref<8x32xbf16>) consts [1, 256, 0, 2, 1, 2]
  %w = rt.alloc : memref<32xf32>
  %bias = rt.alloc : memref<32xf32>
  %y = rt.alloc : memref<8x32xbf16>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  rt.kernel "layernorm_fwd" ins(%x, %w, %bias : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xbf16>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 2, 2]
  %x_f32 = rt.alloc : memref<256xf32>
  rt.kernel "convert" ins(%x_f32 : memref<256xf32>) outs(%x : memref<8x32xbf16>) consts [256, 1, 2]
  return
}

// -----

// The layernorm's FP8 epilogue (fp8-fuse-amax, fp8-fuse-cast) comes along:
// its buffers (scale, amax, q) and descriptor follow, and the cast keeps
// its statistics' name.
// CHECK-LABEL: func.func @fused_epilogues
// CHECK: rt.kernel "add_layernorm_fwd" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<8xf32>, memref<8xf32>, memref<f32>) consts [8, 32, 1.000000e-05, 2, 2, 2, 2, {cols = 32 : i64, out_dtype = 2 : i64, rows = 8 : i64}]{{$}}
// CHECK: rt.kernel "add_layernorm_fwd" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<8x32xf8E4M3FN>) consts [8, 32, 1.000000e-05, 2, 2, 2, 2, {cols = 32 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 8 : i64, stat_slot = 5 : i64, transpose = 0 : i64}] {rt.fp8_stat = {layer = "h.1.attn.qkv"}}
// CHECK-NOT: rt.kernel "add"
func.func @fused_epilogues() {
  %a = rt.alloc : memref<8x32xbf16>
  %b = rt.alloc : memref<8x32xbf16>
  %w = rt.alloc : memref<32xf32>
  %bias = rt.alloc : memref<32xf32>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  %amax = rt.alloc : memref<f32>
  %scale = rt.alloc : memref<f32>
  %q = rt.alloc : memref<8x32xf8E4M3FN>
  %x = rt.alloc : memref<8x32xbf16>
  %y = rt.alloc : memref<8x32xbf16>
  rt.kernel "add" ins(%a, %b : memref<8x32xbf16>, memref<8x32xbf16>) outs(%x : memref<8x32xbf16>) consts [1, 256, 0, 2, 2, 2]
  rt.kernel "layernorm_fwd" ins(%x, %w, %bias : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd, %amax : memref<8x32xbf16>, memref<8xf32>, memref<8xf32>, memref<f32>) consts [8, 32, 1.0e-5, 2, 2, {rows = 8, cols = 32, out_dtype = 2}]
  %x2 = rt.alloc : memref<8x32xbf16>
  %y2 = rt.alloc : memref<8x32xbf16>
  rt.kernel "add" ins(%x, %y : memref<8x32xbf16>, memref<8x32xbf16>) outs(%x2 : memref<8x32xbf16>) consts [1, 256, 0, 2, 2, 2]
  rt.kernel "layernorm_fwd" ins(%x2, %w, %bias, %scale : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>) outs(%y2, %mean, %rstd, %amax, %q : memref<8x32xbf16>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<8x32xf8E4M3FN>) consts [8, 32, 1.0e-5, 2, 2, {rows = 8, cols = 32, out_dtype = 2, format = 0, transpose = 0, stat_slot = 5}] {rt.fp8_stat = {layer = "h.1.attn.qkv"}}
  return
}

// -----

// Not fused: a broadcast add (the position embedding), a sum read by
// something else first, and an operand overwritten before the layernorm.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: add_layernorm_fwd
func.func @not_fused() {
  %a = rt.alloc : memref<8x32xf32>
  %p = rt.alloc : memref<32xf32>
  %x = rt.alloc : memref<8x32xf32>
  rt.kernel "add" ins(%a, %p : memref<8x32xf32>, memref<32xf32>) outs(%x : memref<8x32xf32>) consts [8, 32, 1, 1, 1, 1]
  %w = rt.alloc : memref<32xf32>
  %y = rt.alloc : memref<8x32xf32>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xf32>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 1, 1]

  %x2 = rt.alloc : memref<8x32xf32>
  rt.kernel "add" ins(%a, %y : memref<8x32xf32>, memref<8x32xf32>) outs(%x2 : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]
  %s = rt.alloc : memref<32xf32>
  rt.kernel "reduce_rows" ins(%x2 : memref<8x32xf32>) outs(%s : memref<32xf32>) consts [8, 32, 1, 1]
  rt.kernel "layernorm_fwd" ins(%x2, %w, %w : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xf32>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 1, 1]

  %x3 = rt.alloc : memref<8x32xf32>
  rt.kernel "add" ins(%a, %y : memref<8x32xf32>, memref<8x32xf32>) outs(%x3 : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]
  rt.kernel "fill" outs(%a : memref<8x32xf32>) consts [256, 0.0]
  rt.kernel "layernorm_fwd" ins(%x3, %w, %w : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xf32>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 1, 1]
  return
}

// -----

// Backward: the layernorm backward and the add of its dx into the residual
// gradient, dx read through a reshape, become one layernorm_bwd_add where
// the add was; dx's buffer and reshape go. The residual is the add's b
// here, so its dtype comes from the add's b constant.
// CHECK-LABEL: func.func @backward
// CHECK-DAG: %[[DY:.*]] = rt.alloc : memref<8x32xbf16>
// CHECK-DAG: %[[X:.*]] = rt.alloc : memref<8x32xbf16>
// CHECK-DAG: %[[R:.*]] = rt.alloc : memref<256xf32>
// CHECK-DAG: %[[S:.*]] = rt.alloc : memref<256xbf16>
// CHECK-NOT: rt.alloc : memref<8x32xbf16>
// CHECK-NOT: rt.kernel "layernorm_bwd"
// CHECK: rt.kernel "fill" outs(%{{.*}} : memref<8xf32>)
// CHECK-NEXT: rt.kernel "layernorm_bwd_add" ins(%[[DY]], %[[X]], %{{.*}}, %{{.*}}, %{{.*}}, %[[R]] : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<8xf32>, memref<8xf32>, memref<256xf32>) outs(%[[S]], %{{.*}}, %{{.*}} : memref<256xbf16>, memref<32xf32>, memref<32xf32>) consts [8, 32, 2, 2, 2, 1, 1, 1, 2]
// CHECK-NOT: rt.kernel "add"
// CHECK-NOT: rt.reshape
func.func @backward() {
  %dy = rt.alloc : memref<8x32xbf16>
  %x = rt.alloc : memref<8x32xbf16>
  %w = rt.alloc : memref<32xf32>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  %dx = rt.alloc : memref<8x32xbf16>
  %dw = rt.alloc : memref<32xf32>
  %db = rt.alloc : memref<32xf32>
  %resid = rt.alloc : memref<256xf32>
  %sum = rt.alloc : memref<256xbf16>
  %other = rt.alloc : memref<8xf32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx, %dw, %db : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) consts [8, 32, 2, 2, 2, 1, 1]
  rt.kernel "fill" outs(%other : memref<8xf32>) consts [8, 0.0]
  %flat = rt.reshape %dx : memref<8x32xbf16> -> memref<256xbf16>
  rt.kernel "add" ins(%flat, %resid : memref<256xbf16>, memref<256xf32>) outs(%sum : memref<256xbf16>) consts [1, 256, 0, 2, 1, 2]
  return
}

// -----

// With the FP8 epilogue fp8-fuse-amax / fp8-fuse-cast gave the add: the
// epilogue's buffers (scale, amax, q) and descriptor follow, and the cast
// keeps its statistics' name.
// CHECK-LABEL: func.func @backward_epilogues
// CHECK: rt.kernel "layernorm_bwd_add" ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>) consts [8, 32, 2, 2, 2, 1, 1, 2, 2, {cols = 32 : i64, out_dtype = 2 : i64, rows = 8 : i64}]{{$}}
// CHECK: rt.kernel "layernorm_bwd_add" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<8xf32>, memref<8xf32>, memref<8x32xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>, memref<8x32xf8E5M2>) consts [8, 32, 2, 2, 2, 1, 1, 2, 2, {cols = 32 : i64, format = 1 : i64, out_dtype = 2 : i64, rows = 8 : i64, stat_slot = 3 : i64, transpose = 0 : i64}] {rt.fp8_stat = {layer = "h.0.attn.proj"}}
func.func @backward_epilogues() {
  %dy = rt.alloc : memref<8x32xbf16>
  %x = rt.alloc : memref<8x32xbf16>
  %w = rt.alloc : memref<32xf32>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  %dw = rt.alloc : memref<32xf32>
  %db = rt.alloc : memref<32xf32>
  %resid = rt.alloc : memref<8x32xbf16>
  %amax = rt.alloc : memref<f32>
  %scale = rt.alloc : memref<f32>
  %q = rt.alloc : memref<8x32xf8E5M2>
  %dx = rt.alloc : memref<8x32xbf16>
  %sum = rt.alloc : memref<8x32xbf16>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx, %dw, %db : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) consts [8, 32, 2, 2, 2, 1, 1]
  rt.kernel "add" ins(%resid, %dx : memref<8x32xbf16>, memref<8x32xbf16>) outs(%sum, %amax : memref<8x32xbf16>, memref<f32>) consts [1, 256, 0, 2, 2, 2, {rows = 8, cols = 32, out_dtype = 2}]
  %dx2 = rt.alloc : memref<8x32xbf16>
  %sum2 = rt.alloc : memref<8x32xbf16>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xbf16>, memref<8x32xbf16>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx2, %dw, %db : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) consts [8, 32, 2, 2, 2, 1, 1]
  rt.kernel "add" ins(%dx2, %resid, %scale : memref<8x32xbf16>, memref<8x32xbf16>, memref<f32>) outs(%sum2, %amax, %q : memref<8x32xbf16>, memref<f32>, memref<8x32xf8E5M2>) consts [1, 256, 0, 2, 2, 2, {rows = 8, cols = 32, out_dtype = 2, format = 1, transpose = 0, stat_slot = 3}] {rt.fp8_stat = {layer = "h.0.attn.proj"}}
  return
}

// -----

// Not fused backward: dx read by a second kernel; an input of the
// layernorm overwritten before the add; its dw read before the add; a
// broadcast add; and dx added to itself.
// CHECK-LABEL: func.func @backward_not_fused
// CHECK-NOT: layernorm_bwd_add
func.func @backward_not_fused() {
  %dy = rt.alloc : memref<8x32xf32>
  %x = rt.alloc : memref<8x32xf32>
  %w = rt.alloc : memref<32xf32>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  %dw = rt.alloc : memref<32xf32>
  %db = rt.alloc : memref<32xf32>
  %resid = rt.alloc : memref<8x32xf32>
  %sum = rt.alloc : memref<8x32xf32>
  %s = rt.alloc : memref<32xf32>

  %dx1 = rt.alloc : memref<8x32xf32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xf32>, memref<8x32xf32>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx1, %dw, %db : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) consts [8, 32, 1, 1, 1, 1, 1]
  rt.kernel "add" ins(%resid, %dx1 : memref<8x32xf32>, memref<8x32xf32>) outs(%sum : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]
  rt.kernel "reduce_rows" ins(%dx1 : memref<8x32xf32>) outs(%s : memref<32xf32>) consts [8, 32, 1, 1]

  %dx2 = rt.alloc : memref<8x32xf32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xf32>, memref<8x32xf32>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx2, %dw, %db : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) consts [8, 32, 1, 1, 1, 1, 1]
  rt.kernel "fill" outs(%dy : memref<8x32xf32>) consts [256, 0.0]
  rt.kernel "add" ins(%resid, %dx2 : memref<8x32xf32>, memref<8x32xf32>) outs(%sum : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]

  %dx3 = rt.alloc : memref<8x32xf32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xf32>, memref<8x32xf32>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx3, %dw, %db : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) consts [8, 32, 1, 1, 1, 1, 1]
  rt.kernel "reduce_rows" ins(%resid : memref<8x32xf32>) outs(%dw : memref<32xf32>) consts [8, 32, 1, 1]
  rt.kernel "add" ins(%resid, %dx3 : memref<8x32xf32>, memref<8x32xf32>) outs(%sum : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]

  %dx4 = rt.alloc : memref<8x32xf32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xf32>, memref<8x32xf32>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx4, %dw, %db : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) consts [8, 32, 1, 1, 1, 1, 1]
  rt.kernel "add" ins(%dx4, %w : memref<8x32xf32>, memref<32xf32>) outs(%sum : memref<8x32xf32>) consts [8, 32, 1, 1, 1, 1]

  %dx5 = rt.alloc : memref<8x32xf32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<8x32xf32>, memref<8x32xf32>, memref<32xf32>, memref<8xf32>, memref<8xf32>) outs(%dx5, %dw, %db : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) consts [8, 32, 1, 1, 1, 1, 1]
  rt.kernel "add" ins(%dx5, %dx5 : memref<8x32xf32>, memref<8x32xf32>) outs(%sum : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]
  return
}
