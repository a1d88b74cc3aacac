// A verifier failure names the op, its location, what was expected and the
// shapes found.
// RUN: not gptc %s --report 2>&1 | FileCheck %s

gpt.param @w : tensor<8x4xf32> init <normal, std = 0.02> layer "fc"
func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x8xf32> {
  %w = gpt.param_ref @w : tensor<8x4xf32>
  // CHECK: verifier-failure.mlir:[[# @LINE + 1]]:8: error: 'gpt.matmul' op contraction sizes differ: a [2, 6] contracts over 6 but b [8, 4] (transposed) over 4
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<2x6xf32>, tensor<8x4xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
