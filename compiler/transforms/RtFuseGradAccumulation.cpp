// rt-fuse-grad-accumulation: a weight-gradient GEMM (or an embedding's
// backward) and the `accumulate` that adds its result into the f32
// gradient become one call that adds into the gradient itself (the GEMM's
// c_dtype GPTRT_DTYPE_F32_ACCUMULATE, the embedding's _accumulate form)
// (see Passes.td). Runs on rt.alloc buffers, before rt-plan-memory, so the
// product's buffer is gone by the time memory is planned.
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "compiler/transforms/RtKernelQueries.h"
#include "runtime/abi/gptrt.h"

#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace gptc {
#define GEN_PASS_DEF_RTFUSEGRADACCUMULATION
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// A kernel that has an _accumulate form: its constants' count, the two
// constants whose product is its result's element count, and its result's
// dtype, the one constant the form drops (its result is always f32).
struct AccumulatingForm {
  unsigned consts;
  StringRef resultRows, resultWidth;
  StringRef resultDtype;
};

std::optional<AccumulatingForm> accumulatingForm(StringRef kernel) {
  return llvm::StringSwitch<std::optional<AccumulatingForm>>(kernel)
      .Case("embedding_bwd",
            AccumulatingForm{5, "table_rows", "width", "dtable_dtype"})
      .Default(std::nullopt);
}

int64_t gemmField(rt::KernelOp gemm, StringRef name) {
  return *rt::descriptorField(gemm, "gemm_desc", name);
}

// A bf16 or FP8 weight-gradient GEMM that can add its product into c
// (gptrt_gemm's c_dtype GPTRT_DTYPE_F32_ACCUMULATE): no epilogue that
// reads the product, a contiguous result. An f32 GEMM keeps its
// `accumulate` (nothing is rounded there). Its result's element count.
std::optional<int64_t> accumulatingGemm(rt::KernelOp op) {
  if (op.getKernel() != "gemm" || rt::hasEpilogue(op) ||
      rt::bufferNamed(op, "bias") || rt::bufferNamed(op, "gelu_pre") ||
      rt::bufferNamed(op, "dgelu_pre") ||
      gemmField(op, "a_dtype") == GPTRT_DTYPE_F32 ||
      gemmField(op, "c_dtype") == GPTRT_DTYPE_F32_ACCUMULATE)
    return std::nullopt;
  const int64_t batch = gemmField(op, "batch"), m = gemmField(op, "m"),
                n = gemmField(op, "n");
  if (batch != 1 && gemmField(op, "stride_c") != m * n)
    return std::nullopt;
  return batch * m * n;
}

// Kernels whose small gradient outputs take GPTRT_DTYPE_F32_ACCUMULATE:
// the output and its dtype constant, by their names in the kernel's row.
struct AccumulatingOutput {
  StringRef output;
  StringRef dtypeConst;
};

SmallVector<AccumulatingOutput, 2> accumulatingOutputs(StringRef kernel) {
  return llvm::StringSwitch<SmallVector<AccumulatingOutput, 2>>(kernel)
      .Case("reduce_rows", {{"out", "out_dtype"}})
      .Cases({"layernorm_bwd", "layernorm_bwd_add"},
             {{"dw", "dw_dtype"}, {"db", "db_dtype"}})
      .Cases({"quantize_fp8_transposed_bgrad", "quantize_rows_transposed_bgrad",
              "quantize_fp8_dual_bgrad"},
             {{"db", "db_dtype"}})
      .Default({});
}

class RtFuseGradAccumulationPass
    : public gptc::impl::RtFuseGradAccumulationBase<
          RtFuseGradAccumulationPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> accumulates;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "accumulate")
        accumulates.push_back(op);
    });
    for (rt::KernelOp accumulate : accumulates)
      fuse(accumulate);
  }

private:
  void fuse(rt::KernelOp accumulate) {
    // gptrt_accumulate: ins (src), outs (dst f32).
    if (accumulate.getInputs().size() != 1 ||
        accumulate.getOutputs().size() != 1 ||
        accumulate.getConsts().size() != 2)
      return;
    // The product: a buffer of its own that only its producer writes (as
    // one of its outputs) and only this accumulate reads.
    Value product = accumulate.getInputs()[0];
    if (!product.getDefiningOp<rt::AllocOp>())
      return;
    rt::KernelOp producer;
    for (Operation *user : product.getUsers()) {
      if (user == accumulate.getOperation())
        continue;
      auto kernel = dyn_cast<rt::KernelOp>(user);
      if (!kernel || producer)
        return; // another reader or writer, or a reshape
      producer = kernel;
    }
    if (!producer || producer->getBlock() != accumulate->getBlock() ||
        !producer->isBeforeInBlock(accumulate) ||
        llvm::is_contained(producer.getInputs(), product) ||
        llvm::count(producer.getOutputs(), product) != 1)
      return;
    if (producer.getOutputs()[0] == product &&
        accumulatingForm(producer.getKernel()))
      foldIntoForm(producer, accumulate, product);
    else if (producer.getKernel() == "gemm" &&
             producer.getOutputs()[0] == product)
      foldIntoGemm(producer, accumulate, product);
    else if (producer.getKernel() == "gemm")
      foldIntoGemmBiasGradient(producer, accumulate, product);
    else
      foldIntoOutput(producer, accumulate, product);
  }

  // Whether the gradient can be written where the producer runs: nothing
  // touches its bytes in between, and the producer does not read them.
  static bool gradientCanMoveUp(rt::KernelOp producer,
                                rt::KernelOp accumulate) {
    Value grad = accumulate.getOutputs()[0];
    auto gradType = dyn_cast<MemRefType>(grad.getType());
    return gradType && gradType.getElementType().isF32() &&
           rt::outputsCanMoveUp(producer, accumulate) &&
           llvm::none_of(producer.getInputs(), [&](Value in) {
             return isa<MemRefType>(in.getType()) && rt::mayAlias(in, grad);
           });
  }

  // A GEMM or an embedding backward: its _accumulate form, at the
  // producer, writing the gradient as its first output.
  void foldIntoForm(rt::KernelOp producer, rt::KernelOp accumulate,
                    Value product) {
    std::optional<AccumulatingForm> form =
        accumulatingForm(producer.getKernel());
    if (producer.getConsts().size() != form->consts)
      return;
    const int64_t elements = rt::constNamed(producer, form->resultRows) *
                             rt::constNamed(producer, form->resultWidth);
    if (rt::constNamed(accumulate, "n") != elements ||
        rt::constNamed(accumulate, "src_dtype") !=
            rt::constNamed(producer, form->resultDtype) ||
        !gradientCanMoveUp(producer, accumulate))
      return;
    rt::moveOutputDefsBefore(producer, accumulate);
    SmallVector<Value> outs(producer.getOutputs());
    outs[0] = accumulate.getOutputs()[0];
    SmallVector<Attribute> consts(producer.getConsts().begin(),
                                  producer.getConsts().end());
    consts.erase(consts.begin() +
                 rt::constIndex(producer.getKernel(), form->resultDtype));
    OpBuilder b(producer);
    rt::KernelOp::create(
        b, producer.getLoc(), (producer.getKernel() + "_accumulate").str(),
        producer.getInputs(), outs, /*stream=*/0, b.getArrayAttr(consts));
    accumulate.erase();
    producer.erase();
    if (Operation *def = product.getDefiningOp(); def && product.use_empty())
      def->erase();
    ++fused;
  }

  // `producer` writes the gradient `accumulate` adds `product` into, in
  // place of `product` (its dtype already set to accumulate); the
  // accumulate and the product's buffer go.
  static void writeIntoGradient(rt::KernelOp producer, rt::KernelOp accumulate,
                                Value product) {
    const unsigned index = llvm::find(producer.getOutputs(), product) -
                           producer.getOutputs().begin();
    rt::moveOutputDefsBefore(producer, accumulate);
    producer.getOutputsMutable()[index].set(accumulate.getOutputs()[0]);
    accumulate.erase();
    if (Operation *def = product.getDefiningOp(); def && product.use_empty())
      def->erase();
  }

  // A weight-gradient GEMM: the same call, writing the gradient as its c
  // with c_dtype GPTRT_DTYPE_F32_ACCUMULATE.
  void foldIntoGemm(rt::KernelOp gemm, rt::KernelOp accumulate, Value product) {
    std::optional<int64_t> elements = accumulatingGemm(gemm);
    if (!elements || rt::constNamed(accumulate, "n") != *elements ||
        rt::constNamed(accumulate, "src_dtype") != gemmField(gemm, "c_dtype") ||
        !gradientCanMoveUp(gemm, accumulate))
      return;
    rt::setDescriptorFields(gemm, "gemm_desc",
                            {{"c_dtype", GPTRT_DTYPE_F32_ACCUMULATE}});
    writeIntoGradient(gemm, accumulate, product);
    ++fused;
  }

  // A GEMM's bias gradient (its dbias): written into the gradient with
  // dbias_dtype GPTRT_DTYPE_F32_ACCUMULATE.
  void foldIntoGemmBiasGradient(rt::KernelOp gemm, rt::KernelOp accumulate,
                                Value product) {
    auto productType = cast<MemRefType>(product.getType());
    if (rt::bufferNamed(gemm, "dbias") != product ||
        rt::constNamed(accumulate, "n") != productType.getNumElements() ||
        rt::constNamed(accumulate, "src_dtype") !=
            gemmField(gemm, "dbias_dtype") ||
        !gradientCanMoveUp(gemm, accumulate))
      return;
    rt::setDescriptorFields(gemm, "gemm_desc",
                            {{"dbias_dtype", GPTRT_DTYPE_F32_ACCUMULATE}});
    writeIntoGradient(gemm, accumulate, product);
    ++fusedOutputs;
  }

  // A small gradient output (a bias's; a layernorm's weight or bias): the
  // same kernel, writing it into the gradient with its dtype constant set
  // to GPTRT_DTYPE_F32_ACCUMULATE.
  void foldIntoOutput(rt::KernelOp producer, rt::KernelOp accumulate,
                      Value product) {
    SmallVector<AccumulatingOutput, 2> outputs =
        accumulatingOutputs(producer.getKernel());
    const auto *entry = llvm::find_if(outputs, [&](AccumulatingOutput o) {
      return rt::bufferNamed(producer, o.output) == product;
    });
    if (entry == outputs.end())
      return;
    auto productType = cast<MemRefType>(product.getType());
    if (rt::constNamed(accumulate, "n") != productType.getNumElements() ||
        rt::constNamed(accumulate, "src_dtype") !=
            rt::constNamed(producer, entry->dtypeConst) ||
        !gradientCanMoveUp(producer, accumulate))
      return;
    producer.setConstsAttr(rt::withConstNamed(producer, entry->dtypeConst,
                                              GPTRT_DTYPE_F32_ACCUMULATE));
    writeIntoGradient(producer, accumulate, product);
    ++fusedOutputs;
  }
};

} // namespace
