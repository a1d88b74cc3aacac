// RUN: gpt-opt %s -split-input-file -rt-plan-memory -verify-diagnostics | FileCheck %s

// Three buffers: A [0, 2], B [1, 3], C [2, 4] in op indices. Largest first:
// C at 0; A overlaps C in time (both live at op 2), so it goes after it;
// B overlaps both and takes the first gap after them. Peak 4096 bytes.
// CHECK: rt.arena @activations activations size = 4096
// CHECK-LABEL: func.func @f()
// CHECK-SAME: attributes {rt.peak_bytes = 4096 : i64}
// CHECK: %[[A:.*]] = rt.view @activations[2048] : memref<256xf32>
// CHECK: %[[B:.*]] = rt.view @activations[3072] : memref<256xf32>
// CHECK: rt.kernel "fill" outs(%[[A]] : memref<256xf32>) consts [256, 0.000000e+00]
// CHECK: %[[C:.*]] = rt.view @activations[0] : memref<512xf32>
// CHECK: rt.kernel "add" ins(%[[A]], %[[B]] : memref<256xf32>, memref<256xf32>) outs(%[[C]] : memref<512xf32>)
// CHECK: rt.kernel "fill" outs(%[[C]] : memref<512xf32>) consts [512, 0.000000e+00]
rt.arena @activations activations size = 0
func.func @f() {
  %a = rt.alloc : memref<256xf32>
  %b = rt.alloc : memref<256xf32>
  rt.kernel "fill" outs(%a : memref<256xf32>) consts [256, 0.0]
  %c = rt.alloc : memref<512xf32>
  rt.kernel "add" ins(%a, %b : memref<256xf32>, memref<256xf32>) outs(%c : memref<512xf32>) consts [1, 256, 0, 1, 1, 1]
  rt.kernel "fill" outs(%c : memref<512xf32>) consts [512, 0.0]
  return
}

// -----

// Buffers whose lifetimes do not overlap share bytes; a bound output lives
// to the end (the runtime reads it after the call), and a use through an
// rt.reshape alias keeps its source alive.
// CHECK: rt.arena @activations activations size = 1536
// CHECK-LABEL: func.func @g()
// Largest first: y (1 KiB) at 0; x after it; z reuses x's bytes once x is
// dead; the output cannot reuse z's (z is read by the op that writes it).
// CHECK: %[[X:.*]] = rt.view @activations[1024] : memref<64xf32>
// CHECK: %[[Y:.*]] = rt.view @activations[0] : memref<256xf32>
// CHECK: %[[Z:.*]] = rt.view @activations[1024] : memref<64xf32>
// CHECK: %[[OUT:.*]] = rt.view @activations[1280] : memref<f32>
// CHECK: rt.bind output "loss", %[[OUT]]
rt.arena @activations activations size = 0
func.func @g() {
  %x = rt.alloc : memref<64xf32>
  rt.kernel "fill" outs(%x : memref<64xf32>) consts [64, 0.0]
  %y = rt.alloc : memref<256xf32>
  rt.kernel "scale" ins(%x : memref<64xf32>) outs(%y : memref<256xf32>) consts [64, 2.0]
  %y2 = rt.reshape %y : memref<256xf32> -> memref<16x16xf32>
  %z = rt.alloc : memref<64xf32>
  rt.kernel "fill" outs(%z : memref<64xf32>) consts [64, 0.0]
  %out = rt.alloc : memref<f32>
  rt.kernel "add" ins(%y2, %z : memref<16x16xf32>, memref<64xf32>) outs(%out : memref<f32>) consts [1, 1, 0, 1, 1, 1]
  rt.bind output "loss", %out : memref<f32>
  return
}

// -----

// expected-error @+1 {{has no @activations arena; run rt-bufferize first}}
module {
  func.func @h() {
    return
  }
}
