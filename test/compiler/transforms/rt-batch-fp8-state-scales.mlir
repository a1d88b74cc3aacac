// RUN: gpt-opt %s -split-input-file -rt-batch-fp8-state-scales | FileCheck %s

// Four states' scales (nothing writes their histories before them) are
// made at the start of the function, one batch per set of constants: the
// E4M3 scales of states 0 and 1 (state 0's twice: a shared history, one
// slot) and the E5M2 scales of states 0 and 2. Their slots follow what the
// arena held (histories, then amax slots: 204) at 64-byte alignment: E4M3
// at 256 (two states), E5M2 at 264 (three), so it grows to 276; the casts
// read the slots.
// CHECK: rt.arena @fp8_state fp8_state size = 276
// CHECK-LABEL: func.func @batch
// CHECK-NEXT: %[[H4:.*]] = rt.view @fp8_state[0] : memref<32xf32>
// CHECK-NEXT: %[[S4:.*]] = rt.view @fp8_state[256] : memref<2xf32>
// CHECK-NEXT: rt.kernel "fp8_state_scale_batch" ins(%[[H4]] : memref<32xf32>) outs(%[[S4]] : memref<2xf32>) consts [2, 16, 16, 3, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
// CHECK-NEXT: %[[H5:.*]] = rt.view @fp8_state[0] : memref<48xf32>
// CHECK-NEXT: %[[S5:.*]] = rt.view @fp8_state[264] : memref<3xf32>
// CHECK-NEXT: rt.kernel "fp8_state_scale_batch" ins(%[[H5]] : memref<48xf32>) outs(%[[S5]] : memref<3xf32>) consts [3, 16, 16, 5, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
// CHECK-NOT: "fp8_state_scale"
// CHECK: %[[A:.*]] = rt.view @fp8_state[256] : memref<f32>
// CHECK: "gelu_fwd" ins(%{{.*}}, %[[A]] :
// CHECK: %[[B:.*]] = rt.view @fp8_state[260] : memref<f32>
// CHECK: "gelu_fwd" ins(%{{.*}}, %[[B]] :
// CHECK: %[[C:.*]] = rt.view @fp8_state[256] : memref<f32>
// CHECK: "gelu_fwd" ins(%{{.*}}, %[[C]] :
// CHECK: %[[D:.*]] = rt.view @fp8_state[264] : memref<f32>
// CHECK: "gelu_fwd" ins(%{{.*}}, %[[D]] :
// CHECK: %[[E:.*]] = rt.view @fp8_state[272] : memref<f32>
// CHECK: "gelu_fwd" ins(%{{.*}}, %[[E]] :
// CHECK-NOT: "fp8_state_scale"
// CHECK: "fp8_state_update_batch"
// CHECK-NEXT: return
rt.arena @fp8_state fp8_state size = 204
func.func @batch() {
  %x = rt.alloc : memref<64xf32>
  %h0 = rt.view @fp8_state[0] : memref<16xf32>
  %s0 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h0 : memref<16xf32>) outs(%s0 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %y0 = rt.alloc : memref<64xbf16>
  %a0 = rt.alloc : memref<f32>
  %q0 = rt.alloc : memref<64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s0 : memref<64xf32>, memref<f32>) outs(%y0, %a0, %q0 : memref<64xbf16>, memref<f32>, memref<64xf8E4M3FN>) consts [64, 1, 2, {rows = 1, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %h1 = rt.view @fp8_state[64] : memref<16xf32>
  %s1 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h1 : memref<16xf32>) outs(%s1 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %q1 = rt.alloc : memref<64xf8E4M3FN>
  rt.kernel "gelu_fwd" ins(%x, %s1 : memref<64xf32>, memref<f32>) outs(%y0, %a0, %q1 : memref<64xbf16>, memref<f32>, memref<64xf8E4M3FN>) consts [64, 1, 2, {rows = 1, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %h0b = rt.view @fp8_state[0] : memref<16xf32>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h0b : memref<16xf32>) outs(%s2 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  rt.kernel "gelu_fwd" ins(%x, %s2 : memref<64xf32>, memref<f32>) outs(%y0, %a0, %q1 : memref<64xbf16>, memref<f32>, memref<64xf8E4M3FN>) consts [64, 1, 2, {rows = 1, cols = 64, out_dtype = 2, format = 0, transpose = 0, stat_slot = -1}]
  %s3 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h0 : memref<16xf32>) outs(%s3 : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %q3 = rt.alloc : memref<64xf8E5M2>
  rt.kernel "gelu_fwd" ins(%x, %s3 : memref<64xf32>, memref<f32>) outs(%y0, %a0, %q3 : memref<64xbf16>, memref<f32>, memref<64xf8E5M2>) consts [64, 1, 2, {rows = 1, cols = 64, out_dtype = 2, format = 1, transpose = 0, stat_slot = -1}]
  %h2 = rt.view @fp8_state[128] : memref<16xf32>
  %s4 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h2 : memref<16xf32>) outs(%s4 : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  rt.kernel "gelu_fwd" ins(%x, %s4 : memref<64xf32>, memref<f32>) outs(%y0, %a0, %q3 : memref<64xbf16>, memref<f32>, memref<64xf8E5M2>) consts [64, 1, 2, {rows = 1, cols = 64, out_dtype = 2, format = 1, transpose = 0, stat_slot = -1}]
  %amax = rt.view @fp8_state[192] : memref<3xf32>
  %all = rt.view @fp8_state[0] : memref<48xf32>
  rt.kernel "fp8_state_update_batch" ins(%amax : memref<3xf32>) outs(%all : memref<48xf32>) consts [3, 16, 16, 7]
  return
}

// -----

// Left in place: a scale whose history an update writes before it; a
// scale whose buffer a kernel writes first; a scale another kernel writes
// again after it; and two scales of states 100 apart, each alone in its
// window of 64 states. No slots are added.
// CHECK: rt.arena @fp8_state fp8_state size = 8192
// CHECK-LABEL: func.func @apart
// CHECK-NOT: fp8_state_scale_batch
// CHECK-COUNT-5: rt.kernel "fp8_state_scale" ins
// CHECK-NOT: fp8_state_scale_batch
rt.arena @fp8_state fp8_state size = 8192
func.func @apart() {
  %m = rt.alloc : memref<f32>
  rt.kernel "fill" outs(%m : memref<f32>) consts [1, 1.0]
  %h0 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%h0 : memref<16xf32>) consts [16]
  %s0 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h0 : memref<16xf32>) outs(%s0 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]

  %h1 = rt.view @fp8_state[64] : memref<16xf32>
  %s1 = rt.alloc : memref<f32>
  rt.kernel "fill" outs(%s1 : memref<f32>) consts [1, 1.0]
  rt.kernel "fp8_state_scale" ins(%h1 : memref<16xf32>) outs(%s1 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]

  %h2 = rt.view @fp8_state[128] : memref<16xf32>
  %s2 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h2 : memref<16xf32>) outs(%s2 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  rt.kernel "fill" outs(%s2 : memref<f32>) consts [1, 1.0]

  %h3 = rt.view @fp8_state[192] : memref<16xf32>
  %s3 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h3 : memref<16xf32>) outs(%s3 : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  %h4 = rt.view @fp8_state[6592] : memref<16xf32>
  %s4 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h4 : memref<16xf32>) outs(%s4 : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  return
}
