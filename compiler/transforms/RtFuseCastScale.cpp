// rt-fuse-cast-scale: a current-scaling scale_from_amax folds into the FP8
// cast that first reads its scale, which then makes the scale itself and
// stores it for the GEMMs (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace gptc {
#define GEN_PASS_DEF_RTFUSECASTSCALE
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// The casts that can make their own scale: their kernel name and how many
// constants gptrt.h gives them; each reads (x, scale) and its fused form
// (x, amax), with the scale as one more output.
std::optional<unsigned> castConstCount(StringRef kernel) {
  return llvm::StringSwitch<std::optional<unsigned>>(kernel)
      .Case("quantize_fp8", 4)           // n, format, stat_slot, x_dtype
      .Case("quantize_fp8_dual", 6)      // rows, cols, format, 2 slots, x_dtype
      .Case("quantize_fp8_dual_bgrad", 7) // ... and db_dtype
      .Default(std::nullopt);
}

class RtFuseCastScalePass
    : public gptc::impl::RtFuseCastScaleBase<RtFuseCastScalePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> scales;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "scale_from_amax")
        scales.push_back(op);
    });
    for (rt::KernelOp scale : scales)
      fuse(scale);
  }

private:
  void fuse(rt::KernelOp scaleOp) {
    // gptrt_scale_from_amax's constants: fp8_max, margin, power_of_two, eps.
    if (scaleOp.getInputs().size() != 1 || scaleOp.getOutputs().size() != 1 ||
        scaleOp.getConsts().size() != 4)
      return;
    Value amax = scaleOp.getInputs()[0], scale = scaleOp.getOutputs()[0];
    auto cast = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(scaleOp, scale));
    if (!cast)
      return;
    std::optional<unsigned> consts = castConstCount(cast.getKernel());
    // The cast reads the scale as its scale (not as x) and writes neither
    // it nor the amax; nothing else sees the scale before the cast, and the
    // amax keeps its value until then.
    if (!consts || cast.getConsts().size() != *consts ||
        cast.getInputs().size() != 2 || cast.getInputs()[1] != scale ||
        rt::mayAlias(cast.getInputs()[0], scale) ||
        llvm::any_of(cast.getOutputs(),
                     [&](Value out) {
                       return rt::mayAlias(out, scale) ||
                              rt::mayAlias(out, amax);
                     }) ||
        rt::touchedBetween(scaleOp, cast, scale, /*reads=*/true) ||
        rt::touchedBetween(scaleOp, cast, amax, /*reads=*/false))
      return;
    OpBuilder b(cast);
    SmallVector<Value> outs(cast.getOutputs());
    outs.push_back(scale);
    SmallVector<Attribute> allConsts(cast.getConsts().getValue());
    llvm::append_range(allConsts, scaleOp.getConsts().getValue());
    auto fused = rt::KernelOp::create(
        b, cast.getLoc(), ("scale_" + cast.getKernel()).str(),
        ValueRange{cast.getInputs()[0], amax}, outs, /*stream=*/0,
        b.getArrayAttr(allConsts));
    if (Attribute stat = cast->getAttr("rt.fp8_stat"))
      fused->setAttr("rt.fp8_stat", stat);
    cast.erase();
    scaleOp.erase();
    ++fusedScales;
  }
};

} // namespace
