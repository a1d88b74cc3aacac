// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The recipe is printed without its #fp8.recipe prefix and without defaults.
// CHECK-LABEL: func.func @scale_from_amax
// CHECK:         %{{.*}} = fp8.scale_from_amax "h.0.mlp.fc" %arg0 recipe <format = e4m3>
// CHECK:         %{{.*}} = fp8.scale_from_amax "h.0.mlp.fc.grad" %arg0 recipe <format = e5m2, margin = 1, power_of_two = true, eps = 1.0e-10>
// CHECK:         %{{.*}} = fp8.scale_from_amax "x" %arg0 recipe <format = e4m3> {note = "extra"}
func.func @scale_from_amax(%amax: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %0 = fp8.scale_from_amax "h.0.mlp.fc" %amax recipe #fp8.recipe<format = e4m3>
  %1 = fp8.scale_from_amax "h.0.mlp.fc.grad" %amax recipe <format = e5m2, margin = 1, power_of_two = true, eps = 1.0e-10>
  %2 = fp8.scale_from_amax "x" %amax recipe <format = e4m3, eps = 1.0e-12> {note = "extra"}
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

func.func @no_layer(%amax: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{needs the name of the layer it scales (e.g. "h.3.mlp.fc"), got an empty string}}
  %0 = fp8.scale_from_amax "" %amax recipe <format = e4m3>
  return %0 : tensor<f32>
}

// -----

func.func @bad_recipe(%amax: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{recipe margin must be >= 0 (scale is divided by 2^margin), got -1}}
  %0 = fp8.scale_from_amax "x" %amax recipe <format = e4m3, margin = -1>
  return %0 : tensor<f32>
}

// -----

// The custom form implies tensor<f32> for amax and result; the generic form
// can give other types.
func.func @amax_type(%amax: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{operand #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = "fp8.scale_from_amax"(%amax) <{layer = "x", recipe = #fp8.recipe<format = e4m3>}> : (tensor<1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @result_type(%amax: tensor<f32>) -> tensor<bf16> {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %0 = "fp8.scale_from_amax"(%amax) <{layer = "x", recipe = #fp8.recipe<format = e4m3>}> : (tensor<f32>) -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

func.func @amax_type_custom(%amax: tensor<bf16>) -> tensor<f32> {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%amax' expects different type than prior uses: 'tensor<f32>' vs 'tensor<bf16>'}}
  %0 = fp8.scale_from_amax "x" %amax recipe <format = e4m3>
  return %0 : tensor<f32>
}

// -----

func.func @not_a_recipe(%amax: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{Invalid attribute `recipe` in property conversion: #gpt.init<ones>}}
  %0 = "fp8.scale_from_amax"(%amax) <{layer = "x", recipe = #gpt.init<ones>}> : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
