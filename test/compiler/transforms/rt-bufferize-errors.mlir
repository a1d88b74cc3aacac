// RUN: gpt-opt %s -split-input-file -rt-bufferize -verify-diagnostics

// Without gpt-specialize there is nothing to size buffers with.
gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @train_step(%x: tensor<?x4xf32> {gpt.input = "tokens"}) -> tensor<?x4xf32> {
  // expected-error @+1 {{has a dynamic shape 'tensor<?x4xf32>'; run gpt-specialize{micro-batch=B} before rt-bufferize}}
  %0 = gpt.gelu "act" %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// The runtime kernels take f32 (bf16 arrives with the precision passes),
// but for those with a dtype per operand (gpt.mul's has none).
gpt.param @w : tensor<4xf32> init <zeros> layer "w"
func.func @train_step(%x: tensor<2x4xbf16> {gpt.input = "tokens"}) -> tensor<2x4xbf16> {
  // expected-error @+1 {{has element type 'bf16'; the runtime kernels take f32 tensors and i32 ids}}
  %0 = gpt.mul "act" %x by 2.0 : tensor<2x4xbf16>
  return %0 : tensor<2x4xbf16>
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
// expected-error @+1 {{'func.func' op result #0 has no gpt.output name; the runtime reads outputs by name (loss, logits)}}
func.func @train_step(%x: tensor<2x4xf32> {gpt.input = "tokens"}) -> tensor<2x4xf32> {
  %0 = gpt.gelu "act" %x : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

gpt.param @w : tensor<4xf32> init <zeros> layer "w"
// expected-error @+1 {{'func.func' op argument #0 has no gpt.input name; the runtime fills inputs by name (tokens, targets)}}
func.func @train_step(%x: tensor<2x4xf32>) -> (tensor<2x4xf32> {gpt.output = "y"}) {
  %0 = gpt.gelu "act" %x : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Only producers that lower to one kernel have fused variants.
gpt.param @w : tensor<48x16xf32> init <normal, std = 0.02> layer "fc"
gpt.param @b : tensor<48xf32> init <zeros> layer "fc"
func.func @eval_step(%x: tensor<32x16xf32> {gpt.input = "tokens"}) -> (tensor<f32> {gpt.output = "amax"}) {
  %w = gpt.param_ref @w : tensor<48x16xf32>
  %b = gpt.param_ref @b : tensor<48xf32>
  // expected-error @+1 {{fuses a gpt.matmul that lowers to 2 kernels; only single-kernel producers have fused variants (fp8-fuse-amax picks those)}}
  %y, %a = fp8.fused "fc" {
    %0 = gpt.matmul "fc" %x, %w bias %b transpose_b : tensor<32x16xf32>, tensor<48x16xf32>, tensor<48xf32> -> tensor<32x48xf32>
    fp8.yield %0 : tensor<32x48xf32>
  } : tensor<32x48xf32>, tensor<f32>
  return %a : tensor<f32>
}

// -----

// The runtime adds an f32 bias in the GEMM's epilogue.
func.func @logits() -> (tensor<4x8xf32> {gpt.output = "logits"}) {
  %a = gpt.fill "a" 1.0 : tensor<4x16xf32>
  %b = gpt.fill "b" 1.0 : tensor<16x8xf32>
  %bias32 = gpt.fill "bias" 1.0 : tensor<8xf32>
  %bias = gpt.cast "bias" %bias32 : tensor<8xf32> -> tensor<8xbf16>
  %a16 = gpt.cast "a" %a : tensor<4x16xf32> -> tensor<4x16xbf16>
  %b16 = gpt.cast "b" %b : tensor<16x8xf32> -> tensor<16x8xbf16>
  // expected-error @+1 {{has a bias of type 'tensor<8xbf16>'; the runtime adds an f32 bias (in the GEMM's f32 epilogue): keep the bias f32}}
  %y = gpt.matmul "mm" %a16, %b16 bias %bias : tensor<4x16xbf16>, tensor<16x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  %y32 = gpt.cast "mm" %y : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %y32 : tensor<4x8xf32>
}

// -----

// A GEMM output's amax comes from fp8.fused (the epilogue) or fp8.amax;
// the plain op's second result has no kernel.
func.func @logits(%x: tensor<16x32xf32> {gpt.input = "tokens"}) -> (tensor<16x16xf32> {gpt.output = "y"}, tensor<f32> {gpt.output = "amax"}) {
  %one = gpt.fill "s" 1.0 : tensor<f32>
  %q = fp8.quantize "fc" %x, %one : tensor<16x32xf32> -> tensor<16x32xf8E4M3FN>
  // expected-error @+1 {{returns the amax of its output; the runtime computes it in the GEMM's epilogue only through fp8.fused}}
  %y, %amax = fp8.scaled_matmul "fc" %q, %q scales(%one, %one) transpose_b : tensor<16x32xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x16xf32>, tensor<f32>
  return %y, %amax : tensor<16x16xf32>, tensor<f32>
}
