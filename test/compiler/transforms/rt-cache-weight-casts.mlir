// RUN: gpt-opt %s -split-input-file -rt-cache-weight-casts -verify-diagnostics | FileCheck %s

// A bf16 copy and a tensorwise FP8 cast of weights move into cast_weights;
// the amax feeding only its scale stays scratch there (an rt.alloc), the
// copy, scale and codes persist in the weight_cache arena. eval_step's
// identical copy, amax and scale read the cache; its cast without a
// statistics slot (not the same kernel) stays. Two identical copies in
// train_step are made once.
// CHECK-LABEL: rt.arena @params params
// CHECK: rt.arena @weight_cache weight_cache size = 768
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: rt.kernel "convert"
// CHECK: %[[W16:.*]] = rt.view @weight_cache[0] : memref<8x16xbf16>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[W16]] :
// CHECK: %[[W16B:.*]] = rt.view @weight_cache[0] : memref<8x16xbf16>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[W16B]] :
// CHECK-NOT: rt.kernel "amax"
// CHECK: %[[SCALE:.*]] = rt.view @weight_cache[256] : memref<f32>
// CHECK: %[[CODES:.*]] = rt.view @weight_cache[512] : memref<16x8xf8E4M3FN>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[CODES]], %{{.*}}, %[[SCALE]] :
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: rt.kernel "convert"
// CHECK: %[[EW16:.*]] = rt.view @weight_cache[0] : memref<8x16xbf16>
// CHECK: rt.kernel "gemm" ins(%{{.*}}, %[[EW16]] :
// CHECK-NOT: rt.kernel "amax"
// CHECK-NOT: rt.kernel "scale_from_amax"
// CHECK: %[[ESCALE:.*]] = rt.view @weight_cache[256] : memref<f32>
// CHECK: rt.kernel "quantize_fp8" ins(%{{.*}}, %[[ESCALE]] : memref<16x8xf32>, memref<f32>) outs(%{{.*}} : memref<16x8xf8E4M3FN>) consts [128, 0, -1, 1]
// CHECK-LABEL: func.func @cast_weights
// CHECK-NEXT: %[[C16:.*]] = rt.view @weight_cache[0] : memref<8x16xbf16>
// CHECK-NEXT: %[[P:.*]] = rt.view @params[0] : memref<8x16xf32>
// CHECK-NEXT: rt.kernel "convert" ins(%[[P]] : memref<8x16xf32>) outs(%[[C16]] : memref<8x16xbf16>) consts [128, 1, 2]
// CHECK-NEXT: %[[AMAX:.*]] = rt.alloc : memref<f32>
// CHECK-NEXT: %[[Q:.*]] = rt.view @params[512] : memref<16x8xf32>
// CHECK-NEXT: rt.kernel "amax" ins(%[[Q]] : memref<16x8xf32>) outs(%[[AMAX]] : memref<f32>)
// CHECK-NEXT: %[[CS:.*]] = rt.view @weight_cache[256] : memref<f32>
// CHECK-NEXT: rt.kernel "scale_from_amax" ins(%[[AMAX]] : memref<f32>) outs(%[[CS]] : memref<f32>)
// CHECK-NEXT: %[[CC:.*]] = rt.view @weight_cache[512] : memref<16x8xf8E4M3FN>
// CHECK-NEXT: rt.kernel "quantize_fp8" ins(%[[Q]], %[[CS]] : memref<16x8xf32>, memref<f32>) outs(%[[CC]] : memref<16x8xf8E4M3FN>) consts [128, 0, 0, 1] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "b", slot = 0 : i64}}
// CHECK-NEXT: return
rt.arena @params params size = 1024
rt.arena @activations activations size = 0
func.func @train_step() {
  %x = rt.alloc : memref<4x16xbf16>
  %p = rt.view @params[0] : memref<8x16xf32>
  %w = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%w : memref<8x16xbf16>) consts [128, 1, 2]
  %y = rt.alloc : memref<4x8xbf16>
  rt.kernel "gemm" ins(%x, %w : memref<4x16xbf16>, memref<8x16xbf16>) outs(%y : memref<4x8xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 4, n = 8, trans_b = 1}]
  %w2 = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%w2 : memref<8x16xbf16>) consts [128, 1, 2]
  %y2 = rt.alloc : memref<4x8xbf16>
  rt.kernel "gemm" ins(%x, %w2 : memref<4x16xbf16>, memref<8x16xbf16>) outs(%y2 : memref<4x8xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 4, n = 8, trans_b = 1}]
  %q = rt.view @params[512] : memref<16x8xf32>
  %amax = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%q : memref<16x8xf32>) outs(%amax : memref<f32>) consts [128, 1]
  %scale = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%amax : memref<f32>) outs(%scale : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %codes = rt.alloc : memref<16x8xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%q, %scale : memref<16x8xf32>, memref<f32>) outs(%codes : memref<16x8xf8E4M3FN>) consts [128, 0, 0, 1] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "b", slot = 0 : i64}}
  %a = rt.alloc : memref<4x8xf8E4M3FN>
  %sa = rt.alloc : memref<f32>
  %z = rt.alloc : memref<4x16xbf16>
  rt.kernel "gemm" ins(%a, %codes, %sa, %scale : memref<4x8xf8E4M3FN>, memref<16x8xf8E4M3FN>, memref<f32>, memref<f32>) outs(%z : memref<4x16xbf16>) consts [{a_dtype = 4, b_dtype = 4, c_dtype = 2, fast_accum = 1, k = 8, m = 4, n = 16, trans_b = 1}]
  return
}
func.func @eval_step() {
  %x = rt.alloc : memref<4x16xbf16>
  %p = rt.view @params[0] : memref<8x16xf32>
  %w = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%w : memref<8x16xbf16>) consts [128, 1, 2]
  %y = rt.alloc : memref<4x8xbf16>
  rt.kernel "gemm" ins(%x, %w : memref<4x16xbf16>, memref<8x16xbf16>) outs(%y : memref<4x8xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 4, n = 8, trans_b = 1}]
  %q = rt.view @params[512] : memref<16x8xf32>
  %amax = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%q : memref<16x8xf32>) outs(%amax : memref<f32>) consts [128, 1]
  %scale = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%amax : memref<f32>) outs(%scale : memref<f32>) consts [4.480000e+02, 0, 0, 9.9999999999999998E-13]
  %codes = rt.alloc : memref<16x8xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%q, %scale : memref<16x8xf32>, memref<f32>) outs(%codes : memref<16x8xf8E4M3FN>) consts [128, 0, -1, 1]
  return
}

// -----

// Left in train_step: a cast whose scale is delayed-scaling state (train_step
// updates it), a copy of an activation, a copy bound as an entry output, a
// copy written again after the cast, and a copy read before its cast. No cast
// moves: no cast_weights, no weight_cache.
// CHECK-LABEL: rt.arena @params params
// CHECK-NOT: weight_cache
// CHECK-LABEL: func.func @train_step
// CHECK: rt.kernel "quantize_fp8"
// CHECK-COUNT-5: rt.kernel "convert"
// CHECK-NOT: func.func @cast_weights
rt.arena @params params size = 1024
rt.arena @fp8_state fp8_state size = 64
func.func @train_step() {
  %p = rt.view @params[0] : memref<8x16xf32>
  %state = rt.view @fp8_state[0] : memref<f32>
  %codes = rt.alloc : memref<8x16xf8E4M3FN>
  rt.kernel "quantize_fp8" ins(%p, %state : memref<8x16xf32>, memref<f32>) outs(%codes : memref<8x16xf8E4M3FN>) consts [128, 0, -1, 1]
  %x = rt.alloc : memref<8x16xf32>
  %x16 = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%x : memref<8x16xf32>) outs(%x16 : memref<8x16xbf16>) consts [128, 1, 2]
  %bound = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%bound : memref<8x16xbf16>) consts [128, 1, 2]
  rt.bind output "copy", %bound : memref<8x16xbf16>
  %again = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%again : memref<8x16xbf16>) consts [128, 1, 2]
  %flat = rt.reshape %again : memref<8x16xbf16> -> memref<128xbf16>
  %flat_f32 = rt.alloc : memref<128xf32>
  rt.kernel "convert" ins(%flat_f32 : memref<128xf32>) outs(%flat : memref<128xbf16>) consts [128, 1, 2]
  %early = rt.alloc : memref<8x16xbf16>
  %sink = rt.alloc : memref<8x16xf32>
  rt.kernel "convert" ins(%early : memref<8x16xbf16>) outs(%sink : memref<8x16xf32>) consts [128, 2, 1]
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%early : memref<8x16xbf16>) consts [128, 1, 2]
  return
}

// -----

// eval_step's copy is the same kernel but writes a buffer of another shape
// (through a reshape): no view of the cache can stand for it, so it stays.
// CHECK-LABEL: func.func @eval_step
// CHECK: rt.kernel "convert"
// CHECK: rt.kernel "gemm"
// CHECK-LABEL: func.func @cast_weights
// CHECK: rt.kernel "convert"
rt.arena @params params size = 1024
func.func @train_step() {
  %x = rt.alloc : memref<4x16xbf16>
  %p = rt.view @params[0] : memref<8x16xf32>
  %w = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%w : memref<8x16xbf16>) consts [128, 1, 2]
  %y = rt.alloc : memref<4x8xbf16>
  rt.kernel "gemm" ins(%x, %w : memref<4x16xbf16>, memref<8x16xbf16>) outs(%y : memref<4x8xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 4, n = 8, trans_b = 1}]
  return
}
func.func @eval_step() {
  %x = rt.alloc : memref<4x16xbf16>
  %p = rt.view @params[0] : memref<8x16xf32>
  %flat = rt.alloc : memref<128xbf16>
  %w = rt.reshape %flat : memref<128xbf16> -> memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%w : memref<8x16xbf16>) consts [128, 1, 2]
  %y = rt.alloc : memref<4x8xbf16>
  rt.kernel "gemm" ins(%x, %w : memref<4x16xbf16>, memref<8x16xbf16>) outs(%y : memref<4x8xbf16>) consts [{a_dtype = 2, b_dtype = 2, c_dtype = 2, k = 16, m = 4, n = 8, trans_b = 1}]
  return
}

// -----

// An entry that writes the parameters keeps its casts.
// CHECK-LABEL: func.func @train_step
// CHECK: rt.kernel "convert"
// CHECK-NOT: func.func @cast_weights
rt.arena @params params size = 1024
func.func @train_step() {
  %p = rt.view @params[0] : memref<8x16xf32>
  %w = rt.alloc : memref<8x16xbf16>
  rt.kernel "convert" ins(%p : memref<8x16xf32>) outs(%w : memref<8x16xbf16>) consts [128, 1, 2]
  %q = rt.view @params[512] : memref<128xf32>
  rt.kernel "fill" outs(%q : memref<128xf32>) consts [128, 0.0]
  %y = rt.alloc : memref<8x16xf32>
  rt.kernel "convert" ins(%w : memref<8x16xbf16>) outs(%y : memref<8x16xf32>) consts [128, 2, 1]
  return
}

// -----

// expected-error @+1 {{already has @cast_weights or @weight_cache; run rt-cache-weight-casts once}}
module {
  func.func @train_step() {
    return
  }
  func.func @cast_weights() {
    return
  }
}
