// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @attention
// CHECK:         %{{.*}} = gpt.attention "h.0.attn" %arg0, %arg1, %arg2 heads = 4 causal : tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.attention "enc.attn" %arg0, %arg1, %arg2 heads = 1 : tensor<?x8x16xf32>
// CHECK:         %{{.*}} = gpt.attention "h.1.attn" %arg0, %arg1, %arg2 heads = 16 causal : tensor<?x8x16xf32>
func.func @attention(%q: tensor<?x8x16xf32>, %k: tensor<?x8x16xf32>, %v: tensor<?x8x16xf32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  %0 = gpt.attention "h.0.attn" %q, %k, %v heads = 4 causal : tensor<?x8x16xf32>
  %1 = gpt.attention "enc.attn" %q, %k, %v heads = 1 : tensor<?x8x16xf32>
  %2 = gpt.attention "h.1.attn" %q, %k, %v heads = 16 causal : tensor<?x8x16xf32>
  return %0, %1, %2 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @attention_bf16
// CHECK:         %{{.*}} = gpt.attention "attn" %arg0, %arg0, %arg0 heads = 2 causal : tensor<2x4x8xbf16>
func.func @attention_bf16(%x: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
  %0 = gpt.attention "attn" %x, %x, %x heads = 2 causal : tensor<2x4x8xbf16>
  return %0 : tensor<2x4x8xbf16>
}

// -----

// The training form (made by gpt-autodiff) also returns the log-sum-exp of
// each query, [batch, heads, seq], f32 even for bf16 activations. Results
// print with their names.
// CHECK-LABEL: func.func @attention_training
// CHECK:         %attended, %lse = gpt.attention "h.0.attn" %arg0, %arg1, %arg2 heads = 4 causal : tensor<?x8x16xf32>, tensor<?x4x8xf32>
// CHECK:         %{{.*}}, %{{.*}} = gpt.attention "enc.attn" %arg0, %arg1, %arg2 heads = 1 : tensor<?x8x16xf32>, tensor<?x1x8xf32>
// CHECK:         %{{.*}}, %{{.*}} = gpt.attention "attn" %arg3, %arg3, %arg3 heads = 2 causal : tensor<2x4x8xbf16>, tensor<?x2x4xf32>
func.func @attention_training(%q: tensor<?x8x16xf32>, %k: tensor<?x8x16xf32>, %v: tensor<?x8x16xf32>, %x: tensor<2x4x8xbf16>) -> (tensor<?x8x16xf32>, tensor<?x4x8xf32>, tensor<?x1x8xf32>, tensor<?x2x4xf32>) {
  %0, %lse0 = gpt.attention "h.0.attn" %q, %k, %v heads = 4 causal : tensor<?x8x16xf32>, tensor<?x4x8xf32>
  %1, %lse1 = gpt.attention "enc.attn" %q, %k, %v heads = 1 : tensor<?x8x16xf32>, tensor<?x1x8xf32>
  %2, %lse2 = gpt.attention "attn" %x, %x, %x heads = 2 causal : tensor<2x4x8xbf16>, tensor<?x2x4xf32>
  return %0, %lse0, %lse1, %lse2 : tensor<?x8x16xf32>, tensor<?x4x8xf32>, tensor<?x1x8xf32>, tensor<?x2x4xf32>
}

// -----

func.func @rank_2(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{q, k, v must be [batch, seq, width], got [8, 16]}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 4 : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @rank_4(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{q, k, v must be [batch, seq, width], got [2, 4, 8, 16]}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 4 : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @dynamic_seq(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{sequence length and width must be static}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @dynamic_width(%x: tensor<?x8x?xf32>) -> tensor<?x8x?xf32> {
  // expected-error @+1 {{sequence length and width must be static}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<?x8x?xf32>
  return %0 : tensor<?x8x?xf32>
}

// -----

func.func @zero_heads(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{heads must be positive, got 0}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 0 : tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @negative_heads(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{heads must be positive, got -4}}
  %0 = gpt.attention "attn" %x, %x, %x heads = -4 : tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @heads_do_not_divide(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{head count 5 does not divide the width 16; pick a head count that divides it}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 5 causal : tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @more_heads_than_width(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{head count 32 does not divide the width 16}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 32 causal : tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @no_layer(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.attention "" %x, %x, %x heads = 4 causal : tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

// The custom form has one type for all four values; the generic form can
// give different ones.
func.func @types_differ(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{failed to verify that all of {q, k, v, attended} have same type}}
  %0 = "gpt.attention"(%q, %k, %k) <{heads = 4 : i64, layer = "attn"}> : (tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>) -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @integer(%x: tensor<?x8x16xi32>) -> tensor<?x8x16xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<?x8x16xi32>'}}
  %0 = gpt.attention "attn" %x, %x, %x heads = 4 : tensor<?x8x16xi32>
  return %0 : tensor<?x8x16xi32>
}

// -----

func.func @two_lse(%x: tensor<?x8x16xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each query: expected 1 extra result(s), got 2}}
  %0, %lse:2 = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<?x8x16xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
  return %lse#0 : tensor<?x4x8xf32>
}

// -----

// [batch, seq, heads] instead of [batch, heads, seq].
func.func @lse_order(%x: tensor<?x8x16xf32>) -> tensor<?x8x4xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each query of shape [?, 4, 8], got [?, 8, 4]}}
  %0, %lse = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<?x8x16xf32>, tensor<?x8x4xf32>
  return %lse : tensor<?x8x4xf32>
}

// -----

// The lse of another head count.
func.func @lse_heads(%x: tensor<2x8x16xf32>) -> tensor<2x2x8xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each query of shape [2, 4, 8], got [2, 2, 8]}}
  %0, %lse = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<2x8x16xf32>, tensor<2x2x8xf32>
  return %lse : tensor<2x2x8xf32>
}

// -----

func.func @lse_batch(%x: tensor<2x8x16xf32>) -> tensor<3x4x8xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each query of shape [2, 4, 8], got [3, 4, 8]}}
  %0, %lse = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<2x8x16xf32>, tensor<3x4x8xf32>
  return %lse : tensor<3x4x8xf32>
}

// -----

// One entry per (batch, seq) row, not per head.
func.func @lse_rank(%x: tensor<?x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{saves the log-sum-exp of each query of shape [?, 4, 8], got [?, 8]}}
  %0, %lse = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<?x8x16xf32>, tensor<?x8xf32>
  return %lse : tensor<?x8xf32>
}

// -----

func.func @bf16_lse(%x: tensor<?x8x16xbf16>) -> tensor<?x4x8xbf16> {
  // expected-error @+1 {{result #1 must be variadic of ranked tensor of 32-bit float values, but got 'tensor<?x4x8xbf16>'}}
  %0, %lse = gpt.attention "attn" %x, %x, %x heads = 4 causal : tensor<?x8x16xbf16>, tensor<?x4x8xbf16>
  return %lse : tensor<?x4x8xbf16>
}
