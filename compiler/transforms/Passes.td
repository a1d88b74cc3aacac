// Every gptc pass, one per file in this folder (flags gpt-*, fp8-*, rt-*).
#ifndef GPTC_COMPILER_TRANSFORMS_PASSES_TD
#define GPTC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GptSpecialize : Pass<"gpt-specialize", "::mlir::ModuleOp"> {
  let summary = "Fixes the micro-batch size (and optionally a shorter sequence length)";
  let description = [{
    Models are written with a dynamic leading (batch) dimension; memory
    planning and code generation need static shapes. This pass gives every
    function argument's dynamic dimensions the size `micro-batch`, with
    `seq` sets the sequence length of the [batch, seq] token arguments and
    of the position ids (`gpt.arange` of the model's length) to a value no
    larger than the model's context length, and recomputes the result shape
    of each op from its operands. Run it before gpt-autodiff: it knows the
    forward ops' shape rules only. gptc runs it first, with `micro-batch`
    from `--micro-batch` (default: the model's `gpt.config` micro_batch,
    else 4) and `seq` from `--seq`.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
  let options = [
    Option<"microBatch", "micro-batch", "int64_t", "0",
           "Sequences per micro-step (B in B x T tokens); required, > 0">,
    Option<"seq", "seq", "int64_t", "0",
           "Tokens per sequence (T), at most the model's context length; 0 "
           "keeps the model's">,
  ];
}

def GptAutodiff : Pass<"gpt-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the train_step, eval_step and logits entry points from @forward";
  let description = [{
    Takes the model's `@forward` function, whose results are tagged
    `gpt.output = "loss"` and `gpt.output = "logits"`, and replaces it with:

    - `@train_step(tokens, targets) -> loss`: the forward pass in its
      training form (ops that save statistics for their backward return
      them), then the backward pass built from each op's gradient rule in
      reverse order, seeded with the runtime's loss scale
      (`gpt.step_scalar loss_scale`, 1 / accumulation steps), ending in
      `gpt.accumulate_grad` into each parameter's
      persistent gradient buffer. Accumulation is explicit so that several
      micro-steps add up before the optimizer runs; a tied parameter
      accumulates into the parameter it is tied to, so both uses are summed.
      Each accumulation comes right after the last gradient of that
      parameter, as early as the backward allows.
    - `@eval_step(tokens, targets) -> loss`: the forward pass only.
    - `@logits(tokens) -> logits`: the forward pass without the loss.

    gptc's `--recompute=gelu,layernorm` sets `recompute`.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
  let options = [
    ListOption<"recompute", "recompute", "std::string",
      "Forward ops to compute again in the backward instead of keeping their "
      "results alive between the two passes, by op name without the dialect "
      "(e.g. recompute=gelu,layernorm; a name that is no gpt op is an "
      "error). Trades compute for activation memory.">,
  ];
}

def GptOptimizer : Pass<"gpt-optimizer", "::mlir::ModuleOp"> {
  let summary = "Adds @optimizer_step: gradient clipping and AdamW on every parameter";
  let description = [{
    Appends `@optimizer_step() -> grad_norm`, which the runtime calls after
    the micro-steps of one batch: the global L2 norm of the accumulated
    gradients, the clipping factor min(1, max-grad-norm / (norm + 1e-6)),
    one `gpt.adamw` per parameter that has its own storage (tied parameters
    are updated through their target) with the learning rate and step number
    read from the runtime, and `gpt.zero_grads` for the next batch. Weight
    decay applies to parameters of rank 2 or more only (matrices and
    embeddings, not biases and norms), as in GPT-2 / nanoGPT.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"beta1", "beta1", "double", "0.9",
           "AdamW's first-moment decay">,
    Option<"beta2", "beta2", "double", "0.95",
           "AdamW's second-moment decay (0.95 as GPT-3 / nanoGPT; PyTorch's "
           "default is 0.999)">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "Decoupled weight decay of 2-D parameters">,
    Option<"maxGradNorm", "max-grad-norm", "double", "1.0",
           "Clip the global gradient norm to this; 0 disables clipping">,
  ];
}

def GptPrecision : Pass<"gpt-precision", "::mlir::ModuleOp"> {
  let summary = "Chooses the storage precision of activations and GEMM inputs";
  let description = [{
    With `precision=bf16` (gptc's default) every activation and activation
    gradient of train_step, eval_step and logits is stored in bf16 and every
    parameter a matmul or an embedding reads is rounded to bf16 first (its
    "compute copy"), while kernels compute and accumulate in f32, parameters
    and their gradient buffers and AdamW moments stay f32 (master weights),
    and per-row statistics and the loss stay f32. The pass inserts
    `gpt.cast` to bf16 after each producer and back to f32 in front of each
    consumer, so the f32 copies live only around one op and the memory plan
    sees bf16 buffers: on the CPU this is a bit-exact emulation of bf16
    storage. `precision=fp32` leaves the module as it is (parity tests).
    Runs after gpt-autodiff and gpt-optimizer, before rt-bufferize. gptc
    runs it with `precision=fp32` for `--precision=fp32` and with bf16 for
    every other `--precision` (bf16 and the FP8 policies).
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "fp32 or bf16 (activation and GEMM-input storage)">,
  ];
}

def Fp8Precision : Pass<"fp8-precision", "::mlir::ModuleOp"> {
  let summary = "Rewrites eligible GEMMs into FP8 with their scale computation";
  let description = [{
    `policy=fp8-tensorwise`: every gpt.matmul of train_step, eval_step and
    logits (forward and both backward GEMMs) whose M, N and K are multiples
    of 16 becomes, per operand, `fp8.amax` -> `fp8.scale_from_amax`
    (scale = fp8_max / max(amax, eps), current "just-in-time" scaling) ->
    `fp8.quantize`, then one `fp8.scaled_matmul` (f32 accumulation) and, if
    the matmul had one, the bias added after it. Formats are "hybrid": E4M3
    for activations and weights, E5M2 for the incoming gradient of a
    backward GEMM (marked `gpt.grad_operand` by gpt-autodiff). GEMMs left
    out stay as they are, with the reason in a `fp8.skipped` attribute.
    `policy=bf16` changes nothing. Run it after gpt-optimizer and before
    gpt-precision.

    The pass decides which GEMMs can run in FP8 (not excluded, included if
    `include` is given, every dimension a multiple of 16, M*N*K at least
    `min-mnk`); the policy, a `gptc::PrecisionPolicy` (compiler/precision,
    built in or registered by a plugin that gptc --load-pass-plugin
    loaded), decides per operand: FP8 with a format and current, delayed
    or rowwise scaling, or high precision with a reason. A GEMM runs in FP8
    only if both of its operands do. Rowwise (`policy=fp8-rowwise`) gives
    each operand a vector of power-of-two scales along the GEMM's
    non-contracted dimension (`fp8.amax_rows` -> `fp8.row_scales` ->
    `fp8.quantize_rows`; a's M rows, b's N columns), which the
    `fp8.scaled_matmul` divides out per row and column of its result.

    Why `min-mnk` is off by default: FP8 saves at most half of the GEMM's
    compute, ~M*N*K / 790e12 s on an H200 (790 TFLOP/s measured bf16,
    FP8 twice the rate), while current scaling reads each bf16 operand
    twice (amax, quantize) and writes it once in FP8, ~5 bytes per element,
    5 * (M*K + K*N) / 4.3e12 s (4.3 TB/s) -- plus six extra kernels. FP8 can
    only pay when M*N*K / (M*K + K*N) > ~900, i.e. beyond ~6e9 (1840^3) for
    a square GEMM; every GEMM of gpt2-tiny (at most 1.6e9, most 4e6 to
    1.7e7) is below that, yet the end-to-end tests train gpt2-tiny in FP8
    to compare its numerics with bf16, and on the CPU (emulated FP8) no
    threshold gains. So the filter is opt-in, with the number to use on a
    GPU given in the option.

    The built-in policies, as gptc's `--precision` names them:
    `fp8-tensorwise` (every eligible GEMM, forward and both backward, with
    per-tensor current scaling, E4M3 forward / E5M2 gradients);
    `fp8-delayed` (scales from an amax history per tensor, kept in the
    checkpointed FP8 state: `fp8.state`, `fp8.state_scale`,
    `fp8.state_update`; `weight-scaling=current` scales each weight from
    its own amax instead, so with rt-cache-weight-casts it is cast once per
    optimizer step rather than every micro-step); `fp8-rowwise` (a
    power-of-two scale per row of each operand). Forward FP8 GEMMs use
    Hopper's fast accumulation unless `fast-accum=false`. gptc spells the
    options `--precision`, `--fp8-history`, `--fp8-amax-reduction`,
    `--fp8-margin`, `--fp8-weight-scaling`, `--fp8-exclude=lm_head`,
    `--fp8-include='h.*.mlp.*'`, `--fp8-min-mnk=N` and `--fp8-fast-accum`;
    `--load-pass-plugin=LIB.so` adds the policies a plugin registers
    (docs/writing-a-precision-policy.md). With `--precision=fp32` gptc
    does not run this pass.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect", "::gptc::fp8::Fp8Dialect"];
  let options = [
    Option<"policy", "policy", "std::string", "\"fp8-tensorwise\"",
           "bf16 (no FP8), fp8-tensorwise, fp8-delayed, fp8-rowwise or a policy a loaded "
           "plugin registered">,
    Option<"historyLength", "history", "int64_t", "16",
           "fp8-delayed: amaxes kept per tensor (TransformerEngine's default "
           "amax_history_len is 1024; 16 reacts faster on short runs)">,
    Option<"amaxReduction", "amax-reduction", "std::string", "\"max\"",
           "fp8-delayed: how the history becomes one amax: max (robust to "
           "a single small step, TransformerEngine's default) or "
           "most_recent (follows the tensor closely)">,
    Option<"margin", "margin", "int64_t", "0",
           "Scales are divided by 2^margin, leaving headroom above the amax "
           "(for operands whose policy sets no margin of its own); 0..31, "
           "since beyond 31 even the amax codes to zero">,
    Option<"weightScaling", "weight-scaling", "std::string", "\"policy\"",
           "How parameter operands (weights, looking through reshapes, "
           "transposes and casts) are scaled where the policy chose delayed "
           "scaling: policy (as it chose: an amax history per weight, so "
           "the cast is redone every micro-step as the history moves) or "
           "current (the weight's own amax, as fp8-tensorwise: exact, and "
           "with rt-cache-weight-casts cast once per optimizer step instead "
           "of every micro-step; activations and gradients keep their "
           "histories)">,
    ListOption<"exclude", "exclude", "std::string",
               "Layers that stay in bf16, as names or globs ('*' any text, "
               "'?' one character), e.g. exclude=lm_head,h.0.*">,
    ListOption<"include", "include", "std::string",
               "Only these layers may go FP8 (same names or globs as "
               "exclude, which still applies), e.g. include=h.*.mlp.*; "
               "empty: every layer">,
    Option<"minMnk", "min-mnk", "int64_t", "0",
           "GEMMs with M*N*K below this stay bf16 as too small to gain. 0 "
           "(default) keeps all: the FP8-vs-bf16 tests need gpt2-tiny's "
           "4e6..1.6e9 GEMMs in FP8. On an H200, FP8 only pays once the "
           "GEMM's saved compute (~M*N*K / 790e12 s) beats casting its "
           "operands (~5 bytes x (M*K + K*N) / 4.3e12 s): start from "
           "min-mnk=6000000000 (a 1840^3 GEMM) and compare tokens/s">,
    Option<"fastAccum", "fast-accum", "bool", "true",
           "Mark the forward FP8 GEMMs fast_accum: on Hopper they accumulate "
           "without periodic promotion to f32, as TransformerEngine and "
           "torchao do (faster, slightly less accurate). The backward's "
           "GEMMs always accumulate precisely. false: precise everywhere, "
           "to compare losses">,
  ];
}

def Fp8FuseAmax : Pass<"fp8-fuse-amax", "::mlir::ModuleOp"> {
  let summary = "Computes each amax in the kernel that produces its tensor";
  let description = [{
    An `fp8.amax` over a tensor that a fusable op produced -- a storage cast
    (bf16 activations, the common case), layernorm, gelu, the GELU gradient
    (the output gradient of mlp.fc), add, or a GEMM without bias -- looking
    through exact widening casts and row-preserving
    reshapes, is replaced by the amax result of an `fp8.fused` that wraps
    the producer: its kernel reduces the output as it writes it, so the
    separate read of the whole tensor disappears. Several amaxes of one
    tensor share one. Amaxes of tensors made elsewhere (parameters, which
    the optimizer step writes) stay standalone. Numerics do not change. Run
    after gpt-precision and before fp8-fuse-cast and rt-bufferize (gptc
    runs it after gpt-bf16-gemm and gpt-bf16-kernels, so the producer that
    writes the bf16 activation itself takes its amax). `gptc
    --fp8-fusion=false` leaves this pass out, with fp8-fuse-cast,
    rt-fuse-amax and rt-fuse-producer-cast: separate kernels, bit-identical
    results.
  }];
  let dependentDialects = ["::gptc::fp8::Fp8Dialect"];
}

def Fp8FuseCast : Pass<"fp8-fuse-cast", "::mlir::ModuleOp"> {
  let summary = "Writes the FP8 copy of a tensor from the kernel that produces it";
  let description = [{
    Under delayed scaling (`fp8.quantize` whose scale is an
    `fp8.state_scale`) the scale is known before the tensor exists, so the
    cast joins the producer's `fp8.fused` (made by fp8-fuse-amax, or made
    here): one kernel writes the output, its amax and its FP8 copy. When the
    GEMM would read a 2-D operand in the other layout (a transposed, or b
    not transposed), the fused kernel writes the copy transposed and the
    GEMM's flag flips, so every fused GEMM operand is K-contiguous as
    Hopper's FP8 tensor cores need. Current (tensorwise) scaling needs the
    amax first and is left alone. Numerics do not change.
    `gptc --fp8-fusion=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::fp8::Fp8Dialect"];
}

def Fp8TransposeCasts : Pass<"fp8-transpose-casts", "::mlir::ModuleOp"> {
  let summary = "Writes FP8 GEMM operands in the layout Hopper's tensor cores read";
  let description = [{
    Hopper's FP8 GEMMs read both operands K-contiguous ("TN": a as M x K,
    b as N x K). The backward's GEMMs read the other way: grad_input's
    weight (b not transposed) and both operands of grad_weight (a
    transposed, b a K x N activation). Without this pass the runtime
    transposes such an operand into scratch before every GEMM: one more
    read and write of it. Here an `fp8.quantize` (or rowwise
    `fp8.quantize_rows`) of a 2-D tensor whose only user is such an operand
    gets `transpose` -- its kernel writes the codes transposed at no extra
    cost -- and the GEMM's flag flips. Casts that
    fp8-fuse-cast moved into their producer are transposed there already.
    Numerics do not change. Run after fp8-fuse-cast and before
    fp8-reuse-scales and rt-bufferize. With it every FP8 GEMM is "TN".
    `gptc --fp8-transpose-casts=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::fp8::Fp8Dialect"];
}

def Fp8ReuseScales : Pass<"fp8-reuse-scales", "::mlir::ModuleOp"> {
  let summary = "Computes each tensor's amax and FP8 scale once per entry point";
  let description = [{
    fp8-precision scales each GEMM operand on its own, so a tensor that two
    FP8 GEMMs read -- a weight (the forward GEMM and its grad_input), an
    activation or gradient (grad_input and grad_weight) -- gets its
    `fp8.amax` and `fp8.scale_from_amax` twice. With current scaling each
    weight amax is a full read of the f32 master weight. This pass keeps
    the first of each set of identical amax / scale ops in a block (same
    input, layer and recipe) and drops the rest. The casts stay separate:
    they may differ in layout (fp8-transpose-casts), and merging them would
    keep an FP8 copy alive from the forward to the backward. Numerics and
    the per-cast FP8 statistics do not change.
    `gptc --fp8-reuse-scales=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::fp8::Fp8Dialect"];
}

def GptBf16Gemm : Pass<"gpt-bf16-gemm", "::mlir::ModuleOp"> {
  let summary = "Lets each bf16 GEMM read its bf16 operands directly";
  let description = [{
    gpt-precision stores activations and GEMM inputs in bf16 and widens them
    back to f32 (`gpt.cast`) in front of every consumer. A `gpt.matmul`
    whose two operands are both such widenings of bf16 values gets those
    bf16 values instead (its result stays f32: bf16 products accumulate in
    f32), and casts left without users are erased. rt-bufferize then calls
    the runtime's GEMM with bf16 operands (`gptrt_gemm`, a_dtype bf16:
    tensor cores on a GPU)
    on the stored bf16 buffers, without an f32 copy of either operand in
    between. Widening is exact, so results are bit for bit those of the f32
    GEMM on the widened values (the CPU kernel computes exactly that).
    A bias stays f32 and is added in the GEMM's epilogue. Such a GEMM
    whose f32 result is only narrowed to bf16 (`gpt.cast`) gets a bf16
    result instead: the runtime rounds the f32 sum (bias included) once, as
    the cast did. So does an FP8 GEMM (`fp8.scaled_matmul` without an amax
    result): cuBLASLt writes its D in bf16, the rowwise kernel its
    unscaled quotient. Runs after gpt-precision and
    the fp8 passes, before rt-bufferize; a module without bf16 storage is
    left as it is. `gptc --bf16-gemm=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
}

def GptBf16Kernels : Pass<"gpt-bf16-kernels", "::mlir::ModuleOp"> {
  let summary = "Lets elementwise kernels read and write bf16 storage directly";
  let description = [{
    gpt-precision keeps every activation in bf16 and gives each consumer an
    f32 widening (`gpt.cast`), so an elementwise op costs three passes over
    memory where one would do. For the ops whose runtime kernel takes a
    dtype per operand -- `gpt.add`, `gpt.gelu`, `gpt.gelu_grad`,
    `gpt.layernorm`, `gpt.layernorm_grad`, `gpt.reduce_leading` (bias
    gradients), `gpt.cross_entropy` (its logits), `gpt.embedding_grad`,
    `gpt.accumulate_grad`, and `fp8.amax`, `fp8.quantize`, `fp8.amax_rows`
    and `fp8.quantize_rows` (their input) -- this pass hands each operand
    that is a widening the bf16 value itself, and gives each result whose
    only user is a narrowing to bf16 a bf16 type instead (the narrowing
    goes). The kernels compute in f32: they widen as they read (exact) and
    round once as they write, as the casts did, so results are bit for bit
    those without the pass.

    A reshape of a widening first becomes a widening of a bf16 reshape, so
    flattened gradients are caught too. `gpt.split`, `gpt.concat` and
    `gpt.embedding` (copies), `gpt.cross_entropy_grad` (logits and their
    gradient) and `gpt.attention` and `gpt.attention_grad` (one dtype for
    all their activations; the log-sum-exp stays f32) move to bf16 whole
    when every such input is a widening and every such result is only
    narrowed. Ops inside `fp8.fused` keep their form (their kernels have
    their own ABI). Runs after gpt-bf16-gemm, before rt-bufferize; `gptc
    --bf16-kernels=false` leaves it out.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
}

def GptDataParallel : Pass<"gpt-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Sums gradients across ranks in buckets, overlapped with the backward";
  let description = [{
    Groups the parameters of `train_step` into buckets of at most
    `bucket-mb` MiB of f32 gradient, in the order the backward finishes
    them, each bucket a run of consecutive parameters (one contiguous range
    of the grads arena), and inserts `gpt.grad_bucket_ready` right after
    the last `gpt.accumulate_grad` of each bucket and one `gpt.grad_sync`
    before the return. At run time, on the last micro-step of an optimizer
    step with more than one rank, each bucket's all-reduce starts on a
    communication thread while the backward goes on; `grad_sync` waits for
    all of them. With one rank, or on other micro-steps, both do nothing,
    so the same artifact runs anywhere. `bucket-mb=0` inserts nothing: the
    runtime then sums the whole gradient arena after the step.

    `zero=1` (ZeRO-1, as llm.c does it) shards the optimizer: each bucket is
    reduce-scattered (`scatter`) instead of all-reduced, each rank computes
    the gradient norm from its slices (`gpt.grad_norm sharded`, partial sums
    added across ranks), runs AdamW on its slices only and keeps AdamW
    moments for those only (`gpt.adamw ... sharded`: 1/ranks of the
    optimizer memory), and `gpt.gather_params` all-gathers the updated
    parameters before the gradients are cleared. Needs gpt-optimizer to
    have run, buckets (`bucket-mb` > 0), f32 gradient communication, and a
    gradient for every parameter. Checkpoints hold the whole optimizer
    state, as without ZeRO.

    gptc runs it right after gpt-optimizer, with `bucket-mb` from
    `--grad-bucket-mb`, `grad-comm` from `--grad-comm` and `zero` from
    `--zero`; `gptc --report` lists the buckets.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
  let options = [
    Option<"gradComm", "grad-comm", "std::string", "\"f32\"",
           "f32 (exact sums) or fp8: each bucket sent as E4M3 with a scale "
           "shared by all ranks (max-all-reduce of the amaxes), a quarter of "
           "the bytes, summed in f32 on arrival (FP8-LM / MS-AMP style)">,
    Option<"bucketMb", "bucket-mb", "double", "25",
           "Largest bucket in MiB of f32 gradients (PyTorch DDP's default "
           "bucket_cap_mb is 25); smaller buckets start communicating "
           "earlier but pay more per-message latency; 0 disables the pass; "
           "at most 1048576 (1 TiB)">,
    Option<"zero", "zero", "int", "0",
           "ZeRO stage: 0 all-reduces gradients and every rank runs the whole "
           "optimizer; 1 reduce-scatters them, shards AdamW and its moments "
           "across ranks and all-gathers the parameters (less optimizer "
           "memory per rank, same result up to the norm's summation order)">,
  ];
}

def RtBufferize : Pass<"rt-bufferize", "::mlir::ModuleOp"> {
  let summary = "Lowers the gpt entry points to rt: buffers, kernel calls, bindings";
  let description = [{
    Lays out the persistent state (each parameter's fp32 value, gradient and
    AdamW moments, in parameter order, so that all gradients form one
    contiguous block the optimizer can norm and clear in one call), replaces
    gpt.param by rt.param, and rewrites every entry point into a function
    without arguments: token ids and targets become views of the inputs
    arena bound with `rt.bind input`, each tensor an `rt.alloc` (placed later
    by rt-plan-memory), each gpt op one or more `rt.kernel` calls with the
    constants of the runtime's C ABI (runtime/abi/gptrt.h), and each result
    an `rt.bind output` named after its gpt.output tag. Needs static shapes
    (run gpt-specialize first).
  }];
  let dependentDialects = ["::gptc::rt::RtDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256",
           "Byte alignment of every buffer in the persistent arenas">,
  ];
}

def RtFuseGemmEpilogue : Pass<"rt-fuse-gemm-epilogue", "::mlir::ModuleOp"> {
  let summary = "Folds GELU, its gradient and biases into the GEMMs beside them";
  let description = [{
    Runs after rt-bufferize, before rt-plan-memory. Each fusion gives the
    `gemm` call one of its epilogues (an optional buffer of gptrt_gemm,
    runtime/abi/gptrt_kernels.def). A bf16 `gemm` with a bias whose result
    is next touched by a `gelu_fwd` reading it takes the GELU epilogue: it
    writes the pre-activation (`gelu_pre`, which the backward keeps) and
    the GELU (`c`); a bf16 `gemm` whose result only a `gelu_bwd` reads
    takes the GELU-gradient epilogue, reading the saved pre-activation
    (`dgelu_pre`), and the product's buffer disappears. The fused call
    takes the GEMM's place: the GELU's output is defined there (its rt.alloc
    moves up) and must not be touched in between, the pre-activation must
    not change in between, and only contiguous results (batch 1 or
    stride_c = m * n) are fused. On the CPU the fused kernels run the two
    kernels they replace, with the same numbers; on a GPU cuBLASLt computes
    the GELU, or its gradient, in the GEMM's epilogue (gptrt.h). Likewise
    a weight-gradient bf16 `gemm` (batch 1, trans_a: a is the output
    gradient stored tokens x features) and the `reduce_rows` of the same
    gradient after it (the bias gradient) become one `gemm` writing it as
    `dbias` (cuBLASLt's BGRADB epilogue on a GPU). And an FP8 `gemm`
    (tensorwise or rowwise) whose result only the bias `add` after it reads
    (an f32 bias broadcast over the rows, the same dtype in and out) takes
    the `bias` and writes the sum (cuBLASLt's BIAS epilogue in the FP8 GEMM
    on a GPU; for rowwise scales, the GEMM's unscaling pass, with the two
    kernels' roundings); the product's buffer disappears. `gptc --gemm-epilogues=false` leaves this pass
    out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fusedGelu", "fused-gelu", "GEMMs that took the GELU after them">,
    Statistic<"fusedGeluGrad", "fused-gelu-grad",
              "GEMMs that took the GELU gradient after them">,
    Statistic<"fusedBiasGrad", "fused-bias-grad",
              "weight-gradient GEMMs that took the bias gradient">,
    Statistic<"fusedFp8Bias", "fused-fp8-bias",
              "FP8 GEMMs that took the bias add after them">,
  ];
}

def RtFuseAddLayerNorm : Pass<"rt-fuse-add-layernorm", "::mlir::ModuleOp"> {
  let summary = "Fuses the residual adds with their layernorms, forward and backward";
  let description = [{
    Runs after rt-bufferize, before rt-plan-memory (and before rt-fuse-amax
    and rt-fuse-grad-accumulation, which know the kernels it makes).

    Forward: an `add` (without broadcast) whose result is next touched by
    the `layernorm_fwd` reading it -- its amax / cast epilogue, if any,
    comes along -- becomes one `add_layernorm_fwd` (`+amax`, `+cast`)
    where the layernorm was: it still stores the sum (the residual
    stream goes on), and on a GPU computes the row statistics in the same
    pass. The add's operands must not be written in between.

    Backward: a `layernorm_bwd` whose dx (an rt.alloc of rows x width) is
    read by nothing but one `add` (without broadcast) into the residual
    stream's gradient -- or that add with its epilogue (`add+amax` /
    `add+cast`) -- becomes one `layernorm_bwd_add` (`+amax`, `+cast`) where
    the add was, as llm.c's layernorm backward adds into the residual
    gradient: dx is never stored or read back, and its buffer goes. The
    layernorm's inputs must not be written, nor its dw and db touched, in
    between.

    On the CPU each fused kernel runs the two kernels it replaces; a GPU
    rounds as they do, so the numbers are the same bit for bit.
    `gptc --fuse-add-layernorm=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "adds fused into their layernorm">,
    Statistic<"fusedBackward", "fused-backward",
              "layernorm backwards fused with the add of their dx">,
  ];
}

def RtFuseClassifier : Pass<"rt-fuse-classifier", "::mlir::ModuleOp"> {
  let summary = "Fuses the cross-entropy forward and backward into one kernel";
  let description = [{
    Runs after rt-bufferize, before rt-plan-memory. In train_step a
    `cross_entropy_fwd` (logits, targets -> loss, lse) whose lse is next
    read by the `cross_entropy_bwd` of the same logits and targets becomes
    one `cross_entropy_fwd_bwd` where the backward was, writing the loss,
    the lse and the logits' gradient: on a GPU each row's log-sum-exp and
    then its gradient in one pass, as llm.c's fused classifier does, so the
    logits -- the largest activation, tokens x padded vocabulary -- are
    read from memory once, not twice. Between the two kernels nothing may
    write the logits or targets or touch the loss and lse (only buffer
    definitions and unrelated kernels are allowed). On the CPU the fused
    kernel runs the two kernels, with the same numbers.
    When an `amax` of the whole gradient follows (an FP8 lm_head reads
    it), it becomes `cross_entropy_fwd_bwd+amax`: on a GPU the amax is
    taken as the gradient is stored, sparing a read of it. The gradient
    must not be written, nor the amax's buffer touched, in between.
    `gptc --fuse-classifier=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "cross-entropy forward/backward pairs fused">,
    Statistic<"amaxFused", "amax-fused",
              "amaxes of the logits' gradient taken by the fused kernel">,
  ];
}

def RtFuseDualCast : Pass<"rt-fuse-dual-cast", "::mlir::ModuleOp"> {
  let summary = "Makes both FP8 copies of an output gradient in one read";
  let description = [{
    Runs after rt-bufferize, before rt-plan-memory. The backward casts each
    output gradient twice with one scale: row-major for the grad_input GEMM
    (`quantize_fp8`) and transposed for grad_weight
    (`quantize_fp8_transposed`, from fp8-transpose-casts). The pair -- the
    same buffer (through reshapes), the same scale Value, format and dtype
    -- becomes one `quantize_fp8_dual` where the first cast was, which
    reads the gradient once and writes both copies. The gradient must not
    change in between, and only GEMMs reading the first copy may lie
    between the two -- unless nothing but the transposed cast reads the
    buffer after the first: a forward activation that the backward reads
    only to cast it for grad_weight (a layernorm's or GELU's output under
    current scaling) is then cast both ways in the forward, its FP8
    transposed copy (one byte an element) saved for the backward instead
    of its bf16 values (two), one read and one launch fewer; one that the
    backward reads again (attention's output, for attention's backward)
    keeps its two casts rather than an FP8 copy alive through the whole
    step as well. Each copy keeps its statistics slot (the fused
    kernel's `rt.fp8_stat` is then an array, one entry per output).
    When the bias gradient of the same GEMM (`reduce_rows` of the whole
    gradient, same rows, columns and dtype) follows, with the gradient
    unchanged in between, it joins too: `quantize_fp8_dual_bgrad` sums the
    columns from the same read (on a GPU the 32-row chunk sums of
    gptrt_reduce_rows's tree come from the cast's tiles). A transposed cast
    left alone -- delayed scaling, where the two casts' scales differ --
    takes the bias gradient the same way (`quantize_fp8_transposed_bgrad`),
    as does rowwise scaling's transposed cast of an output gradient, a
    scale per column (`quantize_rows_transposed_bgrad`).
    `gptc --fuse-dual-casts=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "pairs of casts made in one read">,
    Statistic<"biasGradients", "bias-gradients",
              "bias gradients summed by the dual cast">,
  ];
}

def RtFuseDelayedDualCast
    : Pass<"rt-fuse-delayed-dual-cast", "::mlir::ModuleOp"> {
  let summary = "Makes both FP8 copies of a delayed-scaling tensor in one read";
  let description = [{
    Runs after rt-fuse-cast-scale and rt-batch-fp8-state-updates, before
    rt-plan-memory. Delayed scaling gives each GEMM operand its own amax
    history, so rt-fuse-dual-cast (which pairs casts of one scale) leaves
    a tensor's row-major cast (`state_quantize_fp8`) and its transposed
    one (`state_quantize_fp8_transposed`, or `_bgrad` with the bias
    gradient) apart. Once rt-batch-fp8-state-updates has given states
    updated from one amax one history and moved the updates to the end of
    the step, both casts of a weight (forward and grad_input) and of an
    output gradient (grad_input and grad_weight) read the same history and
    make the same scale. Such a pair -- the same bytes of x and of the
    history, format, dtype and scale recipe, neither written in between --
    becomes one `state_quantize_fp8_dual` (`_dual_bgrad`) where the first
    cast was, and the GEMMs that read the second cast's scale read the
    first's. As in rt-fuse-dual-cast, the transposed copy is made early
    only where that holds no extra buffer, or where x is a parameter the
    entry point never writes: a weight's transposed FP8 copy (one byte a
    parameter) is then held from the forward to the backward instead of
    reading the f32 weight a second time. Each copy keeps its statistics
    slot (`rt.fp8_stat` becomes an array). The numbers do not change.
    `gptc --fuse-dual-casts=false` leaves this pass out too.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "pairs of delayed-scaling casts made in one read">,
  ];
}

def RtFuseAmax : Pass<"rt-fuse-amax", "::mlir::ModuleOp"> {
  let summary = "Lets a backward kernel take the amax of the gradient it stores";
  let description = [{
    Runs after rt-bufferize, before rt-plan-memory. fp8-fuse-amax moves
    amaxes into the forward producers and the GELU and residual-add
    gradients; the kernels rt-bufferize emits for other backward ops get
    theirs here: when the first `amax` after such a kernel reads the whole
    of its output (in its dtype), that output unchanged in between, the
    kernel becomes its `+amax` form (an amax epilogue), which takes the amax
    as it stores the output (on a GPU: in the same pass, instead of a second
    read; on the CPU the kernel and then gptrt_amax, the same numbers).
    Today: `layernorm_bwd` (its dx: the gradient of the last residual
    stream, the FP8 output gradient of the last block's projection) and
    `layernorm_bwd_add` (its sum, where the add had no epilogue). The
    kernels other rt fusions create take theirs in those passes
    (rt-fuse-classifier, rt-fuse-qkv-attention). With those, no separate
    amax kernel is left in an fp8-tensorwise train_step.
    `gptc --fp8-fusion=false` leaves this pass out, with fp8-fuse-amax.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "amaxes taken by the kernel before them">,
  ];
}

def RtFuseProducerCast : Pass<"rt-fuse-producer-cast", "::mlir::ModuleOp"> {
  let summary = "Lets a producer made by an rt fusion cast its output to FP8 under delayed scaling";
  let description = [{
    Runs after rt-fuse-amax, before rt-fuse-cast-scale and rt-plan-memory.
    fp8-fuse-cast folds a delayed-scaling cast into the forward producers
    it knows (layernorm, GELU, residual add); the producers rt passes make
    later get theirs here. When the first kernel after a `+amax` producer
    that reads its output is a `quantize_fp8` of all of it, in its dtype,
    whose scale comes from an `fp8_state_scale` -- a scale known before the
    producer runs -- and that scale kernel can move in front of the
    producer (nothing in between writes the history or touches the scale),
    the pair becomes the producer's `+cast` form (a cast epilogue), which
    also writes the codes (row-major) as it stores the output; the cast's
    statistics slot moves with it. On a GPU the flash attention kernel
    codes its output as it writes it (the baseline attention kernels cast
    in a second pass); on the CPU it is the producer and then the cast,
    the same numbers. Today: `attention_fwd_packed+amax` (the attention
    projection's FP8 input) becomes `attention_fwd_packed+cast`.
    `gptc --fp8-fusion=false` leaves this pass out, with fp8-fuse-cast.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "casts moved into their producer">,
  ];
}

def RtFuseGradAccumulation
    : Pass<"rt-fuse-grad-accumulation", "::mlir::ModuleOp"> {
  let summary = "Lets each weight-gradient GEMM add into the f32 gradient";
  let description = [{
    Runs after the other rt fusions (it folds the bias-gradient GEMMs of
    rt-fuse-gemm-epilogue), before rt-plan-memory. A weight gradient is a
    GEMM's result that one `accumulate` then adds into the parameter's f32
    buffer in the grads arena. When the GEMM is a bf16 or FP8 `gemm` with
    no bias or GELU epilogue and a contiguous result that nothing but the
    `accumulate` reads (the whole of it, in the GEMM's dtype), and the
    gradient's range of the arena is not touched in between, the `gemm`
    writes the gradient as its `c` with c_dtype GPTRT_DTYPE_F32_ACCUMULATE,
    adding its f32 result into it directly (cuBLASLt's beta = 1
    on a GPU): one pass over the gradient instead of three, no temporary
    the size of the weight, and -- the reason TransformerEngine and
    Megatron fuse it -- no rounding of each micro-step's product to bf16
    before it is accumulated. Likewise an `embedding_bwd` becomes
    `embedding_bwd_accumulate`, which adds each token's row into the
    table's gradient: no zeroed table-sized temporary, and no pass over
    the rows no token names (most of a 50257-row vocabulary). And the small
    gradients -- each bias's (`reduce_rows`, or a `gemm`'s dbias and the db
    of the `_bgrad` FP8 casts) and each layernorm's
    weight and bias (`layernorm_bwd`, with or without its epilogue) -- are
    written straight into theirs: the output's dtype constant (or field)
    becomes
    GPTRT_DTYPE_F32_ACCUMULATE (gptrt.h), f32 added into. So unlike the
    other rt fusions this one changes the numbers, by at most those
    roundings (and the order of an embedding row's additions); `gptc
    --fuse-grad-accumulation=false` leaves this pass out. The f32
    precision's f32 `gemm` keeps its `accumulate` (nothing is rounded there);
    under gptc's defaults (bf16 storage) no `accumulate` kernel is left in
    train_step.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "weight-gradient GEMMs and embedding "
              "backwards adding into the gradient">,
    Statistic<"fusedOutputs", "fused-outputs",
              "bias and layernorm gradients added into the gradient">,
  ];
}

def RtFuseQkvAttention : Pass<"rt-fuse-qkv-attention", "::mlir::ModuleOp"> {
  let summary = "Lets attention read q, k, v packed where the qkv GEMM wrote them";
  let description = [{
    Runs after rt-bufferize, before rt-plan-memory. The qkv GEMM writes one
    [batch, seq, 3 width] buffer that rt-bufferize splits into q, k and v
    with three `copy_blocks`; the backward's dq, dk, dv are concatenated
    back with three more. When q, k and v are read only by an
    `attention_fwd` and the `attention_bwd`s of the same attention, and
    each backward's gradients only by their concat, the attention becomes
    `attention_fwd_packed` on the packed buffer and each backward
    `attention_bwd_packed` writing the packed gradient directly: six
    copies of a [batch, seq, width] activation per layer and step
    disappear, and the packed buffer stays alive instead of its three
    parts (the same bytes). It must not be written between the split and
    the last backward. On the CPU (and the GPU's baseline kernels) the
    packed kernels copy the parts as before; the flash kernels read and
    write them in place with a row stride of 3 width.
    When an `amax` of the whole attention output follows (the FP8 input of
    the attention projection), it joins the packed forward
    (`attention_fwd_packed+amax`: the flash kernel takes it as it writes
    the output; the baseline kernels run the amax after); one of the whole
    packed gradient (the qkv GEMM's FP8 output gradient) joins the packed
    backward the same way (`attention_bwd_packed+amax`: the flash kernels
    take it as they store dk, dv and dq).
    `gptc --fuse-qkv-attention=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "attentions reading q, k, v packed">,
    Statistic<"amaxFused", "amax-fused",
              "amaxes of the attention output and of the packed gradient "
              "taken by the packed kernels">,
  ];
}

def RtCacheWeightCasts : Pass<"rt-cache-weight-casts", "::mlir::ModuleOp"> {
  let summary = "Makes the parameters' bf16 and FP8 copies once per optimizer step";
  let description = [{
    Runs after the rt fusions, before rt-plan-memory. In train_step, the
    kernels that derive values from the parameters alone -- `convert` to
    bf16, and for current or rowwise FP8 scaling `amax`, `scale_from_amax`,
    `quantize_fp8` (and their `_transposed`, `_dual` and rowwise forms) -- move into
    a new entry point `@cast_weights`, in their order, identical ones made
    once. The results that train_step, eval_step or logits read live in a
    new persistent `@weight_cache` arena (kind weight_cache, at
    `alignment`); the intermediate ones (an amax feeding only its scale)
    stay activations of cast_weights. eval_step and logits read the cache
    where they would make an identical copy (the same kernel, constants,
    attributes and parameter bytes); their other casts stay. A cast whose
    input is not a parameter or such a copy -- a delayed-scaling cast,
    whose scale comes from the FP8 state that train_step updates -- stays.
    The runtime runs cast_weights before an entry that reads the cache
    whenever the parameters may have changed since (after
    initialisation, a checkpoint load, optimizer_step), and before each
    train_step that collects FP8 statistics, whose slots the weights'
    casts fill: under gradient accumulation the weights are cast once per
    optimizer step rather than once per micro-step (as TransformerEngine's
    first-micro-batch weight caching), with the same numbers.
    `gptc --cache-weight-casts=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256",
           "Byte alignment of every buffer in the weight_cache arena">,
  ];
  let statistics = [
    Statistic<"hoisted", "hoisted", "casts moved into cast_weights">,
    Statistic<"cachedBytes", "cached-bytes", "bytes of the weight_cache arena">,
  ];
}

def RtFuseCastScale : Pass<"rt-fuse-cast-scale", "::mlir::ModuleOp"> {
  let summary = "Lets an FP8 cast make the scale it casts with";
  let description = [{
    Runs after the other rt fusions and rt-cache-weight-casts, before
    rt-plan-memory. Each FP8 operand's scale is made by a one-thread kernel
    between the amax (or amax history) and the cast -- `scale_from_amax`
    under current scaling, `fp8_state_scale` under delayed scaling -- on a
    GPU a launch and a dependent wait each. When the first op after such a
    kernel that uses its scale is a cast reading it as its scale, with
    nothing writing the amax or touching the scale in between, the pair
    becomes the cast's fused form where the cast was: it reads the amax
    (history) instead of the scale, works the scale out itself (every
    thread, the same f32 operations as the scale kernel) and stores it, one
    more output after the cast's, for the GEMMs that read it later. The
    forms: `scale_` + `quantize_fp8`, `quantize_fp8_dual`,
    `quantize_fp8_dual_bgrad` (current scaling) and `state_` +
    `quantize_fp8`, `quantize_fp8_transposed`,
    `quantize_fp8_transposed_bgrad` (delayed), and `scale_` +
    `quantize_rows_transposed` (and its `_bgrad`; rowwise scaling's
    `row_scales`, one scale
    per column of a grad_weight operand: a GPU block makes the scales of
    its 32 columns). Delayed scaling records a
    weight's amax in its history between the scale and the weight's cast;
    such an `fp8_state_update` (of that history only, its amax unchanged
    until the cast) moves after the cast. The scale, codes, sums and
    statistics are those of the separate kernels bit for bit. The scales of
    delayed scaling's producer casts (`layernorm_fwd+cast`, `gelu_fwd+cast`,
    ...) stay apart for rt-batch-fp8-state-scales; rowwise casts along rows
    are left to rt-fuse-rowwise-cast, which takes their amaxes in too.
    `gptc --fuse-cast-scales=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fusedScales", "fused-scales",
              "scale kernels folded into their casts">,
  ];
}

def RtFuseRowwiseCast : Pass<"rt-fuse-rowwise-cast", "::mlir::ModuleOp"> {
  let summary = "Makes a rowwise FP8 cast's amaxes, scales and codes in one kernel";
  let description = [{
    Runs after rt-cache-weight-casts, before rt-plan-memory. fp8-rowwise
    casts each operand scaled along its rows with three kernels:
    `amax_rows` (one amax a row), `row_scales` (a scale per amax) and
    `quantize_rows` (the codes), two reads of the tensor and, on a GPU,
    three launches with dependent waits. When the three work on one tensor
    (the same bytes, rows, columns and dtype), nothing changes it from the
    amax on, and nothing but `row_scales` reads the amaxes and nothing but
    the cast the scales before the cast, they become one
    `amax_quantize_rows` where the cast was, writing the amaxes, the
    scales and the codes exactly as the three kernels do (on a GPU a warp
    per row: the row's amax, its scale, then its codes from the row still
    in cache). Casts scaled along columns (the transposed grad_weight
    operands, whose amaxes span all rows) keep their three kernels.
    `gptc --fuse-cast-scales=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fusedCasts", "fused-casts", "rowwise casts made in one kernel">,
  ];
}

def RtBatchFp8StateUpdates
    : Pass<"rt-batch-fp8-state-updates", "::mlir::ModuleOp"> {
  let summary = "Updates delayed scaling's amax histories in a few kernels at the end of a step";
  let description = [{
    Runs after rt-fuse-cast-scale, before rt-plan-memory. Delayed scaling
    records each FP8 tensor's amax in its history with a one-thread
    `fp8_state_update` kernel after the tensor's producer: hundreds of
    launches per step on a GPU. First, two states updated once each in the
    module with the same amax (one tensor read by two FP8 GEMMs: an
    activation by its forward and grad_weight GEMMs, a weight by its
    forward and grad_input GEMMs) and history length hold the same history
    (both start at zero and record the same values): when nothing reads
    the first history or changes the amax between the two updates, the
    first update moves down to the second, which goes, and every view of
    the second history reads the first (its scale is still made with its
    own format; its readers between the updates see the history before
    both, as before). Then an update moves to the end of its entry point
    when nothing uses its amax (an rt.alloc) after it and nothing after it
    reads or writes the history. Each such amax then lives
    in a slot of the `fp8_state` arena after the histories (the arena
    grows by one f32 per state), its producer writing it there, and the
    updates of each window of 64 states become one `fp8_state_update_batch`
    kernel before the return, a mask bit per state it updates: the same
    histories at the end of the step, so the same scales in the next one,
    bit for bit. A weight's amax (one f32 in the weight_cache arena that
    cast_weights writes and this function does not) moves to its state's
    slot too, every view of it with it. Updates whose amax is read after
    them, and a movable update alone in its window, stay where they are.
    `gptc --batch-fp8-state-updates=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"batched", "batched", "fp8_state_update kernels batched">,
    Statistic<"shared", "shared",
              "states reading another state's identical history">,
  ];
}

def RtHoistTransposedCasts
    : Pass<"rt-hoist-transposed-casts", "::mlir::ModuleOp"> {
  let summary = "Makes a tensor's last transposed FP8 cast right after its producer";
  let description = [{
    Runs after rt-fuse-delayed-dual-cast, before rt-plan-memory. Under
    delayed scaling a forward activation that the backward reads only to
    cast it transposed for grad_weight (a layernorm's or GELU's output)
    has its row-major FP8 copy made by its producer's fused cast, and its
    transposed copy (`state_quantize_fp8_transposed`) made in the backward:
    its bf16 values, two bytes an element, stay alive through the whole
    step for that one read. A transposed FP8 cast (any `*quantize*_transposed*`
    kernel) whose input buffer (an rt.alloc) nothing else reads after its
    producer -- the last kernel before it that writes the buffer -- moves
    to just after the producer, when its other inputs (scale, amax
    history) already hold their values there and nothing in between uses
    its outputs: the buffer then dies with the producer and the FP8
    transposed copy, one byte an element, is what lives until the backward.
    The same kernels with the same inputs, so the same numbers; on a GPU
    the cast reads the tensor right after it was written (from L2 when it
    fits). A backward gradient's transposed cast (with its bias gradient)
    moves in front of the grad_input GEMM the same way.
    `gptc --hoist-transposed-casts=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"hoisted", "hoisted", "transposed casts moved to their producer">,
  ];
}

def RtFuseProducerDualCast
    : Pass<"rt-fuse-producer-dual-cast", "::mlir::ModuleOp"> {
  let summary = "Lets a GELU or layernorm producer write both FP8 layouts of an output nothing else reads";
  let description = [{
    Runs after rt-hoist-transposed-casts, before rt-batch-fp8-state-scales
    and rt-plan-memory. Under delayed scaling GELU's output (forward), its
    gradient (backward) and the layernorms' outputs (forward) are cast to
    FP8 by their producer (`gelu_fwd+cast`, `gelu_bwd+cast`,
    `layernorm_fwd+cast`, `add_layernorm_fwd+cast`: the row-major codes
    for the next GEMM) and once more, transposed, for grad_weight
    (`state_quantize_fp8_transposed`, `_bgrad` with the bias gradient):
    the bf16 output is written for that one read. When the transposed cast
    is the next and last reader of all of the output, in the producer's
    format and dtype (for the layernorms: of its rows x width as they
    are), and its scale is the producer's -- the producer's
    `fp8_state_scale` reads the same history with the same recipe, and
    nothing writes the history before the cast -- the pair becomes
    `gelu_fwd+dual_cast` (`gelu_bwd+dual_cast` with db,
    `layernorm_fwd+dual_cast`, `add_layernorm_fwd+dual_cast`) where the
    producer was. On a GPU the GELU forms are one 32 x 32-tile kernel that
    works the GELU output out of the producer's inputs and writes its
    amax, both FP8 layouts (and the bias gradient's tile sums); the
    layernorm forms run the layernorm kernel without its output store and
    transpose its codes (a byte per element read instead of the output's
    two). The output itself is never written; later readers of the cast's
    scale read the producer's. Each copy keeps its statistics slot
    (`rt.fp8_stat` becomes an array). The amax, codes and sums are those
    of the two kernels bit for bit.
    `gptc --fuse-dual-casts=false` leaves this pass out too.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"fused", "fused", "producer casts that now write both layouts">,
  ];
}

def RtBatchFp8StateScales
    : Pass<"rt-batch-fp8-state-scales", "::mlir::ModuleOp"> {
  let summary = "Makes delayed scaling's scales in a few kernels at the start of a step";
  let description = [{
    Runs after rt-batch-fp8-state-updates, before rt-plan-memory. The casts
    inside producers (`layernorm_fwd+cast`, `add_layernorm_fwd+cast`,
    `gelu_fwd+cast`, `gelu_bwd+cast`, `layernorm_bwd_add+cast`) read a
    scale that a one-thread `fp8_state_scale` kernel makes from the amax
    history just before them, and rt-fuse-cast-scale leaves those apart:
    dozens of launches per step on a GPU, each a dependent wait. When
    nothing earlier in its entry point writes the history (once
    rt-batch-fp8-state-updates has moved the updates to the end, nothing
    does) the scale it makes is already known when the step starts. Such
    kernels, when nothing uses their scale (an rt.alloc) before them, move
    to the start of the entry point: for each set of constants (format,
    margin, history length, ...), the states of each window of 64 get one
    `fp8_state_scale_batch` kernel, a mask bit per state, and each scale
    lives in a slot of the `fp8_state` arena after everything it holds so
    far (the arena grows by one f32 per state and set of constants). Two
    kernels of one state with the same constants (a history shared by
    rt-batch-fp8-state-updates) share a slot. The same scales bit for bit;
    a kernel alone in its window stays where it is.
    `gptc --batch-fp8-state-scales=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let statistics = [
    Statistic<"batched", "batched", "fp8_state_scale kernels batched">,
  ];
}

def RtBatchAdamw : Pass<"rt-batch-adamw", "::mlir::ModuleOp"> {
  let summary = "Updates consecutive parameters with one AdamW kernel";
  let description = [{
    Runs before rt-plan-memory. gpt-optimizer updates each parameter with
    its own `adamw` kernel: 148 launches per optimizer step at GPT-2 124M,
    most of them over a few hundred biases or layernorm weights, on a GPU
    each a launch and a tail of idle cores. The arenas keep a parameter's
    gradient, value and moments at the same place in `grads`, `params` and
    `optimizer`, and parameters one after another; so back-to-back
    `adamw` kernels (only buffer definitions between them) with the same
    step scalars (gradient scale, learning rate, step), the same betas and
    eps, and one nonzero weight decay, whose four tensors each start where
    the previous one's end, become one `adamw_multi` kernel over all their
    elements. Weight decay (decoupled, on 2-D weights only) is given as a
    table of element ranges, a constant of the artifact, at most
    GPTRT_ADAMW_MAX_DECAY_RANGES (64) per kernel: the elements outside
    decay by 0. Every element gets the operations of its own `adamw`, so
    the same bits: at GPT-2 124M one AdamW launch per optimizer step
    instead of 148. ZeRO-1's `adamw_sharded` kernels stay as they are.
    `gptc --batch-adamw=false` leaves this pass out.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let options = [
    Option<"maxDecayRanges", "max-decay-ranges", "int64_t",
           /*default=*/"64",
           "Decay ranges per adamw_multi kernel, 1 to the runtime's "
           "GPTRT_ADAMW_MAX_DECAY_RANGES (64); a group that needs more "
           "starts a new kernel. Lower it only to test the split.">,
  ];
  let statistics = [
    Statistic<"batched", "batched", "adamw kernels batched">,
  ];
}

def RtPlanMemory : Pass<"rt-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Places every rt.alloc in one activation arena by liveness";
  let description = [{
    Each rt.alloc lives from its definition to its last use in program order
    (a use through rt.reshape counts; a buffer bound as an output lives to
    the end). Buffers are placed largest first at the lowest offset that
    overlaps no placed buffer whose lifetime overlaps its own (greedy by
    size). All entry points share one arena sized for the largest of them;
    the pass records each entry's peak as `rt.peak_bytes` on it.
  }];
  let dependentDialects = ["::gptc::rt::RtDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256",
           "Byte alignment of every activation buffer">,
  ];
}

def RtToLLVM : Pass<"rt-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Lowers rt entry points to LLVM functions that call the runtime's C ABI";
  let description = [{
    Each entry point `@name` becomes `void gpt_name(gptrt_context *ctx)`: it
    asks the runtime for the base address of each arena it uses
    (`gptrt_arena_base`), turns every `rt.view` into an address inside it,
    and every `rt.kernel "k"` into a call of `gptrt_k(ctx, buffers...,
    constants...)`. The module also exports `gpt_abi_version()` and, when
    the module carries an `rt.manifest` string attribute (the serialized
    manifest), `gpt_manifest(uint64_t *size)`. Arena and parameter
    declarations are dropped: the manifest holds them. The pass fails if any
    op other than LLVM's is left.

    gptc sets `rt.manifest` first (compiler/target/Manifest.cpp: the
    protobuf runtime/abi/manifest.proto), runs this pass, translates the
    module to LLVM IR, writes an object file with LLVM's TargetMachine and
    links it with the system `cc -shared` (compiler/target/ObjectFile.cpp).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // GPTC_COMPILER_TRANSFORMS_PASSES_TD
