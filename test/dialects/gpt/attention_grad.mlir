// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// As gpt-autodiff makes it, from the training-form attention's result and
// lse [batch, heads, seq]. Results print with their names.
// CHECK-LABEL: func.func @attention_grad
// CHECK:         %q_grad, %k_grad, %v_grad = gpt.attention_grad "attn" %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 heads = 2 causal : tensor<?x4x8xf32>, tensor<?x2x4xf32>
func.func @attention_grad(%dy: tensor<?x4x8xf32>, %q: tensor<?x4x8xf32>, %k: tensor<?x4x8xf32>, %v: tensor<?x4x8xf32>, %y: tensor<?x4x8xf32>, %lse: tensor<?x2x4xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) {
  %dq, %dk, %dv = gpt.attention_grad "attn" %dy, %q, %k, %v, %y, %lse heads = 2 causal : tensor<?x4x8xf32>, tensor<?x2x4xf32>
  return %dq, %dk, %dv : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
}

// -----

// Not causal; one head, one per width element; bf16 activations with the
// f32 lse; a static batch against a dynamic lse batch.
// CHECK-LABEL: func.func @attention_grad_forms
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = gpt.attention_grad "enc.attn" %arg0, %arg0, %arg0, %arg0, %arg0, %arg1 heads = 1 : tensor<2x4x8xbf16>, tensor<2x1x4xf32>
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = gpt.attention_grad "attn" %arg0, %arg0, %arg0, %arg0, %arg0, %arg2 heads = 8 causal : tensor<2x4x8xbf16>, tensor<?x8x4xf32>
func.func @attention_grad_forms(%x: tensor<2x4x8xbf16>, %lse1: tensor<2x1x4xf32>, %lse8: tensor<?x8x4xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) {
  %a:3 = gpt.attention_grad "enc.attn" %x, %x, %x, %x, %x, %lse1 heads = 1 : tensor<2x4x8xbf16>, tensor<2x1x4xf32>
  %b:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse8 heads = 8 causal : tensor<2x4x8xbf16>, tensor<?x8x4xf32>
  return %a#0, %b#2 : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
}

// -----

func.func @rank_2(%x: tensor<4x8xf32>, %lse: tensor<2x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{q, k, v must be [batch, seq, width], got [4, 8]}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 : tensor<4x8xf32>, tensor<2x4xf32>
  return %r#0 : tensor<4x8xf32>
}

// -----

func.func @rank_4(%x: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{q, k, v must be [batch, seq, width], got [1, 2, 4, 8]}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return %r#0 : tensor<1x2x4x8xf32>
}

// -----

func.func @dynamic_width(%x: tensor<?x4x?xf32>, %lse: tensor<?x2x4xf32>) -> tensor<?x4x?xf32> {
  // expected-error @+1 {{sequence length and width must be static}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<?x4x?xf32>, tensor<?x2x4xf32>
  return %r#0 : tensor<?x4x?xf32>
}

// -----

func.func @dynamic_seq(%x: tensor<?x?x8xf32>, %lse: tensor<?x2x?xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{sequence length and width must be static}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<?x?x8xf32>, tensor<?x2x?xf32>
  return %r#0 : tensor<?x?x8xf32>
}

// -----

func.func @zero_heads(%x: tensor<?x4x8xf32>, %lse: tensor<?x0x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{head count 0 must be positive and divide the width 8}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 0 : tensor<?x4x8xf32>, tensor<?x0x4xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @negative_heads(%x: tensor<?x4x8xf32>, %lse: tensor<?x2x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{head count -2 must be positive and divide the width 8}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = -2 : tensor<?x4x8xf32>, tensor<?x2x4xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @heads_do_not_divide(%x: tensor<?x4x8xf32>, %lse: tensor<?x3x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{head count 3 must be positive and divide the width 8}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 3 causal : tensor<?x4x8xf32>, tensor<?x3x4xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @more_heads_than_width(%x: tensor<?x4x8xf32>, %lse: tensor<?x16x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{head count 16 must be positive and divide the width 8}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 16 causal : tensor<?x4x8xf32>, tensor<?x16x4xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

// [batch, seq, heads] instead of [batch, heads, seq].
func.func @lse_order(%x: tensor<?x4x8xf32>, %lse: tensor<?x4x2xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{lse must be [batch, heads, seq] [?, 2, 4], got [?, 4, 2]}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<?x4x8xf32>, tensor<?x4x2xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

// The lse of another head count.
func.func @lse_heads(%x: tensor<2x4x8xf32>, %lse: tensor<2x4x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{lse must be [batch, heads, seq] [2, 2, 4], got [2, 4, 4]}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<2x4x8xf32>, tensor<2x4x4xf32>
  return %r#0 : tensor<2x4x8xf32>
}

// -----

func.func @lse_batch(%x: tensor<2x4x8xf32>, %lse: tensor<3x2x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{lse must be [batch, heads, seq] [2, 2, 4], got [3, 2, 4]}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<2x4x8xf32>, tensor<3x2x4xf32>
  return %r#0 : tensor<2x4x8xf32>
}

// -----

// One entry per row of the flattened heads is not enough.
func.func @lse_rank(%x: tensor<?x4x8xf32>, %lse: tensor<?x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{lse must be [batch, heads, seq] [?, 2, 4], got [?, 4]}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<?x4x8xf32>, tensor<?x4xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @bf16_lse(%x: tensor<?x4x8xf32>, %lse: tensor<?x2x4xbf16>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{operand #5 must be ranked tensor of 32-bit float values, but got 'tensor<?x2x4xbf16>'}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<?x4x8xf32>, tensor<?x2x4xbf16>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @no_layer(%x: tensor<?x4x8xf32>, %lse: tensor<?x2x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %r:3 = gpt.attention_grad "" %x, %x, %x, %x, %x, %lse heads = 2 causal : tensor<?x4x8xf32>, tensor<?x2x4xf32>
  return %r#0 : tensor<?x4x8xf32>
}

// -----

// The custom form has one type for all eight values; the generic form can
// give different ones.
func.func @types_differ(%x: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %lse: tensor<?x2x4xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{failed to verify that all of {result_grad, q, k, v, result, q_grad, k_grad, v_grad} have same type}}
  %r:3 = "gpt.attention_grad"(%x, %x, %k, %k, %x, %lse) <{heads = 2 : i64, layer = "attn"}> : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x2x4xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>)
  return %r#0 : tensor<?x4x8xf32>
}

// -----

func.func @grad_type(%x: tensor<?x4x8xf32>, %lse: tensor<?x2x4xf32>) -> tensor<?x4x8xbf16> {
  // expected-error @+1 {{failed to verify that all of {result_grad, q, k, v, result, q_grad, k_grad, v_grad} have same type}}
  %r:3 = "gpt.attention_grad"(%x, %x, %x, %x, %x, %lse) <{causal, heads = 2 : i64, layer = "attn"}> : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x2x4xf32>) -> (tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<?x4x8xf32>)
  return %r#0 : tensor<?x4x8xbf16>
}

// -----

func.func @integer(%x: tensor<?x4x8xi32>, %lse: tensor<?x2x4xf32>) -> tensor<?x4x8xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<?x4x8xi32>'}}
  %r:3 = gpt.attention_grad "attn" %x, %x, %x, %x, %x, %lse heads = 2 : tensor<?x4x8xi32>, tensor<?x2x4xf32>
  return %r#0 : tensor<?x4x8xi32>
}
