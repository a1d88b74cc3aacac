// RUN: gpt-opt %s -split-input-file -rt-fuse-add-layernorm | FileCheck %s

// The residual add and the layernorm reading its sum: one kernel where the
// layernorm was, still storing the sum.
// CHECK-LABEL: func.func @fused
// CHECK: %[[A:.*]] = rt.alloc : memref<8x32xbf16>
// CHECK-NEXT: %[[B:.*]] = rt.alloc : memref<8x32xf32>
// CHECK-NEXT: %[[X:.*]] = rt.alloc : memref<8x32xbf16>
// CHECK-NOT: rt.kernel "add"
// CHECK: rt.kernel "add_layernorm_fwd" ins(%[[A]], %[[B]], %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%[[X]], %{{.*}}, %{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<8x32xbf16>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.000000e-05, 2, 1, 2, 2]
// CHECK-NOT: layernorm_fwd"
// CHECK: rt.kernel "fill" outs(%[[X]]
func.func @fused() {
  %a = rt.alloc : memref<8x32xbf16>
  %b = rt.alloc : memref<8x32xf32>
  %x = rt.alloc : memref<8x32xbf16>
  rt.kernel "add" ins(%a, %b : memref<8x32xbf16>, memref<8x32xf32>) outs(%x : memref<8x32xbf16>) consts [1, 256, 0, 2, 1, 2]
  %w = rt.alloc : memref<32xf32>
  %bias = rt.alloc : memref<32xf32>
  %y = rt.alloc : memref<8x32xbf16>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  rt.kernel "layernorm_fwd" ins(%x, %w, %bias : memref<8x32xbf16>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xbf16>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 2, 2]
  rt.kernel "fill" outs(%x : memref<8x32xbf16>) consts [256, 0.0]
  return
}

// -----

// Not fused: a broadcast add (the position embedding), a sum read by
// something else first, and an operand overwritten before the layernorm.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: add_layernorm_fwd
func.func @not_fused() {
  %a = rt.alloc : memref<8x32xf32>
  %p = rt.alloc : memref<32xf32>
  %x = rt.alloc : memref<8x32xf32>
  rt.kernel "add" ins(%a, %p : memref<8x32xf32>, memref<32xf32>) outs(%x : memref<8x32xf32>) consts [8, 32, 1, 1, 1, 1]
  %w = rt.alloc : memref<32xf32>
  %y = rt.alloc : memref<8x32xf32>
  %mean = rt.alloc : memref<8xf32>
  %rstd = rt.alloc : memref<8xf32>
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xf32>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 1, 1]

  %x2 = rt.alloc : memref<8x32xf32>
  rt.kernel "add" ins(%a, %y : memref<8x32xf32>, memref<8x32xf32>) outs(%x2 : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]
  %s = rt.alloc : memref<32xf32>
  rt.kernel "reduce_rows" ins(%x2 : memref<8x32xf32>) outs(%s : memref<32xf32>) consts [8, 32, 1, 1]
  rt.kernel "layernorm_fwd" ins(%x2, %w, %w : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xf32>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 1, 1]

  %x3 = rt.alloc : memref<8x32xf32>
  rt.kernel "add" ins(%a, %y : memref<8x32xf32>, memref<8x32xf32>) outs(%x3 : memref<8x32xf32>) consts [1, 256, 0, 1, 1, 1]
  rt.kernel "fill" outs(%a : memref<8x32xf32>) consts [256, 0.0]
  rt.kernel "layernorm_fwd" ins(%x3, %w, %w : memref<8x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %mean, %rstd : memref<8x32xf32>, memref<8xf32>, memref<8xf32>) consts [8, 32, 1.0e-5, 1, 1]
  return
}
