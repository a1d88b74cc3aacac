// RUN: gpt-opt %s -split-input-file -rt-fuse-grad-accumulation | FileCheck %s

// A bf16 weight gradient's GEMM adds into the f32 gradient itself: the
// product's buffer and the accumulate are gone, the GEMM's c is the
// gradient with c_dtype 257 (f32, accumulated into), and the gradient's
// view moves up to it.
// CHECK-LABEL: func.func @bf16
// CHECK-NOT: rt.alloc : memref<32x64xbf16>
// CHECK: %[[G:.*]] = rt.view @grads[256] : memref<32x64xf32>
// CHECK-NEXT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<256x32xbf16>, memref<256x64xbf16>) outs(%[[G]] : memref<32x64xf32>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 257 : i64, k = 256 : i64, m = 32 : i64, n = 64 : i64, trans_a = 1 : i64}]{{$}}
// CHECK-NOT: "accumulate"
rt.arena @grads grads size = 8448
func.func @bf16() {
  %dy = rt.alloc : memref<256x32xbf16>
  %x = rt.alloc : memref<256x64xbf16>
  %dw = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw : memref<32x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 256, m = 32, n = 64, trans_a = 1}]
  %g = rt.view @grads[256] : memref<32x64xf32>
  rt.kernel "accumulate" ins(%dw : memref<32x64xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]
  return
}

// -----

// With the bias gradient (the GEMM's dbias epilogue): db is written into
// its gradient first (dbias_dtype becomes 257, f32 accumulate), then the
// weight's product folds too (c_dtype 257) -- db's gradient, a disjoint
// range of the grads arena, does not block it.
// CHECK-LABEL: func.func @bgrad
// CHECK-DAG: %[[NULL:.*]] = rt.null : memref<0xf32>
// CHECK-DAG: %[[GB:.*]] = rt.view @grads[0] : memref<32xf32>
// CHECK-DAG: %[[G:.*]] = rt.view @grads[256] : memref<32x64xf32>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<256x32xbf16>, memref<256x64xbf16>) outs(%[[G]], %[[NULL]], %[[GB]] : memref<32x64xf32>, memref<0xf32>, memref<32xf32>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 257 : i64, dbias_dtype = 257 : i64, k = 256 : i64, m = 32 : i64, n = 64 : i64, trans_a = 1 : i64}]{{$}}
// CHECK-NOT: "accumulate"
rt.arena @grads grads size = 8448
func.func @bgrad() {
  %dy = rt.alloc : memref<256x32xbf16>
  %x = rt.alloc : memref<256x64xbf16>
  %dw = rt.alloc : memref<32x64xbf16>
  %db = rt.alloc : memref<32xbf16>
  %null1 = rt.null : memref<0xf32>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw, %null1, %db : memref<32x64xbf16>, memref<0xf32>, memref<32xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, dbias_dtype = 2, k = 256, m = 32, n = 64, trans_a = 1}]
  %gb = rt.view @grads[0] : memref<32xf32>
  rt.kernel "accumulate" ins(%db : memref<32xbf16>) outs(%gb : memref<32xf32>) consts [32, 2]
  %g = rt.view @grads[256] : memref<32x64xf32>
  rt.kernel "accumulate" ins(%dw : memref<32x64xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]
  return
}

// -----

// FP8: the tensor- and the rowwise-scaled GEMM take c_dtype 257 the same
// way and keep their scales.
// CHECK-LABEL: func.func @fp8
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %[[SA:.*]], %[[SB:.*]] : memref<32x256xf8E5M2>, memref<64x256xf8E4M3FN>, memref<f32>, memref<f32>) outs(%{{.*}} : memref<32x64xf32>) consts [{a_dtype = 5 : i64, b_dtype = 4 : i64, c_dtype = 257 : i64, k = 256 : i64, m = 32 : i64, n = 64 : i64, trans_b = 1 : i64}]{{$}}
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x256xf8E5M2>, memref<64x256xf8E4M3FN>, memref<32xf32>, memref<64xf32>) outs(%{{.*}} : memref<32x64xf32>) consts [{a_dtype = 5 : i64, a_scaling = 1 : i64, b_dtype = 4 : i64, b_scaling = 1 : i64, c_dtype = 257 : i64, k = 256 : i64, m = 32 : i64, n = 64 : i64, trans_b = 1 : i64}]{{$}}
// CHECK-NOT: "accumulate"
rt.arena @grads grads size = 16384
func.func @fp8() {
  %a = rt.alloc : memref<32x256xf8E5M2>
  %b = rt.alloc : memref<64x256xf8E4M3FN>
  %sa = rt.alloc : memref<f32>
  %sb = rt.alloc : memref<f32>
  %dw = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%a, %b, %sa, %sb : memref<32x256xf8E5M2>, memref<64x256xf8E4M3FN>, memref<f32>, memref<f32>) outs(%dw : memref<32x64xbf16>) consts [{a_dtype = 5, b_dtype = 4, c_dtype = 2, k = 256, m = 32, n = 64, trans_b = 1}]
  %g = rt.view @grads[0] : memref<32x64xf32>
  rt.kernel "accumulate" ins(%dw : memref<32x64xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]
  %ra = rt.alloc : memref<32xf32>
  %rb = rt.alloc : memref<64xf32>
  %dw2 = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%a, %b, %ra, %rb : memref<32x256xf8E5M2>, memref<64x256xf8E4M3FN>, memref<32xf32>, memref<64xf32>) outs(%dw2 : memref<32x64xbf16>) consts [{a_dtype = 5, a_scaling = 1, b_dtype = 4, b_scaling = 1, c_dtype = 2, k = 256, m = 32, n = 64, trans_b = 1}]
  %g2 = rt.view @grads[8192] : memref<32x64xf32>
  rt.kernel "accumulate" ins(%dw2 : memref<32x64xbf16>) outs(%g2 : memref<32x64xf32>) consts [2048, 2]
  return
}

// -----

// An embedding's backward adds each token's row into the table's gradient;
// it drops its dtable dtype. The tied lm_head GEMM's accumulate into the
// same gradient before it does not block the fold: it is not in between.
// CHECK-LABEL: func.func @embedding
// CHECK: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<512x32xf32>) consts [{{{.*}}c_dtype = 257 : i64{{.*}}}]
// CHECK: %[[G:.*]] = rt.view @grads[0] : memref<512x32xf32>
// CHECK-NEXT: rt.kernel "embedding_bwd_accumulate" ins(%{{.*}}, %{{.*}} : memref<4x64x32xbf16>, memref<4x64xi32>) outs(%[[G]] : memref<512x32xf32>) consts [256, 512, 32, 2]{{$}}
// CHECK-NOT: "accumulate"
rt.arena @grads grads size = 65536
rt.arena @inputs inputs size = 1024
func.func @embedding() {
  %dlogits = rt.alloc : memref<256x512xbf16>
  %h = rt.alloc : memref<256x32xbf16>
  %dwte = rt.alloc : memref<512x32xbf16>
  rt.kernel "gemm" ins(%dlogits, %h : memref<256x512xbf16>, memref<256x32xbf16>) outs(%dwte : memref<512x32xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 256, m = 512, n = 32, trans_a = 1}]
  %g0 = rt.view @grads[0] : memref<512x32xf32>
  rt.kernel "accumulate" ins(%dwte : memref<512x32xbf16>) outs(%g0 : memref<512x32xf32>) consts [16384, 2]
  %dx = rt.alloc : memref<4x64x32xbf16>
  %ids = rt.view @inputs[0] : memref<4x64xi32>
  %dtable = rt.alloc : memref<512x32xbf16>
  rt.kernel "embedding_bwd" ins(%dx, %ids : memref<4x64x32xbf16>, memref<4x64xi32>) outs(%dtable : memref<512x32xbf16>) consts [256, 512, 32, 2, 2]
  %g = rt.view @grads[0] : memref<512x32xf32>
  rt.kernel "accumulate" ins(%dtable : memref<512x32xbf16>) outs(%g : memref<512x32xf32>) consts [16384, 2]
  return
}

// -----

// The small gradients keep their kernels and write into their gradients:
// a bias's reduce_rows, a layernorm's dw and db (also with the amax of
// dx), and the db of the FP8 dual cast; each dtype constant becomes 257.
// CHECK-LABEL: func.func @small_gradients
// CHECK: rt.kernel "reduce_rows" ins(%{{.*}} : memref<256x32xbf16>) outs(%{{.*}} : memref<32xf32>) consts [256, 32, 2, 257]
// CHECK: rt.kernel "layernorm_bwd" {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<256x32xbf16>, memref<32xf32>, memref<32xf32>) consts [256, 32, 2, 2, 2, 257, 257]{{$}}
// CHECK: rt.kernel "layernorm_bwd" {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<256x32xbf16>, memref<32xf32>, memref<32xbf16>, memref<f32>) consts [256, 32, 2, 2, 2, 257, 2, {cols = 32 : i64, out_dtype = 2 : i64, rows = 256 : i64}]{{$}}
// CHECK: rt.kernel "accumulate" ins(%{{.*}} : memref<32xbf16>) outs(%{{.*}} : memref<32xf32>) consts [16, 2]
// CHECK: rt.kernel "layernorm_bwd_add" {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<256x32xbf16>, memref<32xf32>, memref<32xf32>, memref<f32>, memref<256x32xf8E5M2>) consts [256, 32, 2, 2, 2, 257, 257, 2, 2, {cols = 32 : i64, format = 1 : i64, out_dtype = 2 : i64, rows = 256 : i64, stat_slot = -1 : i64, transpose = 0 : i64}]{{$}}
// CHECK: rt.kernel "quantize_fp8_dual_bgrad" {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<256x32xf8E5M2>, memref<32x256xf8E5M2>, memref<32xf32>) consts [256, 32, 1, -1, -1, 2, 257]
// CHECK-NOT: "accumulate"
rt.arena @grads grads size = 1024
func.func @small_gradients() {
  %dy = rt.alloc : memref<256x32xbf16>
  %x = rt.alloc : memref<256x32xbf16>
  %w = rt.alloc : memref<32xf32>
  %mean = rt.alloc : memref<256xf32>
  %rstd = rt.alloc : memref<256xf32>
  %db = rt.alloc : memref<32xbf16>
  rt.kernel "reduce_rows" ins(%dy : memref<256x32xbf16>) outs(%db : memref<32xbf16>) consts [256, 32, 2, 2]
  %g0 = rt.view @grads[0] : memref<32xf32>
  rt.kernel "accumulate" ins(%db : memref<32xbf16>) outs(%g0 : memref<32xf32>) consts [32, 2]

  %dx = rt.alloc : memref<256x32xbf16>
  %dw1 = rt.alloc : memref<32xbf16>
  %db1 = rt.alloc : memref<32xbf16>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<256x32xbf16>, memref<256x32xbf16>, memref<32xf32>, memref<256xf32>, memref<256xf32>) outs(%dx, %dw1, %db1 : memref<256x32xbf16>, memref<32xbf16>, memref<32xbf16>) consts [256, 32, 2, 2, 2, 2, 2]
  %g1 = rt.view @grads[128] : memref<32xf32>
  rt.kernel "accumulate" ins(%dw1 : memref<32xbf16>) outs(%g1 : memref<32xf32>) consts [32, 2]
  %g2 = rt.view @grads[256] : memref<32xf32>
  rt.kernel "accumulate" ins(%db1 : memref<32xbf16>) outs(%g2 : memref<32xf32>) consts [32, 2]

  %dw3 = rt.alloc : memref<32xbf16>
  %db3 = rt.alloc : memref<32xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "layernorm_bwd" ins(%dy, %x, %w, %mean, %rstd : memref<256x32xbf16>, memref<256x32xbf16>, memref<32xf32>, memref<256xf32>, memref<256xf32>) outs(%dx, %dw3, %db3, %m : memref<256x32xbf16>, memref<32xbf16>, memref<32xbf16>, memref<f32>) consts [256, 32, 2, 2, 2, 2, 2, {rows = 256, cols = 32, out_dtype = 2}]
  %g3 = rt.view @grads[384] : memref<32xf32>
  rt.kernel "accumulate" ins(%dw3 : memref<32xbf16>) outs(%g3 : memref<32xf32>) consts [32, 2]
  %g4 = rt.view @grads[512] : memref<32xf32>
  rt.kernel "accumulate" ins(%db3 : memref<32xbf16>) outs(%g4 : memref<32xf32>) consts [16, 2]

  %s = rt.alloc : memref<f32>
  %q = rt.alloc : memref<256x32xf8E5M2>
  %sum = rt.alloc : memref<256x32xbf16>
  %dw6 = rt.alloc : memref<32xbf16>
  %db6 = rt.alloc : memref<32xbf16>
  rt.kernel "layernorm_bwd_add" ins(%dy, %x, %w, %mean, %rstd, %dy, %s : memref<256x32xbf16>, memref<256x32xbf16>, memref<32xf32>, memref<256xf32>, memref<256xf32>, memref<256x32xbf16>, memref<f32>) outs(%sum, %dw6, %db6, %m, %q : memref<256x32xbf16>, memref<32xbf16>, memref<32xbf16>, memref<f32>, memref<256x32xf8E5M2>) consts [256, 32, 2, 2, 2, 2, 2, 2, 2, {rows = 256, cols = 32, out_dtype = 2, format = 1, transpose = 0, stat_slot = -1}]
  %g6 = rt.view @grads[768] : memref<32xf32>
  rt.kernel "accumulate" ins(%dw6 : memref<32xbf16>) outs(%g6 : memref<32xf32>) consts [32, 2]
  %g7 = rt.view @grads[896] : memref<32xf32>
  rt.kernel "accumulate" ins(%db6 : memref<32xbf16>) outs(%g7 : memref<32xf32>) consts [32, 2]

  %qt = rt.alloc : memref<32x256xf8E5M2>
  %db5 = rt.alloc : memref<32xbf16>
  rt.kernel "quantize_fp8_dual_bgrad" ins(%dy, %s : memref<256x32xbf16>, memref<f32>) outs(%q, %qt, %db5 : memref<256x32xf8E5M2>, memref<32x256xf8E5M2>, memref<32xbf16>) consts [256, 32, 1, -1, -1, 2, 2]
  %g5 = rt.view @grads[640] : memref<32xf32>
  rt.kernel "accumulate" ins(%db5 : memref<32xbf16>) outs(%g5 : memref<32xf32>) consts [32, 2]
  return
}

// -----

// fp8-rowwise's grad_weight cast with the bias gradient: its db writes into
// the gradient as well.
// CHECK-LABEL: func.func @rowwise_bias_gradient
// CHECK: rt.kernel "quantize_rows_transposed_bgrad" {{.*}} outs(%{{.*}}, %{{.*}} : memref<32x256xf8E5M2>, memref<32xf32>) consts [256, 32, 1, 1, -1, 2, 257]
// CHECK-NOT: "accumulate"
rt.arena @grads grads size = 128
func.func @rowwise_bias_gradient() {
  %dy = rt.alloc : memref<256x32xbf16>
  %s = rt.alloc : memref<32xf32>
  %qt = rt.alloc : memref<32x256xf8E5M2>
  %db = rt.alloc : memref<32xbf16>
  rt.kernel "quantize_rows_transposed_bgrad" ins(%dy, %s : memref<256x32xbf16>, memref<32xf32>) outs(%qt, %db : memref<32x256xf8E5M2>, memref<32xbf16>) consts [256, 32, 1, 1, -1, 2, 2]
  %g = rt.view @grads[0] : memref<32xf32>
  rt.kernel "accumulate" ins(%db : memref<32xbf16>) outs(%g : memref<32xf32>) consts [32, 2]
  return
}

// -----

// Left apart: a product another kernel reads too; one accumulated only in
// part; one whose gradient's bytes another kernel writes in between
// (an overlapping view); a strided, non-contiguous batched result; the
// f32 precision's f32 GEMM, which keeps its accumulate (nothing is rounded
// there); and a product written through a reshape. (An accumulate reading
// f32 of a bf16 product's bytes no longer gets this far: the rt.kernel
// verifier refuses a dtype constant that contradicts its buffer.)
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: c_dtype = 257
// CHECK: rt.kernel "gemm" {{.*}} outs(%[[DW:.*]] : memref<32x64xbf16>)
// CHECK: rt.kernel "accumulate" ins(%[[DW]] : memref<32x64xbf16>)
// CHECK: rt.kernel "gemm" {{.*}} outs(%[[DW2:.*]] : memref<32x64xbf16>)
// CHECK: rt.kernel "accumulate" ins(%[[DW2]] : memref<32x64xbf16>)
// CHECK: rt.kernel "gemm" {{.*}} outs(%[[DW3:.*]] : memref<32x64xbf16>)
// CHECK: rt.kernel "accumulate" ins(%[[DW3]] : memref<32x64xbf16>)
// CHECK: rt.kernel "gemm" {{.*}} outs(%[[DW4:.*]] : memref<2x16x64xbf16>)
// CHECK: rt.kernel "accumulate" ins(%[[DW4]] : memref<2x16x64xbf16>)
// CHECK: rt.kernel "gemm" {{.*}} outs(%[[DW6:.*]] : memref<32x64xf32>)
// CHECK: rt.kernel "accumulate" ins(%[[DW6]] : memref<32x64xf32>)
// CHECK: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<32x64xbf16>)
// CHECK: rt.kernel "accumulate" ins(%{{.*}} : memref<2048xbf16>)
// CHECK-NOT: c_dtype = 257
rt.arena @grads grads size = 16384
func.func @not_fused() {
  %dy = rt.alloc : memref<256x32xbf16>
  %x = rt.alloc : memref<256x64xbf16>
  %g = rt.view @grads[0] : memref<32x64xf32>

  %dw = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw : memref<32x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 256, m = 32, n = 64, trans_a = 1}]
  %copy = rt.alloc : memref<32x64xf32>
  rt.kernel "convert" ins(%dw : memref<32x64xbf16>) outs(%copy : memref<32x64xf32>) consts [2048, 2, 1]
  rt.kernel "accumulate" ins(%dw : memref<32x64xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]

  %dw2 = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw2 : memref<32x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 256, m = 32, n = 64, trans_a = 1}]
  rt.kernel "accumulate" ins(%dw2 : memref<32x64xbf16>) outs(%g : memref<32x64xf32>) consts [1024, 2]

  %dw3 = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw3 : memref<32x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 256, m = 32, n = 64, trans_a = 1}]
  %overlap = rt.view @grads[4096] : memref<32x64xf32>
  rt.kernel "fill" outs(%overlap : memref<32x64xf32>) consts [2048, 0.0]
  rt.kernel "accumulate" ins(%dw3 : memref<32x64xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]

  %dw4 = rt.alloc : memref<2x16x64xbf16>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw4 : memref<2x16x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, batch = 2, c_dtype = 2, k = 128, m = 16, n = 64, stride_c = 512, trans_a = 1}]
  rt.kernel "accumulate" ins(%dw4 : memref<2x16x64xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]


  %fy = rt.alloc : memref<256x32xf32>
  %fx = rt.alloc : memref<256x64xf32>
  %dw6 = rt.alloc : memref<32x64xf32>
  rt.kernel "gemm" ins(%fy, %fx : memref<256x32xf32>, memref<256x64xf32>) outs(%dw6 : memref<32x64xf32>) consts [{k = 256, m = 32, n = 64, trans_a = 1}]
  rt.kernel "accumulate" ins(%dw6 : memref<32x64xf32>) outs(%g : memref<32x64xf32>) consts [2048, 1]

  %dw7 = rt.alloc : memref<32x64xbf16>
  %flat = rt.reshape %dw7 : memref<32x64xbf16> -> memref<2048xbf16>
  rt.kernel "gemm" ins(%dy, %x : memref<256x32xbf16>, memref<256x64xbf16>) outs(%dw7 : memref<32x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 256, m = 32, n = 64, trans_a = 1}]
  rt.kernel "accumulate" ins(%flat : memref<2048xbf16>) outs(%g : memref<32x64xf32>) consts [2048, 2]
  return
}
