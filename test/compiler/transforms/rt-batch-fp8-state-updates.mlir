// RUN: gpt-opt %s -split-input-file -rt-batch-fp8-state-updates | FileCheck %s

// Three states' updates move to the end as one batch: their amaxes live
// in slots after the histories (the arena grows by one f32 for each state
// up to the last batched one: 192 -> 204), where their producers now write
// them -- the middle state's amax is a weight's, in the weight cache, and
// its one view (cast_weights would write it) moves to its slot.
// CHECK: rt.arena @fp8_state fp8_state size = 204
// CHECK-LABEL: func.func @batch
// CHECK: %[[M0:.*]] = rt.view @fp8_state[192] : memref<f32>
// CHECK: rt.kernel "amax" {{.*}} outs(%[[M0]] : memref<f32>)
// CHECK: rt.view @fp8_state[196] : memref<f32>
// CHECK: %[[M2:.*]] = rt.view @fp8_state[200] : memref<f32>
// CHECK: rt.kernel "amax" {{.*}} outs(%[[M2]] : memref<f32>)
// CHECK-NOT: fp8_state_update"
// CHECK: %[[A:.*]] = rt.view @fp8_state[192] : memref<3xf32>
// CHECK-NEXT: %[[H:.*]] = rt.view @fp8_state[0] : memref<48xf32>
// CHECK-NEXT: rt.kernel "fp8_state_update_batch" ins(%[[A]] : memref<3xf32>) outs(%[[H]] : memref<48xf32>) consts [3, 16, 16, 7]
// CHECK-NEXT: return
rt.arena @fp8_state fp8_state size = 192
rt.arena @weight_cache weight_cache size = 256
func.func @batch() {
  %x = rt.alloc : memref<64xf32>
  %m0 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m0 : memref<f32>) consts [64, 1]
  %h0 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m0 : memref<f32>) outs(%h0 : memref<16xf32>) consts [16]
  %w = rt.view @weight_cache[0] : memref<f32>
  %h1 = rt.view @fp8_state[64] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%w : memref<f32>) outs(%h1 : memref<16xf32>) consts [16]
  %m2 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m2 : memref<f32>) consts [64, 1]
  %h2 = rt.view @fp8_state[128] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m2 : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  %y = rt.alloc : memref<64xf32>
  rt.kernel "fill" outs(%y : memref<64xf32>) consts [64, 0.0]
  return
}

// -----

// Left in place: a history read after its update (a later scale from
// it); an amax read after its update; a weight-cache amax this function
// writes; a movable update alone in its window of 64 states (nothing to
// batch with). No slots are added.
// CHECK: rt.arena @fp8_state fp8_state size = 8192
// CHECK-LABEL: func.func @apart
// CHECK-NOT: fp8_state_update_batch
// CHECK-COUNT-4: rt.kernel "fp8_state_update" ins
// CHECK-NOT: fp8_state_update_batch
rt.arena @fp8_state fp8_state size = 8192
rt.arena @weight_cache weight_cache size = 256
func.func @apart() {
  %wx = rt.alloc : memref<64xf32>
  %w = rt.view @weight_cache[0] : memref<f32>
  rt.kernel "amax" ins(%wx : memref<64xf32>) outs(%w : memref<f32>) consts [64, 1]
  %hw = rt.view @fp8_state[128] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%w : memref<f32>) outs(%hw : memref<16xf32>) consts [16]

  %x = rt.alloc : memref<64xf32>
  %m0 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m0 : memref<f32>) consts [64, 1]
  %h0 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m0 : memref<f32>) outs(%h0 : memref<16xf32>) consts [16]
  %s0 = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%h0 : memref<16xf32>) outs(%s0 : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]

  %m1 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m1 : memref<f32>) consts [64, 1]
  %h1 = rt.view @fp8_state[64] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m1 : memref<f32>) outs(%h1 : memref<16xf32>) consts [16]
  %s1 = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m1 : memref<f32>) outs(%s1 : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]

  %m2 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m2 : memref<f32>) consts [64, 1]
  %h2 = rt.view @fp8_state[6400] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m2 : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  return
}

// -----

// One amax recorded in two states (a tensor read by two FP8 GEMMs): the
// second state's scale, made between the two updates, reads the history
// before both, as before; the first update moves down to the second,
// which goes, and every view of the second history reads the first.
// Alone in its window, the update is not batched.
// CHECK-LABEL: func.func @shared
// CHECK: %[[HA:.*]] = rt.view @fp8_state[0] : memref<16xf32>
// CHECK-NEXT: %[[HB:.*]] = rt.view @fp8_state[0] : memref<16xf32>
// CHECK: rt.kernel "fp8_state_scale" ins(%[[HB]] : memref<16xf32>) {{.*}} consts [16, 5.734400e+04
// CHECK-NEXT: rt.kernel "fp8_state_update" ins(%{{.*}} : memref<f32>) outs(%[[HA]] : memref<16xf32>)
// CHECK-NEXT: return
rt.arena @fp8_state fp8_state size = 128
func.func @shared() {
  %x = rt.alloc : memref<64xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m : memref<f32>) consts [64, 1]
  %ha = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%ha : memref<16xf32>) consts [16]
  %hb = rt.view @fp8_state[64] : memref<16xf32>
  %sb = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%hb : memref<16xf32>) outs(%sb : memref<f32>) consts [16, 5.734400e+04, 0, 0, 9.9999999999999998E-13, 0]
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%hb : memref<16xf32>) consts [16]
  return
}

// -----

// Not shared: the first history is read between the two updates (its
// reader would see it updated while the second is not).
// CHECK-LABEL: func.func @not_shared
// CHECK: rt.kernel "fp8_state_update"
// CHECK: rt.view @fp8_state[64]
// CHECK-NEXT: rt.kernel "fp8_state_update"
rt.arena @fp8_state fp8_state size = 128
func.func @not_shared() {
  %x = rt.alloc : memref<64xf32>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m : memref<f32>) consts [64, 1]
  %ha = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%ha : memref<16xf32>) consts [16]
  %sa = rt.alloc : memref<f32>
  rt.kernel "fp8_state_scale" ins(%ha : memref<16xf32>) outs(%sa : memref<f32>) consts [16, 4.480000e+02, 0, 0, 9.9999999999999998E-13, 0]
  %hb = rt.view @fp8_state[64] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m : memref<f32>) outs(%hb : memref<16xf32>) consts [16]
  return
}

// -----

// A weight's amax recorded in two states that cannot share a history
// (their lengths differ) and could both be batched: it can move to one
// slot only, so both updates stay; the activation's updates are batched.
// CHECK-LABEL: func.func @weight_twice
// CHECK: rt.view @weight_cache[0] : memref<f32>
// CHECK: rt.kernel "fp8_state_update" ins({{.*}}) consts [16]
// CHECK: rt.view @weight_cache[0] : memref<f32>
// CHECK: rt.kernel "fp8_state_update" ins({{.*}}) consts [8]
// CHECK: rt.kernel "fp8_state_update_batch" {{.*}} consts [2, 16, 16, 3]
rt.arena @fp8_state fp8_state size = 384
rt.arena @weight_cache weight_cache size = 256
func.func @weight_twice() {
  %w = rt.view @weight_cache[0] : memref<f32>
  %h2 = rt.view @fp8_state[128] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%w : memref<f32>) outs(%h2 : memref<16xf32>) consts [16]
  %w2 = rt.view @weight_cache[0] : memref<f32>
  %h3 = rt.view @fp8_state[192] : memref<8xf32>
  rt.kernel "fp8_state_update" ins(%w2 : memref<f32>) outs(%h3 : memref<8xf32>) consts [8]
  %x = rt.alloc : memref<64xf32>
  %m0 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m0 : memref<f32>) consts [64, 1]
  %h0 = rt.view @fp8_state[0] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m0 : memref<f32>) outs(%h0 : memref<16xf32>) consts [16]
  %m1 = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%x : memref<64xf32>) outs(%m1 : memref<f32>) consts [64, 1]
  %h1 = rt.view @fp8_state[64] : memref<16xf32>
  rt.kernel "fp8_state_update" ins(%m1 : memref<f32>) outs(%h1 : memref<16xf32>) consts [16]
  return
}
