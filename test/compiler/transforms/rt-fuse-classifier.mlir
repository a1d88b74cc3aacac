// RUN: gpt-opt %s -split-input-file -rt-fuse-classifier | FileCheck %s

// The loss and the logits' gradient: one kernel where the backward was,
// after the step scalar it reads (dloss); the forward is gone.
// CHECK-LABEL: func.func @fused
// CHECK-NOT: rt.kernel "cross_entropy_fwd"
// CHECK: rt.kernel "step_scalar" outs(%[[DLOSS:.*]] : memref<f32>)
// CHECK: rt.kernel "cross_entropy_fwd_bwd" ins(%[[DLOSS]], %[[LOGITS:.*]], %[[T:.*]] : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>) outs(%[[LOSS:.*]], %[[LSE:.*]], %[[G:.*]] : memref<f32>, memref<4x64xf32>, memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]
// CHECK-NOT: cross_entropy_bwd
// CHECK: rt.kernel "gemm" ins(%[[G]], %{{.*}} : memref<4x64x512xbf16>, memref<512x32xbf16>)
rt.arena @inputs inputs size = 1024
func.func @fused() {
  %t = rt.view @inputs[0] : memref<4x64xi32>
  %logits = rt.alloc : memref<4x64x512xbf16>
  %loss = rt.alloc : memref<f32>
  %lse = rt.alloc : memref<4x64xf32>
  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  %dloss = rt.alloc : memref<f32>
  rt.kernel "step_scalar" outs(%dloss : memref<f32>) consts [0]
  %g = rt.alloc : memref<4x64x512xbf16>
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]
  %w = rt.alloc : memref<512x32xbf16>
  %dx = rt.alloc : memref<4x64x32xbf16>
  rt.kernel "gemm" ins(%g, %w : memref<4x64x512xbf16>, memref<512x32xbf16>) outs(%dx : memref<4x64x32xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 512, m = 256, n = 32}]
  return
}

// -----

// Left apart: the loss read before the backward (it would not be written
// yet), the logits written through a reshape in between, a kernel
// writing an overlapping view of the targets' bytes in between,
// a backward of other logits, and a forward alone (eval_step).
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: cross_entropy_fwd_bwd
rt.arena @inputs inputs size = 4096
func.func @not_fused() {
  %t = rt.view @inputs[0] : memref<4x64xi32>
  %logits = rt.alloc : memref<4x64x512xbf16>
  %loss = rt.alloc : memref<f32>
  %lse = rt.alloc : memref<4x64xf32>
  %dloss = rt.alloc : memref<f32>
  %g = rt.alloc : memref<4x64x512xbf16>
  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  %copy = rt.alloc : memref<f32>
  rt.kernel "scale" ins(%loss : memref<f32>) outs(%copy : memref<f32>) consts [1, 1.0]
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]

  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  %flat = rt.reshape %logits : memref<4x64x512xbf16> -> memref<256x512xbf16>
  %flat_f32 = rt.alloc : memref<131072xf32>
  rt.kernel "convert" ins(%flat_f32 : memref<131072xf32>) outs(%flat : memref<256x512xbf16>) consts [131072, 1, 2]
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]

  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  %other = rt.view @inputs[512] : memref<4x64xi32>
  rt.kernel "arange" outs(%other : memref<4x64xi32>) consts [256]
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]

  %logits2 = rt.alloc : memref<4x64x512xbf16>
  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits2, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]

  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  return
}

// -----

// An amax of the whole gradient after the classifier (an FP8 lm_head reads
// it), through a reshape: the fused kernel's epilogue takes it (dlogits
// as rows x padded vocabulary, its dtype); its buffer, defined after the
// classifier, moves before it.
// CHECK-LABEL: func.func @amax_fused
// CHECK: rt.kernel "step_scalar"
// CHECK-NEXT: rt.alloc : memref<4x64x512xbf16>
// CHECK-NEXT: %[[M:.*]] = rt.alloc : memref<f32>
// CHECK-NEXT: rt.kernel "cross_entropy_fwd_bwd" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %[[M]] : memref<f32>, memref<4x64xf32>, memref<4x64x512xbf16>, memref<f32>) consts [256, 500, 512, -1, 2, {cols = 512 : i64, out_dtype = 2 : i64, rows = 256 : i64}]{{$}}
// CHECK-NOT: rt.kernel "amax"
// CHECK: rt.kernel "scale_from_amax" ins(%[[M]] : memref<f32>)
rt.arena @inputs inputs size = 1024
func.func @amax_fused() {
  %t = rt.view @inputs[0] : memref<4x64xi32>
  %logits = rt.alloc : memref<4x64x512xbf16>
  %loss = rt.alloc : memref<f32>
  %lse = rt.alloc : memref<4x64xf32>
  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  %dloss = rt.alloc : memref<f32>
  rt.kernel "step_scalar" outs(%dloss : memref<f32>) consts [0]
  %g = rt.alloc : memref<4x64x512xbf16>
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]
  %flat = rt.reshape %g : memref<4x64x512xbf16> -> memref<256x512xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%flat : memref<256x512xbf16>) outs(%m : memref<f32>) consts [131072, 2]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [5.734400e+04, 0, 0, 9.9999999999999998E-13]
  return
}

// -----

// The amax stays apart when the gradient is written before it, or when it
// covers only part of the gradient.
// CHECK-LABEL: func.func @amax_apart
// CHECK: rt.kernel "cross_entropy_fwd_bwd" ins({{.*}}) consts [256, 500, 512, -1, 2]{{$}}
// CHECK: rt.kernel "amax"
// CHECK: rt.kernel "cross_entropy_fwd_bwd" ins({{.*}}) consts [256, 500, 512, -1, 2]{{$}}
// CHECK: rt.kernel "amax"
// CHECK-NOT: out_dtype =
rt.arena @inputs inputs size = 1024
func.func @amax_apart() {
  %t = rt.view @inputs[0] : memref<4x64xi32>
  %logits = rt.alloc : memref<4x64x512xbf16>
  %loss = rt.alloc : memref<f32>
  %lse = rt.alloc : memref<4x64xf32>
  %dloss = rt.alloc : memref<f32>
  %g = rt.alloc : memref<4x64x512xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]
  %flat = rt.reshape %g : memref<4x64x512xbf16> -> memref<131072xbf16>
  %flat_f32 = rt.alloc : memref<131072xf32>
  rt.kernel "convert" ins(%flat_f32 : memref<131072xf32>) outs(%flat : memref<131072xbf16>) consts [131072, 1, 2]
  rt.kernel "amax" ins(%g : memref<4x64x512xbf16>) outs(%m : memref<f32>) consts [131072, 2]

  %g2 = rt.alloc : memref<4x64x512xbf16>
  %m2 = rt.alloc : memref<f32>
  rt.kernel "cross_entropy_fwd" ins(%logits, %t : memref<4x64x512xbf16>, memref<4x64xi32>) outs(%loss, %lse : memref<f32>, memref<4x64xf32>) consts [256, 500, 512, -1, 2]
  rt.kernel "cross_entropy_bwd" ins(%dloss, %logits, %t, %lse : memref<f32>, memref<4x64x512xbf16>, memref<4x64xi32>, memref<4x64xf32>) outs(%g2 : memref<4x64x512xbf16>) consts [256, 500, 512, -1, 2]
  rt.kernel "amax" ins(%g2 : memref<4x64x512xbf16>) outs(%m2 : memref<f32>) consts [65536, 2]
  return
}
