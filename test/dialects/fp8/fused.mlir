// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// A producer with its amax, and with amax + FP8 cast (transposed or not).
// CHECK-LABEL: func.func @fused
// CHECK:         %{{.*}}:2 = fp8.fused "h.0.mlp.fc" {
// CHECK-NEXT:      %[[G:.*]] = gpt.gelu "h.0.mlp" %arg0 : tensor<4x8x16xf32>
// CHECK-NEXT:      fp8.yield %[[G]] : tensor<4x8x16xf32>
// CHECK-NEXT:    } : tensor<4x8x16xf32>, tensor<f32>
// CHECK:         %{{.*}}:3 = fp8.fused "h.0.mlp.proj" scale(%arg1) {
// CHECK:         } : tensor<4x8x16xbf16>, tensor<f32>, tensor<4x8x16xf8E4M3FN>
// CHECK:         %{{.*}}:3 = fp8.fused "h.0.mlp.proj" scale(%arg1) transpose {
// CHECK:         } : tensor<4x8x16xbf16>, tensor<f32>, tensor<16x32xf8E5M2>
func.func @fused(%x: tensor<4x8x16xf32>, %scale: tensor<f32>) -> (tensor<4x8x16xf32>, tensor<f32>, tensor<4x8x16xf8E4M3FN>, tensor<16x32xf8E5M2>) {
  %y, %amax = fp8.fused "h.0.mlp.fc" {
    %g = gpt.gelu "h.0.mlp" %x : tensor<4x8x16xf32>
    fp8.yield %g : tensor<4x8x16xf32>
  } : tensor<4x8x16xf32>, tensor<f32>
  %b, %amax2, %q = fp8.fused "h.0.mlp.proj" scale(%scale) {
    %c = gpt.cast "h.0.mlp" %y : tensor<4x8x16xf32> -> tensor<4x8x16xbf16>
    fp8.yield %c : tensor<4x8x16xbf16>
  } : tensor<4x8x16xbf16>, tensor<f32>, tensor<4x8x16xf8E4M3FN>
  %b2, %amax3, %qt = fp8.fused "h.0.mlp.proj" scale(%scale) transpose {
    %c = gpt.cast "h.0.mlp" %y : tensor<4x8x16xf32> -> tensor<4x8x16xbf16>
    fp8.yield %c : tensor<4x8x16xbf16>
  } : tensor<4x8x16xbf16>, tensor<f32>, tensor<16x32xf8E5M2>
  return %y, %amax, %q, %qt : tensor<4x8x16xf32>, tensor<f32>, tensor<4x8x16xf8E4M3FN>, tensor<16x32xf8E5M2>
}

// -----

func.func @no_amax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{returns 1 results, expected 2: the producer's 1, its first result's amax}}
  %y = fp8.fused "x" {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %g : tensor<4x16xf32>
  } : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @two_producers(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{needs a body of exactly one producer op and an fp8.yield of its results}}
  %y, %a = fp8.fused "x" {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    %h = gpt.gelu "x" %g : tensor<4x16xf32>
    fp8.yield %h : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<f32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @yields_other(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{must yield the producer's results, in order}}
  %y, %a = fp8.fused "x" {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %x : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<f32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @wrong_result_type(%x: tensor<4x16xf32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{result #0 has type 'tensor<4x16xbf16>', expected the producer's 'tensor<4x16xf32>'}}
  %y, %a = fp8.fused "x" {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %g : tensor<4x16xf32>
  } : tensor<4x16xbf16>, tensor<f32>
  return %y : tensor<4x16xbf16>
}

// -----

func.func @amax_not_scalar(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{amax result has type 'tensor<4xf32>', expected tensor<f32>}}
  %y, %a = fp8.fused "x" {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %g : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<4xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @cast_to_bf16(%x: tensor<4x16xf32>, %s: tensor<f32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{casts to 'bf16', expected f8E4M3FN or f8E5M2}}
  %y, %a, %q = fp8.fused "x" scale(%s) {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %g : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<f32>, tensor<4x16xbf16>
  return %y : tensor<4x16xf32>
}

// -----

func.func @untransposed_shape(%x: tensor<4x16xf32>, %s: tensor<f32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{FP8 result shape [4, 16] must be [16, 4] (the first result flattened to rows x last dim, transposed)}}
  %y, %a, %q = fp8.fused "x" scale(%s) transpose {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %g : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<f32>, tensor<4x16xf8E4M3FN>
  return %y : tensor<4x16xf32>
}

// -----

func.func @transpose_without_cast(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{transposes the FP8 cast, but has no scale and so no cast}}
  %y, %a = fp8.fused "x" transpose {
    %g = gpt.gelu "x" %x : tensor<4x16xf32>
    fp8.yield %g : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<f32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @stray_yield(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{expects parent op 'fp8.fused'}}
  fp8.yield %x : tensor<4x16xf32>
}

// -----

func.func @reshaped_rows(%x: tensor<4x8x16xf32>, %s: tensor<f32>) -> tensor<32x16xf8E4M3FN> {
  %y, %a, %q = fp8.fused "x" scale(%s) {
    %g = gpt.gelu "x" %x : tensor<4x8x16xf32>
    fp8.yield %g : tensor<4x8x16xf32>
  } : tensor<4x8x16xf32>, tensor<f32>, tensor<32x16xf8E4M3FN>
  return %q : tensor<32x16xf8E4M3FN>
}

// -----

func.func @other_rows(%x: tensor<4x8x16xf32>, %s: tensor<f32>) -> tensor<16x32xf8E4M3FN> {
  // expected-error @+1 {{FP8 result shape [16, 32] must hold the first result's 32 x 16 values with the same last dim}}
  %y, %a, %q = fp8.fused "x" scale(%s) {
    %g = gpt.gelu "x" %x : tensor<4x8x16xf32>
    fp8.yield %g : tensor<4x8x16xf32>
  } : tensor<4x8x16xf32>, tensor<f32>, tensor<16x32xf8E4M3FN>
  return %q : tensor<16x32xf8E4M3FN>
}

// -----

// Amaxes are taken of floating-point activations only.
func.func @integer_producer() -> tensor<16xi32> {
  // expected-error @+1 {{fuses an amax over 'i32', expected an f32 or bf16 first result}}
  %y, %a = fp8.fused "pos" {
    %p = gpt.arange "pos" : tensor<16xi32>
    fp8.yield %p : tensor<16xi32>
  } : tensor<16xi32>, tensor<f32>
  return %y : tensor<16xi32>
}
