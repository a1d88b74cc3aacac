// RUN: gpt-opt %s -split-input-file -rt-batch-adamw | FileCheck %s
// RUN: gpt-opt %s -split-input-file -rt-batch-adamw=max-decay-ranges=1 | FileCheck %s --check-prefix=SPLIT
// RUN: not gpt-opt %s -split-input-file -rt-batch-adamw=max-decay-ranges=65 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: max-decay-ranges is 65, expected 1 to 64 (the runtime's GPTRT_ADAMW_MAX_DECAY_RANGES)

// Four parameters back to back (a weight, a layernorm's weight and bias,
// another weight) become one adamw_multi over their 112 elements, weight
// decay on elements [0, 64) and [96, 112); the adamw after the fill starts
// a group of its own and stays. With at most one decay range per kernel
// the second weight starts a new kernel.
// CHECK-LABEL: func.func @batch
// CHECK: %[[G:.*]] = rt.view @grads[0] : memref<112xf32>
// CHECK-NEXT: %[[P:.*]] = rt.view @params[0] : memref<112xf32>
// CHECK-NEXT: %[[M:.*]] = rt.view @optimizer[0] : memref<112xf32>
// CHECK-NEXT: %[[V:.*]] = rt.view @optimizer[1024] : memref<112xf32>
// CHECK-NEXT: rt.kernel "adamw_multi" ins(%[[G]], %{{.*}}, %{{.*}}, %{{.*}} : memref<112xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%[[P]], %[[M]], %[[V]] : memref<112xf32>, memref<112xf32>, memref<112xf32>) consts [112, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01, 2, array<i64: 0, 64, 96, 112>]
// CHECK-NOT: rt.kernel "adamw"
// CHECK: rt.kernel "fill"
// CHECK-NEXT: rt.view
// CHECK: rt.kernel "adamw" ins
// CHECK-NOT: adamw_multi
// SPLIT-LABEL: func.func @batch
// SPLIT: rt.kernel "adamw_multi" {{.*}} consts [96, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01, 1, array<i64: 0, 64>]
// SPLIT-NOT: adamw_multi
// SPLIT: rt.kernel "adamw" ins
// SPLIT: rt.kernel "adamw" ins
rt.arena @activations activations size = 64
rt.arena @params params size = 1024
rt.arena @grads grads size = 1024
rt.arena @optimizer optimizer size = 2048
func.func @batch() {
  %gs = rt.view @activations[0] : memref<f32>
  %lr = rt.view @activations[4] : memref<f32>
  %step = rt.view @activations[8] : memref<f32>
  %g0 = rt.view @grads[0] : memref<64xf32>
  %p0 = rt.view @params[0] : memref<64xf32>
  %m0 = rt.view @optimizer[0] : memref<64xf32>
  %v0 = rt.view @optimizer[1024] : memref<64xf32>
  rt.kernel "adamw" ins(%g0, %gs, %lr, %step : memref<64xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p0, %m0, %v0 : memref<64xf32>, memref<64xf32>, memref<64xf32>) consts [64, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
  %g1 = rt.view @grads[256] : memref<16xf32>
  %p1 = rt.view @params[256] : memref<16xf32>
  %m1 = rt.view @optimizer[256] : memref<16xf32>
  %v1 = rt.view @optimizer[1280] : memref<16xf32>
  rt.kernel "adamw" ins(%g1, %gs, %lr, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p1, %m1, %v1 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 0.000000e+00]
  %g2 = rt.view @grads[320] : memref<16xf32>
  %p2 = rt.view @params[320] : memref<16xf32>
  %m2 = rt.view @optimizer[320] : memref<16xf32>
  %v2 = rt.view @optimizer[1344] : memref<16xf32>
  rt.kernel "adamw" ins(%g2, %gs, %lr, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p2, %m2, %v2 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 0.000000e+00]
  %g3 = rt.view @grads[384] : memref<16xf32>
  %p3 = rt.view @params[384] : memref<16xf32>
  %m3 = rt.view @optimizer[384] : memref<16xf32>
  %v3 = rt.view @optimizer[1408] : memref<16xf32>
  rt.kernel "adamw" ins(%g3, %gs, %lr, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p3, %m3, %v3 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
  %z = rt.view @activations[16] : memref<4xf32>
  rt.kernel "fill" outs(%z : memref<4xf32>) consts [4, 0.000000e+00]
  %g4 = rt.view @grads[448] : memref<16xf32>
  %p4 = rt.view @params[448] : memref<16xf32>
  %m4 = rt.view @optimizer[448] : memref<16xf32>
  %v4 = rt.view @optimizer[1472] : memref<16xf32>
  rt.kernel "adamw" ins(%g4, %gs, %lr, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p4, %m4, %v4 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
  return
}

// -----

// Left apart: a gap between two parameters; another learning rate;
// another nonzero weight decay; another beta2. Two undecayed parameters
// after a gap: one kernel with no decay range.
// CHECK-LABEL: func.func @apart
// CHECK-COUNT-5: rt.kernel "adamw" ins
// CHECK: rt.kernel "adamw_multi" {{.*}} consts [32, 9.000000e-01, 0.99899999999999999, 1.000000e-08, 0.000000e+00, 0, array<i64>]
// CHECK-NOT: rt.kernel "adamw"
rt.arena @activations activations size = 64
rt.arena @params params size = 1024
rt.arena @grads grads size = 1024
rt.arena @optimizer optimizer size = 2048
func.func @apart() {
  %gs = rt.view @activations[0] : memref<f32>
  %lr = rt.view @activations[4] : memref<f32>
  %step = rt.view @activations[8] : memref<f32>
  %lr2 = rt.view @activations[12] : memref<f32>
  %g0 = rt.view @grads[0] : memref<16xf32>
  %p0 = rt.view @params[0] : memref<16xf32>
  %m0 = rt.view @optimizer[0] : memref<16xf32>
  %v0 = rt.view @optimizer[1024] : memref<16xf32>
  rt.kernel "adamw" ins(%g0, %gs, %lr, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p0, %m0, %v0 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
  %g1 = rt.view @grads[128] : memref<16xf32>
  %p1 = rt.view @params[128] : memref<16xf32>
  %m1 = rt.view @optimizer[128] : memref<16xf32>
  %v1 = rt.view @optimizer[1152] : memref<16xf32>
  rt.kernel "adamw" ins(%g1, %gs, %lr, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p1, %m1, %v1 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
  %g2 = rt.view @grads[192] : memref<16xf32>
  %p2 = rt.view @params[192] : memref<16xf32>
  %m2 = rt.view @optimizer[192] : memref<16xf32>
  %v2 = rt.view @optimizer[1216] : memref<16xf32>
  rt.kernel "adamw" ins(%g2, %gs, %lr2, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p2, %m2, %v2 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01]
  %g3 = rt.view @grads[256] : memref<16xf32>
  %p3 = rt.view @params[256] : memref<16xf32>
  %m3 = rt.view @optimizer[256] : memref<16xf32>
  %v3 = rt.view @optimizer[1280] : memref<16xf32>
  rt.kernel "adamw" ins(%g3, %gs, %lr2, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p3, %m3, %v3 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-02]
  %g4 = rt.view @grads[320] : memref<16xf32>
  %p4 = rt.view @params[320] : memref<16xf32>
  %m4 = rt.view @optimizer[320] : memref<16xf32>
  %v4 = rt.view @optimizer[1344] : memref<16xf32>
  rt.kernel "adamw" ins(%g4, %gs, %lr2, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p4, %m4, %v4 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02]
  %g5 = rt.view @grads[512] : memref<16xf32>
  %p5 = rt.view @params[512] : memref<16xf32>
  %m5 = rt.view @optimizer[512] : memref<16xf32>
  %v5 = rt.view @optimizer[1536] : memref<16xf32>
  rt.kernel "adamw" ins(%g5, %gs, %lr2, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p5, %m5, %v5 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 9.990000e-01, 1.000000e-08, 0.000000e+00]
  %g6 = rt.view @grads[576] : memref<16xf32>
  %p6 = rt.view @params[576] : memref<16xf32>
  %m6 = rt.view @optimizer[576] : memref<16xf32>
  %v6 = rt.view @optimizer[1600] : memref<16xf32>
  rt.kernel "adamw" ins(%g6, %gs, %lr2, %step : memref<16xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p6, %m6, %v6 : memref<16xf32>, memref<16xf32>, memref<16xf32>) consts [16, 9.000000e-01, 9.990000e-01, 1.000000e-08, 0.000000e+00]
  return
}
