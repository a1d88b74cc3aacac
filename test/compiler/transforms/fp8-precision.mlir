// RUN: gpt-opt %s -split-input-file -fp8-precision -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -fp8-precision="exclude=fc*" -verify-diagnostics | FileCheck %s --check-prefix=EXCLUDE
// RUN: gpt-opt %s -split-input-file -fp8-precision=policy=bf16 -verify-diagnostics | FileCheck %s --check-prefix=BF16
// RUN: gpt-opt %s -split-input-file -fp8-precision=fast-accum=false -verify-diagnostics | FileCheck %s --check-prefix=PRECISE

// Forward GEMM: both operands E4M3 with their own current scale; the bias
// is added after the scaled product. Backward GEMMs: the incoming gradient
// (gpt.grad_operand) is E5M2. Only the forward GEMM accumulates fast
// (fast-accum, on by default); fast-accum=false leaves every GEMM precise.
// PRECISE-LABEL: func.func @train_step
// PRECISE-NOT: fast_accum
// PRECISE: fp8.scaled_matmul "fc" {{.*}} transpose_b {gpt.role = "forward"}
// PRECISE-NOT: fast_accum
// CHECK-LABEL: func.func @train_step
// CHECK: %[[AX:.*]] = fp8.amax "fc" %arg0 : tensor<32x16xf32>
// CHECK: %[[SX:.*]] = fp8.scale_from_amax "fc" %[[AX]] recipe <format = e4m3>
// CHECK: %[[QX:.*]] = fp8.quantize "fc" %arg0, %[[SX]] : tensor<32x16xf32> -> tensor<32x16xf8E4M3FN>
// CHECK: %[[AW:.*]] = fp8.amax "fc" %arg1 : tensor<48x16xf32>
// CHECK: %[[SW:.*]] = fp8.scale_from_amax "fc" %[[AW]] recipe <format = e4m3>
// CHECK: %[[QW:.*]] = fp8.quantize "fc" %arg1, %[[SW]] : tensor<48x16xf32> -> tensor<48x16xf8E4M3FN>
// CHECK: %[[Y:.*]] = fp8.scaled_matmul "fc" %[[QX]], %[[QW]] scales(%[[SX]], %[[SW]]) transpose_b fast_accum {gpt.role = "forward"} : tensor<32x16xf8E4M3FN>, tensor<48x16xf8E4M3FN> -> tensor<32x48xf32>
// CHECK: %[[YB:.*]] = gpt.add "fc" %[[Y]], %arg2 : tensor<32x48xf32>, tensor<48xf32> -> tensor<32x48xf32>
// CHECK: fp8.scale_from_amax "fc" %{{.*}} recipe <format = e5m2>
// CHECK: fp8.quantize "fc" %arg3, %{{.*}} : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
// CHECK: fp8.scaled_matmul "fc" %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}}) {gpt.role = "grad_input"} : tensor<32x48xf8E5M2>, tensor<48x16xf8E4M3FN> -> tensor<32x16xf32>
// The weight gradient: gradient operand second here.
// CHECK: fp8.quantize "fc" %arg3, %{{.*}} : tensor<32x48xf32> -> tensor<32x48xf8E5M2>
// CHECK: fp8.scaled_matmul "fc" {{.*}} transpose_a {gpt.role = "grad_weight"} : tensor<32x16xf8E4M3FN>, tensor<32x48xf8E5M2> -> tensor<16x48xf32>
// A GEMM with a dimension that is not a multiple of 16 stays as it is.
// CHECK: gpt.matmul "odd" {{.*}} {fp8.skipped = "a dimension is not a multiple of 16"}
// CHECK-NOT: gpt.matmul "fc"
// EXCLUDE: gpt.matmul "fc" {{.*}} {fp8.skipped = "excluded"}
// BF16-NOT: fp8.
func.func @train_step(%x: tensor<32x16xf32>, %w: tensor<48x16xf32>, %b: tensor<48xf32>, %dy: tensor<32x48xf32>, %o: tensor<24x16xf32>) -> (tensor<32x48xf32>, tensor<32x16xf32>, tensor<16x48xf32>, tensor<32x24xf32>) {
  %y = gpt.matmul "fc" %x, %w bias %b transpose_b : tensor<32x16xf32>, tensor<48x16xf32>, tensor<48xf32> -> tensor<32x48xf32>
  %dx = gpt.matmul "fc" %dy, %w role = grad_input {gpt.grad_operand = 0 : i64} : tensor<32x48xf32>, tensor<48x16xf32> -> tensor<32x16xf32>
  %dw = gpt.matmul "fc" %x, %dy transpose_a role = grad_weight {gpt.grad_operand = 1 : i64} : tensor<32x16xf32>, tensor<32x48xf32> -> tensor<16x48xf32>
  %z = gpt.matmul "odd" %x, %o transpose_b : tensor<32x16xf32>, tensor<24x16xf32> -> tensor<32x24xf32>
  return %y, %dx, %dw, %z : tensor<32x48xf32>, tensor<32x16xf32>, tensor<16x48xf32>, tensor<32x24xf32>
}
