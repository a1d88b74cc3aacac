// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte" real_rows = 60
gpt.param @lm_head.weight : tensor<64x8xf32> tied_to @wte layer "lm_head"
gpt.param @ln.weight : tensor<8xbf16> init <ones> layer "ln"

// A parameter's gradient may be accumulated several times in a step (a
// tied parameter's own use and the lm_head's, both into @wte).
// CHECK-LABEL: func.func @accumulate_grad
// CHECK:         gpt.accumulate_grad @wte, %arg0 : tensor<64x8xf32>
// CHECK:         gpt.accumulate_grad @wte, %arg1 : tensor<64x8xf32>
// CHECK:         gpt.accumulate_grad @ln.weight, %arg2 : tensor<8xbf16>
func.func @accumulate_grad(%dwte: tensor<64x8xf32>, %dlm: tensor<64x8xf32>, %dln: tensor<8xbf16>) {
  gpt.accumulate_grad @wte, %dwte : tensor<64x8xf32>
  gpt.accumulate_grad @wte, %dlm : tensor<64x8xf32>
  gpt.accumulate_grad @ln.weight, %dln : tensor<8xbf16>
  return
}

// -----

// A 0-D parameter.
// CHECK-LABEL: func.func @kept
// CHECK:         gpt.accumulate_grad @b, %arg0 : tensor<f32>
gpt.param @b : tensor<f32> init <zeros> layer "b"
func.func @kept(%g: tensor<f32>) {
  gpt.accumulate_grad @b, %g : tensor<f32>
  return
}

// -----

// A bf16 gradient of an f32 parameter (gpt-bf16-kernels) is widened as it
// is added into the f32 gradient buffer.
// CHECK-LABEL: func.func @bf16_gradient
// CHECK:         gpt.accumulate_grad @w, %arg0 : tensor<4x8xbf16>
gpt.param @w : tensor<4x8xf32> init <zeros> layer "w"
func.func @bf16_gradient(%g: tensor<4x8xbf16>) {
  gpt.accumulate_grad @w, %g : tensor<4x8xbf16>
  return
}

// -----

func.func @missing(%g: tensor<64x8xf32>) {
  // expected-error @+1 {{accumulates into @wte, which is not a gpt.param}}
  gpt.accumulate_grad @wte, %g : tensor<64x8xf32>
  return
}

// -----

fp8.state @s "h.0.x" history = 16 reduction = max recipe = #fp8.recipe<format = e4m3>

func.func @not_a_param(%g: tensor<64x8xf32>) {
  // expected-error @+1 {{accumulates into @s, which is not a gpt.param}}
  gpt.accumulate_grad @s, %g : tensor<64x8xf32>
  return
}

// -----

func.func @a_function(%g: tensor<64x8xf32>) {
  // expected-error @+1 {{accumulates into @a_function, which is not a gpt.param}}
  gpt.accumulate_grad @a_function, %g : tensor<64x8xf32>
  return
}

// -----

gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte"
gpt.param @lm_head.weight : tensor<64x8xf32> tied_to @wte layer "lm_head"

// A tied parameter has no gradient buffer of its own.
func.func @tied(%g: tensor<64x8xf32>) {
  // expected-error @+1 {{accumulates into @lm_head.weight, which is tied to @wte; accumulate into @wte instead}}
  gpt.accumulate_grad @lm_head.weight, %g : tensor<64x8xf32>
  return
}

// -----

gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte"

func.func @wrong_shape(%g: tensor<8x64xf32>) {
  // expected-error @+1 {{gradient type 'tensor<8x64xf32>' differs from the type of @wte 'tensor<64x8xf32>'}}
  gpt.accumulate_grad @wte, %g : tensor<8x64xf32>
  return
}

// -----

gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte"

// Types must be equal, not merely compatible.
func.func @dynamic_grad(%g: tensor<?x8xf32>) {
  // expected-error @+1 {{gradient type 'tensor<?x8xf32>' differs from the type of @wte 'tensor<64x8xf32>'}}
  gpt.accumulate_grad @wte, %g : tensor<?x8xf32>
  return
}

// -----

gpt.param @ln.weight : tensor<8xbf16> init <ones> layer "ln"

func.func @wrong_element_type(%g: tensor<8xf32>) {
  // expected-error @+1 {{gradient type 'tensor<8xf32>' differs from the type of @ln.weight 'tensor<8xbf16>'}}
  gpt.accumulate_grad @ln.weight, %g : tensor<8xf32>
  return
}

// -----

gpt.param @wte : tensor<64x8xf32> init <normal, std = 0.02> layer "wte"

func.func @integer(%g: tensor<64x8xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<64x8xi32>'}}
  gpt.accumulate_grad @wte, %g : tensor<64x8xi32>
  return
}
