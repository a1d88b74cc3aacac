// RUN: gpt-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpt-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | gpt-opt -split-input-file -verify-diagnostics | FileCheck %s

// Every kind; the default alignment (256) is left out when printed, another
// is kept.
// CHECK-LABEL: rt.arena @act activations size = 1024{{$}}
// CHECK-NEXT:  rt.arena @params params size = 4096 alignment = 64{{$}}
// CHECK-NEXT:  rt.arena @grads grads size = 4096{{$}}
// CHECK-NEXT:  rt.arena @adam optimizer size = 8192 alignment = 1{{$}}
// CHECK-NEXT:  rt.arena @amax fp8_state size = 0 {note = "extra"}{{$}}
// CHECK-NEXT:  rt.arena @inputs inputs size = 2048{{$}}
// CHECK-NEXT:  rt.arena @targets inputs size = 1024 alignment = 8{{$}}
// CHECK-NEXT:  rt.arena @cache weight_cache size = 512{{$}}
rt.arena @act activations size = 1024
rt.arena @params params size = 4096 alignment = 64
rt.arena @grads grads size = 4096 alignment = 256
rt.arena @adam optimizer size = 8192 alignment = 1
rt.arena @amax fp8_state size = 0 {note = "extra"}
rt.arena @inputs inputs size = 2048
rt.arena @targets inputs size = 1024 alignment = 8
rt.arena @cache weight_cache size = 512

// -----

// expected-error @+1 {{arena @a has a negative size -1}}
rt.arena @a activations size = -1

// -----

// expected-error @+1 {{arena @a alignment must be a power of two, got 0}}
rt.arena @a activations size = 1024 alignment = 0

// -----

// The size and alignment rules hold for every kind, inputs included.
// expected-error @+1 {{arena @in has a negative size -8}}
rt.arena @in inputs size = -8

// -----

// expected-error @+1 {{arena @in alignment must be a power of two, got 3}}
rt.arena @in inputs size = 2048 alignment = 3

// -----

// expected-error @+1 {{arena @a alignment must be a power of two, got 48}}
rt.arena @a activations size = 1024 alignment = 48

// -----

// expected-error @+1 {{arena @a alignment must be a power of two, got -64}}
rt.arena @a activations size = 1024 alignment = -64

// -----

// -2^63 is 2^63 when read as unsigned: still not a valid alignment.
// expected-error @+1 {{arena @a alignment must be a power of two, got -9223372036854775808}}
rt.arena @a activations size = 1024 alignment = -9223372036854775808

// -----

// expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [activations, params, grads, optimizer, fp8_state, inputs, weight_cache]}}
rt.arena @a scratch size = 1024
