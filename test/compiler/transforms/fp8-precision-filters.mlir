// RUN: gpt-opt %s -split-input-file -fp8-precision | FileCheck %s --check-prefix=DEFAULT
// RUN: gpt-opt %s -split-input-file -fp8-precision="min-mnk=65536" | FileCheck %s --check-prefix=MNK
// RUN: gpt-opt %s -split-input-file -fp8-precision="include=h.*.mlp.*,lm_head" | FileCheck %s --check-prefix=INCLUDE
// RUN: gpt-opt %s -split-input-file -fp8-precision="include=h.*.mlp.* exclude=h.1.*" | FileCheck %s --check-prefix=BOTH
// RUN: gpt-opt %s -split-input-file -fp8-precision="policy=bf16 include=lm_head min-mnk=65536" | FileCheck %s --check-prefix=BF16
// RUN: not gpt-opt %s -split-input-file -fp8-precision="include=h.[" 2>&1 | FileCheck %s --check-prefix=BADGLOB
// RUN: not gpt-opt %s -split-input-file -fp8-precision="min-mnk=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// The filters fp8-precision applies before asking the policy: min-mnk
// (too small to gain), include and exclude (layer globs).

// By default (min-mnk=0, no include) every eligible GEMM goes FP8, however
// small. With min-mnk, a GEMM below the threshold stays bf16 with the
// numbers in its reason; one exactly at the threshold still goes FP8.
// DEFAULT-LABEL: func.func @min_mnk
// DEFAULT: fp8.scaled_matmul "small"
// DEFAULT: fp8.scaled_matmul "at"
// MNK-LABEL: func.func @min_mnk
// MNK: gpt.matmul "small" {{.*}} {fp8.skipped = "too small to gain (M*N*K = 24576 < threshold 65536)"}
// MNK: fp8.scaled_matmul "at" {{.*}} : tensor<32x32xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<32x64xf32>
// BF16-LABEL: func.func @min_mnk
// BF16-NOT: fp8.
func.func @min_mnk(%x: tensor<32x16xf32>, %w: tensor<48x16xf32>, %y: tensor<32x32xf32>, %v: tensor<64x32xf32>) -> (tensor<32x48xf32>, tensor<32x64xf32>) {
  %small = gpt.matmul "small" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  %at = gpt.matmul "at" %y, %v transpose_b : tensor<32x32xf32>, tensor<64x32xf32> -> tensor<32x64xf32>
  return %small, %at : tensor<32x48xf32>, tensor<32x64xf32>
}

// -----

// include: only layers matching one of its globs may go FP8; the others
// stay bf16 as "not included". exclude still applies to included layers.
// DEFAULT-LABEL: func.func @include
// DEFAULT-COUNT-4: fp8.scaled_matmul
// INCLUDE-LABEL: func.func @include
// INCLUDE: gpt.matmul "h.0.attn.qkv" {{.*}} {fp8.skipped = "not included"}
// INCLUDE: fp8.scaled_matmul "h.0.mlp.fc"
// INCLUDE: fp8.scaled_matmul "h.1.mlp.fc"
// INCLUDE: fp8.scaled_matmul "lm_head"
// BOTH-LABEL: func.func @include
// BOTH: gpt.matmul "h.0.attn.qkv" {{.*}} {fp8.skipped = "not included"}
// BOTH: fp8.scaled_matmul "h.0.mlp.fc"
// BOTH: gpt.matmul "h.1.mlp.fc" {{.*}} {fp8.skipped = "excluded"}
// BOTH: gpt.matmul "lm_head" {{.*}} {fp8.skipped = "not included"}
// BF16-LABEL: func.func @include
// BF16-NOT: fp8.
func.func @include(%x: tensor<32x16xf32>, %w: tensor<48x16xf32>) -> (tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x48xf32>) {
  %qkv = gpt.matmul "h.0.attn.qkv" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  %fc0 = gpt.matmul "h.0.mlp.fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  %fc1 = gpt.matmul "h.1.mlp.fc" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  %head = gpt.matmul "lm_head" %x, %w transpose_b : tensor<32x16xf32>, tensor<48x16xf32> -> tensor<32x48xf32>
  return %qkv, %fc0, %fc1, %head : tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x48xf32>
}

// A pattern that is no glob, and a negative threshold, fail the pass with
// the value and the fix.
// BADGLOB: error: fp8-precision include pattern 'h.[' is not a valid glob (invalid glob pattern, unmatched '['); use layer names with '*' and '?' wildcards, e.g. h.*.mlp.fc or lm_head
// NEGATIVE: error: fp8-precision min-mnk=-1 must be >= 0 (0 keeps every eligible GEMM)
