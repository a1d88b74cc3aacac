// RUN: gpt-opt %s -split-input-file -fp8-precision -rt-bufferize | FileCheck %s

// FP8 ops lower to the runtime's FP8 kernels: amax, scale (E4M3 max 448,
// eps 1e-12), quantize into one-byte buffers, and the scaled GEMM: gemm
// with the two scales, its descriptor giving both operands' dtypes (4 =
// E4M3 codes, 5 = E5M2) and fast_accum (1: a forward GEMM), the f32 result
// the default c_dtype. Outside
// train_step no cast collects statistics (stat slot -1).
// CHECK-LABEL: func.func @eval_step
// CHECK: rt.kernel "amax" ins(%{{.*}} : memref<32x16xf32>) outs(%{{.*}} : memref<f32>) consts [512, 1]
// CHECK: rt.kernel "scale_from_amax" {{.*}} consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
// CHECK: rt.kernel "quantize_fp8" ins(%{{.*}}, %{{.*}} : memref<32x16xf32>, memref<f32>) outs(%{{.*}} : memref<32x16xf8E4M3FN>) consts [512, 0, -1, 1]{{$}}
// CHECK: rt.kernel "gemm" ins({{.*}} : memref<32x16xf8E4M3FN>, memref<48x16xf8E4M3FN>, memref<f32>, memref<f32>) outs(%{{.*}} : memref<32x48xf32>) consts [{a_dtype = 4 : i64, b_dtype = 4 : i64, fast_accum = 1 : i64, k = 16 : i64, m = 32 : i64, n = 48 : i64, trans_b = 1 : i64}]{{$}}
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
func.func @eval_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<32x48xf32> {gpt.output = "logits"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %y : tensor<32x48xf32>
}

// -----

// In train_step every cast gets the next statistics slot (the last
// constant) and an rt.fp8_stat naming its layer, GEMM and operand, from
// which the manifest's fp8_stats table is built.
// CHECK-LABEL: func.func @train_step
// CHECK: rt.kernel "quantize_fp8" {{.*}} consts [512, 0, 0, 1] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "a", slot = 0 : i64}}
// CHECK: rt.kernel "quantize_fp8" {{.*}} consts [768, 0, 1, 1] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "b", slot = 1 : i64}}
// CHECK: rt.kernel "gemm" ins({{.*}} : memref<32x16xf8E4M3FN>, memref<48x16xf8E4M3FN>, memref<f32>, memref<f32>)
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
func.func @train_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<32x48xf32> {gpt.output = "logits"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %y : tensor<32x48xf32>
}

// -----

// An fp8.fused producer lowers to its kernel with the output epilogue: the
// amax output and the epilogue descriptor; with a scale also the scale
// input and the FP8 copy (q). The kernel's own constants come first
// (gelu's: n, x and out dtypes), then the descriptor: the first output as
// rows x cols and its dtype (2 = bf16), format (0 = E4M3), transpose and
// the statistics slot.
// CHECK-LABEL: func.func @train_step
// CHECK: rt.kernel "gelu_fwd" ins(%{{.*}} : memref<32x16xf32>) outs(%{{.*}}, %{{.*}} : memref<32x16xf32>, memref<f32>) consts [512, 1, 1, {cols = 16 : i64, out_dtype = 1 : i64, rows = 32 : i64}]{{$}}
// CHECK: rt.kernel "convert" ins(%{{.*}}, %{{.*}} : memref<32x16xf32>, memref<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<32x16xbf16>, memref<f32>, memref<16x32xf8E4M3FN>) consts [512, 1, 2, {cols = 16 : i64, format = 0 : i64, out_dtype = 2 : i64, rows = 32 : i64, stat_slot = 0 : i64, transpose = 1 : i64}] {rt.fp8_stat = {gemm = "", layer = "fc", operand = "a", slot = 0 : i64}}
fp8.state @s "fc" history = 4 reduction = max recipe = <format = e4m3>
func.func @train_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<32x16xf32> {gpt.output = "y"}, tensor<f32> {gpt.output = "amax"}, tensor<32x16xf32> {gpt.output = "stored"}, tensor<16x16xf32> {gpt.output = "product"}) {
  %g, %a = fp8.fused "fc" {
    %0 = gpt.gelu "mlp" %x : tensor<32x16xf32>
    fp8.yield %0 : tensor<32x16xf32>
  } : tensor<32x16xf32>, tensor<f32>
  %s = fp8.state_scale @s
  %b, %a2, %q = fp8.fused "fc" scale(%s) transpose {
    %1 = gpt.cast "mlp" %g : tensor<32x16xf32> -> tensor<32x16xbf16>
    fp8.yield %1 : tensor<32x16xbf16>
  } : tensor<32x16xbf16>, tensor<f32>, tensor<16x32xf8E4M3FN>
  %wide = gpt.cast "mlp" %b : tensor<32x16xbf16> -> tensor<32x16xf32>
  %p = fp8.scaled_matmul "fc" %q, %q scales(%s, %s) transpose_b : tensor<16x32xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x16xf32>
  return %g, %a, %wide, %p : tensor<32x16xf32>, tensor<f32>, tensor<32x16xf32>, tensor<16x16xf32>
}

// -----

// A cast with transpose (fp8-transpose-casts) lowers to
// quantize_fp8_transposed: the input's rows and columns, format, slot and
// dtype, the codes in a cols x rows buffer.
// CHECK-LABEL: func.func @train_step
// CHECK: rt.kernel "quantize_fp8_transposed" ins(%{{.*}}, %{{.*}} : memref<32x16xbf16>, memref<f32>) outs(%{{.*}} : memref<16x32xf8E5M2>) consts [32, 16, 1, 0, 2] {rt.fp8_stat = {gemm = "", layer = "fc", operand = "b", slot = 0 : i64}}
func.func @train_step(%x: tensor<32x16xbf16> {gpt.input = "tokens"}, %s: tensor<f32> {gpt.input = "scale"}, %a: tensor<8x32xf8E4M3FN> {gpt.input = "a"}) -> (tensor<8x16xf32> {gpt.output = "product"}) {
  %q = fp8.quantize "fc" %x, %s transpose : tensor<32x16xbf16> -> tensor<16x32xf8E5M2>
  %p = fp8.scaled_matmul "fc" %a, %q scales(%s, %s) transpose_b : tensor<8x32xf8E4M3FN>, tensor<16x32xf8E5M2> -> tensor<8x16xf32>
  return %p : tensor<8x16xf32>
}
