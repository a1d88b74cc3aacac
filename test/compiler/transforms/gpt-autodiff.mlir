// RUN: gpt-opt %s -split-input-file -gpt-autodiff -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -gpt-autodiff="recompute=layernorm" -verify-diagnostics | FileCheck %s --check-prefix=RECOMPUTE
// A recompute list naming no gpt op would recompute nothing, silently.
// RUN: not gpt-opt %s -split-input-file -gpt-autodiff="recompute=gelu,foo" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: gpt-autodiff recompute='foo' names no gpt op; list forward ops by name, e.g. recompute=gelu,layernorm

// A one-block model with every kind of op GPT-2 uses: embeddings, a tied
// lm_head, layer norm, a biased linear, gelu, split and attention.

// The forward is gone; three entry points replace it, in this order.
// CHECK-NOT: func.func @forward
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[TOK:.*]]: tensor<?x4xi32> {gpt.input = "tokens"}, %[[TGT:.*]]: tensor<?x4xi32> {gpt.input = "targets"}) -> (tensor<f32> {gpt.output = "loss"})
// Training forms save statistics for the backward.
// CHECK: %[[LNY:.*]], %[[STATS:.*]]:2 = gpt.layernorm "ln" %[[X:[0-9]+]], %[[LNW:[0-9]+]], %{{[0-9]+}} : {{.*}} -> tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
// CHECK: %[[ATT:.*]], %[[ALSE:.*]] = gpt.attention "attn" {{.*}} : tensor<?x4x8xf32>, tensor<?x2x4xf32>
// CHECK: %[[LMW:[0-9]+]] = gpt.param_ref @lm_head.weight
// CHECK: %[[LOGITS:[0-9]+]] = gpt.matmul "lm_head"
// CHECK: %[[LOSS:.*]], %[[CELSE:.*]] = gpt.cross_entropy "loss" %[[LOGITS]], %[[TGT]] {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32> -> tensor<?x4xf32>
// The backward starts from the runtime's loss scale (1 / accumulation steps)
// and runs in reverse.
// CHECK: %[[SEED:[0-9]+]] = gpt.step_scalar loss_scale
// CHECK: %[[DLOGITS:[0-9]+]] = gpt.cross_entropy_grad "loss" %[[SEED]], %[[LOGITS]], %[[TGT]], %[[CELSE]] {vocab_size = 60 : i64}
// The two backward GEMMs of a layer carry their role.
// CHECK: %[[DY:[0-9]+]] = gpt.matmul "lm_head" %[[DLOGITS]], %[[LMW]] role = grad_input {gpt.grad_operand = 0 : i64} : tensor<?x4x64xf32>, tensor<64x8xf32> -> tensor<?x4x8xf32>
// CHECK: %[[DW_LM:[0-9]+]] = gpt.matmul "lm_head" {{.*}} transpose_a role = grad_weight {gpt.grad_operand = 0 : i64} : tensor<?x64xf32>, tensor<?x8xf32> -> tensor<64x8xf32>
// The tied lm_head accumulates into the embedding's gradient, never its own.
// CHECK-NOT: gpt.accumulate_grad @lm_head.weight
// CHECK: gpt.accumulate_grad @wte, %[[DW_LM]] : tensor<64x8xf32>
// CHECK: gpt.attention_grad "attn" %[[DY]], {{.*}}, %[[ATT]], %[[ALSE]] heads = 2 causal
// CHECK: gpt.concat "attn"
// CHECK: gpt.gelu_grad "act"
// CHECK: gpt.matmul "fc" {{.*}} role = grad_input
// CHECK: gpt.matmul "fc" {{.*}} transpose_a role = grad_weight
// CHECK: %[[DB:[0-9]+]] = gpt.reduce_leading "fc" %{{[0-9]+}} : tensor<?x4x24xf32> -> tensor<24xf32>
// CHECK: gpt.accumulate_grad @fc.bias, %[[DB]]
// CHECK: gpt.accumulate_grad @fc.weight
// CHECK: %[[DX:.*]], %[[DLNW:.*]], %[[DLNB:.*]] = gpt.layernorm_grad "ln" %{{[0-9]+}}, %[[X]], %[[LNW]], %[[STATS]]#0, %[[STATS]]#1
// The residual stream's two gradients add up.
// CHECK: %[[DRES:[0-9]+]] = gpt.add "embed" %[[DY]], %[[DX]]
// CHECK: gpt.accumulate_grad @ln.bias, %[[DLNB]]
// CHECK: gpt.accumulate_grad @ln.weight, %[[DLNW]]
// The broadcast position embedding sums over the batch.
// CHECK: %[[DPOS:[0-9]+]] = gpt.reduce_leading "embed" %[[DRES]] : tensor<?x4x8xf32> -> tensor<4x8xf32>
// CHECK: gpt.embedding_grad "wpe" %[[DPOS]]
// CHECK: gpt.accumulate_grad @wpe
// CHECK: %[[DWTE:[0-9]+]] = gpt.embedding_grad "wte" %[[DRES]], %[[TOK]] : tensor<?x4x8xf32>, tensor<?x4xi32> -> tensor<64x8xf32>
// CHECK: gpt.accumulate_grad @wte, %[[DWTE]]
// CHECK: return %[[LOSS]] : tensor<f32>

// eval_step is the forward without statistics or gradients.
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: -> (tensor<f32> {gpt.output = "loss"})
// CHECK: gpt.layernorm "ln" {{.*}} -> tensor<?x4x8xf32>{{$}}
// CHECK-NOT: _grad
// CHECK: return

// logits drops the loss and the targets argument with it.
// CHECK-LABEL: func.func @logits
// CHECK-SAME: (%{{.*}}: tensor<?x4xi32> {gpt.input = "tokens"}) -> (tensor<?x4x64xf32> {gpt.output = "logits"})
// CHECK-NOT: cross_entropy
// CHECK: return

// With recompute=layernorm the backward normalises again instead of keeping
// the forward's output and statistics alive.
// RECOMPUTE-LABEL: func.func @train_step
// RECOMPUTE: %[[Y0:.*]], %{{.*}}:2 = gpt.layernorm "ln"
// RECOMPUTE: gpt.step_scalar loss_scale
// RECOMPUTE: %[[Y1:.*]], %[[S1:.*]]:2 = gpt.layernorm "ln"
// RECOMPUTE-NEXT: gpt.reshape "fc" %[[Y1]]
// RECOMPUTE: gpt.layernorm_grad "ln" {{.*}}, %[[S1]]#0, %[[S1]]#1
gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte" real_rows = 60
gpt.param @wpe : tensor<4x8xf32> init <normal, std = 0.02> layer "wpe"
gpt.param @ln.weight : tensor<8xf32> init <ones> layer "ln"
gpt.param @ln.bias : tensor<8xf32> init <zeros> layer "ln"
gpt.param @fc.weight : tensor<24x8xf32> init <normal, std = 0.02> layer "fc"
gpt.param @fc.bias : tensor<24xf32> init <zeros> layer "fc"
gpt.param @lm_head.weight : tensor<64x8xf32> tied_to @wte layer "lm_head"
func.func @forward(%tokens: tensor<?x4xi32> {gpt.input = "tokens"}, %targets: tensor<?x4xi32> {gpt.input = "targets"}) -> (tensor<f32> {gpt.output = "loss"}, tensor<?x4x64xf32> {gpt.output = "logits"}) {
  %wte = gpt.param_ref @wte : tensor<64x8xf32>
  %tok = gpt.embedding "wte" %wte[%tokens] : tensor<64x8xf32>, tensor<?x4xi32> -> tensor<?x4x8xf32>
  %wpe = gpt.param_ref @wpe : tensor<4x8xf32>
  %pos = gpt.arange "wpe" : tensor<4xi32>
  %pe = gpt.embedding "wpe" %wpe[%pos] : tensor<4x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %x = gpt.add "embed" %tok, %pe : tensor<?x4x8xf32>, tensor<4x8xf32> -> tensor<?x4x8xf32>
  %lnw = gpt.param_ref @ln.weight : tensor<8xf32>
  %lnb = gpt.param_ref @ln.bias : tensor<8xf32>
  %n = gpt.layernorm "ln" %x, %lnw, %lnb : tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x4x8xf32>
  %w = gpt.param_ref @fc.weight : tensor<24x8xf32>
  %b = gpt.param_ref @fc.bias : tensor<24xf32>
  %h = gpt.matmul "fc" %n, %w bias %b transpose_b : tensor<?x4x8xf32>, tensor<24x8xf32>, tensor<24xf32> -> tensor<?x4x24xf32>
  %g = gpt.gelu "act" %h : tensor<?x4x24xf32>
  %q:3 = gpt.split "attn" %g along 2 : tensor<?x4x24xf32> -> tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
  %a = gpt.attention "attn" %q#0, %q#1, %q#2 heads = 2 causal : tensor<?x4x8xf32>
  %y = gpt.add "residual" %x, %a : tensor<?x4x8xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>
  %lm = gpt.param_ref @lm_head.weight : tensor<64x8xf32>
  %logits = gpt.matmul "lm_head" %y, %lm transpose_b : tensor<?x4x8xf32>, tensor<64x8xf32> -> tensor<?x4x64xf32>
  %loss = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>
  return %loss, %logits : tensor<f32>, tensor<?x4x64xf32>
}

// -----

// expected-error @+1 {{has no @forward function; gpt-autodiff differentiates the model's @forward}}
module {
  func.func @train(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{has no result tagged {gpt.output = "loss"}}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<2x4xf32> {gpt.output = "logits"}) {
  return %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{loss result must be tensor<f32>, got 'tensor<2xf32>'}}
func.func @forward(%x: tensor<2xf32>) -> (tensor<2xf32> {gpt.output = "loss"}) {
  return %x : tensor<2xf32>
}

// -----

// The gradient of a concatenation splits it back into equal parts only.
gpt.param @w : tensor<4x8xf32> init <normal, std = 0.02> layer "w"
func.func @forward(%x: tensor<4x4xf32> {gpt.input = "tokens"}, %targets: tensor<4xi32> {gpt.input = "targets"}) -> (tensor<f32> {gpt.output = "loss"}) {
  %w = gpt.param_ref @w : tensor<4x8xf32>
  // expected-error @+1 {{has no gradient rule for parts of different sizes; concatenate equal parts}}
  %c = gpt.concat "cat" %w, %x along 1 : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<4x12xf32>
  %loss = gpt.cross_entropy "loss" %c, %targets {vocab_size = 12 : i64} : tensor<4x12xf32>, tensor<4xi32>
  return %loss : tensor<f32>
}

// -----

// An unused part of a split gets zeros as its gradient, which a dynamic
// shape cannot give.
gpt.param @w : tensor<8x24xf32> init <normal, std = 0.02> layer "w"
func.func @forward(%x: tensor<?x8xf32> {gpt.input = "tokens"}, %targets: tensor<?xi32> {gpt.input = "targets"}) -> (tensor<f32> {gpt.output = "loss"}) {
  %w = gpt.param_ref @w : tensor<8x24xf32>
  %h = gpt.matmul "fc" %x, %w : tensor<?x8xf32>, tensor<8x24xf32> -> tensor<?x24xf32>
  // expected-error @+1 {{result #1 is unused, so it has no gradient, and its dynamic shape leaves no way to build zeros; use every part of the split}}
  %p:2 = gpt.split "parts" %h along 1 : tensor<?x24xf32> -> tensor<?x12xf32>, tensor<?x12xf32>
  %loss = gpt.cross_entropy "loss" %p#0, %targets {vocab_size = 12 : i64} : tensor<?x12xf32>, tensor<?xi32>
  return %loss : tensor<f32>
}

// -----

// A weight broadcast over a transposed, batched a.
gpt.param @w : tensor<4x12xf32> init <normal, std = 0.02> layer "w"
func.func @forward(%x: tensor<2x4x8xf32> {gpt.input = "tokens"}, %targets: tensor<2x8xi32> {gpt.input = "targets"}) -> (tensor<f32> {gpt.output = "loss"}) {
  %w = gpt.param_ref @w : tensor<4x12xf32>
  // expected-error @+1 {{has no gradient rule for transpose_a with a broadcast 2-D b; flatten a first}}
  %h = gpt.matmul "fc" %x, %w transpose_a : tensor<2x4x8xf32>, tensor<4x12xf32> -> tensor<2x8x12xf32>
  %loss = gpt.cross_entropy "loss" %h, %targets {vocab_size = 12 : i64} : tensor<2x8x12xf32>, tensor<2x8xi32>
  return %loss : tensor<f32>
}
