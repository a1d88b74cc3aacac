// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte"
gpt.param @lm_head : tensor<64x16xf32> tied_to @wte layer "lm_head"
gpt.param @ln.g : tensor<16xbf16> init <ones> layer "ln"

// CHECK-LABEL: func.func @param_ref
// CHECK:         %{{.*}} = gpt.param_ref @wte : tensor<64x16xf32>
// CHECK:         %{{.*}} = gpt.param_ref @lm_head : tensor<64x16xf32>
// CHECK:         %{{.*}} = gpt.param_ref @ln.g : tensor<16xbf16>
func.func @param_ref() -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<16xbf16>) {
  %0 = gpt.param_ref @wte : tensor<64x16xf32>
  %1 = gpt.param_ref @lm_head : tensor<64x16xf32>
  %2 = gpt.param_ref @ln.g : tensor<16xbf16>
  return %0, %1, %2 : tensor<64x16xf32>, tensor<64x16xf32>, tensor<16xbf16>
}

// -----

func.func @missing() -> tensor<64x16xf32> {
  // expected-error @+1 {{refers to @wte, which is not a gpt.param in this module}}
  %0 = gpt.param_ref @wte : tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

fp8.state @s "h.0.x" history = 16 reduction = max recipe = #fp8.recipe<format = e4m3>

func.func @not_a_param() -> tensor<64x16xf32> {
  // expected-error @+1 {{refers to @s, which is not a gpt.param in this module}}
  %0 = gpt.param_ref @s : tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte"

func.func @wrong_shape() -> tensor<16x64xf32> {
  // expected-error @+1 {{reads @wte as 'tensor<16x64xf32>' but the parameter is declared 'tensor<64x16xf32>'}}
  %0 = gpt.param_ref @wte : tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte"

func.func @wrong_element_type() -> tensor<64x16xbf16> {
  // expected-error @+1 {{reads @wte as 'tensor<64x16xbf16>' but the parameter is declared 'tensor<64x16xf32>'}}
  %0 = gpt.param_ref @wte : tensor<64x16xbf16>
  return %0 : tensor<64x16xbf16>
}

// -----

gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte"

// The custom form only parses ranked types; the generic form reaches the
// ODS constraint.
func.func @unranked() -> tensor<*xf32> {
  // expected-error @+1 {{result #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %0 = "gpt.param_ref"() <{param = @wte}> : () -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
