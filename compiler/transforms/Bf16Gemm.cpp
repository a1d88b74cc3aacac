// gpt-bf16-gemm: GEMMs read their bf16-stored operands directly instead of
// f32 widenings of them (see Passes.td).
#include "compiler/transforms/Bf16Storage.h"
#include "compiler/transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace gptc {
#define GEN_PASS_DEF_GPTBF16GEMM
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
using namespace gptc::gpt;
using gptc::onlyNarrowing;
using gptc::takeOverNarrowing;
using gptc::widening;

namespace {

/// A GEMM operand that is a widened bf16 value, possibly reshaped after
/// the widening (the weight-gradient GEMMs flatten [B, T, C] to [B*T, C]).
struct Bf16Operand {
  CastOp widen;
  ReshapeOp reshape;  // null: the widening feeds the GEMM directly
};

std::optional<Bf16Operand> bf16Operand(Value operand) {
  if (CastOp widen = widening(operand))
    return Bf16Operand{widen, {}};
  if (auto reshape = operand.getDefiningOp<ReshapeOp>())
    if (CastOp widen = widening(reshape.getInput()))
      return Bf16Operand{widen, reshape};
  return std::nullopt;
}

/// The bf16 value to multiply instead: the widening's input, reshaped
/// like the operand was (a reshape is an alias, in bf16 as in f32).
Value bf16Value(OpBuilder &b, Bf16Operand operand) {
  if (!operand.reshape)
    return operand.widen.getInput();
  b.setInsertionPoint(operand.reshape);
  auto shape = cast<RankedTensorType>(operand.reshape.getType()).getShape();
  return ReshapeOp::create(b, operand.reshape.getLoc(),
                           RankedTensorType::get(shape, b.getBF16Type()),
                           operand.reshape.getLayer(),
                           operand.widen.getInput());
}

class GptBf16GemmPass : public gptc::impl::GptBf16GemmBase<GptBf16GemmPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    // A widening can feed several GEMMs (or both operands of one).
    llvm::SetVector<Operation *> unique;
    OpBuilder builder(&getContext());
    getOperation().walk([&](MatmulOp matmul) {
      std::optional<Bf16Operand> a = bf16Operand(matmul.getA());
      std::optional<Bf16Operand> b = bf16Operand(matmul.getB());
      if (!a || !b)
        return;
      for (const Bf16Operand &operand : {*a, *b}) {
        if (operand.reshape)
          unique.insert(operand.reshape);
        unique.insert(operand.widen);
      }
      matmul.getAMutable().assign(bf16Value(builder, *a));
      matmul.getBMutable().assign(bf16Value(builder, *b));
    });
    SmallVector<Operation *> maybeDead(unique.begin(), unique.end());
    // A bf16 GEMM whose f32 result (bias included) is only ever stored as
    // bf16 writes bf16 itself: the same single rounding, without the f32
    // copy.
    SmallVector<Operation *> narrowings;
    auto storeAsBf16 = [&](Value result) {
      if (CastOp narrow = onlyNarrowing(result)) {
        takeOverNarrowing(result, narrow);
        narrowings.push_back(narrow);
      }
    };
    getOperation().walk([&](MatmulOp matmul) {
      if (cast<RankedTensorType>(matmul.getA().getType())
              .getElementType()
              .isBF16())
        storeAsBf16(matmul.getResult());
    });
    // The same for an FP8 GEMM without an amax of its output (that amax
    // would then read the rounded values): cuBLASLt writes D in bf16 from
    // the f32 sum (the rowwise kernel rounds its f32 quotient), the CPU
    // rounds once.
    getOperation().walk([&](gptc::fp8::ScaledMatmulOp matmul) {
      if (!matmul.getAmax())
        storeAsBf16(matmul.getResult());
    });
    for (Operation *narrow : narrowings)
      narrow->erase();
    // A widening dies once the reshapes reading it have: repeat until
    // nothing more goes.
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *&op : maybeDead)
        if (op && op->use_empty()) {
          op->erase();
          op = nullptr;
          erased = true;
        }
    }
  }
};

} // namespace
