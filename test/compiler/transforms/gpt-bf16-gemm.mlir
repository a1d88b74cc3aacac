// RUN: gpt-opt %s -split-input-file -gpt-bf16-gemm | FileCheck %s
// RUN: gpt-opt %s -split-input-file -gpt-bf16-gemm -rt-bufferize | FileCheck %s --check-prefix=RT

// Both operands are widened bf16 values: the GEMM reads the bf16 values,
// the widenings go, the f32 bias stays as it is.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X:.*]] = gpt.cast "x" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       %[[W:.*]] = gpt.cast "w" %{{.*}} : tensor<32x16xf32> -> tensor<32x16xbf16>
// CHECK-NOT:   gpt.cast
// CHECK:       gpt.matmul "fc" %[[X]], %[[W]] bias %{{.*}} transpose_b : tensor<4x16xbf16>, tensor<32x16xbf16>, tensor<32xf32> -> tensor<4x32xf32>
// The runtime's GEMM gets the bf16 buffers (a_dtype, b_dtype 2) and adds
// the f32 bias in its epilogue (its bias buffer, after the two scales it
// has none for); the result is f32 (c_dtype's default).
// RT-LABEL: func.func @logits
// RT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<4x16xbf16>, memref<32x16xbf16>, memref<0xf32>, memref<0xf32>, memref<32xf32>) outs(%{{.*}} : memref<4x32xf32>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, k = 16 : i64, m = 4 : i64, n = 32 : i64, trans_b = 1 : i64}]{{$}}
// RT-NOT: rt.kernel "bias_add"
func.func @logits() -> (tensor<4x32xf32> {gpt.output = "logits"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %w = gpt.fill "w" 0.5 : tensor<32x16xf32>
  %bias = gpt.fill "bias" 0.25 : tensor<32xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %w16 = gpt.cast "w" %w : tensor<32x16xf32> -> tensor<32x16xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %w32 = gpt.cast "w" %w16 : tensor<32x16xbf16> -> tensor<32x16xf32>
  %y = gpt.matmul "fc" %x32, %w32 bias %bias transpose_b : tensor<4x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// A widening that another op still reads stays for that op; one widened
// value used as both operands is read twice.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X16:.*]] = gpt.cast "x" %{{.*}} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK:       %[[X32:.*]] = gpt.cast "x" %[[X16]]
// CHECK:       gpt.matmul "gram" %[[X16]], %[[X16]] transpose_b : tensor<4x16xbf16>, tensor<4x16xbf16> -> tensor<4x4xf32>
// CHECK:       gpt.gelu "act" %[[X32]]
// RT-LABEL: func.func @logits
// RT: rt.kernel "convert"
// RT: rt.kernel "convert"
// RT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<4x16xbf16>, memref<4x16xbf16>) {{.*}} consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, {{.*}}}]
// RT: rt.kernel "gelu_fwd"
func.func @logits() -> (tensor<4x4xf32> {gpt.output = "logits"}, tensor<4x16xf32> {gpt.output = "act"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %g = gpt.matmul "gram" %x32, %x32 transpose_b : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x4xf32>
  %a = gpt.gelu "act" %x32 : tensor<4x16xf32>
  return %g, %a : tensor<4x4xf32>, tensor<4x16xf32>
}

// -----

// Only one operand is stored in bf16 (the other is f32 from a kernel):
// the GEMM stays f32 and so does its widening.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X32:.*]] = gpt.cast "x" %{{.*}} : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK:       gpt.matmul "mm" %[[X32]], %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// RT-LABEL: func.func @logits
// RT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<4x16xf32>, memref<16x8xf32>) outs(%{{.*}} : memref<4x8xf32>) consts [{k = 16 : i64, m = 4 : i64, n = 8 : i64}]{{$}}
func.func @logits() -> (tensor<4x8xf32> {gpt.output = "logits"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %w = gpt.fill "w" 0.5 : tensor<16x8xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %y = gpt.matmul "mm" %x32, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The weight-gradient GEMMs read activations flattened after widening:
// the reshape moves to the bf16 value (a reshape is an alias either way).
// CHECK-LABEL: func.func @logits
// CHECK:       %[[X16:.*]] = gpt.cast "x" %{{.*}} : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
// CHECK:       %[[G16:.*]] = gpt.cast "g" %{{.*}} : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK-NOT:   gpt.cast
// CHECK:       %[[FLAT:.*]] = gpt.reshape "fc" %[[X16]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK-NOT:   gpt.reshape
// CHECK:       gpt.matmul "fc" %[[FLAT]], %[[G16]] transpose_a : tensor<8x16xbf16>, tensor<8x8xbf16> -> tensor<16x8xf32>
// RT-LABEL: func.func @logits
// RT: rt.reshape %{{.*}} : memref<2x4x16xbf16> -> memref<8x16xbf16>
// RT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<8x16xbf16>, memref<8x8xbf16>) {{.*}} consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, {{.*}}}]
func.func @logits() -> (tensor<16x8xf32> {gpt.output = "logits"}) {
  %x = gpt.fill "x" 1.0 : tensor<2x4x16xf32>
  %g = gpt.fill "g" 0.5 : tensor<8x8xf32>
  %x16 = gpt.cast "x" %x : tensor<2x4x16xf32> -> tensor<2x4x16xbf16>
  %g16 = gpt.cast "g" %g : tensor<8x8xf32> -> tensor<8x8xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<2x4x16xbf16> -> tensor<2x4x16xf32>
  %flat = gpt.reshape "fc" %x32 : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %g32 = gpt.cast "g" %g16 : tensor<8x8xbf16> -> tensor<8x8xf32>
  %dw = gpt.matmul "fc" %flat, %g32 transpose_a : tensor<8x16xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}

// -----

// A bias-free bf16 GEMM whose f32 result is only stored back in bf16 (a
// gradient flowing on) writes bf16 itself; with another reader it does not.
// CHECK-LABEL: func.func @logits
// CHECK:       %[[DX:.*]] = gpt.matmul "dx" %{{.*}}, %{{.*}} : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
// CHECK-NOT:   gpt.cast "dx"
// CHECK:       %[[Y:.*]] = gpt.matmul "y" %{{.*}}, %{{.*}} : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xf32>
// CHECK:       gpt.cast "y" %[[Y]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK:       gpt.gelu "act" %[[Y]]
// RT-LABEL: func.func @logits
// RT: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<4x8xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, k = 16 : i64, m = 4 : i64, n = 8 : i64}]{{$}}
// RT: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<4x8xf32>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, k = 16 : i64, m = 4 : i64, n = 8 : i64}]{{$}}
func.func @logits() -> (tensor<4x8xf32> {gpt.output = "logits"}, tensor<4x8xf32> {gpt.output = "y16"}, tensor<4x8xf32> {gpt.output = "act"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %w = gpt.fill "w" 0.5 : tensor<16x8xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %w16 = gpt.cast "w" %w : tensor<16x8xf32> -> tensor<16x8xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %w32 = gpt.cast "w" %w16 : tensor<16x8xbf16> -> tensor<16x8xf32>
  %dx = gpt.matmul "dx" %x32, %w32 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %dx16 = gpt.cast "dx" %dx : tensor<4x8xf32> -> tensor<4x8xbf16>
  %y = gpt.matmul "y" %x32, %w32 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %y16 = gpt.cast "y" %y : tensor<4x8xf32> -> tensor<4x8xbf16>
  %a = gpt.gelu "act" %y : tensor<4x8xf32>
  %dxw = gpt.cast "dx.out" %dx16 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %yw = gpt.cast "y.out" %y16 : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %dxw, %yw, %a : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// With a bias too (a linear layer's forward GEMM): the f32 bias is added
// in the epilogue, before the one rounding to bf16.
// CHECK-LABEL: func.func @linear
// CHECK:       %[[Y:.*]] = gpt.matmul "fc" %{{.*}}, %{{.*}} bias %{{.*}} transpose_b : tensor<4x16xbf16>, tensor<8x16xbf16>, tensor<8xf32> -> tensor<4x8xbf16>
// CHECK-NOT:   gpt.cast "fc"
// CHECK:       gpt.cast "out" %[[Y]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// RT-LABEL: func.func @linear
// RT: rt.kernel "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<4x16xbf16>, memref<8x16xbf16>, memref<0xf32>, memref<0xf32>, memref<8xf32>) outs(%{{.*}} : memref<4x8xbf16>) consts [{a_dtype = 2 : i64, b_dtype = 2 : i64, c_dtype = 2 : i64, k = 16 : i64, m = 4 : i64, n = 8 : i64, trans_b = 1 : i64}]{{$}}
func.func @linear() -> (tensor<4x8xf32> {gpt.output = "y"}) {
  %x = gpt.fill "x" 1.0 : tensor<4x16xf32>
  %w = gpt.fill "w" 0.5 : tensor<8x16xf32>
  %bias = gpt.fill "bias" 0.25 : tensor<8xf32>
  %x16 = gpt.cast "x" %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %w16 = gpt.cast "w" %w : tensor<8x16xf32> -> tensor<8x16xbf16>
  %x32 = gpt.cast "x" %x16 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %w32 = gpt.cast "w" %w16 : tensor<8x16xbf16> -> tensor<8x16xf32>
  %y = gpt.matmul "fc" %x32, %w32 bias %bias transpose_b : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y16 = gpt.cast "fc" %y : tensor<4x8xf32> -> tensor<4x8xbf16>
  %out = gpt.cast "out" %y16 : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %out : tensor<4x8xf32>
}

// -----

// An FP8 GEMM whose result is only stored in bf16 writes bf16 (cuBLASLt's
// D in bf16; the rowwise kernel rounds its unscaled quotient); one whose
// f32 result another op reads keeps f32.
// CHECK-LABEL: func.func @fp8
// CHECK:       %[[Y:.*]] = fp8.scaled_matmul "fc" %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}}) transpose_b : tensor<16x32xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x16xbf16>
// CHECK-NEXT:  %[[Z:.*]] = fp8.scaled_matmul "fc2" {{.*}} -> tensor<16x16xbf16>
// CHECK-NEXT:  %[[U:.*]] = fp8.scaled_matmul "fc3" {{.*}} -> tensor<16x16xf32>
// CHECK-NEXT:  gpt.cast "fc3" %[[U]] : tensor<16x16xf32> -> tensor<16x16xbf16>
// RT-LABEL: func.func @fp8
// RT: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<16x16xbf16>) consts [{a_dtype = 4 : i64, b_dtype = 4 : i64, c_dtype = 2 : i64, k = 32 : i64, m = 16 : i64, n = 16 : i64, trans_b = 1 : i64}]{{$}}
// RT: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<16x16xbf16>) consts [{a_dtype = 4 : i64, a_scaling = 1 : i64, b_dtype = 4 : i64, b_scaling = 1 : i64, c_dtype = 2 : i64, k = 32 : i64, m = 16 : i64, n = 16 : i64, trans_b = 1 : i64}]{{$}}
// RT: rt.kernel "gemm" {{.*}} outs(%{{.*}} : memref<16x16xf32>) consts [{a_dtype = 4 : i64, b_dtype = 4 : i64, k = 32 : i64, m = 16 : i64, n = 16 : i64, trans_b = 1 : i64}]{{$}}
func.func @fp8(%x: tensor<16x32xf32> {gpt.input = "tokens"}) -> (tensor<16x16xf32> {gpt.output = "y"}, tensor<16x16xf32> {gpt.output = "z"}, tensor<16x16xf32> {gpt.output = "u"}, tensor<16x16xf32> {gpt.output = "g"}) {
  %one = gpt.fill "s" 1.0 : tensor<f32>
  %rows = gpt.fill "s" 1.0 : tensor<16xf32>
  %q = fp8.quantize "fc" %x, %one : tensor<16x32xf32> -> tensor<16x32xf8E4M3FN>
  %y = fp8.scaled_matmul "fc" %q, %q scales(%one, %one) transpose_b : tensor<16x32xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x16xf32>
  %z = fp8.scaled_matmul "fc2" %q, %q scales(%rows, %rows) row_scales(tensor<16xf32>, tensor<16xf32>) transpose_b : tensor<16x32xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x16xf32>
  %u = fp8.scaled_matmul "fc3" %q, %q scales(%one, %one) transpose_b : tensor<16x32xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x16xf32>
  %y16 = gpt.cast "fc" %y : tensor<16x16xf32> -> tensor<16x16xbf16>
  %z16 = gpt.cast "fc2" %z : tensor<16x16xf32> -> tensor<16x16xbf16>
  %u16 = gpt.cast "fc3" %u : tensor<16x16xf32> -> tensor<16x16xbf16>
  %g = gpt.gelu "act" %u : tensor<16x16xf32>
  %yw = gpt.cast "out" %y16 : tensor<16x16xbf16> -> tensor<16x16xf32>
  %zw = gpt.cast "out" %z16 : tensor<16x16xbf16> -> tensor<16x16xf32>
  %uw = gpt.cast "out" %u16 : tensor<16x16xbf16> -> tensor<16x16xf32>
  return %yw, %zw, %uw, %g : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}
