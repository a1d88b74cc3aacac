// RUN: gpt-opt %s -split-input-file -rt-fuse-amax | FileCheck %s

// The layernorm backward's dx (the last residual stream's gradient): its
// amax, through a reshape, is taken by layernorm_bwd's epilogue (amax one
// more output, the descriptor dx as rows = elements / last dimension x
// cols = last dimension, out_dtype dx's dtype); the amax's buffer moves up
// to it.
// CHECK-LABEL: func.func @layernorm_bwd
// CHECK: %[[M:.*]] = rt.alloc : memref<f32>
// CHECK-NEXT: rt.kernel "layernorm_bwd" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<4x64x128xbf16>, memref<4x64x128xbf16>, memref<128xf32>, memref<4x64xf32>, memref<4x64xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %[[M]] : memref<4x64x128xbf16>, memref<128xbf16>, memref<128xbf16>, memref<f32>) consts [256, 128, 2, 2, 2, 2, 2, {cols = 128 : i64, out_dtype = 2 : i64, rows = 256 : i64}]{{$}}
// CHECK-NOT: rt.kernel "amax"
// CHECK: rt.kernel "scale_from_amax" ins(%[[M]]
func.func @layernorm_bwd() {
  %dout = rt.alloc : memref<4x64x128xbf16>
  %x = rt.alloc : memref<4x64x128xbf16>
  %w = rt.alloc : memref<128xf32>
  %mean = rt.alloc : memref<4x64xf32>
  %rstd = rt.alloc : memref<4x64xf32>
  %dx = rt.alloc : memref<4x64x128xbf16>
  %dw = rt.alloc : memref<128xbf16>
  %db = rt.alloc : memref<128xbf16>
  rt.kernel "layernorm_bwd" ins(%dout, %x, %w, %mean, %rstd : memref<4x64x128xbf16>, memref<4x64x128xbf16>, memref<128xf32>, memref<4x64xf32>, memref<4x64xf32>) outs(%dx, %dw, %db : memref<4x64x128xbf16>, memref<128xbf16>, memref<128xbf16>) consts [256, 128, 2, 2, 2, 2, 2]
  %flat = rt.reshape %dx : memref<4x64x128xbf16> -> memref<256x128xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%flat : memref<256x128xbf16>) outs(%m : memref<f32>) consts [32768, 2]
  %s = rt.alloc : memref<f32>
  rt.kernel "scale_from_amax" ins(%m : memref<f32>) outs(%s : memref<f32>) consts [5.734400e+04, 0, 0, 9.9999999999999998E-13]
  return
}

// -----

// The layernorm backward fused with its residual add (rt-fuse-add-layernorm)
// where the add had no FP8 epilogue: the amax of its sum, whose shape and
// dtype the epilogue descriptor takes as the other producers' do.
// CHECK-LABEL: func.func @layernorm_bwd_add
// CHECK: rt.kernel "layernorm_bwd_add" ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<256x128xbf16>, memref<128xf32>, memref<128xf32>, memref<f32>) consts [256, 128, 2, 2, 2, 1, 1, 2, 2, {cols = 128 : i64, out_dtype = 2 : i64, rows = 256 : i64}]{{$}}
// CHECK-NOT: rt.kernel "amax"
func.func @layernorm_bwd_add() {
  %dout = rt.alloc : memref<256x128xbf16>
  %x = rt.alloc : memref<256x128xbf16>
  %w = rt.alloc : memref<128xf32>
  %mean = rt.alloc : memref<256xf32>
  %rstd = rt.alloc : memref<256xf32>
  %resid = rt.alloc : memref<256x128xbf16>
  %sum = rt.alloc : memref<256x128xbf16>
  %dw = rt.alloc : memref<128xf32>
  %db = rt.alloc : memref<128xf32>
  rt.kernel "layernorm_bwd_add" ins(%dout, %x, %w, %mean, %rstd, %resid : memref<256x128xbf16>, memref<256x128xbf16>, memref<128xf32>, memref<256xf32>, memref<256xf32>, memref<256x128xbf16>) outs(%sum, %dw, %db : memref<256x128xbf16>, memref<128xf32>, memref<128xf32>) consts [256, 128, 2, 2, 2, 1, 1, 2, 2]
  %m = rt.alloc : memref<f32>
  rt.kernel "amax" ins(%sum : memref<256x128xbf16>) outs(%m : memref<f32>) consts [32768, 2]
  return
}

// -----

// Left apart: an amax of dx after dx is written again, one of part of dx,
// and an amax of dw (not the output whose amax the epilogue takes). (An
// amax reading dx as another dtype no longer gets this far: the rt.kernel
// verifier refuses a dtype constant that contradicts its buffer.)
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: out_dtype =
// CHECK-COUNT-3: rt.kernel "amax"
// CHECK-NOT: out_dtype =
func.func @not_fused() {
  %dout = rt.alloc : memref<4x64x128xbf16>
  %x = rt.alloc : memref<4x64x128xbf16>
  %w = rt.alloc : memref<128xf32>
  %mean = rt.alloc : memref<4x64xf32>
  %rstd = rt.alloc : memref<4x64xf32>
  %dx = rt.alloc : memref<4x64x128xbf16>
  %dw = rt.alloc : memref<128xbf16>
  %db = rt.alloc : memref<128xbf16>
  %m = rt.alloc : memref<f32>
  rt.kernel "layernorm_bwd" ins(%dout, %x, %w, %mean, %rstd : memref<4x64x128xbf16>, memref<4x64x128xbf16>, memref<128xf32>, memref<4x64xf32>, memref<4x64xf32>) outs(%dx, %dw, %db : memref<4x64x128xbf16>, memref<128xbf16>, memref<128xbf16>) consts [256, 128, 2, 2, 2, 2, 2]
  %dx_f32 = rt.alloc : memref<32768xf32>
  rt.kernel "convert" ins(%dx_f32 : memref<32768xf32>) outs(%dx : memref<4x64x128xbf16>) consts [32768, 1, 2]
  rt.kernel "amax" ins(%dx : memref<4x64x128xbf16>) outs(%m : memref<f32>) consts [32768, 2]

  rt.kernel "layernorm_bwd" ins(%dout, %x, %w, %mean, %rstd : memref<4x64x128xbf16>, memref<4x64x128xbf16>, memref<128xf32>, memref<4x64xf32>, memref<4x64xf32>) outs(%dx, %dw, %db : memref<4x64x128xbf16>, memref<128xbf16>, memref<128xbf16>) consts [256, 128, 2, 2, 2, 2, 2]
  rt.kernel "amax" ins(%dx : memref<4x64x128xbf16>) outs(%m : memref<f32>) consts [16384, 2]


  rt.kernel "layernorm_bwd" ins(%dout, %x, %w, %mean, %rstd : memref<4x64x128xbf16>, memref<4x64x128xbf16>, memref<128xf32>, memref<4x64xf32>, memref<4x64xf32>) outs(%dx, %dw, %db : memref<4x64x128xbf16>, memref<128xbf16>, memref<128xbf16>) consts [256, 128, 2, 2, 2, 2, 2]
  rt.kernel "amax" ins(%dw : memref<128xbf16>) outs(%m : memref<f32>) consts [128, 2]
  return
}
