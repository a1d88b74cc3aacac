// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Forward: E4M3 x E4M3 against an [out, in] weight, written as bf16.
// CHECK-LABEL: func.func @forward
// CHECK:         %{{.*}} = fp8.scaled_matmul "h.0.mlp.fc" %arg0, %arg1 scales(%arg2, %arg3) transpose_b : tensor<?x8x16xf8E4M3FN>, tensor<64x16xf8E4M3FN> -> tensor<?x8x64xbf16>
func.func @forward(%x: tensor<?x8x16xf8E4M3FN>, %w: tensor<64x16xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>) -> tensor<?x8x64xbf16> {
  %0 = fp8.scaled_matmul "h.0.mlp.fc" %x, %w scales(%sx, %sw) transpose_b : tensor<?x8x16xf8E4M3FN>, tensor<64x16xf8E4M3FN> -> tensor<?x8x64xbf16>
  return %0 : tensor<?x8x64xbf16>
}

// -----

// fast_accum (the forward GEMMs' accumulation on Hopper) round-trips.
// CHECK-LABEL: func.func @fast_accum
// CHECK:         fp8.scaled_matmul "h.0.mlp.fc" %arg0, %arg1 scales(%arg2, %arg3) transpose_b fast_accum : tensor<16x16xf8E4M3FN>, tensor<64x16xf8E4M3FN> -> tensor<16x64xbf16>
func.func @fast_accum(%x: tensor<16x16xf8E4M3FN>, %w: tensor<64x16xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>) -> tensor<16x64xbf16> {
  %0 = fp8.scaled_matmul "h.0.mlp.fc" %x, %w scales(%sx, %sw) transpose_b fast_accum : tensor<16x16xf8E4M3FN>, tensor<64x16xf8E4M3FN> -> tensor<16x64xbf16>
  return %0 : tensor<16x64xbf16>
}

// -----

// With the optional amax of the output (an f32 scalar) as a second result.
// CHECK-LABEL: func.func @with_amax
// CHECK:         %[[OUT:[^ ,]+]], %[[AMAX:[^ ,]+]] = fp8.scaled_matmul "h.0.mlp.fc" %arg0, %arg1 scales(%arg2, %arg3) transpose_b : tensor<?x8x16xf8E4M3FN>, tensor<64x16xf8E4M3FN> -> tensor<?x8x64xbf16>, tensor<f32>
// CHECK:         return %[[OUT]], %[[AMAX]]
func.func @with_amax(%x: tensor<?x8x16xf8E4M3FN>, %w: tensor<64x16xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>) -> (tensor<?x8x64xbf16>, tensor<f32>) {
  %0, %1 = fp8.scaled_matmul "h.0.mlp.fc" %x, %w scales(%sx, %sw) transpose_b : tensor<?x8x16xf8E4M3FN>, tensor<64x16xf8E4M3FN> -> tensor<?x8x64xbf16>, tensor<f32>
  return %0, %1 : tensor<?x8x64xbf16>, tensor<f32>
}

// -----

// Backward ("hybrid"): E5M2 gradients with E4M3 operands on either side,
// f32 output, transpose_a, and batched operands.
// CHECK-LABEL: func.func @hybrid
// CHECK:         %{{.*}} = fp8.scaled_matmul "h.0.mlp.fc.dx" %arg0, %arg1 scales(%arg4, %arg5) : tensor<32x64xf8E5M2>, tensor<64x16xf8E4M3FN> -> tensor<32x16xf32>
// CHECK:         %{{.*}} = fp8.scaled_matmul "h.0.mlp.fc.dw" %arg0, %arg2 scales(%arg4, %arg5) transpose_a : tensor<32x64xf8E5M2>, tensor<32x16xf8E4M3FN> -> tensor<64x16xbf16>
// CHECK:         %{{.*}} = fp8.scaled_matmul "attn" %arg3, %arg3 scales(%arg4, %arg4) transpose_a transpose_b : tensor<?x4x8x8xf8E4M3FN>, tensor<?x4x8x8xf8E4M3FN> -> tensor<?x4x8x8xf32>
func.func @hybrid(%dy: tensor<32x64xf8E5M2>, %w: tensor<64x16xf8E4M3FN>, %x: tensor<32x16xf8E4M3FN>, %b: tensor<?x4x8x8xf8E4M3FN>, %s0: tensor<f32>, %s1: tensor<f32>) -> (tensor<32x16xf32>, tensor<64x16xbf16>, tensor<?x4x8x8xf32>) {
  %0 = fp8.scaled_matmul "h.0.mlp.fc.dx" %dy, %w scales(%s0, %s1) : tensor<32x64xf8E5M2>, tensor<64x16xf8E4M3FN> -> tensor<32x16xf32>
  %1 = fp8.scaled_matmul "h.0.mlp.fc.dw" %dy, %x scales(%s0, %s1) transpose_a : tensor<32x64xf8E5M2>, tensor<32x16xf8E4M3FN> -> tensor<64x16xbf16>
  %2 = fp8.scaled_matmul "attn" %b, %b scales(%s0, %s0) transpose_a transpose_b : tensor<?x4x8x8xf8E4M3FN>, tensor<?x4x8x8xf8E4M3FN> -> tensor<?x4x8x8xf32>
  return %0, %1, %2 : tensor<32x16xf32>, tensor<64x16xbf16>, tensor<?x4x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @e4m3_times_e5m2
// CHECK:         %{{.*}} = fp8.scaled_matmul "x" %arg0, %arg1 scales(%arg2, %arg2) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E5M2> -> tensor<8x4xbf16>
func.func @e4m3_times_e5m2(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E5M2>, %s: tensor<f32>) -> tensor<8x4xbf16> {
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E5M2> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

func.func @both_e5m2(%a: tensor<8x16xf8E5M2>, %b: tensor<16x4xf8E5M2>, %s: tensor<f32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{both operands are f8E5M2, which FP8 tensor cores do not multiply; quantize one of them (the forward operand) to f8E4M3FN}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xf8E5M2>, tensor<16x4xf8E5M2> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

func.func @a_1d(%a: tensor<16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<4xbf16> {
  // expected-error @+1 {{a must have at least 2 dimensions, got [16]}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @b_rank(%a: tensor<?x8x16xf8E4M3FN>, %b: tensor<16xf8E4M3FN>, %s: tensor<f32>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{b must be 2-D (a weight) or have a's rank 3, got [16]}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<?x8x16xf8E4M3FN>, tensor<16xf8E4M3FN> -> tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// -----

func.func @contraction(%a: tensor<?x8x16xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<f32>) -> tensor<?x8x64xbf16> {
  // expected-error @+1 {{contraction sizes differ: a [?, 8, 16] contracts over 16 but b [64, 32] (transposed) over 32}}
  %0 = fp8.scaled_matmul "x" %a, %w scales(%s, %s) transpose_b : tensor<?x8x16xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<?x8x64xbf16>
  return %0 : tensor<?x8x64xbf16>
}

// -----

func.func @batch_dims(%a: tensor<2x8x16xf8E4M3FN>, %b: tensor<4x16x8xf8E4M3FN>, %s: tensor<f32>) -> tensor<2x8x8xbf16> {
  // expected-error @+1 {{batch dimensions of a [2, 8, 16] and b [4, 16, 8] differ}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<2x8x16xf8E4M3FN>, tensor<4x16x8xf8E4M3FN> -> tensor<2x8x8xbf16>
  return %0 : tensor<2x8x8xbf16>
}

// -----

func.func @result_shape(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x16xbf16> {
  // expected-error @+1 {{result shape [8, 16] does not match the product's [8, 4]}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<8x16xbf16>
  return %0 : tensor<8x16xbf16>
}

// -----

func.func @f16_result(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x4xf16> {
  // expected-error @+1 {{writes bf16 or f32, got f16}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<8x4xf16>
  return %0 : tensor<8x4xf16>
}

// -----

func.func @no_layer(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{needs the name of the layer it scales (e.g. "h.3.mlp.fc"), got an empty string}}
  %0 = fp8.scaled_matmul "" %a, %b scales(%s, %s) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

func.func @bf16_operand(%a: tensor<8x16xbf16>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{operand #0 must be ranked tensor of f8E4M3FN type or f8E5M2 type values, but got 'tensor<8x16xbf16>'}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xbf16>, tensor<16x4xf8E4M3FN> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

func.func @fp8_result(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x4xf8E4M3FN> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<8x4xf8E4M3FN>'}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<8x4xf8E4M3FN>
  return %0 : tensor<8x4xf8E4M3FN>
}

// -----

func.func @amax_type(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> (tensor<8x4xbf16>, tensor<1xf32>) {
  // expected-error @+1 {{result #1 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0, %1 = fp8.scaled_matmul "x" %a, %b scales(%s, %s) : tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<8x4xbf16>, tensor<1xf32>
  return %0, %1 : tensor<8x4xbf16>, tensor<1xf32>
}

// -----

func.func @scale_type(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>, %t: tensor<3xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{b_scale has type 'tensor<3xf32>', expected tensor<f32> or tensor<4xf32> (one scale per column of the result)}}
  %0 = "fp8.scaled_matmul"(%a, %b, %s, %t) <{layer = "x"}> : (tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN>, tensor<f32>, tensor<3xf32>) -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

func.func @row_scale_type(%a: tensor<2x8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<8xf32>, %t: tensor<4xf32>) -> tensor<2x8x4xbf16> {
  // expected-error @+1 {{a_scale has type 'tensor<8xf32>', expected tensor<f32> or tensor<16xf32> (one scale per row of the result)}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %t) row_scales(tensor<8xf32>, tensor<4xf32>) : tensor<2x8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<2x8x4xbf16>
  return %0 : tensor<2x8x4xbf16>
}

// -----

// Rowwise scales: one per row of the result (all 2 x 8 of them) for a, one
// per column for b; per-tensor and rowwise mix.
// CHECK-LABEL: func.func @rowwise
// CHECK: fp8.scaled_matmul "x" %arg0, %arg1 scales(%arg2, %arg3) row_scales(tensor<16xf32>, tensor<4xf32>) : tensor<2x8x16xf8E4M3FN>
// CHECK: fp8.scaled_matmul "x" %arg0, %arg1 scales(%arg4, %arg3) row_scales(tensor<f32>, tensor<4xf32>) :
// CHECK: fp8.scaled_matmul "x" %arg0, %arg1 scales(%arg4, %arg4) : tensor<2x8x16xf8E4M3FN>
func.func @rowwise(%a: tensor<2x8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<16xf32>, %t: tensor<4xf32>, %u: tensor<f32>) -> (tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) {
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %t) row_scales(tensor<16xf32>, tensor<4xf32>) : tensor<2x8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<2x8x4xbf16>
  %1 = fp8.scaled_matmul "x" %a, %b scales(%u, %t) row_scales(tensor<f32>, tensor<4xf32>) : tensor<2x8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<2x8x4xbf16>
  %2 = fp8.scaled_matmul "x" %a, %b scales(%u, %u) : tensor<2x8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN> -> tensor<2x8x4xbf16>
  return %0, %1, %2 : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
}

// -----

func.func @three_results(%a: tensor<8x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{result group starting at #1 requires 0 or 1 element, but found 2}}
  %0:3 = "fp8.scaled_matmul"(%a, %b, %s, %s) <{layer = "x"}> : (tensor<8x16xf8E4M3FN>, tensor<16x4xf8E4M3FN>, tensor<f32>, tensor<f32>) -> (tensor<8x4xbf16>, tensor<f32>, tensor<f32>)
  return %0#0 : tensor<8x4xbf16>
}

// -----

// A batched b (attention's second operand) has no per-column scale vector.
func.func @rowwise_batched_b(%a: tensor<2x8x16xf8E4M3FN>, %b: tensor<2x16x4xf8E4M3FN>, %s: tensor<16xf32>, %t: tensor<4xf32>) -> tensor<2x8x4xbf16> {
  // expected-error @+1 {{takes rowwise b scales only for a 2-D b (a weight); a batched b needs per-tensor scales}}
  %0 = fp8.scaled_matmul "x" %a, %b scales(%s, %t) row_scales(tensor<16xf32>, tensor<4xf32>) : tensor<2x8x16xf8E4M3FN>, tensor<2x16x4xf8E4M3FN> -> tensor<2x8x4xbf16>
  return %0 : tensor<2x8x4xbf16>
}
