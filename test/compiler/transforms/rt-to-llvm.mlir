// RUN: gpt-opt %s -split-input-file -rt-to-llvm -verify-diagnostics | FileCheck %s

// Entry points call the C ABI: arena bases once, byte offsets as i64 GEPs,
// buffers then constants. The optional buffers the call leaves out at the
// end of its ins (scale) and outs (amax, q, q_t) and the descriptor it
// leaves out (epilogue) are null pointers. Arena and parameter declarations are dropped
// (the manifest holds them) and the ABI version is exported.
// CHECK-NOT: rt.
// CHECK-DAG: llvm.func @gptrt_arena_base(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @gptrt_layernorm_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, f64, i64, i64, !llvm.ptr)
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
// CHECK: %[[SCALE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[AMAX:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[Q:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[QT:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[WIDTH:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK: %[[EPS:.*]] = llvm.mlir.constant(1.000000e-05 : f64) : f64
// CHECK: %[[XD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[OD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[EPI:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @gptrt_layernorm_fwd(%[[CTX]], %[[X]], %[[W]], %[[W]], %[[SCALE]], %[[Y:.*]], %[[M:.*]], %[[M]], %[[AMAX]], %[[Q]], %[[QT]], %[[ROWS]], %[[WIDTH]], %[[EPS]], %[[XD]], %[[OD]], %[[EPI]])
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @gpt_abi_version() -> i32
// CHECK: llvm.mlir.constant(42 : i32) : i32
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

// The serialized manifest becomes a constant in its own section, behind
// the header the runtime checks before dlopen (magic, payload size 3, the
// payload's FNV-1a hash, little-endian; runtime/abi/ManifestSection.h),
// and gpt_manifest returns the payload after the header.
// CHECK: llvm.mlir.global internal constant @gpt_manifest_bytes("GPTCMAN1\03\00\00\00\00\00\00\00{{.*}}\01\02\03") {{{.*}}alignment = 8 : i64, section = ".gptc_manifest"}
// CHECK-LABEL: llvm.func @gpt_manifest(
// CHECK-SAME: %[[SIZE:.*]]: !llvm.ptr) -> !llvm.ptr
// CHECK: %[[N:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK: llvm.store %[[N]], %[[SIZE]] : i64, !llvm.ptr
// CHECK: %[[BYTES:.*]] = llvm.mlir.addressof @gpt_manifest_bytes : !llvm.ptr
// CHECK: %[[PAYLOAD:.*]] = llvm.getelementptr %[[BYTES]][24] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.return %[[PAYLOAD]] : !llvm.ptr
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

// The epilogue descriptor, a dictionary, is passed as a pointer to a
// read-only global of its i64 fields in the C struct's order (rows, cols,
// out_dtype, format, transpose, stat_slot, stat_slot_t, db_dtype), the
// fields it leaves out at their defaults (0, the statistics slots -1). An
// rt.null buffer is a null pointer; so are the optional buffers left out at
// the end of ins / outs, and a descriptor left out.
// CHECK-DAG: llvm.func @gptrt_gelu_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
// CHECK-DAG: llvm.func @gptrt_gelu_bwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, !llvm.ptr)
// CHECK-DAG: llvm.mlir.global internal constant @[[$CAST:gptrt_table_[0-9]+]](dense<[4, 32, 1, 1, 0, -1, -1, 0]> : tensor<8xi64>) {addr_space = 0 : i32} : !llvm.array<8 x i64>
// CHECK-DAG: llvm.mlir.global internal constant @[[$DUAL:gptrt_table_[0-9]+]](dense<[4, 32, 1, 0, 0, 3, 7, 0]> : tensor<8xi64>) {addr_space = 0 : i32} : !llvm.array<8 x i64>
// CHECK-LABEL: llvm.func @gpt_train_step(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[X:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT: llvm.mlir.constant(512 : i64)
// CHECK-NEXT: %[[S:.*]] = llvm.getelementptr
// CHECK-NEXT: llvm.mlir.constant(576 : i64)
// CHECK-NEXT: %[[A:.*]] = llvm.getelementptr
// CHECK-NEXT: llvm.mlir.constant(640 : i64)
// CHECK-NEXT: %[[Q5:.*]] = llvm.getelementptr
// CHECK-NEXT: llvm.mlir.constant(768 : i64)
// CHECK-NEXT: %[[Q4:.*]] = llvm.getelementptr
// CHECK-NEXT: llvm.mlir.constant(896 : i64)
// CHECK-NEXT: %[[QT:.*]] = llvm.getelementptr
// CHECK-NEXT: llvm.mlir.constant(1024 : i64)
// CHECK-NEXT: %[[Y:.*]] = llvm.getelementptr
// CHECK-NEXT: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// The plain GELU: scale, amax, q, q_t and the descriptor all null.
// CHECK-NEXT: %[[NS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[NA:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[NQ:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[NQT:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[N0:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT: %[[XD0:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[OD0:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[NE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.call @gptrt_gelu_fwd(%[[CTX]], %[[X]], %[[NS]], %[[Y]], %[[NA]], %[[NQ]], %[[NQT]], %[[N0]], %[[XD0]], %[[OD0]], %[[NE]])
// The cast epilogue: q_t, left out, is null; the descriptor is the global.
// CHECK-NEXT: %[[NQT1:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[N1:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT: %[[XD1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[OD1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[E1:.*]] = llvm.mlir.addressof @[[$CAST]] : !llvm.ptr
// CHECK-NEXT: llvm.call @gptrt_gelu_fwd(%[[CTX]], %[[X]], %[[S]], %[[Y]], %[[A]], %[[Q5]], %[[NQT1]], %[[N1]], %[[XD1]], %[[OD1]], %[[E1]])
// The dual cast: dx is the rt.null, db (left out) null.
// CHECK-NEXT: %[[NDB:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[N2:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT: %[[DD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[XD2:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[DXD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[E2:.*]] = llvm.mlir.addressof @[[$DUAL]] : !llvm.ptr
// CHECK-NEXT: llvm.call @gptrt_gelu_bwd(%[[CTX]], %[[Y]], %[[X]], %[[S]], %[[NULL]], %[[A]], %[[Q4]], %[[QT]], %[[NDB]], %[[N2]], %[[DD]], %[[XD2]], %[[DXD]], %[[E2]])
// CHECK-NEXT: llvm.return
rt.arena @activations activations size = 4096
func.func @train_step() {
  %x = rt.view @activations[0] : memref<4x32xf32>
  %s = rt.view @activations[512] : memref<f32>
  %a = rt.view @activations[576] : memref<f32>
  %q = rt.view @activations[640] : memref<4x32xf8E5M2>
  %q4 = rt.view @activations[768] : memref<4x32xf8E4M3FN>
  %qt = rt.view @activations[896] : memref<32x4xf8E4M3FN>
  %y = rt.view @activations[1024] : memref<4x32xf32>
  %n = rt.null : memref<0xf32>
  rt.kernel "gelu_fwd" ins(%x : memref<4x32xf32>) outs(%y : memref<4x32xf32>) consts [128, 1, 1]
  rt.kernel "gelu_fwd" ins(%x, %s : memref<4x32xf32>, memref<f32>) outs(%y, %a, %q : memref<4x32xf32>, memref<f32>, memref<4x32xf8E5M2>) consts [128, 1, 1, {rows = 4, cols = 32, out_dtype = 1, format = 1}]
  rt.kernel "gelu_bwd" ins(%y, %x, %s : memref<4x32xf32>, memref<4x32xf32>, memref<f32>) outs(%n, %a, %q4, %qt : memref<0xf32>, memref<f32>, memref<4x32xf8E4M3FN>, memref<32x4xf8E4M3FN>) consts [128, 1, 1, 1, {rows = 4, cols = 32, out_dtype = 1, format = 0, stat_slot = 3, stat_slot_t = 7}]
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
