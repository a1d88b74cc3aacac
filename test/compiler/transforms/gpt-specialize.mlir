// RUN: gpt-opt %s -split-input-file -gpt-specialize=micro-batch=3 -verify-diagnostics | FileCheck %s

// Shapes flow from the arguments through every forward op.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[TOK:.*]]: tensor<3x4xi32>, %{{.*}}: tensor<3x4xi32>) -> (tensor<f32>, tensor<3x4x16xf32>)
// CHECK: gpt.embedding "wte" {{.*}} -> tensor<3x4x8xf32>
// CHECK: gpt.add "embed" {{.*}} : tensor<3x4x8xf32>, tensor<4x8xf32> -> tensor<3x4x8xf32>
// CHECK: gpt.layernorm "ln" {{.*}} -> tensor<3x4x8xf32>
// CHECK: gpt.matmul "qkv" {{.*}} -> tensor<3x4x24xf32>
// CHECK: gpt.split "attn" {{.*}} -> tensor<3x4x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>
// CHECK: gpt.attention "attn" {{.*}} : tensor<3x4x8xf32>
// CHECK: gpt.reshape "flat" {{.*}} : tensor<3x4x8xf32> -> tensor<12x8xf32>
// CHECK: gpt.transpose "t" {{.*}} : tensor<12x8xf32> -> tensor<8x12xf32>
// CHECK: gpt.concat "c" {{.*}} -> tensor<3x4x16xf32>
// CHECK: gpt.cross_entropy "loss" {{.*}} : tensor<3x4x16xf32>, tensor<3x4xi32>
func.func @forward(%tokens: tensor<?x4xi32>, %targets: tensor<?x4xi32>) -> (tensor<f32>, tensor<?x4x16xf32>) {
  %wte = gpt.param_ref @wte : tensor<16x8xf32>
  %tok = gpt.embedding "wte" %wte[%tokens] : tensor<16x8xf32>, tensor<?x4xi32> -> tensor<?x4x8xf32>
  %wpe = gpt.param_ref @wpe : tensor<4x8xf32>
  %pos = gpt.arange "wpe" : tensor<4xi32>
  %pe = gpt.embedding "wpe" %wpe[%pos] : tensor<4x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %x = gpt.add "embed" %tok, %pe : tensor<?x4x8xf32>, tensor<4x8xf32> -> tensor<?x4x8xf32>
  %g = gpt.param_ref @g : tensor<8xf32>
  %n = gpt.layernorm "ln" %x, %g, %g : tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x4x8xf32>
  %w = gpt.param_ref @w : tensor<24x8xf32>
  %h = gpt.matmul "qkv" %n, %w transpose_b : tensor<?x4x8xf32>, tensor<24x8xf32> -> tensor<?x4x24xf32>
  %q:3 = gpt.split "attn" %h along 2 : tensor<?x4x24xf32> -> tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
  %a = gpt.attention "attn" %q#0, %q#1, %q#2 heads = 2 causal : tensor<?x4x8xf32>
  %f = gpt.reshape "flat" %a : tensor<?x4x8xf32> -> tensor<?x8xf32>
  %t = gpt.transpose "t" %f perm = [1, 0] : tensor<?x8xf32> -> tensor<8x?xf32>
  %c = gpt.concat "c" %a, %x along 2 : tensor<?x4x8xf32>, tensor<?x4x8xf32> -> tensor<?x4x16xf32>
  %loss = gpt.cross_entropy "loss" %c, %targets {vocab_size = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4xi32>
  return %loss, %c : tensor<f32>, tensor<?x4x16xf32>
}
gpt.param @wte : tensor<16x8xf32> init <normal, std = 0.02> layer "wte"
gpt.param @wpe : tensor<4x8xf32> init <normal, std = 0.02> layer "wpe"
gpt.param @g : tensor<8xf32> init <ones> layer "ln"
gpt.param @w : tensor<24x8xf32> init <normal, std = 0.02> layer "qkv"

// -----

// After autodiff the backward ops have no shape rule here.
func.func @train_step(%dy: tensor<?x4xf32>, %x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{has a dynamic result shape that gpt-specialize cannot infer; run gpt-specialize on the model before gpt-autodiff}}
  %0 = gpt.gelu_grad "act" %dy, %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
