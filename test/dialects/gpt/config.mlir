// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// gpt.config, the model's settings that the manifest and gptrun read, holds
// positive integers that agree with the graph (@wte, @wpe).

// CHECK-LABEL: module attributes {gpt.config = {depth = 1 : i64, heads = 2 : i64, padded_vocab = 64 : i64, seq = 8 : i64, vocab = 50 : i64, width = 16 : i64}}
module attributes {gpt.config = {depth = 1 : i64, heads = 2 : i64, padded_vocab = 64 : i64, seq = 8 : i64, vocab = 50 : i64, width = 16 : i64}} {
  gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte" real_rows = 50
  gpt.param @wpe : tensor<8x16xf32> init <normal, std = 0.02> layer "wpe"
}

// -----

// expected-error @+1 {{gpt.config seq = -1 : i64 must be a positive integer; regenerate the model with gpt-model}}
module attributes {gpt.config = {seq = -1 : i64}} {
}

// -----

// expected-error @+1 {{gpt.config heads = 3 does not divide width = 16}}
module attributes {gpt.config = {heads = 3 : i64, width = 16 : i64}} {
}

// -----

// expected-error @+1 {{gpt.config width = 1000000000000 contradicts the graph: @wte's columns says 16; regenerate the model with gpt-model or fix gpt.config}}
module attributes {gpt.config = {width = 1000000000000 : i64}} {
  gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte"
}

// -----

// expected-error @+1 {{gpt.config vocab = 60 contradicts the graph: @wte's real_rows says 50}}
module attributes {gpt.config = {vocab = 60 : i64}} {
  gpt.param @wte : tensor<64x16xf32> init <normal, std = 0.02> layer "wte" real_rows = 50
}

// -----

// expected-error @+1 {{gpt.config vocab = 80 contradicts the graph: padded_vocab says 64}}
module attributes {gpt.config = {padded_vocab = 64 : i64, vocab = 80 : i64}} {
}

// -----

// expected-error @+1 {{gpt.config seq = 32 contradicts the graph: @wpe's rows says 8}}
module attributes {gpt.config = {seq = 32 : i64}} {
  gpt.param @wpe : tensor<8x16xf32> init <normal, std = 0.02> layer "wpe"
}

// -----

// expected-error @+1 {{gpt.config must be a dictionary on the module}}
module attributes {gpt.config = 3 : i64} {
}
