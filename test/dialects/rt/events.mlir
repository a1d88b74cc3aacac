// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Communication on stream 1 waits for compute on stream 0 and back.
// CHECK-LABEL: func.func @events
// CHECK-SAME:    (%[[IN:.*]]: !rt.event) -> !rt.event
// CHECK:         %[[E:.*]] = rt.event_record stream = 0{{$}}
// CHECK:         rt.event_wait %[[E]] stream = 1{{$}}
// CHECK:         rt.event_wait %[[IN]] stream = 0{{$}}
// CHECK:         %[[DONE:.*]] = rt.event_record stream = 1{{$}}
// CHECK:         return %[[DONE]] : !rt.event
func.func @events(%in: !rt.event) -> !rt.event {
  %e = rt.event_record stream = 0
  rt.event_wait %e stream = 1
  rt.event_wait %in stream = 0
  %done = rt.event_record stream = 1
  return %done : !rt.event
}

// -----

func.func @record_negative_stream() {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -1}}
  %e = rt.event_record stream = -1
  return
}

// -----

func.func @wait_negative_stream(%e: !rt.event) {
  // expected-error @+1 {{stream must be >= 0 (0 is compute), got -1}}
  rt.event_wait %e stream = -1
  return
}

// -----

// The custom form implies !rt.event; the generic form can give another type.
func.func @wait_on_non_event(%x: i32) {
  // expected-error @+1 {{operand #0 must be a point in one stream that another stream can wait for, but got 'i32'}}
  "rt.event_wait"(%x) <{stream = 0 : i32}> : (i32) -> ()
  return
}

// -----

func.func @record_type() {
  // expected-error @+1 {{result #0 must be a point in one stream that another stream can wait for, but got 'i32'}}
  %e = "rt.event_record"() <{stream = 0 : i32}> : () -> i32
  return
}

// -----

// expected-error @+1 {{type `signal` in dialect `rt`}}
func.func @unknown_type(%e: !rt.signal) {
  return
}
