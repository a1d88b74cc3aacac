// RUN: gpt-opt %s -split-input-file -rt-to-llvm -verify-diagnostics | FileCheck %s

// Entry points call the C ABI: arena bases once, byte offsets as i64 GEPs,
// buffers then constants. Arena and parameter declarations are dropped
// (the manifest holds them) and the ABI version is exported.
// CHECK-NOT: rt.
// CHECK-DAG: llvm.func @gptrt_arena_base(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @gptrt_layernorm_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, f64, i64, i64)
// CHECK-LABEL: llvm.func @gpt_eval_step(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[I1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[PARAMS:.*]] = llvm.call @gptrt_arena_base(%[[CTX]], %[[I1]])
// CHECK: %[[O0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[X:.*]] = llvm.getelementptr %[[PARAMS]][%[[O0]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[O512:.*]] = llvm.mlir.constant(512 : i64) : i64
// CHECK: %[[W:.*]] = llvm.getelementptr %[[PARAMS]][%[[O512]]]
// CHECK: %[[I0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[ACT:.*]] = llvm.call @gptrt_arena_base(%[[CTX]], %[[I0]])
// CHECK: %[[R:.*]] = llvm.getelementptr %[[ACT]]
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[WIDTH:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK: %[[EPS:.*]] = llvm.mlir.constant(1.000000e-05 : f64) : f64
// CHECK: %[[XD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[OD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: llvm.call @gptrt_layernorm_fwd(%[[CTX]], %[[X]], %[[W]], %[[W]], %[[Y:.*]], %[[M:.*]], %[[M]], %[[ROWS]], %[[WIDTH]], %[[EPS]], %[[XD]], %[[OD]])
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @gpt_abi_version() -> i32
// CHECK: llvm.mlir.constant(41 : i32) : i32
rt.arena @activations activations size = 4096
rt.arena @params params size = 1024
rt.param @w : memref<32xf32> {adam_m_offset = 0 : i64, adam_v_offset = 512 : i64, grad_offset = 0 : i64, init = "ones", layer = "ln", value_offset = 512 : i64}
func.func @eval_step() {
  %x = rt.view @params[0] : memref<4x32xf32>
  %w = rt.view @params[512] : memref<32xf32>
  %r = rt.view @activations[0] : memref<128xf32>
  %y = rt.reshape %r : memref<128xf32> -> memref<4x32xf32>
  %m = rt.view @activations[1024] : memref<4xf32>
  rt.kernel "layernorm_fwd" ins(%x, %w, %w : memref<4x32xf32>, memref<32xf32>, memref<32xf32>) outs(%y, %m, %m : memref<4x32xf32>, memref<4xf32>, memref<4xf32>) consts [4, 32, 1.0e-5 : f64, 1, 1]
  rt.bind output "y", %y : memref<4x32xf32>
  return
}

// -----

// The serialized manifest becomes a constant and gpt_manifest returns it.
// CHECK: llvm.mlir.global internal constant @gpt_manifest_bytes("\01\02\03")
// CHECK-LABEL: llvm.func @gpt_manifest(
// CHECK-SAME: %[[SIZE:.*]]: !llvm.ptr) -> !llvm.ptr
// CHECK: %[[N:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK: llvm.store %[[N]], %[[SIZE]] : i64, !llvm.ptr
// CHECK: %[[BYTES:.*]] = llvm.mlir.addressof @gpt_manifest_bytes : !llvm.ptr
// CHECK: llvm.return %[[BYTES]] : !llvm.ptr
module attributes {rt.manifest = "\01\02\03"} {
}

// -----

// A constant array<i64: ...> is passed as a pointer to a read-only global
// holding it; two kernels with the same table share one global.
// CHECK-DAG: llvm.mlir.global internal constant @gptrt_table_0(dense<[0, 8, 16, 24]> : tensor<4xi64>) {addr_space = 0 : i32} : !llvm.array<4 x i64>
// CHECK-DAG: llvm.func @gptrt_adamw_multi(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, f64, f64, f64, f64, i64, !llvm.ptr)
// CHECK-LABEL: llvm.func @gpt_optimizer_step(
// CHECK: %[[T:.*]] = llvm.mlir.addressof @gptrt_table_0 : !llvm.ptr
// CHECK: llvm.call @gptrt_adamw_multi({{.*}}, %[[T]])
// CHECK: %[[T2:.*]] = llvm.mlir.addressof @gptrt_table_0 : !llvm.ptr
// CHECK: llvm.call @gptrt_adamw_multi({{.*}}, %[[T2]])
rt.arena @activations activations size = 64
rt.arena @params params size = 128
rt.arena @grads grads size = 128
rt.arena @optimizer optimizer size = 256
func.func @optimizer_step() {
  %s = rt.view @activations[0] : memref<f32>
  %g = rt.view @grads[0] : memref<32xf32>
  %p = rt.view @params[0] : memref<32xf32>
  %m = rt.view @optimizer[0] : memref<32xf32>
  %v = rt.view @optimizer[128] : memref<32xf32>
  rt.kernel "adamw_multi" ins(%g, %s, %s, %s : memref<32xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p, %m, %v : memref<32xf32>, memref<32xf32>, memref<32xf32>) consts [32, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01, 2, array<i64: 0, 8, 16, 24>]
  rt.kernel "adamw_multi" ins(%g, %s, %s, %s : memref<32xf32>, memref<f32>, memref<f32>, memref<f32>) outs(%p, %m, %v : memref<32xf32>, memref<32xf32>, memref<32xf32>) consts [32, 9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01, 2, array<i64: 0, 8, 16, 24>]
  return
}

// -----

rt.arena @activations activations size = 64
func.func @train_step() {
  // expected-error @+1 {{'rt.alloc' op has no lowering in rt-to-llvm}}
  %a = rt.alloc : memref<4xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op is not an rt entry point (it has arguments or results); run rt-bufferize first}}
func.func @train_step(%x: memref<4xf32>) {
  return
}
