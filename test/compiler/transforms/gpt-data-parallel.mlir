// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001" | FileCheck %s
// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001" -rt-bufferize | FileCheck %s --check-prefix=RT
// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0" | FileCheck %s --check-prefix=OFF
// RUN: not gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: gpt-opt %s -split-input-file -gpt-data-parallel="bucket-mb=0.001 grad-comm=fp8" -rt-bufferize | FileCheck %s --check-prefix=FP8
// RUN: not gpt-opt %s -split-input-file -gpt-data-parallel="grad-comm=bf16" 2>&1 | FileCheck %s --check-prefix=COMM

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
// RT: rt.kernel "grad_bucket_ready" outs(%[[BC]] : memref<192xf32>) consts [192, 0, -1]
// RT: %[[A:.*]] = rt.view @grads[0] : memref<256xf32>
// RT: rt.kernel "grad_bucket_ready" outs(%[[A]] : memref<256xf32>) consts [256, 1, -1]
// RT: rt.kernel "grad_sync" outs(%{{.*}} : memref<448xf32>) consts [2]
// With grad-comm=fp8 the buckets travel as E4M3 (format 0).
// FP8: rt.kernel "grad_bucket_ready" {{.*}} consts [192, 0, 0]
// FP8: rt.kernel "grad_bucket_ready" {{.*}} consts [256, 1, 0]
// COMM: error: gpt-data-parallel grad-comm='bf16' is not a format; use f32 or fp8
// OFF-NOT: grad_bucket_ready
// OFF-NOT: grad_sync
// NEG: error: gpt-data-parallel bucket-mb=-1{{.*}} must be >= 0 (0: no buckets, the runtime sums all gradients after the step)
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
