// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// The result is always tensor<f32> and is not written.
// CHECK-LABEL: func.func @amax
// CHECK:         %{{.*}} = fp8.amax "h.0.mlp.fc" %arg0 : tensor<?x8x16xf32>
// CHECK:         %{{.*}} = fp8.amax "h.0.mlp.proj" %arg1 : tensor<4x64xbf16>
// CHECK:         %{{.*}} = fp8.amax "x" %arg2 : tensor<f16>
func.func @amax(%x: tensor<?x8x16xf32>, %y: tensor<4x64xbf16>, %z: tensor<f16>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %0 = fp8.amax "h.0.mlp.fc" %x : tensor<?x8x16xf32>
  %1 = fp8.amax "h.0.mlp.proj" %y : tensor<4x64xbf16>
  %2 = fp8.amax "x" %z : tensor<f16>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

func.func @no_layer(%x: tensor<4x16xf32>) -> tensor<f32> {
  // expected-error @+1 {{needs the name of the layer it scales (e.g. "h.3.mlp.fc"), got an empty string}}
  %0 = fp8.amax "" %x : tensor<4x16xf32>
  return %0 : tensor<f32>
}

// -----

func.func @fp8_input(%x: tensor<4x16xf8E4M3FN>) -> tensor<f32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x16xf8E4M3FN>'}}
  %0 = fp8.amax "x" %x : tensor<4x16xf8E4M3FN>
  return %0 : tensor<f32>
}

// -----

func.func @f64_input(%x: tensor<4x16xf64>) -> tensor<f32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x16xf64>'}}
  %0 = fp8.amax "x" %x : tensor<4x16xf64>
  return %0 : tensor<f32>
}

// -----

func.func @result_type(%x: tensor<4x16xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = "fp8.amax"(%x) <{layer = "x"}> : (tensor<4x16xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
