// RUN: gpt-opt %s -gpt-specialize=micro-batch=2 -gpt-autodiff -gpt-optimizer -rt-bufferize | FileCheck %s

// A small model: every kind of gpt op lowers to kernels of the C ABI.
gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte" real_rows = 60
gpt.param @wpe : tensor<4x8xf32> init <normal, std = 0.02> layer "wpe"
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
  %w = gpt.param_ref @fc.weight : tensor<24x8xf32>
  %b = gpt.param_ref @fc.bias : tensor<24xf32>
  %h = gpt.matmul "fc" %x, %w bias %b transpose_b : tensor<?x4x8xf32>, tensor<24x8xf32>, tensor<24xf32> -> tensor<?x4x24xf32>
  %q:3 = gpt.split "attn" %h along 2 : tensor<?x4x24xf32> -> tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
  %a = gpt.attention "attn" %q#0, %q#1, %q#2 heads = 2 causal : tensor<?x4x8xf32>
  %lm = gpt.param_ref @lm_head.weight : tensor<64x8xf32>
  %logits = gpt.matmul "lm_head" %a, %lm transpose_b : tensor<?x4x8xf32>, tensor<64x8xf32> -> tensor<?x4x64xf32>
  %loss = gpt.cross_entropy "loss" %logits, %targets {vocab_size = 60 : i64} : tensor<?x4x64xf32>, tensor<?x4xi32>
  return %loss, %logits : tensor<f32>, tensor<?x4x64xf32>
}

// Persistent state in parameter order, 256-byte aligned; all gradients in
// one block (the optimizer norms and clears it in one call).
// CHECK: rt.arena @params params size = 3328
// CHECK: rt.arena @grads grads size = 3328
// CHECK: rt.arena @optimizer optimizer size = 6656
// CHECK: rt.arena @inputs inputs size = 512
// CHECK: rt.arena @activations activations size = 0
// Parameters keep their metadata; the tied one has no buffers.
// CHECK: rt.param @wte : memref<64x8xf32> {adam_m_offset = 0 : i64, adam_v_offset = 3328 : i64, grad_offset = 0 : i64, init = "normal", layer = "wte", real_rows = 60 : i64, std = 2.000000e-02 : f64, value_offset = 0 : i64, weight_decay}
// CHECK: rt.param @fc.bias : memref<24xf32> {{{.*}}init = "zeros"{{.*}}}
// CHECK: rt.param @lm_head.weight : memref<64x8xf32> {layer = "lm_head", tied_to = @wte}
// CHECK-LABEL: func.func @train_step()
// CHECK: %[[TOK:.*]] = rt.view @inputs[0] : memref<2x4xi32>
// CHECK: rt.bind input "tokens", %[[TOK]]
// CHECK: %[[TGT:.*]] = rt.view @inputs[256] : memref<2x4xi32>
// CHECK: rt.bind input "targets", %[[TGT]]
// CHECK: %[[WTE:.*]] = rt.view @params[0] : memref<64x8xf32>
// CHECK: %[[E:.*]] = rt.alloc : memref<2x4x8xf32>
// CHECK: rt.kernel "embedding_fwd" ins(%[[WTE]], %[[TOK]] : {{.*}}) outs(%[[E]] : memref<2x4x8xf32>) consts [8, 8, 1]
// Broadcast add: outer 2, inner 32, every operand f32 (dtype 1).
// CHECK: rt.kernel "add" {{.*}} consts [2, 32, 1, 1, 1, 1]
// A shared weight: one GEMM over all 8 rows (f32 operands and result, the
// descriptor's defaults), then the bias in place.
// CHECK: %[[H:.*]] = rt.alloc : memref<2x4x24xf32>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<2x4x8xf32>, memref<24x8xf32>) outs(%[[H]] : memref<2x4x24xf32>) consts [{k = 8 : i64, m = 8 : i64, n = 24 : i64, trans_b = 1 : i64}]{{$}}
// CHECK: rt.kernel "bias_add" {{.*}} outs(%[[H]] : memref<2x4x24xf32>) consts [8, 24]
// Split along the last axis: rows of 24, parts of 8 at 0, 8, 16.
// CHECK: rt.kernel "copy_blocks" ins(%[[H]] : {{.*}}) consts [8, 8, 8, 24, 0, 0, 1]
// CHECK: rt.kernel "copy_blocks" ins(%[[H]] : {{.*}}) consts [8, 8, 8, 24, 0, 8, 1]
// CHECK: rt.kernel "copy_blocks" ins(%[[H]] : {{.*}}) consts [8, 8, 8, 24, 0, 16, 1]
// CHECK: rt.kernel "attention_fwd" {{.*}} consts [2, 4, 8, 2, 1, 1]
// CHECK: %[[LOSS:.*]] = rt.alloc : memref<f32>
// CHECK: rt.kernel "cross_entropy_fwd" {{.*}} outs(%[[LOSS]], %{{.*}} : memref<f32>, memref<2x4xf32>) consts [8, 60, 64, -1, 1]
// CHECK: rt.kernel "step_scalar" {{.*}} consts [0]
// CHECK: rt.kernel "cross_entropy_bwd"
// The weight gradient flattens the batch with an alias, not a copy.
// CHECK: rt.reshape %{{.*}} : memref<2x4x8xf32> -> memref<8x8xf32>
// The tied lm_head accumulates into wte's gradient at offset 0.
// CHECK: %[[DWTE:.*]] = rt.view @grads[0] : memref<64x8xf32>
// CHECK: rt.kernel "accumulate" {{.*}} outs(%[[DWTE]] : memref<64x8xf32>) consts [512, 1]
// CHECK: rt.kernel "attention_bwd"
// CHECK: rt.kernel "copy_blocks"
// CHECK: rt.kernel "reduce_rows" {{.*}} consts [8, 24, 1, 1]
// CHECK: rt.kernel "embedding_bwd" {{.*}} consts [8, 64, 8, 1, 1]
// CHECK: rt.bind output "loss", %[[LOSS]] : memref<f32>
// CHECK: return
// CHECK-LABEL: func.func @eval_step()
// CHECK-LABEL: func.func @logits()
// CHECK: rt.bind output "logits"
// CHECK-LABEL: func.func @optimizer_step()
// CHECK: %[[GRADS:.*]] = rt.view @grads[0] : memref<832xf32>
// CHECK: rt.kernel "global_norm" ins(%[[GRADS]] : memref<832xf32>) outs(%{{.*}} : memref<f32>) consts [832]
// CHECK: rt.kernel "clip_scale" {{.*}} consts [1.000000e+00]
// CHECK: rt.kernel "adamw" {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<64x8xf32>, memref<64x8xf32>, memref<64x8xf32>) consts [512, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
// CHECK: rt.kernel "fill" outs(%{{.*}} : memref<832xf32>) consts [832, 0.000000e+00]
// CHECK: rt.bind output "grad_norm"
