// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// #gpt.init prints std in the shortest decimal form that reads back exactly,
// always as a float literal, and leaves out the default (no std).

// CHECK-LABEL: func.func @init_attr()
// CHECK-SAME:    a = #gpt.init<normal, std = 0.02>
// CHECK-SAME:    b = #gpt.init<normal, std = 1.0>
// CHECK-SAME:    c = #gpt.init<normal, std = 1.0e-05>
// CHECK-SAME:    d = #gpt.init<normal, std = 2.5e+10>
// CHECK-SAME:    e = #gpt.init<normal, std = 0.1>
// CHECK-SAME:    f = #gpt.init<normal, std = 123456789.0>
// CHECK-SAME:    g = #gpt.init<zeros>
// CHECK-SAME:    h = #gpt.init<zeros>
// CHECK-SAME:    i = #gpt.init<ones>
func.func @init_attr() attributes {
    a = #gpt.init<normal, std = 0.02>,
    b = #gpt.init<normal, std = 1.0>,
    c = #gpt.init<normal, std = 0.00001>,
    d = #gpt.init<normal, std = 2.5e10>,
    e = #gpt.init<normal, std = 0.1>,
    f = #gpt.init<normal, std = 123456789.0>,
    g = #gpt.init<zeros>,
    h = #gpt.init<zeros, std = 0.0>,
    i = #gpt.init<ones>} {
  return
}

// -----

// Inside gpt.param the attribute is written and printed without its prefix.
// CHECK-LABEL: gpt.param @w : tensor<4xf32> init <normal, std = 0.02> layer "w"
// CHECK-NEXT:  gpt.param @x : tensor<4xf32> init <normal, std = 1.0e-12> layer "x"
gpt.param @w : tensor<4xf32> init #gpt.init<normal, std = 0.02> layer "w"
gpt.param @x : tensor<4xf32> init <normal, std = 1.0e-12> layer "x"

// -----

// expected-error @+1 {{normal initialiser needs a positive std, got 0.000000e+00; write #gpt.init<normal, std = 0.02>}}
gpt.param @w : tensor<4xf32> init <normal> layer "w"

// -----

// expected-error @+1 {{normal initialiser needs a positive std, got 0.000000e+00}}
gpt.param @w : tensor<4xf32> init <normal, std = 0.0> layer "w"

// -----

// expected-error @+1 {{normal initialiser needs a positive std, got -2.000000e-02}}
gpt.param @w : tensor<4xf32> init <normal, std = -0.02> layer "w"

// -----

// expected-error @+1 {{normal initialiser needs a positive std}}
gpt.param @w : tensor<4xf32> init <normal, std = 0x7FF0000000000000> layer "w"

// -----

// expected-error @+1 {{normal initialiser needs a positive std}}
gpt.param @w : tensor<4xf32> init <normal, std = 0x7FF8000000000000> layer "w"

// -----

// expected-error @+1 {{'zeros' initialiser takes no std; remove it}}
gpt.param @w : tensor<4xf32> init <zeros, std = 0.02> layer "w"

// -----

// expected-error @+1 {{'ones' initialiser takes no std; remove it}}
func.func @f() attributes {init = #gpt.init<ones, std = 1.0>} {
  return
}

// -----

// expected-error @+2 {{expected ::gptc::gpt::InitKind to be one of: normal, zeros, ones}}
// expected-error @+1 {{failed to parse Gpt_InitAttr parameter 'kind'}}
gpt.param @w : tensor<4xf32> init <uniform> layer "w"

// -----

// std is a float literal: 1 is an integer.
// expected-error @+3 {{unexpected decimal integer literal for a floating point value}}
// expected-note @+2 {{add a trailing dot to make the literal a float}}
// expected-error @+1 {{failed to parse Gpt_InitAttr parameter 'std'}}
gpt.param @w : tensor<4xf32> init <normal, std = 1> layer "w"
