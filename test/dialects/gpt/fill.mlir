// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The seed of the backward (d loss / d loss = 1), and constant tensors of
// any static shape and float type. The value is an f64 printed without type.
// CHECK-LABEL: func.func @fill
// CHECK:         %{{.*}} = gpt.fill "loss" 1.000000e+00 : tensor<f32>
// CHECK:         %{{.*}} = gpt.fill "zeros" 0.000000e+00 : tensor<4x8xf32>
// CHECK:         %{{.*}} = gpt.fill "scale" -2.500000e-01 : tensor<2x3x4xbf16>
// CHECK:         %{{.*}} = gpt.fill "half" 1.500000e+00 : tensor<16xf16>
func.func @fill() -> (tensor<f32>, tensor<4x8xf32>, tensor<2x3x4xbf16>, tensor<16xf16>) {
  %0 = gpt.fill "loss" 1.0 : tensor<f32>
  %1 = gpt.fill "zeros" 0.0 : tensor<4x8xf32>
  %2 = gpt.fill "scale" -0.25 : tensor<2x3x4xbf16>
  %3 = gpt.fill "half" 1.5 : tensor<16xf16>
  return %0, %1, %2, %3 : tensor<f32>, tensor<4x8xf32>, tensor<2x3x4xbf16>, tensor<16xf16>
}

// -----

// No gpt op holds an empty tensor: a dimension of 0 is a model mistake
// (a width of 0), refused where it is parsed (GptTraits.h).
func.func @fill_empty() -> tensor<0x8xf32> {
  // expected-error @+1 {{result 0 has shape [0, 8]: every dimension must be positive; check the model's widths, heads, sequence length and vocabulary}}
  %0 = gpt.fill "empty" 3.0 : tensor<0x8xf32>
  return %0 : tensor<0x8xf32>
}

// -----

// Nor one too large to address: 2^48 bytes is the most a tensor may take.
func.func @fill_huge() -> tensor<65536x65536x16385xf32> {
  // expected-error @+1 {{result 0 has shape [65536, 65536, 16385] of 'f32': more than 2^48 bytes (256 TiB), which no machine holds and gptc does not plan; make the model (or the micro-batch) smaller}}
  %0 = gpt.fill "huge" 3.0 : tensor<65536x65536x16385xf32>
  return %0 : tensor<65536x65536x16385xf32>
}

// -----

func.func @dynamic_shape() -> tensor<?x4xf32> {
  // expected-error @+1 {{needs a static shape, got [?, 4]}}
  %0 = gpt.fill "loss" 1.0 : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @all_dynamic() -> tensor<?xf32> {
  // expected-error @+1 {{needs a static shape, got [?]}}
  %0 = gpt.fill "loss" 0.0 : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @infinite() -> tensor<f32> {
  // expected-error @+1 {{value must be a finite number}}
  %0 = gpt.fill "loss" 0x7FF0000000000000 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @negative_infinite() -> tensor<4xf32> {
  // expected-error @+1 {{value must be a finite number}}
  %0 = gpt.fill "loss" 0xFFF0000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @nan() -> tensor<f32> {
  // expected-error @+1 {{value must be a finite number}}
  %0 = gpt.fill "loss" 0x7FF8000000000000 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @no_layer() -> tensor<f32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.fill "" 1.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @integer() -> tensor<4xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = gpt.fill "loss" 1.0 : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// The custom form implies f64; the generic form can give another float type.
func.func @f32_value() -> tensor<f32> {
  // expected-error @+1 {{attribute 'value' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "gpt.fill"() <{layer = "loss", value = 1.0 : f32}> : () -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @no_value() -> tensor<f32> {
  // expected-error @+1 {{requires attribute 'value'}}
  %0 = "gpt.fill"() <{layer = "loss"}> : () -> tensor<f32>
  return %0 : tensor<f32>
}
