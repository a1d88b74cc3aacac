// rt-fuse-grad-accumulation: a weight-gradient GEMM (or an embedding's
// backward) and the `accumulate` that adds its result into the f32
// gradient become its _accumulate form, which adds into the gradient itself
// (see Passes.td). Runs on rt.alloc buffers, before rt-plan-memory, so the
// product's buffer is gone by the time memory is planned.
#include "compiler/transforms/Passes.h"
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

// A kernel that has an _accumulate form: its constants' count and the
// index of its result's dtype, the one constant the form drops (its
// result is always f32).
struct AccumulatingForm {
  unsigned consts;
  unsigned resultDtype;
  bool gemm;
};

std::optional<AccumulatingForm> accumulatingForm(StringRef kernel) {
  // The GEMMs' first nine constants are batch, m, n, k, trans_a, trans_b,
  // stride_a, stride_b, stride_c (Bufferize.cpp).
  return llvm::StringSwitch<std::optional<AccumulatingForm>>(kernel)
      .Case("matmul_bf16", AccumulatingForm{10, 9, true})
      // ..., out_dtype, db_dtype
      .Case("matmul_bf16_bgrad", AccumulatingForm{11, 9, true})
      // ..., format_a, format_b, fast_accum, out_dtype
      .Case("scaled_matmul", AccumulatingForm{13, 12, true})
      // ..., fast_accum, rowwise_a, rowwise_b, out_dtype
      .Case("scaled_matmul_rowwise", AccumulatingForm{15, 14, true})
      // rows, table_rows, width, dout_dtype, dtable_dtype
      .Case("embedding_bwd", AccumulatingForm{5, 4, false})
      .Default(std::nullopt);
}

// Kernels whose small gradient outputs take GPTRT_DTYPE_F32_ACCUMULATE:
// the output's index and the index of its dtype constant.
struct AccumulatingOutput {
  unsigned output;
  unsigned dtypeConst;
};

SmallVector<AccumulatingOutput, 2> accumulatingOutputs(StringRef kernel) {
  return llvm::StringSwitch<SmallVector<AccumulatingOutput, 2>>(kernel)
      // consts rows, cols, x_dtype, out_dtype
      .Case("reduce_rows", {{0, 3}})
      // outs dx (or the sum), dw, db (, the epilogue's); consts rows,
      // width, then the dtypes of dout, x, dx, dw, db (, ...)
      .Cases({"layernorm_bwd", "layernorm_bwd_add"}, {{1, 5}, {2, 6}})
      // outs q, db; consts rows, cols, format, stat_slot, x_dtype, db_dtype
      .Case("quantize_fp8_transposed_bgrad", {{1, 5}})
      // outs q, db; consts rows, cols, along_cols, format, stat_slot,
      // x_dtype, db_dtype
      .Case("quantize_rows_transposed_bgrad", {{1, 6}})
      // outs q, q_t, db; ..., stat_slot_t, x_dtype, db_dtype
      .Case("quantize_fp8_dual_bgrad", {{2, 6}})
      // outs c, db; the GEMM's nine, out_dtype, db_dtype (the
      // _accumulate form without out_dtype)
      .Case("matmul_bf16_bgrad", {{1, 10}})
      .Case("matmul_bf16_bgrad_accumulate", {{1, 9}})
      .Default({});
}

// The elements of the kernel's result, or -1 where it is not one
// contiguous buffer (a GEMM's strided batches).
int64_t resultElements(rt::KernelOp kernel, const AccumulatingForm &form) {
  if (!form.gemm)
    return rt::constAt(kernel, 1) * rt::constAt(kernel, 2);
  const int64_t batch = rt::constAt(kernel, 0), m = rt::constAt(kernel, 1),
                n = rt::constAt(kernel, 2), strideC = rt::constAt(kernel, 8);
  return batch == 1 || strideC == m * n ? batch * m * n : -1;
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
    // gptrt_accumulate: ins (src), outs (dst f32), consts [n, src_dtype].
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
    const int64_t elements = resultElements(producer, *form);
    if (elements < 0 || rt::constAt(accumulate, 0) != elements ||
        rt::constAt(accumulate, 1) !=
            rt::constAt(producer, form->resultDtype) ||
        !gradientCanMoveUp(producer, accumulate))
      return;
    rt::moveOutputDefsBefore(producer, accumulate);
    SmallVector<Value> outs(producer.getOutputs());
    outs[0] = accumulate.getOutputs()[0];
    SmallVector<Attribute> consts(producer.getConsts().begin(),
                                  producer.getConsts().end());
    consts.erase(consts.begin() + form->resultDtype);
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

  // A small gradient output (a bias's; a layernorm's weight or bias): the
  // same kernel, writing it into the gradient with its dtype constant set
  // to GPTRT_DTYPE_F32_ACCUMULATE.
  void foldIntoOutput(rt::KernelOp producer, rt::KernelOp accumulate,
                      Value product) {
    const unsigned index = llvm::find(producer.getOutputs(), product) -
                           producer.getOutputs().begin();
    SmallVector<AccumulatingOutput, 2> outputs =
        accumulatingOutputs(producer.getKernel());
    const auto *entry = llvm::find_if(
        outputs, [&](AccumulatingOutput o) { return o.output == index; });
    if (entry == outputs.end() ||
        entry->dtypeConst >= producer.getConsts().size())
      return;
    auto productType = cast<MemRefType>(product.getType());
    if (rt::constAt(accumulate, 0) != productType.getNumElements() ||
        rt::constAt(accumulate, 1) !=
            rt::constAt(producer, entry->dtypeConst) ||
        !gradientCanMoveUp(producer, accumulate))
      return;
    rt::moveOutputDefsBefore(producer, accumulate);
    producer.getOutputsMutable()[index].set(accumulate.getOutputs()[0]);
    SmallVector<Attribute> consts(producer.getConsts().begin(),
                                  producer.getConsts().end());
    consts[entry->dtypeConst] =
        IntegerAttr::get(IntegerType::get(producer.getContext(), 64),
                         GPTRT_DTYPE_F32_ACCUMULATE);
    producer.setConstsAttr(ArrayAttr::get(producer.getContext(), consts));
    accumulate.erase();
    if (Operation *def = product.getDefiningOp(); def && product.use_empty())
      def->erase();
    ++fusedOutputs;
  }
};

} // namespace
