// RUN: gpt-opt %s -split-input-file -fp8-precision="policy=fp8-delayed weight-scaling=current" | FileCheck %s
// RUN: gpt-opt %s -split-input-file -fp8-precision="policy=fp8-delayed" | FileCheck %s --check-prefix=POLICY
// RUN: gpt-opt %s -split-input-file -fp8-precision="policy=fp8-rowwise weight-scaling=current" | FileCheck %s --check-prefix=ROWWISE
// RUN: not gpt-opt %s -split-input-file -fp8-precision="policy=fp8-delayed weight-scaling=delayed" 2>&1 | FileCheck %s --check-prefix=BAD

// weight-scaling=current under fp8-delayed: the weight, in the forward and
// in the grad_input GEMM, is scaled from its own amax (no state of its
// own); the activation and the output gradient keep their histories, and
// the weight gradient's GEMM (no weight operand) is all delayed.
// CHECK-NOT: fp8.state @fc.forward.b
// CHECK-NOT: fp8.state @fc.grad_input.b
// CHECK-DAG: fp8.state @fc.forward.a
// CHECK-DAG: fp8.state @fc.grad_input.a
// CHECK-DAG: fp8.state @fc.grad_weight.a
// CHECK-DAG: fp8.state @fc.grad_weight.b
// CHECK-LABEL: func.func @train_step
// CHECK: fp8.state_scale @fc.forward.a
// CHECK: %[[WA:.*]] = fp8.amax "fc" %[[W:.*]] : tensor<48x16xf32>
// CHECK: %[[WS:.*]] = fp8.scale_from_amax "fc" %[[WA]]
// CHECK: fp8.quantize "fc" %[[W]], %[[WS]] : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
// CHECK: fp8.scaled_matmul "fc"
// CHECK: fp8.state_scale @fc.grad_input.a
// CHECK: fp8.scale_from_amax
// CHECK: fp8.scaled_matmul "fc" {{.*}} {gpt.role = "grad_input"}
// CHECK: fp8.state_scale @fc.grad_weight.a
// CHECK: fp8.state_scale @fc.grad_weight.b
// CHECK-NOT: fp8.scale_from_amax
// CHECK: fp8.scaled_matmul "fc" {{.*}} {gpt.role = "grad_weight"}

// The policy's recipe as it is: every operand has a history.
// POLICY-DAG: fp8.state @fc.forward.b
// POLICY-DAG: fp8.state @fc.grad_input.b
// POLICY-LABEL: func.func @train_step
// POLICY-NOT: fp8.scale_from_amax

// Rowwise scaling is already each weight's own: unchanged.
// ROWWISE-LABEL: func.func @train_step
// ROWWISE-NOT: fp8.state_scale
// ROWWISE: fp8.row_scales

// BAD: fp8-precision weight-scaling='delayed' is not a choice; use policy (the policy's recipe) or current (weights from their own amax)
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
func.func @train_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}, %dy: tensor<32x48xf32> {gpt.input = "targets"}) -> (tensor<32x48xf32> {gpt.output = "y"}, tensor<32x16xf32> {gpt.output = "dx"}, tensor<16x48xf32> {gpt.output = "dw"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  %dx = gpt.matmul "fc" %dy, %w role = grad_input {gpt.grad_operand = 0 : i64} : tensor<32x48xf32>, tensor<48x16xf32> -> tensor<32x16xf32>
  %dw = gpt.matmul "fc" %x, %dy transpose_a role = grad_weight {gpt.grad_operand = 1 : i64} : tensor<32x16xf32>, tensor<32x48xf32> -> tensor<16x48xf32>
  return %y, %dx, %dw : tensor<32x48xf32>, tensor<32x16xf32>, tensor<16x48xf32>
}

// -----

// A tied weight seen through a reshape and a cast is a weight too; an
// activation that merely has a weight's shape is not.
// CHECK-LABEL: func.func @tied
// CHECK: fp8.state_scale @head.forward.a
// CHECK: fp8.scale_from_amax
// CHECK-NOT: fp8.state_scale @head.forward.b
// CHECK: fp8.scaled_matmul "head"
// CHECK: fp8.state_scale @mix.forward.a
// CHECK: fp8.state_scale @mix.forward.b
// CHECK: fp8.scaled_matmul "mix"
gpt.param @emb : tensor<3x16x16xf32> init <normal, std = 0.02> layer "emb"
func.func @tied(%x: tensor<32x16xf32> {gpt.input = "tokens"}, %v: tensor<48x16xf32> {gpt.input = "targets"}) -> (tensor<32x48xf32> {gpt.output = "y"}, tensor<32x48xf32> {gpt.output = "z"}) {
  %e = gpt.param_ref @emb : tensor<3x16x16xf32>
  %r = gpt.reshape "head" %e : tensor<3x16x16xf32> -> tensor<48x16xf32>
  %c = gpt.cast "head" %r : tensor<48x16xf32> -> tensor<48x16xbf16>
  %cx = gpt.cast "head" %x : tensor<32x16xf32> -> tensor<32x16xbf16>
  %y = gpt.matmul "head" %cx, %c transpose_b : tensor<32x16xbf16>, tensor<48x16xbf16> -> tensor<32x48xf32>
  %z = gpt.matmul "mix" %x, %v transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %y, %z : tensor<32x48xf32>, tensor<32x48xf32>
}
