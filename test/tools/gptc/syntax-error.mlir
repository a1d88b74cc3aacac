// A syntax error is reported at its line and column.
// RUN: not gptc %s --report 2>&1 | FileCheck %s

gpt.param @w : tensor<4x4xf32> init <ones> layer "w"
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = gpt.param_ref @w : tensor<4x4xf32>
  // CHECK: syntax-error.mlir:[[# @LINE + 1]]:25: error: expected ','
  %y = gpt.matmul "w" %x %w transpose_b : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
