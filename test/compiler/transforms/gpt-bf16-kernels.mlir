// RUN: gpt-opt %s -split-input-file -gpt-bf16-kernels | FileCheck %s
// RUN: gpt-opt %s -split-input-file -gpt-bf16-kernels -rt-bufferize | FileCheck %s --check-prefix=RT

// A residual add of two stored activations, itself stored: it reads both
// bf16 values and writes bf16; every cast goes.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[A:.*]] = gpt.cast "a" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       %[[B:.*]] = gpt.cast "b" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK-NEXT:  %[[S:.*]] = gpt.add "res" %[[A]], %[[B]] : tensor<4x16xbf16>, tensor<4x16xbf16> -> tensor<4x16xbf16>
// CHECK-NEXT:  %[[W:.*]] = gpt.cast "out" %[[S]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT:  return %[[W]]
// RT-LABEL: func.func @logits
// RT: rt.kernel "add" ins(%{{.*}}, %{{.*}} : memref<4x16xbf16>, memref<4x16xbf16>) outs(%{{.*}} : memref<4x16xbf16>) consts [1, 64, 0, 2, 2, 2]
func.func @logits() -> (tensor<4x16xf32> {gpt.output = "logits"}) {
  %a = gpt.fill "a" 1.0 : tensor<4x16xf32>
  %b = gpt.fill "b" 0.5 : tensor<4x16xf32>
  %a16 = gpt.cast "a" %a : tensor<4x16xf32> -> tensor<4x16xbf16>
  %b16 = gpt.cast "b" %b : tensor<4x16xf32> -> tensor<4x16xbf16>
  %a32 = gpt.cast "a" %a16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %b32 = gpt.cast "b" %b16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %s = gpt.add "res" %a32, %b32 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %s16 = gpt.cast "res" %s : tensor<4x16xf32> -> tensor<4x16xbf16>
  %out = gpt.cast "out" %s16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  return %out : tensor<4x16xf32>
}

// -----

// Mixed storage: an f32 operand stays f32, a broadcast bf16 one is read
// as bf16; a result another op reads in f32 stays f32 (and keeps its
// narrowing); a GELU of a widening reads bf16 and, its result not stored,
// writes f32.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[B16:.*]] = gpt.cast "b" %{{.*}} : tensor<16xf32> -> tensor<16xbf16>
// CHECK:       %[[S:.*]] = gpt.add "bias" %{{.*}}, %[[B16]] : tensor<4x16xf32>, tensor<16xbf16> -> tensor<4x16xf32>
// CHECK:       gpt.cast "bias" %[[S]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       gpt.gelu "act" %[[S]]
// CHECK:       gpt.gelu "act2" %[[B16]] : tensor<16xbf16> -> tensor<16xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "add" ins(%{{.*}}, %{{.*}} : memref<4x16xf32>, memref<16xbf16>) outs(%{{.*}} : memref<4x16xf32>) consts [4, 16, 1, 1, 2, 1]
func.func @logits() -> (tensor<4x16xf32> {gpt.output = "logits"}, tensor<4x16xf32> {gpt.output = "stored"}, tensor<16xf32> {gpt.output = "act2"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %b = gpt.fill "b" 0.5 : tensor<16xf32>
  %b16 = gpt.cast "b" %b : tensor<16xf32> -> tensor<16xbf16>
  %b32 = gpt.cast "b" %b16 : tensor<16xbf16> -> tensor<16xf32>
  %s = gpt.add "bias" %x, %b32 : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %s16 = gpt.cast "bias" %s : tensor<4x16xf32> -> tensor<4x16xbf16>
  %g = gpt.gelu "act" %s : tensor<4x16xf32>
  %g2 = gpt.gelu "act2" %b32 : tensor<16xf32>
  %sw = gpt.cast "stored" %s16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  return %g, %sw, %g2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>
}

// -----

// The MLP's GELU and its gradient on stored activations and gradients:
// every operand read as bf16, every result written as bf16.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[H:.*]] = gpt.cast "fc" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       %[[DY:.*]] = gpt.cast "dy" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK-NEXT:  %[[G:.*]] = gpt.gelu "act" %[[H]] : tensor<4x16xbf16>
// CHECK-NEXT:  %[[DX:.*]] = gpt.gelu_grad "act" %[[DY]], %[[H]] : tensor<4x16xbf16>
// CHECK-NEXT:  gpt.cast "out" %[[G]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT:  gpt.cast "out" %[[DX]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "gelu_fwd" ins(%{{.*}} : memref<4x16xbf16>) outs(%{{.*}} : memref<4x16xbf16>) consts [64, 2, 2]
// RT: rt.kernel "gelu_bwd" ins(%{{.*}}, %{{.*}} : memref<4x16xbf16>, memref<4x16xbf16>) outs(%{{.*}} : memref<4x16xbf16>) consts [64, 2, 2, 2]
func.func @logits() -> (tensor<4x16xf32> {gpt.output = "logits"}, tensor<4x16xf32> {gpt.output = "dx"}) {
  %h = gpt.fill "fc" 1.0 : tensor<4x16xf32>
  %dy = gpt.fill "dy" 0.5 : tensor<4x16xf32>
  %h16 = gpt.cast "fc" %h : tensor<4x16xf32> -> tensor<4x16xbf16>
  %dy16 = gpt.cast "dy" %dy : tensor<4x16xf32> -> tensor<4x16xbf16>
  %h32 = gpt.cast "fc" %h16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %g = gpt.gelu "act" %h32 : tensor<4x16xf32>
  %g16 = gpt.cast "act" %g : tensor<4x16xf32> -> tensor<4x16xbf16>
  %dy32 = gpt.cast "dy" %dy16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %h32b = gpt.cast "fc" %h16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %dx = gpt.gelu_grad "act" %dy32, %h32b : tensor<4x16xf32>
  %dx16 = gpt.cast "act" %dx : tensor<4x16xf32> -> tensor<4x16xbf16>
  %gw = gpt.cast "out" %g16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %dxw = gpt.cast "out" %dx16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  return %gw, %dxw : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A bias gradient: the stored gradient is flattened after its widening;
// the reshape moves onto the bf16 value, the sum reads bf16 and writes
// bf16, and the parameter's f32 gradient buffer takes the bf16 gradient.
gpt.param @fc.bias : tensor<16xf32> init <zeros> layer "fc"
// CHECK-LABEL: func.func @train_step
// CHECK:       %[[G16:.*]] = gpt.cast "g" %{{.*}} : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
// CHECK-NEXT:  %[[FLAT:.*]] = gpt.reshape "fc" %[[G16]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT:  %[[DB:.*]] = gpt.reduce_leading "fc" %[[FLAT]] : tensor<8x16xbf16> -> tensor<16xbf16>
// CHECK-NEXT:  gpt.accumulate_grad @fc.bias, %[[DB]] : tensor<16xbf16>
// CHECK-NOT:   gpt.cast
// RT-LABEL: func.func @train_step
// RT: rt.kernel "reduce_rows" ins(%{{.*}} : memref<8x16xbf16>) outs(%[[DB:.*]] : memref<16xbf16>) consts [8, 16, 2, 2]
// RT: %[[BUF:.*]] = rt.view @grads[0] : memref<16xf32>
// RT: rt.kernel "accumulate" ins(%[[DB]] : memref<16xbf16>) outs(%[[BUF]] : memref<16xf32>) consts [16, 2]
func.func @train_step() {
  %g = gpt.fill "g" 1.0 : tensor<2x4x16xf32>
  %g16 = gpt.cast "g" %g : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
  %g32 = gpt.cast "g" %g16 : tensor<2x4x16xbf16> -> tensor<2x4x16xf32>
  %flat = gpt.reshape "fc" %g32 : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %db = gpt.reduce_leading "fc" %flat : tensor<8x16xf32> -> tensor<16xf32>
  %db16 = gpt.cast "fc" %db : tensor<16xf32> -> tensor<16xbf16>
  %db32 = gpt.cast "fc" %db16 : tensor<16xbf16> -> tensor<16xf32>
  gpt.accumulate_grad @fc.bias, %db32 : tensor<16xf32>
  return
}

// -----

// A producer inside fp8.fused has a fused kernel of its own: its operands
// and results keep their form, and so does a narrowing that is the body of
// a fused storage cast (it also computes the amax).
// CHECK-LABEL: func.func @logits
// CHECK:       %[[S:.*]] = gpt.add "res" %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK:       fp8.fused "res"
// CHECK-NEXT:    gpt.cast "res" %[[S]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       fp8.fused "act"
// CHECK-NEXT:    gpt.add "act" %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "add" {{.*}} outs(%{{.*}}, %{{.*}} : memref<4x16xf32>, memref<f32>) consts [1, 64, 0, 1, 1, 1, {cols = 16 : i64, out_dtype = 1 : i64, rows = 4 : i64}]
func.func @logits() -> (tensor<4x16xf32> {gpt.output = "logits"}, tensor<f32> {gpt.output = "amax"}, tensor<4x16xf32> {gpt.output = "act"}, tensor<f32> {gpt.output = "amax2"}) {
  %a = gpt.fill "a" 1.0 : tensor<4x16xf32>
  %a16 = gpt.cast "a" %a : tensor<4x16xf32> -> tensor<4x16xbf16>
  %a32 = gpt.cast "a" %a16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %s = gpt.add "res" %a, %a : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %n:2 = fp8.fused "res" {
    %c = gpt.cast "res" %s : tensor<4x16xf32> -> tensor<4x16xbf16>
    fp8.yield %c : tensor<4x16xbf16>
  } : tensor<4x16xbf16>, tensor<f32>
  %t:2 = fp8.fused "act" {
    %u = gpt.add "act" %a32, %a32 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
    fp8.yield %u : tensor<4x16xf32>
  } : tensor<4x16xf32>, tensor<f32>
  %nw = gpt.cast "out" %n#0 : tensor<4x16xbf16> -> tensor<4x16xf32>
  return %nw, %n#1, %t#0, %t#1 : tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>, tensor<f32>
}

// -----

// The qkv split of a stored activation into stored parts moves bf16 codes;
// a concat with one f32 input stays f32 whole.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X:.*]] = gpt.cast "qkv" %{{.*}} : tensor<2x12xf32> -> tensor<2x12xbf16>
// CHECK-NEXT:  %[[P:.*]]:3 = gpt.split "attn" %[[X]] along 1 : tensor<2x12xbf16> -> tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16>
// CHECK:       gpt.concat "heads" %{{.*}}, %{{.*}} along 1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "copy_blocks" ins(%{{.*}} : memref<2x12xbf16>) outs(%{{.*}} : memref<2x4xbf16>) consts [2, 4, 4, 12, 0, 0, 2]
// RT: rt.kernel "copy_blocks" ins(%{{.*}} : memref<2x4xf32>) outs(%{{.*}} : memref<2x8xf32>) consts [2, 4, 8, 4, 0, 0, 1]
func.func @logits() -> (tensor<2x4xf32> {gpt.output = "q"}, tensor<2x8xf32> {gpt.output = "heads"}) {
  %x = gpt.fill "qkv" 1.0 : tensor<2x12xf32>
  %x16 = gpt.cast "qkv" %x : tensor<2x12xf32> -> tensor<2x12xbf16>
  %x32 = gpt.cast "qkv" %x16 : tensor<2x12xbf16> -> tensor<2x12xf32>
  %q, %k, %v = gpt.split "attn" %x32 along 1 : tensor<2x12xf32> -> tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  %q16 = gpt.cast "attn" %q : tensor<2x4xf32> -> tensor<2x4xbf16>
  %k16 = gpt.cast "attn" %k : tensor<2x4xf32> -> tensor<2x4xbf16>
  %v16 = gpt.cast "attn" %v : tensor<2x4xf32> -> tensor<2x4xbf16>
  %q32 = gpt.cast "out" %q16 : tensor<2x4xbf16> -> tensor<2x4xf32>
  %k32 = gpt.cast "out" %k16 : tensor<2x4xbf16> -> tensor<2x4xf32>
  %f = gpt.fill "f" 2.0 : tensor<2x4xf32>
  %h = gpt.concat "heads" %k32, %f along 1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  %h16 = gpt.cast "heads" %h : tensor<2x8xf32> -> tensor<2x8xbf16>
  %hw = gpt.cast "out" %h16 : tensor<2x8xbf16> -> tensor<2x8xf32>
  return %q32, %hw : tensor<2x4xf32>, tensor<2x8xf32>
}

// -----

// Layernorm on a stored residual stream, and its gradient: bf16 in and
// out, with f32 affine parameters and statistics.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X:.*]] = gpt.cast "x" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       %[[DY:.*]] = gpt.cast "dy" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK-NEXT:  %{{.*}} = gpt.layernorm "ln" %[[X]], %{{.*}}, %{{.*}} : tensor<4x16xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xbf16>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  gpt.layernorm_grad "ln" %[[DY]], %[[X]], %{{.*}}, %{{.*}}, %{{.*}}#1 : tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<16xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x16xbf16>, tensor<16xbf16>, tensor<16xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "layernorm_fwd" {{.*}} consts [4, 16, 9.9999997473787516E-6, 2, 2]
// RT: rt.kernel "layernorm_bwd" {{.*}} consts [4, 16, 2, 2, 2, 2, 1]
func.func @logits() -> (tensor<4x16xf32> {gpt.output = "y"}, tensor<4x16xf32> {gpt.output = "dx"}, tensor<16xf32> {gpt.output = "dw"}, tensor<16xf32> {gpt.output = "db"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %dy = gpt.fill "dy" 0.5 : tensor<4x16xf32>
  %w = gpt.fill "w" 1.0 : tensor<16xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %dy16 = gpt.cast "dy" %dy : tensor<4x16xf32> -> tensor<4x16xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %n, %mean, %rstd = gpt.layernorm "ln" %x32, %w, %w : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>
  %n16 = gpt.cast "ln" %n : tensor<4x16xf32> -> tensor<4x16xbf16>
  %dy32 = gpt.cast "dy" %dy16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %x32b = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %dx, %dw, %db = gpt.layernorm_grad "ln" %dy32, %x32b, %w, %mean, %rstd : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
  %dx16 = gpt.cast "ln" %dx : tensor<4x16xf32> -> tensor<4x16xbf16>
  %dw16 = gpt.cast "ln" %dw : tensor<16xf32> -> tensor<16xbf16>
  %nw = gpt.cast "out" %n16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %dxw = gpt.cast "out" %dx16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %dww = gpt.cast "out" %dw16 : tensor<16xbf16> -> tensor<16xf32>
  return %nw, %dxw, %dww, %db : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Attention on stored q, k, v (and its gradient on stored gradients): one
// dtype for all activations, bf16 here; the log-sum-exp stays f32.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[O:.*]], %[[L:.*]] = gpt.attention "attn" %{{.*}}, %{{.*}}, %{{.*}} heads = 2 causal : tensor<1x4x8xbf16>, tensor<1x2x4xf32>
// CHECK:       gpt.attention_grad "attn" %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]] heads = 2 causal : tensor<1x4x8xbf16>, tensor<1x2x4xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "attention_fwd" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<1x4x8xbf16>, memref<1x4x8xbf16>, memref<1x4x8xbf16>) outs(%{{.*}}, %{{.*}} : memref<1x4x8xbf16>, memref<1x2x4xf32>) consts [1, 4, 8, 2, 1, 2]
// RT: rt.kernel "attention_bwd" {{.*}} consts [1, 4, 8, 2, 1, 2]
func.func @logits() -> (tensor<1x4x8xf32> {gpt.output = "y"}, tensor<1x4x8xf32> {gpt.output = "dq"}) {
  %x = gpt.fill "x" 1.0 : tensor<1x4x8xf32>
  %x16 = gpt.cast "x" %x : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
  %q = gpt.cast "x" %x16 : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
  %o, %lse = gpt.attention "attn" %q, %q, %q heads = 2 causal : tensor<1x4x8xf32>, tensor<1x2x4xf32>
  %o16 = gpt.cast "attn" %o : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
  %o32 = gpt.cast "attn" %o16 : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
  %dq, %dk, %dv = gpt.attention_grad "attn" %q, %q, %q, %q, %o32, %lse heads = 2 causal : tensor<1x4x8xf32>, tensor<1x2x4xf32>
  %dq16 = gpt.cast "attn" %dq : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
  %dk16 = gpt.cast "attn" %dk : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
  %dv16 = gpt.cast "attn" %dv : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
  %ow = gpt.cast "out" %o16 : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
  %dqw = gpt.cast "out" %dq16 : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
  return %ow, %dqw : tensor<1x4x8xf32>, tensor<1x4x8xf32>
}

// -----

// The token embedding gathers bf16 rows of the bf16 table copy; the loss
// reads bf16 logits, and its gradient writes bf16; the table's gradient
// is summed in f32 and rounded once.
gpt.param @wte : tensor<16x8xf32> init <normal, std = 0.02> layer "wte"
// CHECK-LABEL: func.func @train_step
// CHECK:       %[[T16:.*]] = gpt.cast "wte" %{{.*}} : tensor<16x8xf32> -> tensor<16x8xbf16>
// CHECK-NEXT:  %[[E:.*]] = gpt.embedding "wte" %[[T16]][%arg0] : tensor<16x8xbf16>, tensor<2x4xi32> -> tensor<2x4x8xbf16>
// CHECK:       gpt.cross_entropy "loss" %[[L16:.*]], %arg1 {{.*}}: tensor<2x4x16xbf16>, tensor<2x4xi32>
// CHECK:       gpt.cross_entropy_grad "loss" %{{.*}}, %[[L16]], %arg1, %{{.*}} {{.*}}: tensor<2x4x16xbf16>, tensor<2x4xi32>, tensor<2x4xf32>
// CHECK:       %[[DT:.*]] = gpt.embedding_grad "wte" %{{.*}}, %arg0 : tensor<2x4x8xbf16>, tensor<2x4xi32> -> tensor<16x8xbf16>
// CHECK-NEXT:  gpt.accumulate_grad @wte, %[[DT]] : tensor<16x8xbf16>
// RT-LABEL: func.func @train_step
// RT: rt.kernel "embedding_fwd" {{.*}} outs(%{{.*}} : memref<2x4x8xbf16>) consts [8, 8, 2]
// RT: rt.kernel "cross_entropy_fwd" {{.*}} consts [8, 16, 16, -1, 2]
// RT: rt.kernel "cross_entropy_bwd" {{.*}} outs(%{{.*}} : memref<2x4x16xbf16>) consts [8, 16, 16, -1, 2]
// RT: rt.kernel "embedding_bwd" {{.*}} outs(%{{.*}} : memref<16x8xbf16>) consts [8, 16, 8, 2, 2]
func.func @train_step(%ids: tensor<2x4xi32> {gpt.input = "tokens"}, %targets: tensor<2x4xi32> {gpt.input = "targets"}) -> (tensor<f32> {gpt.output = "loss"}) {
  %t = gpt.param_ref @wte : tensor<16x8xf32>
  %t16 = gpt.cast "wte" %t : tensor<16x8xf32> -> tensor<16x8xbf16>
  %t32 = gpt.cast "wte" %t16 : tensor<16x8xbf16> -> tensor<16x8xf32>
  %e = gpt.embedding "wte" %t32[%ids] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %e16 = gpt.cast "wte" %e : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %l = gpt.fill "logits" 0.5 : tensor<2x4x16xf32>
  %l16 = gpt.cast "logits" %l : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
  %l32 = gpt.cast "logits" %l16 : tensor<2x4x16xbf16> -> tensor<2x4x16xf32>
  %loss, %lse = gpt.cross_entropy "loss" %l32, %targets {vocab_size = 16 : i64} : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<2x4xf32>
  %one = gpt.fill "loss" 1.0 : tensor<f32>
  %l32b = gpt.cast "logits" %l16 : tensor<2x4x16xbf16> -> tensor<2x4x16xf32>
  %dl = gpt.cross_entropy_grad "loss" %one, %l32b, %targets, %lse {vocab_size = 16 : i64} : tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<2x4xf32>
  %dl16 = gpt.cast "loss" %dl : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
  %de32 = gpt.cast "wte" %e16 : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %dt = gpt.embedding_grad "wte" %de32, %ids : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<16x8xf32>
  %dt16 = gpt.cast "wte" %dt : tensor<16x8xf32> -> tensor<16x8xbf16>
  %dt32 = gpt.cast "wte" %dt16 : tensor<16x8xbf16> -> tensor<16x8xf32>
  gpt.accumulate_grad @wte, %dt32 : tensor<16x8xf32>
  return %loss : tensor<f32>
}

// -----

// fp8.amax and fp8.quantize read a stored activation as it is: the amax of
// the exact widening, the cast of the exact widening.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X16:.*]] = gpt.cast "x" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK-NEXT:  %[[A:.*]] = fp8.amax "fc" %[[X16]] : tensor<4x16xbf16>
// CHECK:       fp8.quantize "fc" %[[X16]], %{{.*}} : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>
// RT-LABEL: func.func @logits
// RT: rt.kernel "amax" ins(%{{.*}} : memref<4x16xbf16>) {{.*}} consts [64, 2]
// RT: rt.kernel "quantize_fp8" ins(%{{.*}}, %{{.*}} : memref<4x16xbf16>, memref<f32>) {{.*}} consts [64, 0, -1, 2]
func.func @logits() -> (tensor<16x16xf32> {gpt.output = "y"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %a = fp8.amax "fc" %x32 : tensor<4x16xf32>
  %s = fp8.scale_from_amax "fc" %a recipe <format = e4m3>
  %q = fp8.quantize "fc" %x32, %s : tensor<4x16xf32> -> tensor<4x16xf8E4M3FN>
  %y = fp8.scaled_matmul "fc" %q, %q scales(%s, %s) transpose_a : tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN> -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
