// RUN: gpt-opt %s -split-input-file -fp8-reuse-scales | FileCheck %s

// A weight read by the forward and the grad_input GEMM, and a gradient
// read by grad_input and (reshaped to 2-D, widened from bf16) by
// grad_weight: one amax and one scale each. The casts stay separate.
// CHECK-LABEL: func.func @shared
// CHECK: %[[AW:.*]] = fp8.amax "fc" %arg0 : tensor<48x16xf32>
// CHECK-NEXT: %[[SW:.*]] = fp8.scale_from_amax "fc" %[[AW]] recipe <format = e4m3>
// CHECK-NEXT: fp8.quantize "fc" %arg0, %[[SW]]
// CHECK-NEXT: fp8.quantize "fc" %arg0, %[[SW]]
// CHECK: %[[AG:.*]] = fp8.amax "fc" %arg1 : tensor<2x16x48xbf16>
// CHECK-NEXT: %[[SG:.*]] = fp8.scale_from_amax "fc" %[[AG]] recipe <format = e5m2>
// CHECK-NOT: fp8.amax
// CHECK-NOT: fp8.scale_from_amax
// CHECK: fp8.quantize "fc" %{{.*}}, %[[SG]] : tensor<32x48xf32>
// CHECK: return
func.func @shared(%w: tensor<48x16xf32>, %g: tensor<2x16x48xbf16>) -> (tensor<48x16xf8E4M3FN>, tensor<48x16xf8E4M3FN>, tensor<2x16x48xf8E5M2>, tensor<32x48xf8E5M2>) {
  %aw = fp8.amax "fc" %w : tensor<48x16xf32>
  %sw = fp8.scale_from_amax "fc" %aw recipe <format = e4m3>
  %q1 = fp8.quantize "fc" %w, %sw : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
  %aw2 = fp8.amax "fc" %w : tensor<48x16xf32>
  %sw2 = fp8.scale_from_amax "fc" %aw2 recipe <format = e4m3>
  %q2 = fp8.quantize "fc" %w, %sw2 : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
  %ag = fp8.amax "fc" %g : tensor<2x16x48xbf16>
  %sg = fp8.scale_from_amax "fc" %ag recipe <format = e5m2>
  %q3 = fp8.quantize "fc" %g, %sg : tensor<2x16x48xbf16> -> tensor<2x16x48xf8E5M2>
  %flat = gpt.reshape "fc" %g : tensor<2x16x48xbf16> -> tensor<32x48xbf16>
  %wide = gpt.cast "fc" %flat : tensor<32x48xbf16> -> tensor<32x48xf32>
  %ag2 = fp8.amax "fc" %wide : tensor<32x48xf32>
  %sg2 = fp8.scale_from_amax "fc" %ag2 recipe <format = e5m2>
  %q4 = fp8.quantize "fc" %wide, %sg2 : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
  return %q1, %q2, %q3, %q4 : tensor<48x16xf8E4M3FN>, tensor<48x16xf8E4M3FN>, tensor<2x16x48xf8E5M2>, tensor<32x48xf8E5M2>
}

// -----

// Not the same computation: another recipe (format or margin) keeps its own
// scale, and an amax of a narrowing cast, or of a reshape that moves the
// rows, is of different values and stays (fp8-reuse-scales only looks
// through exact views).
// CHECK-LABEL: func.func @distinct
// CHECK: %[[A:.*]] = fp8.amax "fc" %arg0
// CHECK: fp8.scale_from_amax "fc" %[[A]] recipe <format = e4m3>
// CHECK: fp8.scale_from_amax "fc" %[[A]] recipe <format = e5m2>
// CHECK: fp8.scale_from_amax "fc" %[[A]] recipe <format = e4m3, margin = 1>
// CHECK: fp8.amax "fc" %{{.*}} : tensor<32x16xbf16>
// CHECK: fp8.amax "fc" %{{.*}} : tensor<16x32xf32>
func.func @distinct(%x: tensor<32x16xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %a = fp8.amax "fc" %x : tensor<32x16xf32>
  %s1 = fp8.scale_from_amax "fc" %a recipe <format = e4m3>
  %s2 = fp8.scale_from_amax "fc" %a recipe <format = e5m2>
  %s3 = fp8.scale_from_amax "fc" %a recipe <format = e4m3, margin = 1>
  %narrow = gpt.cast "fc" %x : tensor<32x16xf32> -> tensor<32x16xbf16>
  %an = fp8.amax "fc" %narrow : tensor<32x16xbf16>
  %moved = gpt.reshape "fc" %x : tensor<32x16xf32> -> tensor<16x32xf32>
  %am = fp8.amax "fc" %moved : tensor<16x32xf32>
  return %s1, %s2, %s3, %an, %am : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
