// gpt-precision: bf16 storage of activations and GEMM inputs (see
// Passes.td). The FP8 policies of the precision issue extend this pass.
#include "compiler/transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace gptc {
#define GEN_PASS_DEF_GPTPRECISION
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
using namespace gptc::gpt;

namespace {

RankedTensorType withElement(Type type, Type element) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), element);
}

/// Results that are activations (not statistics saved for a backward, not
/// the scalar loss or step inputs, not aliases made by reshape, not FP8
/// scaling data: amaxes and scales stay f32, as a bf16 amax would change
/// the scale and so the cast).
SmallVector<Value> storedResults(Operation *op) {
  if (isa<ReshapeOp, CastOp, StepScalarOp, CrossEntropyOp,
          gptc::fp8::AmaxRowsOp, gptc::fp8::RowScalesOp>(op))
    return {};
  if (auto norm = dyn_cast<LayerNormOp>(op))
    return {norm.getNormalized()};
  if (auto attention = dyn_cast<AttentionOp>(op))
    return {attention.getAttended()};
  SmallVector<Value> results;
  for (Value result : op->getResults()) {
    auto tensor = dyn_cast<RankedTensorType>(result.getType());
    if (tensor && tensor.getRank() > 0 && tensor.getElementType().isF32())
      results.push_back(result);
  }
  return results;
}

class GptPrecisionPass : public gptc::impl::GptPrecisionBase<GptPrecisionPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (precision == "fp32")
      return;
    if (precision != "bf16") {
      getOperation().emitError()
          << "gpt-precision has no precision '" << precision
          << "'; use fp32 or bf16 (the FP8 policies come with fp8-precision)";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.getName() != "optimizer_step" && !func.isExternal())
        storeInBf16(func);
  }

private:
  /// Rounds `value` to bf16 right after its producer and gives each of its
  /// users (but `keep`) an f32 copy made right in front of it.
  void narrow(OpBuilder &builder, Value value, StringRef layer,
              Operation *after) {
    Type bf16 = withElement(value.getType(), builder.getBF16Type());
    builder.setInsertionPointAfter(after);
    Value stored = CastOp::create(builder, value.getLoc(), bf16, layer, value);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : value.getUses())
      if (use.getOwner() != stored.getDefiningOp())
        uses.push_back(&use);
    for (OpOperand *use : uses) {
      builder.setInsertionPoint(use->getOwner());
      use->set(CastOp::create(builder, value.getLoc(), value.getType(), layer,
                              stored));
    }
  }

  void storeInBf16(func::FuncOp func) {
    OpBuilder builder(&getContext());
    SmallVector<Operation *> ops;
    for (Operation &op : func.front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto ref = dyn_cast<ParamRefOp>(op)) {
        // The bf16 compute copy of a weight or an embedding table.
        bool gemmInput = llvm::any_of(ref->getUsers(), [](Operation *user) {
          return isa<MatmulOp, EmbeddingOp>(user);
        });
        if (gemmInput)
          narrow(builder, ref.getResult(), ref.getParam(), ref);
        continue;
      }
      auto layer = op->getAttrOfType<StringAttr>("layer");
      if (!layer)
        continue;
      for (Value result : storedResults(op))
        narrow(builder, result, layer.getValue(), op);
    }
  }
};

} // namespace
