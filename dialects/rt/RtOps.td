// The rt dialect: the program after bufferization, as the runtime executes
// it. Buffers are views into a few arenas, work is calls into the runtime's
// kernels, and communication is explicit. Verifiers live in RtOps.cpp.
#ifndef GPTC_DIALECTS_RT_OPS_TD
#define GPTC_DIALECTS_RT_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rt_Dialect : Dialect {
  let name = "rt";
  let cppNamespace = "::gptc::rt";
  let summary = "arenas, buffer views, kernel calls, collectives and streams";
  let description = [{
    The contract with the runtime: every op here becomes a call through the
    runtime's C ABI, which dispatches to CPU or CUDA kernels. Arenas are
    allocated once by the runtime; `rt.view` gives a typed window at a byte
    offset. Work on stream 0 is compute; other streams (e.g. communication)
    synchronise through events.
  }];
  let useDefaultTypePrinterParser = 1;
}

def Rt_EventType : TypeDef<Rt_Dialect, "Event"> {
  let mnemonic = "event";
  let summary = "a point in one stream that another stream can wait for";
}

def Rt_ArenaKind : I32EnumAttr<"ArenaKind", "what an arena holds", [
    I32EnumAttrCase<"Activations", 0, "activations">,
    I32EnumAttrCase<"Params", 1, "params">,
    I32EnumAttrCase<"Grads", 2, "grads">,
    I32EnumAttrCase<"Optimizer", 3, "optimizer">,
    I32EnumAttrCase<"Fp8State", 4, "fp8_state">,
    I32EnumAttrCase<"Inputs", 5, "inputs">,
    I32EnumAttrCase<"WeightCache", 6, "weight_cache">]> {
  let cppNamespace = "::gptc::rt";
}

def Rt_ReduceKind : I32EnumAttr<"ReduceKind", "how a collective combines", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Avg", 1, "avg">,
    I32EnumAttrCase<"Max", 2, "max">]> {
  let cppNamespace = "::gptc::rt";
}

def Rt_StaticBuffer : Type<And<[AnyMemRef.predicate,
    CPred<"::llvm::cast<::mlir::MemRefType>($_self).hasStaticShape()">,
    CPred<"::llvm::cast<::mlir::MemRefType>($_self).getLayout().isIdentity()">]>,
    "statically shaped memref with identity layout", "::mlir::MemRefType">;

class Rt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Rt_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

def Rt_BindDirection : I32EnumAttr<"BindDirection", "who writes a bound buffer", [
    I32EnumAttrCase<"Input", 0, "input">,
    I32EnumAttrCase<"Output", 1, "output">]> {
  let cppNamespace = "::gptc::rt";
}

def Rt_AllocOp : Rt_Op<"alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "an activation buffer whose place rt-plan-memory decides";
  let description = [{
    Lives from this op to its last use (uses through rt.reshape count);
    rt-plan-memory turns it into an rt.view of the activation arena.
  }];
  let results = (outs Rt_StaticBuffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def Rt_NullOp : Rt_Op<"null", [Pure]> {
  let summary = "no buffer: a kernel's optional buffer left empty";
  let description = [{
    Passed where the kernel table marks a buffer optional (GPTRT_IN_OPT,
    GPTRT_OUT_OPT) and the call has none, e.g. the output a dual-cast
    epilogue does not store; lowers to a null pointer. It owns no bytes:
    it aliases nothing and rt-plan-memory gives it no place.
  }];
  let results = (outs Rt_StaticBuffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def Rt_ReshapeOp : Rt_Op<"reshape", [Pure]> {
  let summary = "the same bytes seen with another shape (an alias, no copy)";
  let arguments = (ins Rt_StaticBuffer:$source);
  let results = (outs Rt_StaticBuffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
}

def Rt_BindOp : Rt_Op<"bind"> {
  let summary = "names a buffer the runtime fills (input) or reads (output)";
  let description = [{
    The runtime writes an entry point's inputs (token ids, targets) before
    calling it and reads its outputs (loss, logits, gradient norm) after it
    returns; the manifest records where each one lives.
  }];
  let arguments = (ins Rt_BindDirection:$direction, StrAttr:$name,
                       Rt_StaticBuffer:$buffer);
  let assemblyFormat = "$direction $name `,` $buffer attr-dict `:` type($buffer)";
}

def Rt_ParamOp : Rt_Op<"param", [Symbol]> {
  let summary = "a parameter's metadata and where its persistent buffers live";
  let description = [{
    Byte offsets of the fp32 value (params arena), gradient (grads arena)
    and AdamW moments (optimizer arena). A tied parameter has no buffers:
    it is `tied_to` another. `init` is normal, zeros or ones.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Rt_StaticBuffer>:$type,
                       StrAttr:$layer, OptionalAttr<StrAttr>:$init,
                       OptionalAttr<F64Attr>:$std,
                       OptionalAttr<I64Attr>:$real_rows,
                       UnitAttr:$weight_decay,
                       OptionalAttr<FlatSymbolRefAttr>:$tied_to,
                       OptionalAttr<I64Attr>:$value_offset,
                       OptionalAttr<I64Attr>:$grad_offset,
                       OptionalAttr<I64Attr>:$adam_m_offset,
                       OptionalAttr<I64Attr>:$adam_v_offset);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
}

def Rt_ArenaOp : Rt_Op<"arena", [Symbol]> {
  let summary = "a block of memory the runtime allocates once";
  let arguments = (ins SymbolNameAttr:$sym_name, Rt_ArenaKind:$kind,
                       I64Attr:$size, DefaultValuedAttr<I64Attr, "256">:$alignment);
  let assemblyFormat = [{
    $sym_name $kind `size` `=` $size (`alignment` `=` $alignment^)? attr-dict
  }];
}

def Rt_ViewOp : Rt_Op<"view", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a typed buffer at a byte offset inside an arena";
  let arguments = (ins FlatSymbolRefAttr:$arena, I64Attr:$offset);
  let results = (outs Rt_StaticBuffer:$result);
  let assemblyFormat = "$arena `[` $offset `]` attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    /// Bytes the view covers.
    int64_t getSizeInBytes();
  }];
}

def Rt_KernelOp : Rt_Op<"kernel", [AttrSizedOperandSegments]> {
  let summary = "calls a runtime kernel: reads `ins`, writes `outs`";
  let description = [{
    `kernel` names an entry of the runtime's kernel table (the C symbol is
    `gptrt_<kernel>`, declared in runtime/abi/gptrt.h). Inputs are buffers
    or scalars; outputs are buffers the kernel writes (in place when it also
    reads them). `consts` (i64 or f64) are passed after the buffers, in
    order: the call is `gptrt_<kernel>(ctx, ins..., outs..., consts...)`.
    A constant `array<i64: ...>` is passed as a `const int64_t *` to a
    table stored in the artifact (its length is another constant); a
    dictionary of i64 fields as a `const gptrt_<descriptor> *` (fields it
    leaves out take their defaults). Optional buffers may be `rt.null`,
    and trailing optional buffers and a trailing descriptor may be left
    out: they are passed as null.

    ```mlir
    rt.kernel "layernorm_fwd" ins(%x, %w, %b : memref<8x768xf32>, memref<768xf32>, memref<768xf32>) outs(%y, %mean, %rstd : memref<8x768xf32>, memref<8xf32>, memref<8xf32>) consts [8, 768, 1.0e-5 : f64]
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyType>:$inputs,
                       Variadic<Rt_StaticBuffer>:$outputs,
                       DefaultValuedAttr<I32Attr, "0">:$stream,
                       DefaultValuedAttr<ArrayAttr, "{}">:$consts);
  let assemblyFormat = [{
    $kernel (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)` (`stream` `=` $stream^)?
    (`consts` $consts^)? attr-dict
  }];
}

class Rt_CollectiveOp<string mnemonic> : Rt_Op<mnemonic> {
  let assemblyFormat = [{
    $reduce $input `,` $output (`stream` `=` $stream^)? attr-dict `:`
    type($input) `,` type($output)
  }];
}

def Rt_AllReduceOp : Rt_CollectiveOp<"all_reduce"> {
  let summary = "every rank ends with the reduction of all ranks' inputs";
  let arguments = (ins Rt_ReduceKind:$reduce, Rt_StaticBuffer:$input,
                       Rt_StaticBuffer:$output,
                       DefaultValuedAttr<I32Attr, "0">:$stream);
}

def Rt_ReduceScatterOp : Rt_CollectiveOp<"reduce_scatter"> {
  let summary = "each rank gets its shard of the reduction (ZeRO-1 gradients)";
  let arguments = (ins Rt_ReduceKind:$reduce, Rt_StaticBuffer:$input,
                       Rt_StaticBuffer:$output,
                       DefaultValuedAttr<I32Attr, "0">:$stream);
}

def Rt_AllGatherOp : Rt_Op<"all_gather"> {
  let summary = "every rank gets all ranks' shards, concatenated in rank order";
  let arguments = (ins Rt_StaticBuffer:$input, Rt_StaticBuffer:$output,
                       DefaultValuedAttr<I32Attr, "0">:$stream);
  let assemblyFormat = [{
    $input `,` $output (`stream` `=` $stream^)? attr-dict `:` type($input)
    `,` type($output)
  }];
}

def Rt_EventRecordOp : Rt_Op<"event_record"> {
  let summary = "marks the current point of a stream";
  let arguments = (ins I32Attr:$stream);
  let results = (outs Rt_EventType:$event);
  let assemblyFormat = "`stream` `=` $stream attr-dict";
}

def Rt_EventWaitOp : Rt_Op<"event_wait"> {
  let summary = "makes a stream wait until an event has happened";
  let arguments = (ins Rt_EventType:$event, I32Attr:$stream);
  let assemblyFormat = "$event `stream` `=` $stream attr-dict";
}

#endif // GPTC_DIALECTS_RT_OPS_TD
