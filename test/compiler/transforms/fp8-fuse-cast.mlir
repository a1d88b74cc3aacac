// RUN: gpt-opt %s -split-input-file -fp8-fuse-amax -fp8-fuse-cast | FileCheck %s

// Delayed scaling: the scale is read before the producer runs (the
// state_scale moves up), and the producer's kernel writes the FP8 copy
// with its amax. The activation feeds the GEMM as a (M x K, as Hopper
// wants); the weight gradient's operand b arrives K x N and is written
// transposed, so that GEMM's transpose_b is set.
// CHECK-LABEL: func.func @delayed
// CHECK: %[[S:.*]] = fp8.state_scale @fc.forward.a
// CHECK-NEXT: %[[F:.*]]:3 = fp8.fused "fc" scale(%[[S]]) {
// CHECK-NEXT:   gpt.cast "ln" %arg0 : tensor<32x16xf32> -> tensor<32x16xbf16>
// CHECK:      } : tensor<32x16xbf16>, tensor<f32>, tensor<32x16xf8E4M3FN>
// CHECK-NEXT: %[[SG:.*]] = fp8.state_scale @fc.grad_weight.b
// CHECK-NEXT: %[[G:.*]]:3 = fp8.fused "fc" scale(%[[SG]]) transpose {
// CHECK-NEXT:   gpt.gelu
// CHECK:      } : tensor<32x48xf32>, tensor<f32>, tensor<48x32xf8E4M3FN>
// CHECK-NEXT: fp8.state_update @fc.forward.a, %[[F]]#1
// CHECK-NOT: fp8.quantize
// CHECK: fp8.scaled_matmul "fc" %[[F]]#2, %arg1 scales(%[[S]], %arg2) transpose_b
// CHECK: fp8.scaled_matmul "fc" %arg3, %[[G]]#2 scales(%arg4, %[[SG]]) transpose_a transpose_b
// CHECK: return %{{.*}}, %{{.*}}, %[[F]]#0
fp8.state @fc.forward.a "fc" history = 4 reduction = max recipe = <format = e4m3>
fp8.state @fc.forward.b "fc" history = 4 reduction = max recipe = <format = e4m3>
fp8.state @fc.grad_weight.b "fc" history = 4 reduction = max recipe = <format = e4m3>
func.func @delayed(%x: tensor<32x16xf32>, %w: tensor<48x16xf8E4M3FN>, %sw: tensor<f32>, %dy: tensor<32x16xf8E5M2>, %sdy: tensor<f32>, %h: tensor<32x48xf32>) -> (tensor<32x48xf32>, tensor<16x48xf32>, tensor<32x16xbf16>) {
  %stored = gpt.cast "ln" %x : tensor<32x16xf32> -> tensor<32x16xbf16>
  %g = gpt.gelu "mlp" %h : tensor<32x48xf32>
  %s = fp8.state_scale @fc.forward.a
  %wide = gpt.cast "ln" %stored : tensor<32x16xbf16> -> tensor<32x16xf32>
  %a = fp8.amax "fc" %wide : tensor<32x16xf32>
  fp8.state_update @fc.forward.a, %a
  %wide2 = gpt.cast "ln" %stored : tensor<32x16xbf16> -> tensor<32x16xf32>
  %q = fp8.quantize "fc" %wide2, %s : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
  %y = fp8.scaled_matmul "fc" %q, %w scales(%s, %sw) transpose_b {gpt.role = "forward"} : tensor<32x16xf8E4M3FN>, tensor<48x16xf8E4M3FN> -> tensor<32x48xf32>
  %sg = fp8.state_scale @fc.grad_weight.b
  %qg = fp8.quantize "fc" %g, %sg : tensor<32x48xf32> -> tensor<32x48xf8E4M3FN>
  %dw = fp8.scaled_matmul "fc" %dy, %qg scales(%sdy, %sg) transpose_a {gpt.role = "grad_weight"} : tensor<32x16xf8E5M2>, tensor<32x48xf8E4M3FN> -> tensor<16x48xf32>
  return %y, %dw, %stored : tensor<32x48xf32>, tensor<16x48xf32>, tensor<32x16xbf16>
}

// -----

// Current (tensorwise) scaling needs the amax before the cast: only the
// amax fuses, that quantize stays. Of two delayed casts of one tensor the
// first joins the kernel; the second, with another scale, stays (a kernel
// writes one FP8 copy).
// CHECK-LABEL: func.func @not_fusable
// CHECK: %[[SA:.*]] = fp8.state_scale @a
// CHECK-NEXT: %[[F:.*]]:3 = fp8.fused "fc" scale(%[[SA]]) {
// CHECK: %[[S:.*]] = fp8.scale_from_amax "fc" %[[F]]#1
// CHECK: fp8.quantize "fc" %[[F]]#0, %[[S]] : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
// CHECK: %[[SB:.*]] = fp8.state_scale @b
// CHECK: fp8.quantize "fc" %[[F]]#0, %[[SB]] : tensor<32x16xf32> -> tensor<32x16xf8E5M2>
// CHECK: return %[[F]]#2
fp8.state @a "fc" history = 4 reduction = max recipe = <format = e4m3>
fp8.state @b "fc" history = 4 reduction = max recipe = <format = e5m2>
func.func @not_fusable(%x: tensor<32x16xf32>) -> (tensor<32x16xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<32x16xf8E5M2>) {
  %g = gpt.gelu "mlp" %x : tensor<32x16xf32>
  %sa = fp8.state_scale @a
  %qa = fp8.quantize "fc" %g, %sa : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
  %a = fp8.amax "fc" %g : tensor<32x16xf32>
  %s = fp8.scale_from_amax "fc" %a recipe <format = e4m3>
  %q = fp8.quantize "fc" %g, %s : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
  %sb = fp8.state_scale @b
  %qb = fp8.quantize "fc" %g, %sb : tensor<32x16xf32> -> tensor<32x16xf8E5M2>
  return %qa, %q, %qb : tensor<32x16xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<32x16xf8E5M2>
}
