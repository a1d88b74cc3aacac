// gpt-bf16-kernels: the kernels of adds, GELU, layernorm, attention, the
// embeddings, the loss, their gradients and the FP8 casts read bf16-stored
// operands and write bf16 results directly instead of through f32 copies
// (see Passes.td).
#include "compiler/transforms/Bf16Storage.h"
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace gptc {
#define GEN_PASS_DEF_GPTBF16KERNELS
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
using namespace gptc::gpt;
using gptc::onlyNarrowing;
using gptc::takeOverNarrowing;
using gptc::widening;

namespace {

/// The operands and results of `op` its runtime kernel can keep in bf16
/// storage (a dtype per operand in the ABI); none for other ops.
struct Bf16Capable {
  SmallVector<OpOperand *> operands;
  SmallVector<Value> results;
  bool empty() const { return operands.empty() && results.empty(); }
};

Bf16Capable bf16Capable(Operation *op) {
  Bf16Capable capable;
  if (auto add = dyn_cast<AddOp>(op)) {
    capable.operands = {&add.getLhsMutable(), &add.getRhsMutable()};
    capable.results = {add.getResult()};
  } else if (auto reduce = dyn_cast<ReduceLeadingOp>(op)) {
    capable.operands = {&reduce.getInputMutable()};
    capable.results = {reduce.getResult()};
  } else if (auto gelu = dyn_cast<GeluOp>(op)) {
    capable.operands = {&gelu.getInputMutable()};
    capable.results = {gelu.getResult()};
  } else if (auto geluGrad = dyn_cast<GeluGradOp>(op)) {
    capable.operands = {&geluGrad.getResultGradMutable(),
                        &geluGrad.getInputMutable()};
    capable.results = {geluGrad.getInputGrad()};
  } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
    capable.operands = {&norm.getInputMutable()};
    capable.results = {norm.getNormalized()};
  } else if (auto normGrad = dyn_cast<LayerNormGradOp>(op)) {
    capable.operands = {&normGrad.getResultGradMutable(),
                        &normGrad.getInputMutable()};
    capable.results = {normGrad.getInputGrad(), normGrad.getWeightGrad(),
                       normGrad.getBiasGrad()};
  } else if (auto loss = dyn_cast<CrossEntropyOp>(op)) {
    capable.operands = {&loss.getLogitsMutable()};
  } else if (auto gather = dyn_cast<EmbeddingGradOp>(op)) {
    capable.operands = {&gather.getResultGradMutable()};
    capable.results = {gather.getTableGrad()};
  } else if (auto amax = dyn_cast<gptc::fp8::AmaxOp>(op)) {
    capable.operands = {&amax.getInputMutable()};
  } else if (auto quantize = dyn_cast<gptc::fp8::QuantizeOp>(op)) {
    capable.operands = {&quantize.getInputMutable()};
  } else if (auto amaxRows = dyn_cast<gptc::fp8::AmaxRowsOp>(op)) {
    capable.operands = {&amaxRows.getInputMutable()};
  } else if (auto quantizeRows = dyn_cast<gptc::fp8::QuantizeRowsOp>(op)) {
    capable.operands = {&quantizeRows.getInputMutable()};
  } else if (auto accumulate = dyn_cast<AccumulateGradOp>(op)) {
    capable.operands = {&accumulate.getGradMutable()};
  }
  return capable;
}

/// The activations of an op whose kernel takes one dtype for all of them
/// (statistics such as attention's log-sum-exp stay f32 and are not
/// listed).
Bf16Capable oneStorageType(Operation *op) {
  Bf16Capable whole;
  if (isa<SplitOp, ConcatOp>(op)) {
    for (OpOperand &operand : op->getOpOperands())
      whole.operands.push_back(&operand);
    whole.results.assign(op->result_begin(), op->result_end());
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    whole.operands = {&attention.getQMutable(), &attention.getKMutable(),
                      &attention.getVMutable()};
    whole.results = {attention.getAttended()};
  } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    whole.operands = {&embedding.getTableMutable()};
    whole.results = {embedding.getResult()};
  } else if (auto lossGrad = dyn_cast<CrossEntropyGradOp>(op)) {
    whole.operands = {&lossGrad.getLogitsMutable()};
    whole.results = {lossGrad.getLogitsGrad()};
  } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
    whole.operands = {&grad.getResultGradMutable(), &grad.getQMutable(),
                      &grad.getKMutable(), &grad.getVMutable(),
                      &grad.getResultMutable()};
    whole.results = {grad.getQGrad(), grad.getKGrad(), grad.getVGrad()};
  }
  return whole;
}

class GptBf16KernelsPass
    : public gptc::impl::GptBf16KernelsBase<GptBf16KernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        rewrite(func);
  }

private:
  void rewrite(func::FuncOp func) {
    llvm::SetVector<Operation *> maybeDead;
    OpBuilder b(&getContext());
    // A reshape of a widening becomes a widening of a bf16 reshape (both
    // are exact, a reshape is an alias), so whoever reads the reshape sees
    // a widening it may be able to drop.
    SmallVector<ReshapeOp> reshapes(func.getOps<ReshapeOp>());
    for (ReshapeOp reshape : reshapes) {
      CastOp widen = widening(reshape.getInput());
      if (!widen)
        continue;
      b.setInsertionPoint(reshape);
      auto shape = cast<RankedTensorType>(reshape.getType()).getShape();
      Value narrow = ReshapeOp::create(
          b, reshape.getLoc(), RankedTensorType::get(shape, b.getBF16Type()),
          reshape.getLayer(), widen.getInput());
      Value wide = CastOp::create(b, widen.getLoc(), reshape.getType(),
                                  widen.getLayer(), narrow);
      reshape.getResult().replaceAllUsesWith(wide);
      reshape.erase();
      maybeDead.insert(widen);
    }
    // Only ops directly in the function: a producer inside fp8.fused has
    // a fused kernel with its own ABI. Both kinds are listed before any
    // rewrite, as the narrowings erased below must not be visited.
    SmallVector<Bf16Capable> perOperand, whole;
    for (Operation &op : func.front().without_terminator()) {
      if (Bf16Capable capable = bf16Capable(&op); !capable.empty())
        perOperand.push_back(std::move(capable));
      if (Bf16Capable capable = oneStorageType(&op); !capable.empty())
        whole.push_back(std::move(capable));
    }
    for (const Bf16Capable &capable : perOperand) {
      for (OpOperand *operand : capable.operands)
        if (CastOp widen = widening(operand->get())) {
          operand->set(widen.getInput());
          maybeDead.insert(widen);
        }
      for (Value result : capable.results)
        if (CastOp narrow = onlyNarrowing(result)) {
          takeOverNarrowing(result, narrow);
          narrow.erase();
        }
    }
    // Ops whose activations share one element type move to bf16 as a
    // whole, when every such input is a widening and every such result is
    // only narrowed: split and concat (copies: the qkv split, the heads'
    // concat), the embedding gather, the loss gradient and attention (f32
    // arithmetic, one dtype for its kernels).
    for (const Bf16Capable &op : whole) {
      bool allWidened = llvm::all_of(op.operands, [](OpOperand *operand) {
        return static_cast<bool>(widening(operand->get()));
      });
      bool allNarrowed = llvm::all_of(op.results, [](Value v) {
        return static_cast<bool>(onlyNarrowing(v));
      });
      if (!allWidened || !allNarrowed)
        continue;
      for (OpOperand *operand : op.operands) {
        CastOp widen = widening(operand->get());
        operand->set(widen.getInput());
        maybeDead.insert(widen);
      }
      for (Value result : op.results) {
        CastOp narrow = onlyNarrowing(result);
        takeOverNarrowing(result, narrow);
        narrow.erase();
      }
    }
    for (Operation *op : maybeDead)
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
