// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001" | FileCheck %s
// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001" -rt-bufferize | FileCheck %s --check-prefix=RT
// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0" | FileCheck %s --check-prefix=OFF
// RUN: not gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=nan" 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001 grad-comm=fp8" -rt-bufferize | FileCheck %s --check-prefix=FP8
// RUN: not gpt-opt %s -split-input-file -gpt-data-parallel="grad-comm=bf16" 2>&1 | FileCheck %s --check-prefix=COMM
// The last case fails under zero=1 (ZUNUSED), so these runs expect failure.
// RUN: not gpt-opt %s -split-input-file -gpt-optimizer -gpt-data-parallel="bucket-mb=0.001 zero=1" 2>/dev/null | FileCheck %s --check-prefix=ZERO
// RUN: not gpt-opt %s -split-input-file -gpt-optimizer -gpt-data-parallel="bucket-mb=0.001 zero=1" -rt-bufferize 2>/dev/null | FileCheck %s --check-prefix=ZRT
// RUN: not gpt-opt %s -split-input-file -gpt-optimizer -gpt-data-parallel="bucket-mb=0.001 zero=1" 2>&1 >/dev/null | FileCheck %s --check-prefix=ZUNUSED
// RUN: not gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001 zero=1" 2>&1 | FileCheck %s --check-prefix=ZNOOPT
// RUN: not gpt-opt %s -split-input-file -gpt-optimizer -gpt-data-parallel="bucket-mb=0.001 zero=1 grad-comm=fp8" -rt-bufferize 2>/dev/null | FileCheck %s --check-prefix=ZFP8
// RUN: not gpt-opt %s -split-input-file -gpt-optimizer -gpt-data-parallel="zero=1 bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=ZOFF
// RUN: not gpt-opt %s -split-input-file -gpt-optimizer -gpt-data-parallel="zero=2" 2>&1 | FileCheck %s --check-prefix=ZSTAGE

// Buckets follow the order the backward finishes gradients (@c, then @b,
// then @a), each a run of consecutive parameters of at most 1048 bytes
// (bucket-mb=0.001): @c and @b (256 + 512 bytes) share one, @a (1024
// bytes) does not fit and gets its own. Each bucket starts right after its
// last accumulate; grad_sync waits at the end.
// CHECK-LABEL: func.func @train_step
// CHECK:      gpt.accumulate_grad @c
// CHECK-NEXT: gpt.accumulate_grad @b
// CHECK-NEXT: gpt.grad_bucket_ready 0 [@b, @c]
// CHECK:      gpt.accumulate_grad @a
// CHECK-NEXT: gpt.grad_bucket_ready 1 [@a]
// CHECK-NEXT: gpt.grad_sync 2
// CHECK-NEXT: return
// The runtime gets each bucket as one range of the grads arena (@a at 0,
// @b at 1024, @c at 1536) and the whole arena at the sync.
// RT-LABEL: func.func @train_step
// RT: %[[BC:.*]] = rt.view @grads[1024] : memref<192xf32>
// RT: rt.kernel "grad_bucket_ready" outs(%[[BC]] : memref<192xf32>) consts [192, 0, -1, 0]
// RT: %[[A:.*]] = rt.view @grads[0] : memref<256xf32>
// RT: rt.kernel "grad_bucket_ready" outs(%[[A]] : memref<256xf32>) consts [256, 1, -1, 0]
// RT: rt.kernel "grad_sync" outs(%{{.*}} : memref<448xf32>) consts [2]
// With grad-comm=fp8 the buckets travel as E4M3 (format 0).
// FP8: rt.kernel "grad_bucket_ready" {{.*}} consts [192, 0, 0, 0]
// FP8: rt.kernel "grad_bucket_ready" {{.*}} consts [256, 1, 0, 0]
// COMM: error: gpt-data-parallel grad-comm='bf16' is not a format; use f32 or fp8
// OFF-NOT: grad_bucket_ready
// OFF-NOT: grad_sync
// NEG: error: gpt-data-parallel bucket-mb=-1{{.*}} must be between 0 and 1.048576e+06 MiB (0: no buckets, the runtime sums all gradients after the step)
// NAN: error: gpt-data-parallel bucket-mb=nan must be between 0 and 1.048576e+06 MiB
// zero=1 (ZeRO-1): the buckets are reduce-scattered, the norm and AdamW
// work on this rank's slices, and the parameters are gathered before the
// gradients are cleared.
// ZERO-LABEL: func.func @train_step
// ZERO: gpt.grad_bucket_ready 0 [@b, @c] scatter
// ZERO: gpt.grad_bucket_ready 1 [@a] scatter
// ZERO-LABEL: func.func @optimizer_step
// ZERO: gpt.grad_norm sharded
// ZERO: gpt.adamw @a {{.*}} sharded {beta1
// ZERO: gpt.adamw @c {{.*}} sharded {beta1
// ZERO-NEXT: gpt.gather_params
// ZERO-NEXT: gpt.zero_grads
// The runtime gets scatter = 1, each adamw the gradient's element offset
// (@b at 256) and the whole optimizer arena (its moments are placed by
// rank at run time), gather_params the whole parameter arena.
// ZRT-LABEL: func.func @train_step
// ZRT: rt.kernel "grad_bucket_ready" {{.*}} consts [192, 0, -1, 1]
// ZRT: rt.kernel "grad_bucket_ready" {{.*}} consts [256, 1, -1, 1]
// ZRT-LABEL: func.func @optimizer_step
// ZRT: rt.kernel "global_norm_sharded" ins(%{{.*}} : memref<448xf32>)
// ZRT: rt.view @params[1024]
// ZRT-NEXT: %[[OPT:.*]] = rt.view @optimizer[0] : memref<896xf32>
// ZRT-NEXT: %[[GB:.*]] = rt.view @grads[1024] : memref<8x16xf32>
// ZRT: rt.kernel "adamw_sharded" ins(%[[GB]], {{.*}}) outs(%{{.*}}, %[[OPT]] : memref<8x16xf32>, memref<896xf32>) consts [128, 256, 448, 9.000000e-01
// ZRT: rt.kernel "gather_params" outs(%{{.*}} : memref<448xf32>) consts [448]
// ZRT-NEXT: rt.view @grads[0]
// ZRT-NEXT: rt.kernel "fill"
// ZNOOPT: error: gpt-data-parallel zero=1 shards @optimizer_step, which this module does not have; run gpt-optimizer first
// ZeRO-1 with FP8 gradients: the buckets are reduce-scattered as E4M3.
// ZFP8-LABEL: func.func @train_step
// ZFP8: rt.kernel "grad_bucket_ready" {{.*}} consts [192, 0, 0, 1]
// ZFP8: rt.kernel "grad_bucket_ready" {{.*}} consts [256, 1, 0, 1]
// ZFP8-LABEL: func.func @optimizer_step
// ZFP8: rt.kernel "adamw_sharded"
// ZOFF: error: gpt-data-parallel zero=1 shards along the gradient buckets, but bucket-mb=0 makes none; set bucket-mb > 0 (e.g. 25)
// ZSTAGE: error: gpt-data-parallel zero=2 is not a ZeRO stage this compiler has; use 0 (all-reduce) or 1 (sharded optimizer)
gpt.param @a : tensor<16x16xf32> init <normal, std = 0.02> layer "a"
gpt.param @b : tensor<8x16xf32> init <normal, std = 0.02> layer "b"
gpt.param @c : tensor<64xf32> init <zeros> layer "c"
func.func @train_step(%x: tensor<16x16xf32> {gpt.input = "tokens"}) -> (tensor<f32> {gpt.output = "loss"}) {
  %ga = gpt.fill "a" 1.0 : tensor<16x16xf32>
  %gb = gpt.fill "b" 1.0 : tensor<8x16xf32>
  %gc = gpt.fill "c" 1.0 : tensor<64xf32>
  gpt.accumulate_grad @c, %gc : tensor<64xf32>
  gpt.accumulate_grad @b, %gb : tensor<8x16xf32>
  %l = gpt.fill "loss" 0.0 : tensor<f32>
  gpt.accumulate_grad @a, %ga : tensor<16x16xf32>
  return %l : tensor<f32>
}

// -----

// zero=1 needs an owner for every element: a parameter the backward never
// reaches would be in no bucket.
gpt.param @used : tensor<16xf32> init <zeros> layer "used"
// ZUNUSED: [[@LINE+1]]:1: error: parameter @unused gets no gradient in train_step, so zero=1 cannot give it an owner; remove the parameter or compile with zero=0
gpt.param @unused : tensor<16xf32> init <zeros> layer "unused"
func.func @train_step(%x: tensor<16xf32> {gpt.input = "tokens"}) -> (tensor<f32> {gpt.output = "loss"}) {
  gpt.accumulate_grad @used, %x : tensor<16xf32>
  %l = gpt.fill "loss" 0.0 : tensor<f32>
  return %l : tensor<f32>
}
