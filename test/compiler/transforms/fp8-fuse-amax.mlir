// RUN: gpt-opt %s -split-input-file -fp8-fuse-amax | FileCheck %s

// A bf16-stored activation: its two amaxes (one through a reshape that
// keeps rows) become the one amax of the kernel that stores it; the
// widening casts that only fed them are gone.
// CHECK-LABEL: func.func @stored_activation
// CHECK: %[[F:.*]]:2 = fp8.fused "fc" {
// CHECK-NEXT:   %[[C:.*]] = gpt.cast "ln" %arg0 : tensor<2x16x32xf32> -> tensor<2x16x32xbf16>
// CHECK-NEXT:   fp8.yield %[[C]] : tensor<2x16x32xbf16>
// CHECK-NEXT: } : tensor<2x16x32xbf16>, tensor<f32>
// CHECK-NOT: fp8.amax
// CHECK: fp8.scale_from_amax "fc" %[[F]]#1
// CHECK: fp8.scale_from_amax "fc.grad" %[[F]]#1
// CHECK: return %[[F]]#0
func.func @stored_activation(%x: tensor<2x16x32xf32>) -> (tensor<2x16x32xbf16>, tensor<f32>, tensor<f32>) {
  %stored = gpt.cast "ln" %x : tensor<2x16x32xf32> -> tensor<2x16x32xbf16>
  %wide = gpt.cast "ln" %stored : tensor<2x16x32xbf16> -> tensor<2x16x32xf32>
  %a = fp8.amax "fc" %wide : tensor<2x16x32xf32>
  %s = fp8.scale_from_amax "fc" %a recipe <format = e4m3>
  %wide2 = gpt.cast "ln" %stored : tensor<2x16x32xbf16> -> tensor<2x16x32xf32>
  %rows = gpt.reshape "fc" %wide2 : tensor<2x16x32xf32> -> tensor<32x32xf32>
  %a2 = fp8.amax "fc.grad" %rows : tensor<32x32xf32>
  %s2 = fp8.scale_from_amax "fc.grad" %a2 recipe <format = e4m3>
  return %stored, %s, %s2 : tensor<2x16x32xbf16>, tensor<f32>, tensor<f32>
}

// -----

// fp32 activations: layernorm (amax of its first result), gelu, add, an
// FP8 GEMM's output and the GELU gradient each compute the amax themselves.
// CHECK-LABEL: func.func @producers
// CHECK: fp8.fused "a" {
// CHECK-NEXT: gpt.layernorm
// CHECK: } : tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<f32>
// CHECK: fp8.fused "b" {
// CHECK-NEXT: gpt.gelu
// CHECK: fp8.fused "c" {
// CHECK-NEXT: gpt.add
// CHECK: fp8.fused "d" {
// CHECK-NEXT: fp8.scaled_matmul
// CHECK: fp8.fused "e" {
// CHECK-NEXT: gpt.gelu_grad
// CHECK-NOT: fp8.amax
func.func @producers(%x: tensor<32x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>, %q: tensor<32x64xf8E4M3FN>, %k: tensor<64x64xf8E4M3FN>, %s: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %n, %stats:2 = gpt.layernorm "ln" %x, %w, %b : tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  %a0 = fp8.amax "a" %n : tensor<32x64xf32>
  %g = gpt.gelu "mlp" %n : tensor<32x64xf32>
  %a1 = fp8.amax "b" %g : tensor<32x64xf32>
  %r = gpt.add "res" %g, %x : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  %a2 = fp8.amax "c" %r : tensor<32x64xf32>
  %y = fp8.scaled_matmul "fc" %q, %k scales(%s, %s) transpose_b : tensor<32x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<32x64xf32>
  %a3 = fp8.amax "d" %y : tensor<32x64xf32>
  %dg = gpt.gelu_grad "mlp" %r, %n : tensor<32x64xf32>
  %a4 = fp8.amax "e" %dg : tensor<32x64xf32>
  return %a0, %a1, %a2, %a3, %a4 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// Left alone: a parameter (the optimizer step wrote it, outside this
// function), a GEMM with a bias (two kernels), values behind a reshape that
// changes the rows (no longer the producer's rows x columns), and a
// function argument (no producer here).
// CHECK-LABEL: func.func @not_fusable
// CHECK-NOT: fp8.fused
// CHECK-COUNT-4: fp8.amax
gpt.param @w : tensor<64x64xf32> init <normal, std = 0.02> layer "fc"
func.func @not_fusable(%x: tensor<32x64xf32>, %bias: tensor<64xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %w = gpt.param_ref @w : tensor<64x64xf32>
  %a0 = fp8.amax "fc" %w : tensor<64x64xf32>
  %y = gpt.matmul "fc" %x, %w bias %bias transpose_b : tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a1 = fp8.amax "fc" %y : tensor<32x64xf32>
  %g = gpt.gelu "mlp" %x : tensor<32x64xf32>
  %narrow = gpt.cast "mlp" %g : tensor<32x64xf32> -> tensor<32x64xbf16>
  %wide = gpt.cast "mlp" %narrow : tensor<32x64xbf16> -> tensor<32x64xf32>
  %t = gpt.reshape "mlp" %wide : tensor<32x64xf32> -> tensor<64x32xf32>
  %a2 = fp8.amax "fc2" %t : tensor<64x32xf32>
  %a3 = fp8.amax "x" %x : tensor<32x64xf32>
  return %a0, %a1, %a2, %a3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
