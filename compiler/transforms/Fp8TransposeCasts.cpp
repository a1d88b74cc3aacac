// fp8-transpose-casts: an FP8 cast (tensorwise or rowwise) whose only
// reader is a GEMM operand in the layout Hopper's FP8 tensor cores cannot
// read writes its codes transposed, so the runtime does not transpose the
// operand again before every such GEMM (see Passes.td).
#include "compiler/transforms/Passes.h"

namespace gptc {
#define GEN_PASS_DEF_FP8TRANSPOSECASTS
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace fp8 = gptc::fp8;

namespace {

class Fp8TransposeCastsPass
    : public gptc::impl::Fp8TransposeCastsBase<Fp8TransposeCastsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto cast = dyn_cast<fp8::QuantizeOp>(op))
        transposeForGemm(cast);
      else if (auto rows = dyn_cast<fp8::QuantizeRowsOp>(op))
        transposeForGemm(rows); // its scales follow its input's rows
    });
  }

private:
  template <typename Cast> static void transposeForGemm(Cast cast) {
    RankedTensorType type = cast.getType();
    if (cast.getTranspose() || type.getRank() != 2 ||
        !cast.getResult().hasOneUse())
      return;
    OpOperand &use = *cast.getResult().use_begin();
    auto gemm = dyn_cast<fp8::ScaledMatmulOp>(use.getOwner());
    if (!gemm || use.getOperandNumber() > 1)
      return;
    // The GEMM reads a as M x K and b as N x K ("TN"); anything else is an
    // operand whose K runs down its columns.
    bool isA = use.getOperandNumber() == 0;
    if (isA ? !gemm.getTransposeA() : gemm.getTransposeB())
      return;
    cast.setTranspose(true);
    cast.getResult().setType(RankedTensorType::get(
        {type.getShape()[1], type.getShape()[0]}, type.getElementType()));
    if (isA)
      gemm.setTransposeA(false);
    else
      gemm.setTransposeB(true);
  }
};

} // namespace
