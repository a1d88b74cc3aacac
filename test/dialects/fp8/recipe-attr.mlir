// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Parameters come in any order and print in declaration order; margin = 0
// and eps = 1e-12 are defaults and left out, power_of_two is printed when
// given (also false). eps prints in its shortest form, always as a float.
// CHECK-LABEL: func.func @recipe_attr()
// CHECK-SAME:    a = #fp8.recipe<format = e4m3>
// CHECK-SAME:    b = #fp8.recipe<format = e5m2>
// CHECK-SAME:    c = #fp8.recipe<format = e4m3>
// CHECK-SAME:    d = #fp8.recipe<format = e4m3, margin = 2, power_of_two = true, eps = 1.0e-10>
// CHECK-SAME:    e = #fp8.recipe<format = e5m2, power_of_two = false>
// CHECK-SAME:    f = #fp8.recipe<format = e4m3, eps = 0.5>
// CHECK-SAME:    g = #fp8.recipe<format = e4m3, eps = 1.0e-30>
func.func @recipe_attr() attributes {
    a = #fp8.recipe<format = e4m3>,
    b = #fp8.recipe<format = e5m2>,
    c = #fp8.recipe<format = e4m3, margin = 0, eps = 1.0e-12>,
    d = #fp8.recipe<eps = 1.0e-10, power_of_two = true, margin = 2, format = e4m3>,
    e = #fp8.recipe<format = e5m2, power_of_two = false>,
    f = #fp8.recipe<format = e4m3, eps = 0.5>,
    g = #fp8.recipe<format = e4m3, eps = 0.000000000000000000000000000001>} {
  return
}

// -----

// CHECK-LABEL: fp8.state @s "x" history = 1 reduction = max recipe = <format = e4m3, margin = 3>
fp8.state @s "x" history = 1 reduction = max recipe = #fp8.recipe<format = e4m3, margin = 3>

// -----

// expected-error @+1 {{recipe margin must be >= 0 (scale is divided by 2^margin), got -1}}
fp8.state @s "x" history = 1 reduction = max recipe = #fp8.recipe<format = e4m3, margin = -1>

// -----

// expected-error @+1 {{recipe eps must be a small positive number (e.g. 1.0e-12), got 0.000000e+00}}
fp8.state @s "x" history = 1 reduction = max recipe = #fp8.recipe<format = e4m3, eps = 0.0>

// -----

// expected-error @+1 {{recipe eps must be a small positive number (e.g. 1.0e-12), got -1.000000e-12}}
fp8.state @s "x" history = 1 reduction = max recipe = #fp8.recipe<format = e4m3, eps = -1.0e-12>

// -----

// expected-error @+1 {{recipe eps must be a small positive number (e.g. 1.0e-12), got INF}}
func.func @f() attributes {r = #fp8.recipe<format = e4m3, eps = 0x7FF0000000000000>} {
  return
}

// -----

// expected-error @+1 {{recipe eps must be a small positive number (e.g. 1.0e-12), got nan}}
func.func @f() attributes {r = #fp8.recipe<format = e4m3, eps = 0x7FF8000000000000>} {
  return
}

// -----

// expected-error @+1 {{struct is missing required parameter: format}}
func.func @f() attributes {r = #fp8.recipe<margin = 1>} {
  return
}

// -----

// expected-error @+2 {{expected ::gptc::fp8::Format to be one of: e4m3, e5m2}}
// expected-error @+1 {{failed to parse Fp8_RecipeAttr parameter 'format'}}
func.func @f() attributes {r = #fp8.recipe<format = e3m4>} {
  return
}

// -----

// eps is a float literal: 1e-10 reads as the integer 1.
// expected-error @+3 {{unexpected decimal integer literal for a floating point value}}
// expected-note @+2 {{add a trailing dot to make the literal a float}}
// expected-error @+1 {{failed to parse Fp8_RecipeAttr parameter 'eps'}}
func.func @f() attributes {r = #fp8.recipe<format = e4m3, eps = 1e-10>} {
  return
}
