// fp8-fuse-cast: under delayed scaling an FP8 cast's scale is known before
// its tensor is produced, so the producer's kernel writes the FP8 copy too,
// transposed when the GEMM wants the other layout (see Passes.td).
#include "compiler/transforms/Fp8Fusion.h"
#include "compiler/transforms/Passes.h"

namespace gptc {
#define GEN_PASS_DEF_FP8FUSECAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace fp8 = gptc::fp8;

namespace {

/// The GEMM operand a cast feeds, when it feeds exactly one.
struct GemmUse {
  fp8::ScaledMatmulOp gemm;
  unsigned operand = 0;  // 0: a, 1: b
};

std::optional<GemmUse> soleGemmUse(Value quantized) {
  if (!quantized.hasOneUse())
    return std::nullopt;
  OpOperand &use = *quantized.use_begin();
  auto gemm = dyn_cast<fp8::ScaledMatmulOp>(use.getOwner());
  if (!gemm || use.getOperandNumber() > 1)
    return std::nullopt;
  return GemmUse{gemm, use.getOperandNumber()};
}

class Fp8FuseCastPass : public gptc::impl::Fp8FuseCastBase<Fp8FuseCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      SmallVector<fp8::QuantizeOp> casts(func.getOps<fp8::QuantizeOp>());
      for (fp8::QuantizeOp cast : casts)
        fuse(cast);
    }
  }

private:
  void fuse(fp8::QuantizeOp cast) {
    // Only a scale that does not depend on this tensor can be applied while
    // the tensor is produced.
    auto known = cast.getScale().getDefiningOp<fp8::StateScaleOp>();
    if (!known || cast.getTranspose()) // laid out for its GEMM already
      return;
    fp8::FusedOp fused = gptc::fusedProducerOf(
        gptc::exactSource(cast.getInput()), cast.getLayer());
    if (!fused)
      return;

    // Hopper's FP8 GEMM reads both operands K-contiguous ("TN"): a as
    // M x K, b as N x K. A 2-D operand the GEMM would read the other way is
    // written transposed by the fused kernel and the GEMM's flag flipped.
    RankedTensorType type = cast.getType();
    std::optional<GemmUse> use = soleGemmUse(cast.getResult());
    bool transpose = false;
    if (use && type.getRank() == 2)
      transpose = use->operand == 0 ? use->gemm.getTransposeA()
                                    : !use->gemm.getTransposeB();
    if (transpose)
      type = RankedTensorType::get({type.getShape()[1], type.getShape()[0]},
                                   type.getElementType());

    Value quantized;
    if (Value existing = fused.getQuantized()) {
      // One cast per kernel: a second one must be the same cast.
      if (fused.getScale() != cast.getScale() || existing.getType() != type ||
          fused.getTranspose() != transpose)
        return;
      quantized = existing;
    } else {
      // The scale is read before the producer runs (state_scale reads the
      // history, which only this tensor's own update, later, writes).
      if (!known->isBeforeInBlock(fused))
        known->moveBefore(fused);
      fused = withCast(fused, cast.getScale(), type, transpose);
      quantized = fused.getQuantized();
    }

    if (transpose) {
      use->gemm->setOperand(use->operand, quantized);
      if (use->operand == 0)
        use->gemm.setTransposeA(false);
      else
        use->gemm.setTransposeB(true);
    } else {
      cast.replaceAllUsesWith(quantized);
    }
    Value input = cast.getInput();
    cast.erase();
    gptc::eraseIfDead(input);
  }

  /// `fused` again, now also writing its first result cast to FP8.
  fp8::FusedOp withCast(fp8::FusedOp fused, Value scale, Type quantizedType,
                        bool transpose) {
    OpBuilder b(fused);
    SmallVector<Type> types(fused.getResultTypes());
    types.push_back(quantizedType);
    auto extended = fp8::FusedOp::create(b, fused.getLoc(), types,
                                         fused.getLayer(), scale, transpose);
    extended.getBody().takeBody(fused.getBody());
    for (auto [i, result] : llvm::enumerate(fused.getResults()))
      result.replaceAllUsesWith(extended.getResult(i));
    fused.erase();
    return extended;
  }
};

} // namespace
