// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// A Linear layer: weight stored [out, in], used with transpose_b, and a bias.
// CHECK-LABEL: func.func @linear
// CHECK:         %{{.*}} = gpt.matmul "h.0.attn.qkv" %arg0, %arg1 bias %arg2 transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32>, tensor<48xf32> -> tensor<?x8x48xf32>
func.func @linear(%x: tensor<?x8x16xf32>, %w: tensor<48x16xf32>, %b: tensor<48xf32>) -> tensor<?x8x48xf32> {
  %0 = gpt.matmul "h.0.attn.qkv" %x, %w bias %b transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32>, tensor<48xf32> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

// No bias, no transposes: nothing optional is printed.
// CHECK-LABEL: func.func @plain
// CHECK:         %{{.*}} = gpt.matmul "mm" %arg0, %arg1 : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
func.func @plain(%a: tensor<4x16xf32>, %b: tensor<16x32xf32>) -> tensor<4x32xf32> {
  %0 = gpt.matmul "mm" %a, %b : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

// Batched: b has a's rank and batch dimensions (attention scores, values).
// CHECK-LABEL: func.func @batched
// CHECK:         %{{.*}} = gpt.matmul "attn.scores" %arg0, %arg0 transpose_b : tensor<?x4x8x4xf32>, tensor<?x4x8x4xf32> -> tensor<?x4x8x8xf32>
// CHECK:         %{{.*}} = gpt.matmul "attn.grad" %arg0, %arg1 transpose_a : tensor<?x4x8x4xf32>, tensor<?x4x8x4xf32> -> tensor<?x4x4x4xf32>
func.func @batched(%q: tensor<?x4x8x4xf32>, %k: tensor<?x4x8x4xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>) {
  %0 = gpt.matmul "attn.scores" %q, %q transpose_b : tensor<?x4x8x4xf32>, tensor<?x4x8x4xf32> -> tensor<?x4x8x8xf32>
  %1 = gpt.matmul "attn.grad" %q, %k transpose_a : tensor<?x4x8x4xf32>, tensor<?x4x8x4xf32> -> tensor<?x4x4x4xf32>
  return %0, %1 : tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @both_transposed
// CHECK:         %{{.*}} = gpt.matmul "mm" %arg0, %arg1 transpose_a transpose_b : tensor<16x8xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
func.func @both_transposed(%a: tensor<16x8xf32>, %b: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %0 = gpt.matmul "mm" %a, %b transpose_a transpose_b : tensor<16x8xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// Dynamic sizes are compatible with static ones; bf16 throughout.
// CHECK-LABEL: func.func @dynamic
// CHECK:         %{{.*}} = gpt.matmul "mm" %arg0, %arg1 bias %arg2 : tensor<?x?xbf16>, tensor<16x?xbf16>, tensor<?xbf16> -> tensor<8x32xbf16>
func.func @dynamic(%a: tensor<?x?xbf16>, %b: tensor<16x?xbf16>, %bias: tensor<?xbf16>) -> tensor<8x32xbf16> {
  %0 = gpt.matmul "mm" %a, %b bias %bias : tensor<?x?xbf16>, tensor<16x?xbf16>, tensor<?xbf16> -> tensor<8x32xbf16>
  return %0 : tensor<8x32xbf16>
}

// -----

// The two GEMMs of a Linear layer's backward, as gpt-autodiff makes them:
// role is printed only when it is not forward (the default), after
// everything else optional.
// CHECK-LABEL: func.func @roles
// CHECK:         %{{.*}} = gpt.matmul "fc" %arg0, %arg1 transpose_b : tensor<?x4x8xf32>, tensor<24x8xf32> -> tensor<?x4x24xf32>
// CHECK:         %{{.*}} = gpt.matmul "fc" %arg2, %arg1 role = grad_input : tensor<?x4x24xf32>, tensor<24x8xf32> -> tensor<?x4x8xf32>
// CHECK:         %{{.*}} = gpt.matmul "fc" %arg3, %arg4 transpose_a role = grad_weight : tensor<?x24xf32>, tensor<?x8xf32> -> tensor<24x8xf32>
// CHECK:         %{{.*}} = gpt.matmul "mm" %arg2, %arg5 bias %arg6 transpose_a transpose_b role = grad_input : tensor<?x4x24xf32>, tensor<24x4xf32>, tensor<24xf32> -> tensor<?x24x24xf32>
func.func @roles(%x: tensor<?x4x8xf32>, %w: tensor<24x8xf32>, %dy: tensor<?x4x24xf32>, %dy2: tensor<?x24xf32>, %x2: tensor<?x8xf32>, %w4: tensor<24x4xf32>, %b: tensor<24xf32>) -> (tensor<?x4x24xf32>, tensor<?x4x8xf32>, tensor<24x8xf32>, tensor<?x24x24xf32>) {
  %0 = gpt.matmul "fc" %x, %w transpose_b role = forward : tensor<?x4x8xf32>, tensor<24x8xf32> -> tensor<?x4x24xf32>
  %1 = gpt.matmul "fc" %dy, %w role = grad_input : tensor<?x4x24xf32>, tensor<24x8xf32> -> tensor<?x4x8xf32>
  %2 = gpt.matmul "fc" %dy2, %x2 transpose_a role = grad_weight : tensor<?x24xf32>, tensor<?x8xf32> -> tensor<24x8xf32>
  %3 = gpt.matmul "mm" %dy, %w4 bias %b transpose_a transpose_b role = grad_input : tensor<?x4x24xf32>, tensor<24x4xf32>, tensor<24xf32> -> tensor<?x24x24xf32>
  return %0, %1, %2, %3 : tensor<?x4x24xf32>, tensor<?x4x8xf32>, tensor<24x8xf32>, tensor<?x24x24xf32>
}

// -----

// In the attribute dictionary, too; forward is still left out.
// CHECK-LABEL: func.func @role_in_dict
// CHECK:         %{{.*}} = gpt.matmul "mm" %arg0, %arg1 role = grad_weight : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
// CHECK:         %{{.*}} = gpt.matmul "mm" %arg0, %arg1 : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
func.func @role_in_dict(%a: tensor<4x16xf32>, %b: tensor<16x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %0 = "gpt.matmul"(%a, %b) <{layer = "mm", role = 2 : i32}> : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %1 = "gpt.matmul"(%a, %b) <{layer = "mm", role = 0 : i32}> : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  return %0, %1 : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

func.func @a_1d(%a: tensor<16xf32>, %b: tensor<16x32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{a must have at least 2 dimensions, got [16]}}
  %0 = gpt.matmul "mm" %a, %b : tensor<16xf32>, tensor<16x32xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @b_1d(%a: tensor<?x8x16xf32>, %b: tensor<16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{b must be 2-D (a weight) or have a's rank 3, got [16]}}
  %0 = gpt.matmul "mm" %a, %b : tensor<?x8x16xf32>, tensor<16xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @b_rank(%a: tensor<?x8x16xf32>, %b: tensor<2x2x16x32xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{b must be 2-D (a weight) or have a's rank 3, got [2, 2, 16, 32]}}
  %0 = gpt.matmul "mm" %a, %b : tensor<?x8x16xf32>, tensor<2x2x16x32xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @contraction(%a: tensor<?x8x16xf32>, %w: tensor<48x32xf32>) -> tensor<?x8x48xf32> {
  // expected-error @+1 {{contraction sizes differ: a [?, 8, 16] contracts over 16 but b [48, 32] (transposed) over 32}}
  %0 = gpt.matmul "mm" %a, %w transpose_b : tensor<?x8x16xf32>, tensor<48x32xf32> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

// Without transpose_b, a [out, in] weight contracts over the wrong dimension.
func.func @missing_transpose(%a: tensor<?x8x16xf32>, %w: tensor<48x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{contraction sizes differ: a [?, 8, 16] contracts over 16 but b [48, 16] over 48}}
  %0 = gpt.matmul "mm" %a, %w : tensor<?x8x16xf32>, tensor<48x16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @contraction_transpose_a(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{contraction sizes differ: a [8, 16] (transposed) contracts over 8 but b [16, 32] over 16}}
  %0 = gpt.matmul "mm" %a, %b transpose_a : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

func.func @batch_dims(%a: tensor<2x8x16xf32>, %b: tensor<3x16x8xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{batch dimensions of a [2, 8, 16] and b [3, 16, 8] differ}}
  %0 = gpt.matmul "mm" %a, %b : tensor<2x8x16xf32>, tensor<3x16x8xf32> -> tensor<2x8x8xf32>
  return %0 : tensor<2x8x8xf32>
}

// -----

func.func @result_shape(%a: tensor<?x8x16xf32>, %w: tensor<48x16xf32>) -> tensor<?x8x32xf32> {
  // expected-error @+1 {{result shape [?, 8, 32] does not match the product's [?, 8, 48]}}
  %0 = gpt.matmul "mm" %a, %w transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32> -> tensor<?x8x32xf32>
  return %0 : tensor<?x8x32xf32>
}

// -----

func.func @result_rank(%a: tensor<?x8x16xf32>, %w: tensor<48x16xf32>) -> tensor<?x48xf32> {
  // expected-error @+1 {{result shape [?, 48] does not match the product's [?, 8, 48]}}
  %0 = gpt.matmul "mm" %a, %w transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32> -> tensor<?x48xf32>
  return %0 : tensor<?x48xf32>
}

// -----

func.func @bias_width(%a: tensor<?x8x16xf32>, %w: tensor<48x16xf32>, %b: tensor<16xf32>) -> tensor<?x8x48xf32> {
  // expected-error @+1 {{bias must be 1-D of the output width [48], got [16]}}
  %0 = gpt.matmul "mm" %a, %w bias %b transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32>, tensor<16xf32> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

func.func @bias_rank(%a: tensor<?x8x16xf32>, %w: tensor<48x16xf32>, %b: tensor<8x48xf32>) -> tensor<?x8x48xf32> {
  // expected-error @+1 {{bias must be 1-D of the output width [48], got [8, 48]}}
  %0 = gpt.matmul "mm" %a, %w bias %b transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32>, tensor<8x48xf32> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

func.func @b_element_type(%a: tensor<?x8x16xf32>, %w: tensor<48x16xbf16>) -> tensor<?x8x48xf32> {
  // expected-error @+1 {{b element type 'bf16' differs from 'f32'}}
  %0 = gpt.matmul "mm" %a, %w transpose_b : tensor<?x8x16xf32>, tensor<48x16xbf16> -> tensor<?x8x48xf32>
  return %0 : tensor<?x8x48xf32>
}

// -----

func.func @result_element_type(%a: tensor<?x8x16xf32>, %w: tensor<48x16xf32>) -> tensor<?x8x48xf16> {
  // expected-error @+1 {{result element type 'f16' differs from 'f32'}}
  %0 = gpt.matmul "mm" %a, %w transpose_b : tensor<?x8x16xf32>, tensor<48x16xf32> -> tensor<?x8x48xf16>
  return %0 : tensor<?x8x48xf16>
}

// -----

func.func @no_layer(%a: tensor<4x16xf32>, %b: tensor<16x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{needs the name of the layer it belongs to}}
  %0 = gpt.matmul "" %a, %b : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

func.func @integer_operands(%a: tensor<4x16xi8>, %b: tensor<16x32xi8>) -> tensor<4x32xi8> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<4x16xi8>'}}
  %0 = gpt.matmul "mm" %a, %b : tensor<4x16xi8>, tensor<16x32xi8> -> tensor<4x32xi8>
  return %0 : tensor<4x32xi8>
}

// -----

// The shape checks hold for the backward GEMMs as well.
func.func @grad_weight_contraction(%dy: tensor<?x24xf32>, %x: tensor<?x16xf32>) -> tensor<24x8xf32> {
  // expected-error @+1 {{result shape [24, 8] does not match the product's [24, 16]}}
  %0 = gpt.matmul "fc" %dy, %x transpose_a role = grad_weight : tensor<?x24xf32>, tensor<?x16xf32> -> tensor<24x8xf32>
  return %0 : tensor<24x8xf32>
}

// -----

func.func @unknown_role(%a: tensor<4x16xf32>, %b: tensor<16x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'role' [forward, grad_input, grad_weight]}}
  %0 = gpt.matmul "mm" %a, %b role = backward : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

// Only the generic form can spell a role by number.
func.func @role_out_of_range(%a: tensor<4x16xf32>, %b: tensor<16x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{Invalid attribute `role` in property conversion: 3 : i32}}
  %0 = "gpt.matmul"(%a, %b) <{layer = "mm", role = 3 : i32}> : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

// bf16 operands (gpt-bf16-gemm) accumulate into an f32 result.
// CHECK-LABEL: func.func @bf16_operands
// CHECK:         gpt.matmul "mm" %arg0, %arg1 : tensor<4x16xbf16>, tensor<16x32xbf16> -> tensor<4x32xf32>
func.func @bf16_operands(%a: tensor<4x16xbf16>, %b: tensor<16x32xbf16>) -> tensor<4x32xf32> {
  %0 = gpt.matmul "mm" %a, %b : tensor<4x16xbf16>, tensor<16x32xbf16> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
