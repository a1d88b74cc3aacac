// RUN: gpt-opt %s -split-input-file -rt-fuse-gemm-epilogue | FileCheck %s

// Forward: the GELU after a bf16 GEMM with a bias joins it (the GELU
// epilogue); the GEMM keeps writing the pre-activation (now its gelu_pre,
// gelu_pre_dtype its old c_dtype), its c is the GELU's buffer, now defined
// before it.
// CHECK-LABEL: func.func @forward
// CHECK: %[[Y:.*]] = rt.alloc : memref<16x64xbf16>
// CHECK-NEXT: %[[G:.*]] = rt.alloc : memref<16x64xbf16>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<16x32xbf16>, memref<64x32xbf16>, memref<0xf32>, memref<0xf32>, memref<64xf32>) outs(%[[G]], %[[Y]] : memref<16x64xbf16>, memref<16x64xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, gelu_pre_dtype = 2 : i64, k = 32 : i64, m = 16 : i64, n = 64 : i64, trans_b = 1 : i64}]{{$}}
// CHECK-NOT: gelu_fwd
// CHECK: rt.kernel "convert" ins(%{{.*}}) outs(%[[G]]
func.func @forward() {
  %a = rt.alloc : memref<16x32xbf16>
  %w = rt.alloc : memref<64x32xbf16>
  %bias = rt.alloc : memref<64xf32>
  %y = rt.alloc : memref<16x64xbf16>
  %null1 = rt.null : memref<0xf32>
  rt.kernel "gemm" ins(%a, %w, %null1, %null1, %bias : memref<16x32xbf16>, memref<64x32xbf16>, memref<0xf32>, memref<0xf32>, memref<64xf32>) outs(%y : memref<16x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 32, m = 16, n = 64, trans_b = 1}]
  %g = rt.alloc : memref<16x64xbf16>
  rt.kernel "gelu_fwd" ins(%y : memref<16x64xbf16>) outs(%g : memref<16x64xbf16>) consts [1024, 2, 2]
  %g_f32 = rt.alloc : memref<1024xf32>
  rt.kernel "convert" ins(%g_f32 : memref<1024xf32>) outs(%g : memref<16x64xbf16>) consts [1024, 1, 2]
  return
}

// -----

// Rowwise FP8: the bias add after a rowwise-scaled FP8 GEMM joins it the
// same way (its bias buffer, the descriptor unchanged); one whose add
// changes the dtype stays apart.
// CHECK-LABEL: func.func @rowwise_bias
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BIAS:.*]] : memref<32x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<32xf32>, memref<64xf32>, memref<64xf32>) outs(%{{.*}} : memref<32x64xbf16>) consts [{a_dtype = 4 : i64, a_scaling = 1 : i64, b_dtype = 4 : i64, b_scaling = 1 : i64, c_dtype = 2 : i64, fast_accum = 1 : i64, k = 32 : i64, m = 32 : i64, n = 64 : i64, trans_b = 1 : i64}]{{$}}
// CHECK-NOT: rt.kernel "add" ins(%{{.*}}, %[[BIAS]] : memref<32x64xbf16>, memref<64xf32>) outs(%{{.*}} : memref<32x64xbf16>)
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<32xf32>, memref<64xf32>) outs
// CHECK: rt.kernel "add" {{.*}} outs(%{{.*}} : memref<32x64xf32>)
rt.arena @params params size = 256
func.func @rowwise_bias() {
  %a = rt.alloc : memref<32x32xf8E4M3FN>
  %w = rt.alloc : memref<64x32xf8E4M3FN>
  %sa = rt.alloc : memref<32xf32>
  %sw = rt.alloc : memref<64xf32>
  %bias = rt.view @params[0] : memref<64xf32>
  %d = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<32x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<32xf32>, memref<64xf32>) outs(%d : memref<32x64xbf16>) consts [{a_dtype = 4, a_scaling = 1, b_dtype = 4, b_scaling = 1, c_dtype = 2, fast_accum = 1, k = 32, m = 32, n = 64, trans_b = 1}]
  %y = rt.alloc : memref<32x64xbf16>
  rt.kernel "add" ins(%d, %bias : memref<32x64xbf16>, memref<64xf32>) outs(%y : memref<32x64xbf16>) consts [32, 64, 1, 2, 1, 2]
  %d2 = rt.alloc : memref<32x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<32x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<32xf32>, memref<64xf32>) outs(%d2 : memref<32x64xbf16>) consts [{a_dtype = 4, a_scaling = 1, b_dtype = 4, b_scaling = 1, c_dtype = 2, fast_accum = 1, k = 32, m = 32, n = 64, trans_b = 1}]
  %y2 = rt.alloc : memref<32x64xf32>
  rt.kernel "add" ins(%d2, %bias : memref<32x64xbf16>, memref<64xf32>) outs(%y2 : memref<32x64xf32>) consts [32, 64, 1, 2, 1, 1]
  return
}

// -----

// FP8: the bias add after an FP8 GEMM joins it (its bias, a param view
// defined after the GEMM, moves up); the product's buffer goes. A batched
// result that is not contiguous, an add that is not a broadcast bias and
// a product read twice stay apart.
// CHECK-LABEL: func.func @fp8_bias
// CHECK: %[[BIAS:.*]] = rt.view @params[0] : memref<64xf32>
// CHECK-NEXT: %[[Y:.*]] = rt.alloc : memref<2x16x64xbf16>
// CHECK-NEXT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BIAS]] : memref<2x16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>, memref<64xf32>) outs(%[[Y]] : memref<2x16x64xbf16>) consts [{a_dtype = 4 : i64, b_dtype = 4 : i64, batch = 2 : i64, c_dtype = 2 : i64, fast_accum = 1 : i64, k = 32 : i64, m = 16 : i64, n = 64 : i64, stride_a = 512 : i64, stride_c = 1024 : i64, trans_b = 1 : i64}]{{$}}
// CHECK-NOT: rt.kernel "add"
// CHECK: rt.kernel "convert" ins(%{{.*}}) outs(%[[Y]]
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{[^)]*}}) outs({{.*}}) consts [{{{.*}}batch = 2 : i64{{.*}}stride_c = 2048 : i64{{.*}}}]{{$}}
// CHECK: rt.kernel "add"
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{[^)]*}}) outs(%[[D:.*]] : memref<16x64xbf16>)
// CHECK: rt.kernel "add" ins(%[[D]], %{{.*}} : memref<16x64xbf16>, memref<16x64xbf16>)
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{[^)]*}}) outs(%[[D2:.*]] : memref<16x64xbf16>)
// CHECK: rt.kernel "add" ins(%[[D2]], %[[BIAS]]
// CHECK: rt.kernel "amax" ins(%[[D2]]
rt.arena @params params size = 256
func.func @fp8_bias() {
  %a = rt.alloc : memref<2x16x32xf8E4M3FN>
  %w = rt.alloc : memref<64x32xf8E4M3FN>
  %sa = rt.alloc : memref<f32>
  %sw = rt.alloc : memref<f32>
  %d = rt.alloc : memref<2x16x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<2x16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%d : memref<2x16x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, batch = 2, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, stride_a = 512, stride_c = 1024, trans_b = 1}]
  %bias = rt.view @params[0] : memref<64xf32>
  %y = rt.alloc : memref<2x16x64xbf16>
  rt.kernel "add" ins(%d, %bias : memref<2x16x64xbf16>, memref<64xf32>) outs(%y : memref<2x16x64xbf16>) consts [32, 64, 1, 2, 1, 2]
  %y_f32 = rt.alloc : memref<2048xf32>
  rt.kernel "convert" ins(%y_f32 : memref<2048xf32>) outs(%y : memref<2x16x64xbf16>) consts [2048, 1, 2]

  %wide = rt.alloc : memref<2x32x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<2x16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%wide : memref<2x32x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, batch = 2, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, stride_a = 512, stride_c = 2048, trans_b = 1}]
  %y2 = rt.alloc : memref<2x32x64xbf16>
  rt.kernel "add" ins(%wide, %bias : memref<2x32x64xbf16>, memref<64xf32>) outs(%y2 : memref<2x32x64xbf16>) consts [32, 64, 1, 2, 1, 2]

  %a2 = rt.alloc : memref<16x32xf8E4M3FN>
  %d1 = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%a2, %w, %sa, %sw : memref<16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%d1 : memref<16x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, trans_b = 1}]
  %r = rt.alloc : memref<16x64xbf16>
  %s = rt.alloc : memref<16x64xbf16>
  rt.kernel "add" ins(%d1, %r : memref<16x64xbf16>, memref<16x64xbf16>) outs(%s : memref<16x64xbf16>) consts [1, 1024, 0, 2, 2, 2]

  %d2 = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%a2, %w, %sa, %sw : memref<16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%d2 : memref<16x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, trans_b = 1}]
  %y3 = rt.alloc : memref<16x64xbf16>
  rt.kernel "add" ins(%d2, %bias : memref<16x64xbf16>, memref<64xf32>) outs(%y3 : memref<16x64xbf16>) consts [16, 64, 1, 2, 1, 2]
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%d2 : memref<16x64xbf16>) outs(%m : memref<f32>) consts [1024, 2]
  return
}

// -----

// Backward: a GEMM's product read only by the GELU gradient becomes one
// GEMM (the GELU-gradient epilogue) that reads the saved pre-activation
// as its dgelu_pre; the product's buffer goes.
// CHECK-LABEL: func.func @backward
// CHECK: %[[PRE:.*]] = rt.alloc : memref<16x64xbf16>
// CHECK: %[[DX:.*]] = rt.alloc : memref<16x64xbf16>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PRE]] : memref<16x32xbf16>, memref<32x64xbf16>, memref<0xf32>, memref<0xf32>, memref<0xf32>, memref<16x64xbf16>) outs(%[[DX]] : memref<16x64xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, dgelu_pre_dtype = 2 : i64, k = 32 : i64, m = 16 : i64, n = 64 : i64, product_dtype = 2 : i64}]{{$}}
// CHECK: rt.kernel "fill"
// CHECK-NOT: gelu_bwd
func.func @backward() {
  %pre = rt.alloc : memref<16x64xbf16>
  %dy = rt.alloc : memref<16x32xbf16>
  %w = rt.alloc : memref<32x64xbf16>
  %dg = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%dy, %w : memref<16x32xbf16>, memref<32x64xbf16>) outs(%dg : memref<16x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 32, m = 16, n = 64}]
  %other = rt.alloc : memref<8xf32>
  rt.kernel "fill" outs(%other : memref<8xf32>) consts [8, 0.0]
  %dx = rt.alloc : memref<16x64xbf16>
  rt.kernel "gelu_bwd" ins(%dg, %pre : memref<16x64xbf16>, memref<16x64xbf16>) outs(%dx : memref<16x64xbf16>) consts [1024, 2, 2, 2]
  return
}

// -----

// The weight gradient's GEMM (a = the output gradient, stored tokens x
// features, transposed) takes the bias gradient, the reduce_rows of the
// same buffer (here through a reshape) after it.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[DY:.*]] = rt.alloc : memref<2x8x32xbf16>
// CHECK-NEXT: %[[DY2:.*]] = rt.reshape %[[DY]]
// CHECK: %[[DW:.*]] = rt.alloc : memref<32x16xbf16>
// CHECK-NEXT: %[[DB:.*]] = rt.alloc : memref<32xbf16>
// CHECK-NEXT: %[[NULL:.*]] = rt.null : memref<0xf32>
// CHECK-NEXT: rt.kernel "gemm" ins(%[[DY2]], %{{.*}} : memref<16x32xbf16>, memref<16x16xbf16>) outs(%[[DW]], %[[NULL]], %[[DB]] : memref<32x16xbf16>, memref<0xf32>, memref<32xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, dbias_dtype = 2 : i64, k = 16 : i64, m = 32 : i64, n = 16 : i64, trans_a = 1 : i64}]{{$}}
// CHECK-NOT: reduce_rows
// Not fused: the GEMM with a not transposed (not a weight gradient).
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<16x16xbf16>, memref<16x32xbf16>) outs(%{{.*}} : memref<16x32xbf16>)
// CHECK: rt.kernel "reduce_rows"
func.func @bias_grad() {
  %dy = rt.alloc : memref<2x8x32xbf16>
  %dy2 = rt.reshape %dy : memref<2x8x32xbf16> -> memref<16x32xbf16>
  %x = rt.alloc : memref<16x16xbf16>
  %dw = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%dy2, %x : memref<16x32xbf16>, memref<16x16xbf16>) outs(%dw : memref<32x16xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 32, n = 16, trans_a = 1}]
  %db = rt.alloc : memref<32xbf16>
  rt.kernel "reduce_rows" ins(%dy : memref<2x8x32xbf16>) outs(%db : memref<32xbf16>) consts [16, 32, 2, 2]

  %w = rt.alloc : memref<16x32xbf16>
  %dx = rt.alloc : memref<16x32xbf16>
  rt.kernel "gemm" ins(%x, %w : memref<16x16xbf16>, memref<16x32xbf16>) outs(%dx : memref<16x32xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 16, n = 32}]
  %db2 = rt.alloc : memref<32xbf16>
  rt.kernel "reduce_rows" ins(%dx : memref<16x32xbf16>) outs(%db2 : memref<32xbf16>) consts [16, 32, 2, 2]
  return
}

// -----

// Not fused: the gradient is written (through another view of its buffer)
// between the GEMM and its reduce_rows.
// CHECK-LABEL: func.func @bias_grad_written
// CHECK-NOT: dbias_dtype
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<16x32xbf16>, memref<16x16xbf16>) outs(%{{.*}} : memref<32x16xbf16>)
// CHECK-NOT: dbias_dtype
// CHECK: rt.kernel "reduce_rows"
func.func @bias_grad_written() {
  %dy = rt.alloc : memref<2x8x32xbf16>
  %dy2 = rt.reshape %dy : memref<2x8x32xbf16> -> memref<16x32xbf16>
  %x = rt.alloc : memref<16x16xbf16>
  %dw = rt.alloc : memref<32x16xbf16>
  rt.kernel "gemm" ins(%dy2, %x : memref<16x32xbf16>, memref<16x16xbf16>) outs(%dw : memref<32x16xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 32, n = 16, trans_a = 1}]
  %flat = rt.reshape %dy : memref<2x8x32xbf16> -> memref<512xbf16>
  %flat_f32 = rt.alloc : memref<512xf32>
  rt.kernel "convert" ins(%flat_f32 : memref<512xf32>) outs(%flat : memref<512xbf16>) consts [512, 1, 2]
  %db = rt.alloc : memref<32xbf16>
  rt.kernel "reduce_rows" ins(%dy : memref<2x8x32xbf16>) outs(%db : memref<32xbf16>) consts [16, 32, 2, 2]
  return
}

// -----

// Not fused: the product is read by something else before the GELU (the
// GELU would then see it early), another reader of the backward product,
// and a result with gaps between its batches.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: gelu_pre
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<16x32xbf16>, memref<64x32xbf16>, memref<0xf32>, memref<0xf32>, memref<64xf32>) outs(%{{.*}} : memref<16x64xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, k = 32 : i64, m = 16 : i64, n = 64 : i64, trans_b = 1 : i64}]{{$}}
// CHECK: rt.kernel "gelu_fwd"
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<16x32xbf16>, memref<32x64xbf16>) outs(%{{.*}} : memref<16x64xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, k = 32 : i64, m = 16 : i64, n = 64 : i64}]{{$}}
// CHECK: rt.kernel "gelu_bwd"
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x32xbf16>, memref<64x32xbf16>, memref<0xf32>, memref<0xf32>, memref<64xf32>) outs(%{{.*}} : memref<2x16x64xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, batch = 2 : i64, c_dtype = 2 : i64, k = 32 : i64, m = 8 : i64, n = 64 : i64, stride_a = 256 : i64, stride_c = 1024 : i64, trans_b = 1 : i64}]{{$}}
// CHECK: rt.kernel "gelu_fwd"
func.func @not_fused() {
  %a = rt.alloc : memref<16x32xbf16>
  %w = rt.alloc : memref<64x32xbf16>
  %bias = rt.alloc : memref<64xf32>
  %y = rt.alloc : memref<16x64xbf16>
  %null2 = rt.null : memref<0xf32>
  rt.kernel "gemm" ins(%a, %w, %null2, %null2, %bias : memref<16x32xbf16>, memref<64x32xbf16>, memref<0xf32>, memref<0xf32>, memref<64xf32>) outs(%y : memref<16x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 32, m = 16, n = 64, trans_b = 1}]
  %s = rt.alloc : memref<64xf32>
  rt.kernel "reduce_rows" ins(%y : memref<16x64xbf16>) outs(%s : memref<64xf32>) consts [16, 64, 2, 1]
  %g = rt.alloc : memref<16x64xbf16>
  rt.kernel "gelu_fwd" ins(%y : memref<16x64xbf16>) outs(%g : memref<16x64xbf16>) consts [1024, 2, 2]

  %w2 = rt.alloc : memref<32x64xbf16>
  %dg = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%a, %w2 : memref<16x32xbf16>, memref<32x64xbf16>) outs(%dg : memref<16x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 32, m = 16, n = 64}]
  %dx = rt.alloc : memref<16x64xbf16>
  rt.kernel "gelu_bwd" ins(%dg, %y : memref<16x64xbf16>, memref<16x64xbf16>) outs(%dx : memref<16x64xbf16>) consts [1024, 2, 2, 2]
  %s2 = rt.alloc : memref<64xf32>
  rt.kernel "reduce_rows" ins(%dg : memref<16x64xbf16>) outs(%s2 : memref<64xf32>) consts [16, 64, 2, 1]

  %ab = rt.alloc : memref<2x8x32xbf16>
  %yb = rt.alloc : memref<2x16x64xbf16>
  %null3 = rt.null : memref<0xf32>
  rt.kernel "gemm" ins(%ab, %w, %null3, %null3, %bias : memref<2x8x32xbf16>, memref<64x32xbf16>, memref<0xf32>, memref<0xf32>, memref<64xf32>) outs(%yb : memref<2x16x64xbf16>) consts [{a_dtype = 2, b_dtype = 2, batch = 2, c_dtype = 2, k = 32, m = 8, n = 64, stride_a = 256, stride_c = 1024, trans_b = 1}]
  %gb = rt.alloc : memref<2x16x64xbf16>
  rt.kernel "gelu_fwd" ins(%yb : memref<2x16x64xbf16>) outs(%gb : memref<2x16x64xbf16>) consts [1024, 2, 2]
  return
}

// -----

// FP8 bias not fused: the bias written through another view of its buffer
// between the GEMM and the add.
// CHECK-LABEL: func.func @fp8_bias_written
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%[[D:.*]] : memref<16x64xbf16>)
// CHECK: rt.kernel "add" ins(%[[D]], %{{.*}} : memref<16x64xbf16>, memref<64xf32>)
func.func @fp8_bias_written() {
  %a = rt.alloc : memref<16x32xf8E4M3FN>
  %w = rt.alloc : memref<64x32xf8E4M3FN>
  %sa = rt.alloc : memref<f32>
  %sw = rt.alloc : memref<f32>
  %b2 = rt.alloc : memref<1x64xf32>
  %bias = rt.reshape %b2 : memref<1x64xf32> -> memref<64xf32>
  rt.kernel "fill" outs(%bias : memref<64xf32>) consts [64, 1.0]
  %d = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%d : memref<16x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, trans_b = 1}]
  rt.kernel "fill" outs(%b2 : memref<1x64xf32>) consts [64, 2.0]
  %y = rt.alloc : memref<16x64xbf16>
  rt.kernel "add" ins(%d, %bias : memref<16x64xbf16>, memref<64xf32>) outs(%y : memref<16x64xbf16>) consts [16, 64, 1, 2, 1, 2]
  return
}

// -----

// Not fused, and the bias's param view stays where it was: written in
// between, or through another view of the same param bytes.
// CHECK-LABEL: func.func @fp8_bias_param_written
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{[^)]*}}) outs(%[[D:.*]] : memref<16x64xbf16>)
// CHECK-NEXT: %[[B:.*]] = rt.view @params[0]
// CHECK-NEXT: rt.kernel "fill" outs(%[[B]]
// CHECK: rt.kernel "add" ins(%[[D]], %[[B]] : memref<16x64xbf16>, memref<64xf32>)
rt.arena @params params size = 256
func.func @fp8_bias_param_written() {
  %a = rt.alloc : memref<16x32xf8E4M3FN>
  %w = rt.alloc : memref<64x32xf8E4M3FN>
  %sa = rt.alloc : memref<f32>
  %sw = rt.alloc : memref<f32>
  %d = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%d : memref<16x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, trans_b = 1}]
  %bias = rt.view @params[0] : memref<64xf32>
  rt.kernel "fill" outs(%bias : memref<64xf32>) consts [64, 2.0]
  %y = rt.alloc : memref<16x64xbf16>
  rt.kernel "add" ins(%d, %bias : memref<16x64xbf16>, memref<64xf32>) outs(%y : memref<16x64xbf16>) consts [16, 64, 1, 2, 1, 2]
  return
}

// -----

// CHECK-LABEL: func.func @fp8_bias_alias
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{[^)]*}}) outs(%[[D:.*]] : memref<16x64xbf16>)
// CHECK: rt.kernel "add" ins(%[[D]], %{{.*}} : memref<16x64xbf16>, memref<64xf32>)
rt.arena @params params size = 256
func.func @fp8_bias_alias() {
  %a = rt.alloc : memref<16x32xf8E4M3FN>
  %w = rt.alloc : memref<64x32xf8E4M3FN>
  %sa = rt.alloc : memref<f32>
  %sw = rt.alloc : memref<f32>
  %bias = rt.view @params[0] : memref<64xf32>
  %d = rt.alloc : memref<16x64xbf16>
  rt.kernel "gemm" ins(%a, %w, %sa, %sw : memref<16x32xf8E4M3FN>, memref<64x32xf8E4M3FN>, memref<f32>, memref<f32>) outs(%d : memref<16x64xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 32, m = 16, n = 64, trans_b = 1}]
  %same = rt.view @params[0] : memref<64xf32>
  rt.kernel "fill" outs(%same : memref<64xf32>) consts [64, 2.0]
  %y = rt.alloc : memref<16x64xbf16>
  rt.kernel "add" ins(%d, %bias : memref<16x64xbf16>, memref<64xf32>) outs(%y : memref<16x64xbf16>) consts [16, 64, 1, 2, 1, 2]
  return
}
