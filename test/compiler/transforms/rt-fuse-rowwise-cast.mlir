// RUN: gpt-opt %s -split-input-file -rt-fuse-rowwise-cast | FileCheck %s

// An activation cast along its rows: amax_rows, row_scales and
// quantize_rows become one amax_quantize_rows where the cast was (the
// cast's rows, cols, format, slot and dtype, then the scales' recipe),
// writing the amaxes, the scales and the codes; the statistics stay; the
// GEMM reads the same scales.
// CHECK-LABEL: func.func @along_rows
// CHECK-NOT: amax_rows
// CHECK-NOT: row_scales
// CHECK: rt.kernel "amax_quantize_rows" ins(%{{.*}} : memref<32x64xbf16>) outs(%[[A:.*]], %[[S:.*]], %[[Q:.*]] : memref<32xf32>, memref<32xf32>, memref<32x64xf8E4M3FN>) consts [32, 64, 0, 3, 2, 4.480000e+02, 0, 1, 9.9999999999999998E-13] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "a", slot = 3 : i64}}
// CHECK-NOT: quantize_rows"
// CHECK: rt.kernel "gemm" ins(%[[Q]], %{{.*}}, %[[S]], {{.*}} consts [{{{.*}}a_scaling = 1 : i64{{.*}}}]
func.func @along_rows() {
  %x = rt.alloc : memref<32x64xbf16>
  %a = rt.alloc : memref<32xf32>
  rt.kernel "amax_rows" ins(%x : memref<32x64xbf16>) outs(%a : memref<32xf32>) consts [32, 64, 0, 2]
  %s = rt.alloc : memref<32xf32>
  rt.kernel "row_scales" ins(%a : memref<32xf32>) outs(%s : memref<32xf32>) consts [32, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
  %q = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_rows" ins(%x, %s : memref<32x64xbf16>, memref<32xf32>) outs(%q : memref<32x64xf8E4M3FN>) consts [32, 64, 0, 0, 3, 2] {rt.fp8_stat = {gemm = "forward", layer = "fc", operand = "a", slot = 3 : i64}}
  %w = rt.alloc : memref<48x64xf8E4M3FN>
  %sw = rt.alloc : memref<48xf32>
  %y = rt.alloc : memref<32x48xbf16>
  rt.kernel "gemm" ins(%q, %w, %s, %sw : memref<32x64xf8E4M3FN>, memref<48x64xf8E4M3FN>, memref<32xf32>, memref<48xf32>) outs(%y : memref<32x48xbf16>) consts [{a_dtype = 4, a_scaling = 1, b_dtype = 4, b_scaling = 1, c_dtype = 2, fast_accum = 1, k = 64, m = 32, n = 48, trans_b = 1}]
  return
}

// -----

// Left as three kernels, each case on its own buffers: a cast along
// columns (grad_weight's operand), x written between the amax and the
// cast, the amaxes read by another kernel before the cast, and scales of
// other amaxes.
// CHECK-LABEL: func.func @apart
// CHECK-NOT: amax_quantize_rows
func.func @apart() {
  %x = rt.alloc : memref<32x64xbf16>
  %a = rt.alloc : memref<64xf32>
  rt.kernel "amax_rows" ins(%x : memref<32x64xbf16>) outs(%a : memref<64xf32>) consts [32, 64, 1, 2]
  %s = rt.alloc : memref<64xf32>
  rt.kernel "row_scales" ins(%a : memref<64xf32>) outs(%s : memref<64xf32>) consts [64, 5.734400e+04, 0, 1, 9.9999999999999998E-13]
  %q = rt.alloc : memref<32x64xf8E5M2>
  rt.kernel "quantize_rows" ins(%x, %s : memref<32x64xbf16>, memref<64xf32>) outs(%q : memref<32x64xf8E5M2>) consts [32, 64, 1, 1, -1, 2]

  %x2 = rt.alloc : memref<32x64xbf16>
  %a2 = rt.alloc : memref<32xf32>
  rt.kernel "amax_rows" ins(%x2 : memref<32x64xbf16>) outs(%a2 : memref<32xf32>) consts [32, 64, 0, 2]
  %x2_f32 = rt.alloc : memref<2048xf32>
  rt.kernel "convert" ins(%x2_f32 : memref<2048xf32>) outs(%x2 : memref<32x64xbf16>) consts [2048, 1, 2]
  %s2 = rt.alloc : memref<32xf32>
  rt.kernel "row_scales" ins(%a2 : memref<32xf32>) outs(%s2 : memref<32xf32>) consts [32, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
  %q2 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_rows" ins(%x2, %s2 : memref<32x64xbf16>, memref<32xf32>) outs(%q2 : memref<32x64xf8E4M3FN>) consts [32, 64, 0, 0, -1, 2]

  %x3 = rt.alloc : memref<32x64xbf16>
  %a3 = rt.alloc : memref<32xf32>
  rt.kernel "amax_rows" ins(%x3 : memref<32x64xbf16>) outs(%a3 : memref<32xf32>) consts [32, 64, 0, 2]
  %s3 = rt.alloc : memref<32xf32>
  rt.kernel "row_scales" ins(%a3 : memref<32xf32>) outs(%s3 : memref<32xf32>) consts [32, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
  %copy = rt.alloc : memref<32xf32>
  rt.kernel "copy_blocks" ins(%a3 : memref<32xf32>) outs(%copy : memref<32xf32>) consts [1, 32, 32, 32, 0, 0, 1]
  %q3 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_rows" ins(%x3, %s3 : memref<32x64xbf16>, memref<32xf32>) outs(%q3 : memref<32x64xf8E4M3FN>) consts [32, 64, 0, 0, -1, 2]

  %x4 = rt.alloc : memref<32x64xbf16>
  %x5 = rt.alloc : memref<32x64xbf16>
  %a4 = rt.alloc : memref<32xf32>
  rt.kernel "amax_rows" ins(%x5 : memref<32x64xbf16>) outs(%a4 : memref<32xf32>) consts [32, 64, 0, 2]
  %s4 = rt.alloc : memref<32xf32>
  rt.kernel "row_scales" ins(%a4 : memref<32xf32>) outs(%s4 : memref<32xf32>) consts [32, 4.480000e+02, 0, 1, 9.9999999999999998E-13]
  %q4 = rt.alloc : memref<32x64xf8E4M3FN>
  rt.kernel "quantize_rows" ins(%x4, %s4 : memref<32x64xbf16>, memref<32xf32>) outs(%q4 : memref<32x64xf8E4M3FN>) consts [32, 64, 0, 0, -1, 2]
  return
}
