// An op the gpt dialect does not have is a located error.
// RUN: not gptc %s --report 2>&1 | FileCheck %s

gpt.param @w : tensor<4xf32> init <ones> layer "w"
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: unknown-op.mlir:[[# @LINE + 1]]:8: error: custom op 'gpt.relu' is unknown
  %y = gpt.relu "act" %x : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
