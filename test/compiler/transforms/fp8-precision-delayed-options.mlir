// RUN: gpt-opt %s -fp8-precision="policy=fp8-delayed history=8 amax-reduction=most_recent margin=1" | FileCheck %s
// RUN: gpt-opt %s -fp8-precision="policy=fp8-delayed history=8 amax-reduction=most_recent margin=1" -rt-bufferize | FileCheck %s --check-prefix=RT
// RUN: not gpt-opt %s -fp8-precision="policy=fp8-delayed amax-reduction=mean" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gpt-opt %s -fp8-precision="policy=fp8-delayed margin=-1" 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not gpt-opt %s -fp8-precision="policy=fp8-delayed margin=100000" 2>&1 | FileCheck %s --check-prefix=HUGE

// The delayed recipe's knobs: history length, how the history reduces to
// one amax (most_recent here, max by default) and a margin (scales divided
// by 2^margin); the runtime kernel gets the reduction as its last constant.
// CHECK-DAG: fp8.state @fc.forward.a "fc" history = 8 reduction = most_recent recipe = <format = e4m3, margin = 1>
// CHECK-DAG: fp8.state @fc.forward.b "fc" history = 8 reduction = most_recent recipe = <format = e4m3, margin = 1>
// RT: rt.kernel "fp8_state_scale" ins(%{{.*}} : memref<8xf32>) outs(%{{.*}} : memref<f32>) consts [8, 4.480000e+02, 1, 0, 9.9999999999999998E-13, 1]
// BAD: error: fp8-precision amax-reduction='mean' is not a reduction; use max or most_recent
// MARGIN: error: fp8-precision margin=-1 and history=16 must be 0..31 and >= 1 (a margin divides the scales by 2^margin: beyond 31 even the amax codes to zero, in E4M3 beyond 17)
// A margin that would code every value to zero (and train into NaN) is
// refused before it compiles.
// HUGE: error: fp8-precision margin=100000 and history=16 must be 0..31 and >= 1
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
func.func @train_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<32x48xf32> {gpt.output = "y"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %y = gpt.matmul "fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %y : tensor<32x48xf32>
}
