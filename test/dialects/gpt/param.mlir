// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte" real_rows = 50{{$}}
// CHECK-NEXT:  gpt.param @lm_head : tensor<64x16xf32> tied_to @wte layer "lm_head"{{$}}
// CHECK-NEXT:  gpt.param @ln.b : tensor<16xbf16> init <zeros> layer "ln"{{$}}
// CHECK-NEXT:  gpt.param @ln.g : tensor<16xf32> init <ones> layer "ln" real_rows = 16{{$}}
// CHECK-NEXT:  gpt.param @scalar : tensor<f32> init <normal, std = 1.0> layer "s" {note = "extra"}{{$}}
gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte" real_rows = 50
gpt.param @lm_head : tensor<64x16xf32> tied_to @wte layer "lm_head"
gpt.param @ln.b : tensor<16xbf16> init #gpt.init<zeros> layer "ln"
gpt.param @ln.g : tensor<16xf32> init <ones> layer "ln" {real_rows = 16 : i64}
gpt.param @scalar : tensor<f32> init <normal, std = 1.0> layer "s" {note = "extra"}

// -----

// A parameter may be tied to one declared after it.
// CHECK-LABEL: gpt.param @head : tensor<32x8xf32> tied_to @emb layer "head"{{$}}
// CHECK-NEXT:  gpt.param @emb : tensor<32x8xf32> init <normal, std = 0.02> layer "emb"{{$}}
gpt.param @head : tensor<32x8xf32> tied_to @emb layer "head"
gpt.param @emb : tensor<32x8xf32> init <normal, std = 0.02> layer "emb"

// -----

// expected-error @+1 {{parameter @w needs a static shape, got [?, 16]}}
gpt.param @w : tensor<?x16xf32> init <zeros> layer "w"

// -----

// A width of 0, and a table too large to address.
// expected-error @+1 {{parameter @w has shape [0, 16]: every dimension must be positive and its f32 values at most 2^48 bytes; check the model's widths and vocabulary}}
gpt.param @w : tensor<0x16xf32> init <zeros> layer "w"

// -----

// expected-error @+1 {{parameter @w has shape [50304, 1000000000000]: every dimension must be positive}}
gpt.param @w : tensor<50304x1000000000000xf32> init <zeros> layer "w"

// -----

// expected-error @+1 {{parameter @w needs a float element type, got 'i32'}}
gpt.param @w : tensor<4x16xi32> init <zeros> layer "w"

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of any type values}}
gpt.param @w : tensor<*xf32> init <zeros> layer "w"

// -----

// expected-error @+1 {{parameter @w needs exactly one of an initialiser (init <normal, std = 0.02>, <zeros>, <ones>) or tied_to @other}}
gpt.param @w : tensor<4x16xf32> layer "w"

// -----

gpt.param @wte : tensor<64x16xf32> init <zeros> layer "wte"
// expected-error @+1 {{parameter @w needs exactly one of an initialiser}}
gpt.param @w : tensor<64x16xf32> init <zeros> tied_to @wte layer "w"

// -----

// expected-error @+1 {{parameter @w has real_rows 0, expected 1..64 (its first dimension)}}
gpt.param @w : tensor<64x16xf32> init <zeros> layer "w" real_rows = 0

// -----

// expected-error @+1 {{parameter @w has real_rows 65, expected 1..64 (its first dimension)}}
gpt.param @w : tensor<64x16xf32> init <zeros> layer "w" real_rows = 65

// -----

// expected-error @+1 {{parameter @w has real_rows 2, expected 1..1 (its first dimension)}}
gpt.param @w : tensor<f32> init <zeros> layer "w" real_rows = 2

// -----

// expected-error @+1 {{needs the name of the layer it belongs to (e.g. "h.3.mlp.fc"), got an empty string}}
gpt.param @w : tensor<4x16xf32> init <zeros> layer ""

// -----

// expected-error @+1 {{parameter @lm_head is tied to @wte, which is not a gpt.param}}
gpt.param @lm_head : tensor<64x16xf32> tied_to @wte layer "lm_head"

// -----

func.func @wte() {
  return
}
// expected-error @+1 {{parameter @lm_head is tied to @wte, which is not a gpt.param}}
gpt.param @lm_head : tensor<64x16xf32> tied_to @wte layer "lm_head"

// -----

gpt.param @wte : tensor<64x16xf32> init <zeros> layer "wte"
gpt.param @lm_head : tensor<64x16xf32> tied_to @wte layer "lm_head"
// expected-error @+1 {{parameter @out is tied to @lm_head, which is itself tied to @wte; tie to @wte directly}}
gpt.param @out : tensor<64x16xf32> tied_to @lm_head layer "out"

// -----

// expected-error @+1 {{parameter @w is tied to itself}}
gpt.param @w : tensor<64x16xf32> tied_to @w layer "w"

// -----

gpt.param @wte : tensor<64x16xf32> init <zeros> layer "wte"
// expected-error @+1 {{parameter @lm_head has type 'tensor<64x32xf32>' but is tied to @wte of type 'tensor<64x16xf32>'}}
gpt.param @lm_head : tensor<64x32xf32> tied_to @wte layer "lm_head"

// -----

gpt.param @wte : tensor<64x16xf32> init <zeros> layer "wte"
// expected-error @+1 {{parameter @lm_head has type 'tensor<64x16xbf16>' but is tied to @wte of type 'tensor<64x16xf32>'}}
gpt.param @lm_head : tensor<64x16xbf16> tied_to @wte layer "lm_head"
