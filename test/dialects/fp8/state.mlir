// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: fp8.state @h.0.mlp.fc.x "h.0.mlp.fc" history = 16 reduction = max recipe = <format = e4m3>{{$}}
// CHECK-NEXT:  fp8.state @h.0.mlp.fc.dy "h.0.mlp.fc" history = 1 reduction = most_recent recipe = <format = e5m2, margin = 1, power_of_two = true> {note = "extra"}{{$}}
fp8.state @h.0.mlp.fc.x "h.0.mlp.fc" history = 16 reduction = max recipe = #fp8.recipe<format = e4m3, eps = 1.0e-12>
fp8.state @h.0.mlp.fc.dy "h.0.mlp.fc" history = 1 reduction = most_recent recipe = <format = e5m2, margin = 1, power_of_two = true> {note = "extra"}

// CHECK-LABEL: func.func @state
// CHECK:         %[[SCALE:.*]] = fp8.state_scale @h.0.mlp.fc.x{{$}}
// CHECK:         %[[AMAX:.*]] = fp8.amax "h.0.mlp.fc" %arg0 : tensor<4x16xf32>
// CHECK:         fp8.state_update @h.0.mlp.fc.x, %[[AMAX]]{{$}}
// CHECK:         return %[[SCALE]]
func.func @state(%x: tensor<4x16xf32>) -> tensor<f32> {
  %scale = fp8.state_scale @h.0.mlp.fc.x
  %amax = fp8.amax "h.0.mlp.fc" %x : tensor<4x16xf32>
  fp8.state_update @h.0.mlp.fc.x, %amax
  return %scale : tensor<f32>
}

// -----

// expected-error @+1 {{state @s needs an amax history of at least 1, got 0}}
fp8.state @s "x" history = 0 reduction = max recipe = <format = e4m3>

// -----

// expected-error @+1 {{state @s needs an amax history of at least 1, got -16}}
fp8.state @s "x" history = -16 reduction = max recipe = <format = e4m3>

// -----

// expected-error @+1 {{needs the name of the layer it scales (e.g. "h.3.mlp.fc"), got an empty string}}
fp8.state @s "" history = 16 reduction = max recipe = <format = e4m3>

// -----

// expected-error @+1 {{recipe margin must be >= 0 (scale is divided by 2^margin), got -2}}
fp8.state @s "x" history = 16 reduction = max recipe = <format = e4m3, margin = -2>

// -----

// expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [max, most_recent]}}
fp8.state @s "x" history = 16 reduction = mean recipe = <format = e4m3>

// -----

func.func @scale_missing() -> tensor<f32> {
  // expected-error @+1 {{refers to @s, which is not an fp8.state in this module}}
  %0 = fp8.state_scale @s
  return %0 : tensor<f32>
}

// -----

gpt.param @s : tensor<4xf32> init <ones> layer "x"

func.func @scale_not_a_state() -> tensor<f32> {
  // expected-error @+1 {{refers to @s, which is not an fp8.state in this module}}
  %0 = fp8.state_scale @s
  return %0 : tensor<f32>
}

// -----

fp8.state @s "x" history = 16 reduction = max recipe = <format = e4m3>

func.func @scale_type() -> tensor<1xf32> {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = "fp8.state_scale"() <{state = @s}> : () -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @update_missing(%amax: tensor<f32>) {
  // expected-error @+1 {{refers to @s, which is not an fp8.state in this module}}
  fp8.state_update @s, %amax
  return
}

// -----

rt.arena @s fp8_state size = 64

func.func @update_not_a_state(%amax: tensor<f32>) {
  // expected-error @+1 {{refers to @s, which is not an fp8.state in this module}}
  fp8.state_update @s, %amax
  return
}

// -----

fp8.state @s "x" history = 16 reduction = max recipe = <format = e4m3>

func.func @update_type(%amax: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be 0D tensor of 32-bit float values, but got 'tensor<4xf32>'}}
  "fp8.state_update"(%amax) <{state = @s}> : (tensor<4xf32>) -> ()
  return
}
