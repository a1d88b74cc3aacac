// Ops of the gpt dialect. Verifiers live in GptOps.cpp.
#ifndef GPTC_DIALECTS_GPT_OPS_TD
#define GPTC_DIALECTS_GPT_OPS_TD

include "dialects/gpt/GptBase.td"
include "dialects/gpt/GptInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Gpt_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Gpt_IdTensor : RankedTensorOf<[I32]>;
def Gpt_LossTensor : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}
// Per-row statistics a forward op saves for its backward (f32 always).
def Gpt_StatTensor : RankedTensorOf<[F32]>;

def Gpt_GemmRole : I32EnumAttr<"GemmRole", "which GEMM of a layer a matmul is", [
    I32EnumAttrCase<"Forward", 0, "forward">,
    I32EnumAttrCase<"GradInput", 1, "grad_input">,
    I32EnumAttrCase<"GradWeight", 2, "grad_weight">]> {
  let cppNamespace = "::gptc::gpt";
}

// Positive static dimensions and byte sizes an int64 holds (GptTraits.h).
def Gpt_SizedTensors : NativeOpTrait<"SizedTensors"> {
  let cppNamespace = "::gptc::gpt";
}

class Gpt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Gpt_Dialect, mnemonic, !listconcat(traits, [Gpt_SizedTensors])>;

// A compute op: pure, and named after its layer.
class Gpt_LayerOp<string mnemonic, list<Trait> traits = []>
    : Gpt_Op<mnemonic, !listconcat([Pure], traits)> {
  let hasVerifier = 1;
}

// A differentiable op of the forward graph.
class Gpt_ForwardOp<string mnemonic, list<Trait> traits = []>
    : Gpt_LayerOp<mnemonic, !listconcat(
        [DeclareOpInterfaceMethods<Gpt_GradientOpInterface>], traits)>;

// Same, for ops whose training form saves values for the backward.
class Gpt_ForwardOpWithSaved<string mnemonic, list<Trait> traits = []>
    : Gpt_LayerOp<mnemonic, !listconcat(
        [DeclareOpInterfaceMethods<Gpt_GradientOpInterface,
                                   ["materializeSavedValues"]>], traits)>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def Gpt_ParamOp : Gpt_Op<"param", [Symbol,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a trainable parameter of the model";
  let description = [{
    Declares a parameter with its shape, dtype and initialiser. A tied
    parameter (`tied_to @other`) has no storage of its own: it is the same
    tensor as `@other` and its gradient is summed into `@other`'s. `real_rows`
    marks rows past it as padding (the vocabulary padded to a multiple of 64):
    they exist for aligned GEMMs but hold no token.

    ```mlir
    gpt.param @wte : tensor<50304x768xf32> init <normal, std = 0.02> layer "wte" real_rows = 50257
    gpt.param @lm_head.weight : tensor<50304x768xf32> tied_to @wte layer "lm_head"
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       OptionalAttr<Gpt_InitAttr>:$init,
                       OptionalAttr<FlatSymbolRefAttr>:$tied_to,
                       StrAttr:$layer,
                       OptionalAttr<I64Attr>:$real_rows);
  let assemblyFormat = [{
    $sym_name `:` $type (`init` $init^)? (`tied_to` $tied_to^)? `layer` $layer
    (`real_rows` `=` $real_rows^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// Elements that hold real values (padding rows excluded).
    int64_t getNumRealElements();
  }];
}

def Gpt_ParamRefOp : Gpt_Op<"param_ref", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a parameter declared with gpt.param";
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Compute ops
//===----------------------------------------------------------------------===//

def Gpt_ArangeOp : Gpt_ForwardOp<"arange"> {
  let summary = "the positions 0, 1, ..., n-1";
  let arguments = (ins StrAttr:$layer);
  let results = (outs 1DTensorOf<[I32]>:$result);
  let assemblyFormat = "$layer attr-dict `:` type($result)";
}

def Gpt_EmbeddingOp : Gpt_ForwardOp<"embedding"> {
  let summary = "gathers rows of a table: result[..., :] = table[ids[...], :]";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$table,
                       Gpt_IdTensor:$ids);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = [{
    $layer $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids)
    `->` type($result)
  }];
}

def Gpt_LayerNormOp : Gpt_ForwardOpWithSaved<"layernorm"> {
  let summary = "layer normalisation over the last dimension, with affine weight and bias";
  let description = [{
    In its training form (made by gpt-autodiff) the op also returns the mean
    and 1/sqrt(variance + eps) of each row, which the backward reuses.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input,
                       Gpt_FloatTensor:$weight, Gpt_FloatTensor:$bias,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$eps);
  let results = (outs Gpt_FloatTensor:$normalized, Variadic<Gpt_StatTensor>:$stats);
  let assemblyFormat = [{
    $layer $input `,` $weight `,` $bias attr-dict `:` type($input) `,`
    type($weight) `,` type($bias) `->` type(results)
  }];
}

def Gpt_MatmulOp : Gpt_ForwardOp<"matmul"> {
  let summary = "matrix product over the last two dimensions, optional bias";
  let description = [{
    `result = op(a) x op(b) + bias`, where `op` swaps the last two dimensions
    when `transpose_a` / `transpose_b` is set. `b` is either a 2-D weight,
    broadcast over `a`'s leading (batch) dimensions, or has `a`'s rank and
    the same batch dimensions. Weights are stored `[out, in]` (as PyTorch's
    Linear) and used with `transpose_b`. `role` tells the layer's forward
    GEMM from the two of its backward (gradient of the input, of the weight),
    which precision policies may treat differently.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$a, Gpt_FloatTensor:$b,
                       Optional<Gpt_FloatTensor>:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       DefaultValuedAttr<Gpt_GemmRole, "GemmRole::Forward">:$role);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = [{
    $layer $a `,` $b (`bias` $bias^)? (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? (`role` `=` $role^)? attr-dict `:` type($a)
    `,` type($b) (`,` type($bias)^)? `->` type($result)
  }];
}

def Gpt_AddOp : Gpt_ForwardOp<"add"> {
  let summary = "elementwise sum; rhs may broadcast over lhs's leading dimensions";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$lhs,
                       Gpt_FloatTensor:$rhs);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = [{
    $layer $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->`
    type($result)
  }];
}

def Gpt_MulOp : Gpt_ForwardOp<"mul", [SameOperandsAndResultType]> {
  let summary = "multiplies every element by a constant";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input, F64Attr:$scale);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = "$layer $input `by` $scale attr-dict `:` type($input)";
}

def Gpt_GeluOp : Gpt_ForwardOp<"gelu", [SameOperandsAndResultShape]> {
  let summary = "GELU, tanh approximation (as GPT-2)";
  let description = [{
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, the approximation of
    Hendrycks and Gimpel (2016) that GPT-2 trains with. The result has the
    input's type, or the other of f32 and bf16 storage (gpt-bf16-kernels),
    printed after `->` then.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = [{
    $layer $input attr-dict `:`
    custom<StorageResult>(type($input), type($result))
  }];
}

def Gpt_SplitOp : Gpt_ForwardOp<"split"> {
  let summary = "splits a tensor into equal parts along one axis";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Gpt_FloatTensor>:$results);
  let assemblyFormat = [{
    $layer $input `along` $axis attr-dict `:` type($input) `->` type($results)
  }];
}

def Gpt_ConcatOp : Gpt_ForwardOp<"concat"> {
  let summary = "joins tensors along one axis (the inverse of gpt.split)";
  let arguments = (ins StrAttr:$layer, Variadic<Gpt_FloatTensor>:$inputs,
                       I64Attr:$axis);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = [{
    $layer $inputs `along` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
}

def Gpt_AttentionOp : Gpt_ForwardOpWithSaved<"attention",
    [AllTypesMatch<["q", "k", "v", "attended"]>]> {
  let summary = "scaled dot-product attention over heads, one op";
  let description = [{
    `q`, `k`, `v` are `[batch, seq, width]`; the width is split into `heads`
    heads of `width / heads` each, scores are scaled by `1/sqrt(head_dim)`,
    and with `causal` a position attends only to itself and earlier ones.
    The training form also returns the log-sum-exp of each query's scores,
    `[batch, heads, seq]`, from which the backward recomputes probabilities.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$q, Gpt_FloatTensor:$k,
                       Gpt_FloatTensor:$v, I64Attr:$heads, UnitAttr:$causal);
  let results = (outs Gpt_FloatTensor:$attended, Variadic<Gpt_StatTensor>:$lse);
  let assemblyFormat = [{
    $layer $q `,` $k `,` $v `heads` `=` $heads (`causal` $causal^)? attr-dict
    `:` type($attended) (`,` type($lse)^)?
  }];
  let extraClassDeclaration = [{
    int64_t getHeadDim();
  }];
}

def Gpt_ReshapeOp : Gpt_ForwardOp<"reshape"> {
  let summary = "same elements, new shape";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = "$layer $input attr-dict `:` type($input) `->` type($result)";
}

def Gpt_TransposeOp : Gpt_ForwardOp<"transpose"> {
  let summary = "permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input,
                       DenseI64ArrayAttr:$perm);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = [{
    $layer $input `perm` `=` $perm attr-dict `:` type($input) `->` type($result)
  }];
}

def Gpt_CrossEntropyOp : Gpt_ForwardOpWithSaved<"cross_entropy"> {
  let summary = "mean cross-entropy of logits against target ids";
  let description = [{
    Softmax over the first `vocab_size` logits of the last dimension (later
    ones are vocabulary padding and never receive probability), negative log
    likelihood of each target, mean over the targets that are not
    `ignore_index`. The training form also returns each row's log-sum-exp.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$logits,
                       Gpt_IdTensor:$targets, I64Attr:$vocab_size,
                       DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Gpt_LossTensor:$loss, Variadic<Gpt_StatTensor>:$lse);
  let assemblyFormat = [{
    $layer $logits `,` $targets attr-dict `:` type($logits) `,` type($targets)
    (`->` type($lse)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Ops of the backward graph (made by gpt-autodiff)
//===----------------------------------------------------------------------===//

def Gpt_CastOp : Gpt_LayerOp<"cast"> {
  let summary = "converts a tensor's element type (f32 <-> bf16)";
  let description = [{
    Narrowing rounds to nearest even (as CUDA's __float2bfloat16); widening
    is exact. gpt-precision uses it to store activations in bf16 while every
    kernel computes in f32.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = "$layer $input attr-dict `:` type($input) `->` type($result)";
}

def Gpt_FillOp : Gpt_LayerOp<"fill"> {
  let summary = "a tensor with every element equal to a constant";
  let arguments = (ins StrAttr:$layer, F64Attr:$value);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = "$layer $value attr-dict `:` type($result)";
}

def Gpt_ReduceLeadingOp : Gpt_LayerOp<"reduce_leading"> {
  let summary = "sums over leading dimensions down to the result's shape";
  let description = [{
    The result's shape is a suffix of the input's; the leading dimensions are
    summed away. The gradient of a broadcast (bias add, position embedding).
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$input);
  let results = (outs Gpt_FloatTensor:$result);
  let assemblyFormat = "$layer $input attr-dict `:` type($input) `->` type($result)";
}

def Gpt_LayerNormGradOp : Gpt_LayerOp<"layernorm_grad"> {
  let summary = "gradients of gpt.layernorm: input, weight, bias";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$result_grad,
                       Gpt_FloatTensor:$input, Gpt_FloatTensor:$weight,
                       Gpt_StatTensor:$mean, Gpt_StatTensor:$rstd);
  let results = (outs Gpt_FloatTensor:$input_grad, Gpt_FloatTensor:$weight_grad,
                      Gpt_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $layer $result_grad `,` $input `,` $weight `,` $mean `,` $rstd attr-dict
    `:` type(operands) `->` type(results)
  }];
}

def Gpt_GeluGradOp : Gpt_LayerOp<"gelu_grad",
    [AllShapesMatch<["result_grad", "input", "input_grad"]>]> {
  let summary = "gradient of gpt.gelu with respect to its input";
  let description = [{
    The three tensors have one type, or mix f32 and bf16 storage
    (gpt-bf16-kernels): after the input's type, `, T` gives `result_grad`'s
    and `-> T` `input_grad`'s where they differ from it.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$result_grad,
                       Gpt_FloatTensor:$input);
  let results = (outs Gpt_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $layer $result_grad `,` $input attr-dict `:`
    custom<GeluGradTypes>(type($input), type($result_grad),
                          type($input_grad))
  }];
}

def Gpt_AttentionGradOp : Gpt_LayerOp<"attention_grad",
    [AllTypesMatch<["result_grad", "q", "k", "v", "result", "q_grad", "k_grad",
                    "v_grad"]>]> {
  let summary = "gradients of gpt.attention: q, k, v";
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$result_grad,
                       Gpt_FloatTensor:$q, Gpt_FloatTensor:$k,
                       Gpt_FloatTensor:$v, Gpt_FloatTensor:$result,
                       Gpt_StatTensor:$lse, I64Attr:$heads, UnitAttr:$causal);
  let results = (outs Gpt_FloatTensor:$q_grad, Gpt_FloatTensor:$k_grad,
                      Gpt_FloatTensor:$v_grad);
  let assemblyFormat = [{
    $layer $result_grad `,` $q `,` $k `,` $v `,` $result `,` $lse `heads` `=`
    $heads (`causal` $causal^)? attr-dict `:` type($q) `,` type($lse)
  }];
}

def Gpt_CrossEntropyGradOp : Gpt_LayerOp<"cross_entropy_grad",
    [AllTypesMatch<["logits", "logits_grad"]>]> {
  let summary = "gradient of gpt.cross_entropy with respect to the logits";
  let description = [{
    `(softmax - onehot(target)) * loss_grad / count` over the first
    `vocab_size` columns of counted rows; exactly zero on padding columns and
    on rows whose target is `ignore_index`.
  }];
  let arguments = (ins StrAttr:$layer, Gpt_LossTensor:$loss_grad,
                       Gpt_FloatTensor:$logits, Gpt_IdTensor:$targets,
                       Gpt_StatTensor:$lse, I64Attr:$vocab_size,
                       DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Gpt_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $layer $loss_grad `,` $logits `,` $targets `,` $lse attr-dict `:`
    type($logits) `,` type($targets) `,` type($lse)
  }];
}

def Gpt_EmbeddingGradOp : Gpt_LayerOp<"embedding_grad"> {
  let summary = "gradient of gpt.embedding with respect to its table";
  let description = [{
    A zero table of the result's shape into which each row of `result_grad`
    is added at the row its id selects (repeated ids add up).
  }];
  let arguments = (ins StrAttr:$layer, Gpt_FloatTensor:$result_grad,
                       Gpt_IdTensor:$ids);
  let results = (outs Gpt_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $layer $result_grad `,` $ids attr-dict `:` type($result_grad) `,`
    type($ids) `->` type($table_grad)
  }];
}

def Gpt_AccumulateGradOp : Gpt_Op<"accumulate_grad", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "adds a gradient into a parameter's gradient buffer";
  let description = [{
    Every parameter has a persistent gradient buffer; a training step adds
    its gradients into it, so several micro-steps accumulate before the
    optimizer consumes and clears it. A tied parameter accumulates into the
    buffer of the parameter it is tied to.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Gpt_FloatTensor:$grad);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($grad)";
}

//===----------------------------------------------------------------------===//
// Data parallelism (made by gpt-data-parallel)
//===----------------------------------------------------------------------===//

def Gpt_GradBucketReadyOp : Gpt_Op<"grad_bucket_ready", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a bucket of gradients is final: start summing it across ranks";
  let description = [{
    Inserted by gpt-data-parallel right after the last `gpt.accumulate_grad`
    into any of the bucket's parameters, so the bucket's all-reduce runs
    while the rest of the backward computes. Only on the last micro-step of
    an optimizer step (the runtime knows) and only with more than one rank
    does it communicate; otherwise it does nothing. The parameters' gradient
    buffers must be contiguous (consecutive parameters). The bucket is cut
    into one slice per rank (ceil(elements / ranks) each, the last ones
    shorter or empty). With `scatter` (ZeRO-1) it is a reduce-scatter: each
    rank receives the sums of its own slice only, which is all its shard of
    the optimizer reads (`gpt.adamw ... sharded`). With `fp8` the bucket
    travels as E4M3 with one scale shared by all ranks (from a
    max-all-reduce of their amaxes): each slice's codes go to its owner,
    which sums them in f32; without `scatter` the sums then go back to every
    rank as E4M3 under a second shared scale.
  }];
  let arguments = (ins I64Attr:$bucket, FlatSymbolRefArrayAttr:$params,
                       UnitAttr:$fp8, UnitAttr:$scatter);
  let assemblyFormat =
      "$bucket $params (`fp8` $fp8^)? (`scatter` $scatter^)? attr-dict";
}

def Gpt_GradSyncOp : Gpt_Op<"grad_sync", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "waits until every bucket's all-reduce of this step is done";
  let arguments = (ins I64Attr:$buckets);
  let assemblyFormat = "$buckets attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Step inputs and the optimizer (made by gpt-autodiff and gpt-optimizer)
//===----------------------------------------------------------------------===//

def Gpt_StepScalarKind : I32EnumAttr<"StepScalarKind",
    "a scalar the runtime sets before each call of an entry point", [
    I32EnumAttrCase<"LossScale", 0, "loss_scale">,
    I32EnumAttrCase<"LearningRate", 1, "learning_rate">,
    I32EnumAttrCase<"Step", 2, "step">]> {
  let cppNamespace = "::gptc::gpt";
}

def Gpt_StepScalarOp : Gpt_Op<"step_scalar", [MemoryEffects<[MemRead]>]> {
  let summary = "reads a per-step scalar set by the runtime";
  let description = [{
    `loss_scale` seeds the backward (1 / gradient-accumulation steps, so the
    accumulated gradient is the mean over micro-steps); `learning_rate` comes
    from gptrun's schedule; `step` counts optimizer steps from 1.
  }];
  let arguments = (ins Gpt_StepScalarKind:$kind);
  let results = (outs Gpt_LossTensor:$result);
  let assemblyFormat = "$kind attr-dict";
}

def Gpt_GradNormOp : Gpt_Op<"grad_norm", [MemoryEffects<[MemRead]>]> {
  let summary = "global L2 norm of every parameter's accumulated gradient";
  let description = [{
    With `sharded` (ZeRO-1) each rank squares only the gradient slices it
    owns (the only ones a reduce-scatter summed) and the partial sums are
    added across ranks, so every rank gets the same global norm.
  }];
  let arguments = (ins UnitAttr:$sharded);
  let results = (outs Gpt_LossTensor:$result);
  let assemblyFormat = "(`sharded` $sharded^)? attr-dict";
}

def Gpt_ClipScaleOp : Gpt_Op<"clip_scale", [Pure]> {
  let summary = "min(1, max_norm / (norm + 1e-6)): the factor that clips gradients";
  let arguments = (ins Gpt_LossTensor:$norm, F64Attr:$max_norm);
  let results = (outs Gpt_LossTensor:$result);
  let assemblyFormat = "$norm `max_norm` `=` $max_norm attr-dict";
  let hasVerifier = 1;
}

def Gpt_AdamWOp : Gpt_Op<"adamw", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one AdamW update of a parameter from its accumulated gradient";
  let description = [{
    PyTorch's AdamW (bias-corrected moments, decoupled weight decay) on the
    fp32 master copy of `param`, with the gradient multiplied by
    `grad_scale` (gradient clipping). The moments are persistent fp32 state
    of the parameter. With `sharded` (ZeRO-1) a rank updates only the
    elements whose gradient slice it owns, and keeps moments for those
    only; `gpt.gather_params` then hands every rank the others' updates.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Gpt_LossTensor:$lr,
                       Gpt_LossTensor:$step, Gpt_LossTensor:$grad_scale,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay, UnitAttr:$sharded);
  let assemblyFormat = [{
    $param `lr` `=` $lr `step` `=` $step `grad_scale` `=` $grad_scale
    (`sharded` $sharded^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Gpt_GatherParamsOp : Gpt_Op<"gather_params", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "all-gathers the parameter slices each rank updated (ZeRO-1)";
  let description = [{
    Inserted by gpt-data-parallel with `zero=1` after the sharded AdamW
    updates: every rank sends the parameter elements it owns and receives
    everyone else's, so all ranks start the next step with the same
    weights. With one rank it does nothing.
  }];
  let assemblyFormat = "attr-dict";
}

def Gpt_ZeroGradsOp : Gpt_Op<"zero_grads", [MemoryEffects<[MemWrite]>]> {
  let summary = "clears every gradient buffer for the next accumulation";
  let assemblyFormat = "attr-dict";
}

#endif // GPTC_DIALECTS_GPT_OPS_TD
