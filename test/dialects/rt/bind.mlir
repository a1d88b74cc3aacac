// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

rt.arena @inputs inputs size = 2048
rt.arena @act activations size = 1024

// Inputs the runtime fills before the call and outputs it reads after, as
// rt-bufferize and rt-plan-memory leave them: views of an arena, or
// reshapes and allocs before planning. Names are free-form.
// CHECK-LABEL: func.func @bind
// CHECK:         %[[T:.*]] = rt.view @inputs[0] : memref<4x64xi32>
// CHECK-NEXT:    rt.bind input "tokens", %[[T]] : memref<4x64xi32>{{$}}
// CHECK-NEXT:    %[[Y:.*]] = rt.view @inputs[1024] : memref<4x64xi32>
// CHECK-NEXT:    rt.bind input "targets", %[[Y]] : memref<4x64xi32>{{$}}
// CHECK-NEXT:    %[[L:.*]] = rt.view @act[0] : memref<f32>
// CHECK-NEXT:    rt.bind output "loss", %[[L]] : memref<f32>{{$}}
// CHECK-NEXT:    %[[R:.*]] = rt.reshape %[[L]] : memref<f32> -> memref<1xf32>
// CHECK-NEXT:    rt.bind output "loss as a vector", %[[R]] {note = 1 : i64} : memref<1xf32>{{$}}
// CHECK-NEXT:    %[[A:.*]] = rt.alloc : memref<8x16xbf16>
// CHECK-NEXT:    rt.bind output "logits", %[[A]] : memref<8x16xbf16>{{$}}
// CHECK-NEXT:    rt.bind output "loss", %[[L]] : memref<f32>{{$}}
func.func @bind() {
  %0 = rt.view @inputs[0] : memref<4x64xi32>
  rt.bind input "tokens", %0 : memref<4x64xi32>
  %1 = rt.view @inputs[1024] : memref<4x64xi32>
  rt.bind input "targets", %1 : memref<4x64xi32>
  %2 = rt.view @act[0] : memref<f32>
  rt.bind output "loss", %2 : memref<f32>
  %3 = rt.reshape %2 : memref<f32> -> memref<1xf32>
  rt.bind output "loss as a vector", %3 {note = 1} : memref<1xf32>
  %4 = rt.alloc : memref<8x16xbf16>
  rt.bind output "logits", %4 : memref<8x16xbf16>
  rt.bind output "loss", %2 : memref<f32>
  return
}

// -----

func.func @empty_name(%x: memref<4xf32>) {
  // expected-error @+1 {{'rt.bind' op needs a name ("tokens", "loss", ...)}}
  rt.bind input "", %x : memref<4xf32>
  return
}

// -----

func.func @empty_output_name(%x: memref<f32>) {
  // expected-error @+1 {{needs a name ("tokens", "loss", ...)}}
  rt.bind output "", %x : memref<f32>
  return
}

// -----

func.func @dynamic_buffer(%x: memref<?x64xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<?x64xi32>'}}
  rt.bind input "tokens", %x : memref<?x64xi32>
  return
}

// -----

func.func @strided_buffer(%x: memref<4x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<4x4xf32, strided<[8, 1]>>'}}
  rt.bind output "logits", %x : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

func.func @offset_layout(%x: memref<4xf32, strided<[1], offset: 4>>) {
  // expected-error @+1 {{operand #0 must be statically shaped memref with identity layout, but got 'memref<4xf32, strided<[1], offset: 4>>'}}
  rt.bind output "loss", %x : memref<4xf32, strided<[1], offset: 4>>
  return
}

// -----

func.func @bad_direction(%x: memref<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'direction' [input, output]}}
  rt.bind inout "x", %x : memref<4xf32>
  return
}

// -----

func.func @bad_direction_generic(%x: memref<4xf32>) {
  // expected-error @+1 {{Invalid attribute `direction` in property conversion: 2 : i32}}
  "rt.bind"(%x) <{direction = 2 : i32, name = "x"}> : (memref<4xf32>) -> ()
  return
}

// -----

func.func @unquoted_name(%x: memref<4xf32>) {
  // expected-error @+1 {{expected attribute value}}
  rt.bind input tokens, %x : memref<4xf32>
  return
}
