// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Placed parameters, as rt-bufferize leaves them: every init, the optional
// std, real_rows and weight_decay, and offsets of 0 (still present). A tied
// parameter has neither offsets nor init. Attributes print sorted.
// CHECK-LABEL: rt.param @wte : memref<64x8xf32> {adam_m_offset = 0 : i64, adam_v_offset = 4096 : i64, grad_offset = 0 : i64, init = "normal", layer = "wte", real_rows = 60 : i64, std = 2.000000e-02 : f64, value_offset = 0 : i64, weight_decay}{{$}}
// CHECK-NEXT:  rt.param @ln.weight : memref<8xf32> {adam_m_offset = 2048 : i64, adam_v_offset = 6144 : i64, grad_offset = 2048 : i64, init = "ones", layer = "ln", value_offset = 2048 : i64}{{$}}
// CHECK-NEXT:  rt.param @ln.bias : memref<8xf32> {adam_m_offset = 2080 : i64, adam_v_offset = 6176 : i64, grad_offset = 2080 : i64, init = "zeros", layer = "ln", value_offset = 2080 : i64}{{$}}
// CHECK-NEXT:  rt.param @scale : memref<f32> {adam_m_offset = 2112 : i64, adam_v_offset = 6208 : i64, grad_offset = 2112 : i64, init = "normal", layer = "", value_offset = 2112 : i64}{{$}}
// CHECK-NEXT:  rt.param @lm_head.weight : memref<64x8xf32> {layer = "lm_head", tied_to = @wte}{{$}}
rt.param @wte : memref<64x8xf32> {layer = "wte", init = "normal", std = 0.02 : f64, real_rows = 60, weight_decay, value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 4096}
rt.param @ln.weight : memref<8xf32> {layer = "ln", init = "ones", value_offset = 2048, grad_offset = 2048, adam_m_offset = 2048, adam_v_offset = 6144}
rt.param @ln.bias : memref<8xf32> {layer = "ln", init = "zeros", value_offset = 2080, grad_offset = 2080, adam_m_offset = 2080, adam_v_offset = 6176}
rt.param @scale : memref<f32> {layer = "", init = "normal", value_offset = 2112, grad_offset = 2112, adam_m_offset = 2112, adam_v_offset = 6208}
rt.param @lm_head.weight : memref<64x8xf32> {layer = "lm_head", tied_to = @wte}

// -----

// expected-error @+1 {{'rt.param' op parameter @lm_head.weight is tied, so it has no buffers of its own; drop its offsets}}
rt.param @lm_head.weight : memref<64x8xf32> {layer = "lm_head", tied_to = @wte, value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// One offset is enough to be wrong, even an offset of 0.
// expected-error @+1 {{parameter @lm_head.weight is tied, so it has no buffers of its own; drop its offsets}}
rt.param @lm_head.weight : memref<64x8xf32> {layer = "lm_head", tied_to = @wte, adam_v_offset = 0}

// -----

// expected-error @+1 {{parameter @w needs value_offset, grad_offset, adam_m_offset and adam_v_offset (or tied_to)}}
rt.param @w : memref<8xf32> {layer = "h", init = "zeros"}

// -----

// expected-error @+1 {{parameter @w needs value_offset, grad_offset, adam_m_offset and adam_v_offset (or tied_to)}}
rt.param @w : memref<8xf32> {layer = "h", init = "zeros", value_offset = 0, grad_offset = 0, adam_m_offset = 0}

// -----

// expected-error @+1 {{parameter @w needs value_offset, grad_offset, adam_m_offset and adam_v_offset (or tied_to)}}
rt.param @w : memref<8xf32> {layer = "h", init = "zeros", grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// expected-error @+1 {{parameter @w needs an init (normal, zeros or ones)}}
rt.param @w : memref<8xf32> {layer = "h", value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// The manifest knows only these three.
// expected-error @+1 {{parameter @w has init "uniform"; expected normal, zeros or ones}}
rt.param @w : memref<8xf32> {layer = "h", init = "uniform", value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// expected-error @+1 {{parameter @w has init ""; expected normal, zeros or ones}}
rt.param @w : memref<8xf32> {layer = "h", init = "", value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// expected-error @+1 {{'rt.param' op requires attribute 'layer'}}
rt.param @w : memref<8xf32> {init = "zeros", value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of statically shaped memref with identity layout}}
rt.param @w : tensor<8xf32> {layer = "h", tied_to = @v}

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of statically shaped memref with identity layout}}
rt.param @w : memref<?xf32> {layer = "h", tied_to = @v}

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of statically shaped memref with identity layout}}
rt.param @w : memref<4x4xf32, strided<[8, 1]>> {layer = "h", tied_to = @v}

// -----

// expected-error @+1 {{attribute 'tied_to' failed to satisfy constraint: flat symbol reference attribute}}
rt.param @w : memref<8xf32> {layer = "h", tied_to = "v"}

// -----

// expected-error @+1 {{attribute 'std' failed to satisfy constraint: 64-bit float attribute}}
rt.param @w : memref<8xf32> {layer = "h", init = "normal", std = 0.02 : f32, value_offset = 0, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

// expected-error @+1 {{attribute 'value_offset' failed to satisfy constraint: 64-bit signless integer attribute}}
rt.param @w : memref<8xf32> {layer = "h", init = "zeros", value_offset = 0 : i32, grad_offset = 0, adam_m_offset = 0, adam_v_offset = 0}

// -----

rt.param @w : memref<8xf32> {layer = "h", tied_to = @v}
// expected-error @+2 {{redefinition of symbol named 'w'}}
// expected-note @-2 {{see existing symbol definition here}}
rt.param @w : memref<8xf32> {layer = "h", tied_to = @v}
