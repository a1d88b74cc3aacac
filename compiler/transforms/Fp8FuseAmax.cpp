// fp8-fuse-amax: each fp8.amax over a tensor whose producer can compute it
// moves into that producer's kernel (see Passes.td).
#include "compiler/transforms/Fp8Fusion.h"
#include "compiler/transforms/Passes.h"

namespace gptc {
#define GEN_PASS_DEF_FP8FUSEAMAX
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace fp8 = gptc::fp8;

namespace {

class Fp8FuseAmaxPass : public gptc::impl::Fp8FuseAmaxBase<Fp8FuseAmaxPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      SmallVector<fp8::AmaxOp> amaxes(func.getOps<fp8::AmaxOp>());
      for (fp8::AmaxOp amax : amaxes) {
        // Two amaxes of one tensor (say a saved activation quantized again
        // for the weight gradient) share the one its producer computes.
        fp8::FusedOp fused = gptc::fusedProducerOf(
            gptc::exactSource(amax.getInput()), amax.getLayer());
        if (!fused)
          continue;
        Value input = amax.getInput();
        amax.replaceAllUsesWith(fused.getAmax());
        amax.erase();
        gptc::eraseIfDead(input);
      }
    }
  }
};

} // namespace
