// RUN: gpt-opt %s -split-input-file -rt-fuse-qkv-attention | FileCheck %s

// The split of the qkv GEMM's output, the attention, its backward and the
// concat of dq, dk, dv: the attention reads the packed buffer, the backward
// writes the packed gradient (its buffer moves up), and the six copies and
// the parts' buffers are gone.
// CHECK-LABEL: func.func @packed
// CHECK: %[[QKV:.*]] = rt.alloc : memref<2x8x96xbf16>
// CHECK-NEXT: rt.alloc : memref<{{[0-9]+}}xf32>
// CHECK-NEXT: rt.kernel "convert" ins(%{{.*}}) outs(%[[QKV]]
// CHECK-NEXT: %[[OUT:.*]] = rt.alloc : memref<2x8x32xbf16>
// CHECK-NEXT: %[[LSE:.*]] = rt.alloc : memref<2x4x8xf32>
// CHECK-NEXT: rt.kernel "attention_fwd_packed" ins(%[[QKV]] : memref<2x8x96xbf16>) outs(%[[OUT]], %[[LSE]] : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
// CHECK-NEXT: %[[DOUT:.*]] = rt.alloc : memref<2x8x32xbf16>
// CHECK-NEXT: rt.alloc : memref<{{[0-9]+}}xf32>
// CHECK-NEXT: rt.kernel "convert" ins(%{{.*}}) outs(%[[DOUT]]
// CHECK-NEXT: %[[DQKV:.*]] = rt.alloc : memref<2x8x96xbf16>
// CHECK-NEXT: rt.kernel "attention_bwd_packed" ins(%[[DOUT]], %[[QKV]], %[[OUT]], %[[LSE]] : memref<2x8x32xbf16>, memref<2x8x96xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%[[DQKV]] : memref<2x8x96xbf16>) consts [2, 8, 32, 4, 1, 2]
// CHECK-NEXT: rt.alloc : memref<{{[0-9]+}}xf32>
// CHECK-NEXT: rt.kernel "convert" ins(%{{.*}}) outs(%[[DQKV]]
// CHECK-NEXT: return
func.func @packed() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %qkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%qkv_f32 : memref<1536xf32>) outs(%qkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  %dout = rt.alloc : memref<2x8x32xbf16>
  %dout_f32 = rt.alloc : memref<512xf32>
  rt.kernel "convert" ins(%dout_f32 : memref<512xf32>) outs(%dout : memref<2x8x32xbf16>) consts [512, 1, 2]
  %dq = rt.alloc : memref<2x8x32xbf16>
  %dk = rt.alloc : memref<2x8x32xbf16>
  %dv = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "attention_bwd" ins(%dout, %q, %k, %v, %out, %lse : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%dq, %dk, %dv : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) consts [2, 8, 32, 4, 1, 2]
  %dqkv = rt.alloc : memref<2x8x96xbf16>
  rt.kernel "copy_blocks" ins(%dq : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%dk : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 32, 0, 2]
  rt.kernel "copy_blocks" ins(%dv : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 64, 0, 2]
  %dqkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%dqkv_f32 : memref<1536xf32>) outs(%dqkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  return
}

// -----

// Left as it is: q read by another kernel, and the packed buffer written
// between the split and the backward (the parts would not be what the
// backward reads).
// CHECK-LABEL: func.func @apart
// CHECK-NOT: _packed
func.func @apart() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%q : memref<2x8x32xbf16>) outs(%m : memref<f32>) consts [512, 2]

  %qkv2 = rt.alloc : memref<2x8x96xbf16>
  %q2 = rt.alloc : memref<2x8x32xbf16>
  %k2 = rt.alloc : memref<2x8x32xbf16>
  %v2 = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv2 : memref<2x8x96xbf16>) outs(%q2 : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv2 : memref<2x8x96xbf16>) outs(%k2 : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv2 : memref<2x8x96xbf16>) outs(%v2 : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  rt.kernel "attention_fwd" ins(%q2, %k2, %v2 : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  %flat = rt.reshape %qkv2 : memref<2x8x96xbf16> -> memref<16x96xbf16>
  %flat_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%flat_f32 : memref<1536xf32>) outs(%flat : memref<16x96xbf16>) consts [1536, 1, 2]
  %dq = rt.alloc : memref<2x8x32xbf16>
  %dk = rt.alloc : memref<2x8x32xbf16>
  %dv = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "attention_bwd" ins(%out, %q2, %k2, %v2, %out, %lse : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%dq, %dk, %dv : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) consts [2, 8, 32, 4, 1, 2]
  %dqkv = rt.alloc : memref<2x8x96xbf16>
  rt.kernel "copy_blocks" ins(%dq : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%dk : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 32, 0, 2]
  rt.kernel "copy_blocks" ins(%dv : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 64, 0, 2]
  return
}

// -----

// Not fused when the packed buffer is rewritten after the first split, even
// when that split is k's.
// CHECK-LABEL: func.func @order
// CHECK-NOT: _packed
func.func @order() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %qkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%qkv_f32 : memref<1536xf32>) outs(%qkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  %qkv_f32_2 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%qkv_f32_2 : memref<1536xf32>) outs(%qkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  return
}

// -----

// Not fused when dqkv is read between its concats (the first being dv's).
// CHECK-LABEL: func.func @concat_order
// CHECK-NOT: _packed
func.func @concat_order() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %qkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%qkv_f32 : memref<1536xf32>) outs(%qkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  %dout = rt.alloc : memref<2x8x32xbf16>
  %dout_f32 = rt.alloc : memref<512xf32>
  rt.kernel "convert" ins(%dout_f32 : memref<512xf32>) outs(%dout : memref<2x8x32xbf16>) consts [512, 1, 2]
  %dq = rt.alloc : memref<2x8x32xbf16>
  %dk = rt.alloc : memref<2x8x32xbf16>
  %dv = rt.alloc : memref<2x8x32xbf16>
  %dqkv = rt.alloc : memref<2x8x96xbf16>
  %dqkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%dqkv_f32 : memref<1536xf32>) outs(%dqkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  rt.kernel "attention_bwd" ins(%dout, %q, %k, %v, %out, %lse : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%dq, %dk, %dv : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) consts [2, 8, 32, 4, 1, 2]
  rt.kernel "copy_blocks" ins(%dv : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 64, 0, 2]
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%dqkv : memref<2x8x96xbf16>) outs(%m : memref<f32>) consts [1536, 2]
  rt.kernel "copy_blocks" ins(%dq : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%dk : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 32, 0, 2]
  return
}

// -----

// Not fused (and no crash) when a split comes after the attention.
// CHECK-LABEL: func.func @late_split
// CHECK-NOT: _packed
func.func @late_split() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  return
}

// -----

// An amax of the whole attention output (the projection's FP8 input),
// through a reshape: the packed forward's epilogue takes it (the output
// as rows x width, its dtype); its buffer moves up.
// CHECK-LABEL: func.func @packed_amax
// CHECK: %[[M:.*]] = rt.alloc : memref<f32>
// CHECK-NEXT: rt.kernel "attention_fwd_packed" ins(%{{.*}} : memref<2x8x96xbf16>) outs(%{{.*}}, %{{.*}}, %[[M]] : memref<2x8x32xbf16>, memref<2x4x8xf32>, memref<f32>) consts [2, 8, 32, 4, 1, 2, {cols = 32 : i64, out_dtype = 2 : i64, rows = 16 : i64}]{{$}}
// CHECK-NOT: rt.kernel "amax"
// CHECK: rt.kernel "scale_from_amax" ins(%[[M]]
func.func @packed_amax() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %qkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%qkv_f32 : memref<1536xf32>) outs(%qkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  %flat = rt.reshape %out : memref<2x8x32xbf16> -> memref<16x32xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%flat : memref<16x32xbf16>) outs(%m : memref<f32>) consts [512, 2]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  return
}

// -----

// An amax of the whole packed gradient (the qkv GEMM's FP8 output
// gradient) after the concats: the packed backward's epilogue takes it
// (dqkv as rows x 3 width, its dtype); one after a write of the gradient
// does not join.
// CHECK-LABEL: func.func @packed_bwd_amax
// CHECK: rt.kernel "attention_fwd_packed" ins({{.*}}) consts [2, 8, 32, 4, 1, 2]{{$}}
// CHECK: %[[M:.*]] = rt.alloc : memref<f32>
// CHECK: rt.kernel "attention_bwd_packed" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x32xbf16>, memref<2x8x96xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%[[DQKV:.*]], %[[M]] : memref<2x8x96xbf16>, memref<f32>) consts [2, 8, 32, 4, 1, 2, {cols = 96 : i64, out_dtype = 2 : i64, rows = 16 : i64}]{{$}}
// CHECK-NOT: rt.kernel "amax"
// CHECK: rt.kernel "scale_from_amax" ins(%[[M]]
// CHECK: rt.kernel "attention_bwd_packed" ins({{.*}}) outs(%{{.*}} : memref<2x8x96xbf16>) consts [2, 8, 32, 4, 1, 2]{{$}}
// CHECK: rt.kernel "convert"
// CHECK: rt.kernel "amax"
func.func @packed_bwd_amax() {
  %qkv = rt.alloc : memref<2x8x96xbf16>
  %qkv_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%qkv_f32 : memref<1536xf32>) outs(%qkv : memref<2x8x96xbf16>) consts [1536, 1, 2]
  %q = rt.alloc : memref<2x8x32xbf16>
  %k = rt.alloc : memref<2x8x32xbf16>
  %v = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%q : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%k : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 32, 2]
  rt.kernel "copy_blocks" ins(%qkv : memref<2x8x96xbf16>) outs(%v : memref<2x8x32xbf16>) consts [16, 32, 32, 96, 0, 64, 2]
  %out = rt.alloc : memref<2x8x32xbf16>
  %lse = rt.alloc : memref<2x4x8xf32>
  rt.kernel "attention_fwd" ins(%q, %k, %v : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) outs(%out, %lse : memref<2x8x32xbf16>, memref<2x4x8xf32>) consts [2, 8, 32, 4, 1, 2]
  %dout = rt.alloc : memref<2x8x32xbf16>
  %dout_f32 = rt.alloc : memref<512xf32>
  rt.kernel "convert" ins(%dout_f32 : memref<512xf32>) outs(%dout : memref<2x8x32xbf16>) consts [512, 1, 2]
  %dq = rt.alloc : memref<2x8x32xbf16>
  %dk = rt.alloc : memref<2x8x32xbf16>
  %dv = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "attention_bwd" ins(%dout, %q, %k, %v, %out, %lse : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%dq, %dk, %dv : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) consts [2, 8, 32, 4, 1, 2]
  %dqkv = rt.alloc : memref<2x8x96xbf16>
  rt.kernel "copy_blocks" ins(%dq : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%dk : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 32, 0, 2]
  rt.kernel "copy_blocks" ins(%dv : memref<2x8x32xbf16>) outs(%dqkv : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 64, 0, 2]
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%dqkv : memref<2x8x96xbf16>) outs(%m : memref<f32>) consts [1536, 2]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [5.734400e+04, 0, 0, 9.9999999999999998E-13]
  %dq2 = rt.alloc : memref<2x8x32xbf16>
  %dk2 = rt.alloc : memref<2x8x32xbf16>
  %dv2 = rt.alloc : memref<2x8x32xbf16>
  rt.kernel "attention_bwd" ins(%dout, %q, %k, %v, %out, %lse : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x4x8xf32>) outs(%dq2, %dk2, %dv2 : memref<2x8x32xbf16>, memref<2x8x32xbf16>, memref<2x8x32xbf16>) consts [2, 8, 32, 4, 1, 2]
  %dqkv2 = rt.alloc : memref<2x8x96xbf16>
  rt.kernel "copy_blocks" ins(%dq2 : memref<2x8x32xbf16>) outs(%dqkv2 : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 0, 0, 2]
  rt.kernel "copy_blocks" ins(%dk2 : memref<2x8x32xbf16>) outs(%dqkv2 : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 32, 0, 2]
  rt.kernel "copy_blocks" ins(%dv2 : memref<2x8x32xbf16>) outs(%dqkv2 : memref<2x8x96xbf16>) consts [16, 32, 96, 32, 64, 0, 2]
  %dqkv2_f32 = rt.alloc : memref<1536xf32>
  rt.kernel "convert" ins(%dqkv2_f32 : memref<1536xf32>) outs(%dqkv2 : memref<2x8x96xbf16>) consts [1536, 1, 2]
  %m2 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%dqkv2 : memref<2x8x96xbf16>) outs(%m2 : memref<f32>) consts [1536, 2]
  return
}
