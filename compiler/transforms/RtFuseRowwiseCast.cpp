// rt-fuse-rowwise-cast: a rowwise FP8 cast along rows -- amax_rows,
// row_scales, quantize_rows of one tensor -- becomes one amax_quantize_rows
// kernel that makes the amaxes, the scales and the codes (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEROWWISECAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// The one kernel after `from` that uses `value`, when nothing else uses it
// before `until` (exclusive), or null.
rt::KernelOp onlyUserBefore(Operation *from, Operation *until, Value value,
                            StringRef name) {
  auto user = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(from, value));
  if (!user || user.getKernel() != name || !user->isBeforeInBlock(until) ||
      rt::touchedBetween(from, user, value, /*reads=*/true) ||
      rt::touchedBetween(user, until, value, /*reads=*/true))
    return {};
  return user;
}

class RtFuseRowwiseCastPass
    : public gptc::impl::RtFuseRowwiseCastBase<RtFuseRowwiseCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> casts;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "quantize_rows")
        casts.push_back(op);
    });
    for (rt::KernelOp cast : casts)
      fuse(cast);
  }

private:
  void fuse(rt::KernelOp cast) {
    if (cast.getInputs().size() != 2 || cast.getOutputs().size() != 1 ||
        cast.getConsts().size() != 6 || rt::constNamed(cast, "along_cols") != 0)
      return;
    Value x = cast.getInputs()[0], scales = cast.getInputs()[1];
    auto scaleOp = dyn_cast_or_null<rt::KernelOp>(rt::lastWriter(cast, scales));
    if (!scaleOp || scaleOp.getKernel() != "row_scales" ||
        scaleOp.getInputs().size() != 1 || scaleOp.getOutputs().size() != 1 ||
        scaleOp.getOutputs()[0] != scales || scaleOp.getConsts().size() != 5 ||
        rt::constNamed(scaleOp, "n") != rt::constNamed(cast, "rows"))
      return;
    Value amax = scaleOp.getInputs()[0];
    auto amaxOp = dyn_cast_or_null<rt::KernelOp>(rt::lastWriter(scaleOp, amax));
    if (!amaxOp || amaxOp.getKernel() != "amax_rows" ||
        amaxOp.getInputs().size() != 1 || amaxOp.getOutputs().size() != 1 ||
        amaxOp.getOutputs()[0] != amax || amaxOp.getConsts().size() != 4 ||
        !rt::sameBytes(amaxOp.getInputs()[0], x) ||
        rt::constNamed(amaxOp, "rows") != rt::constNamed(cast, "rows") ||
        rt::constNamed(amaxOp, "cols") != rt::constNamed(cast, "cols") ||
        rt::constNamed(amaxOp, "along_cols") != 0 ||
        rt::constNamed(amaxOp, "x_dtype") != rt::constNamed(cast, "x_dtype"))
      return;
    // All three move to where the cast is: x keeps its value from the
    // amax on, nothing but row_scales reads the amaxes and nothing but
    // the cast the scales before it.
    if (rt::touchedBetween(amaxOp, cast, x, /*reads=*/false) ||
        onlyUserBefore(amaxOp, cast, amax, "row_scales") != scaleOp ||
        rt::touchedBetween(scaleOp, cast, scales, /*reads=*/true) ||
        rt::touchedBetween(amaxOp, scaleOp, scales, /*reads=*/true))
      return;
    OpBuilder b(cast);
    // amax_quantize_rows's constants: the cast's but along_cols, then the
    // scales' recipe (row_scales's from fp8_max on).
    auto q = [&](StringRef name) { return rt::constAttrNamed(cast, name); };
    SmallVector<Attribute> consts{q("rows"), q("cols"), q("format"),
                                  q("stat_slot"), q("x_dtype")};
    llvm::append_range(consts, rt::constsFrom(scaleOp, "fp8_max"));
    auto fused = rt::KernelOp::create(
        b, cast.getLoc(), "amax_quantize_rows", ValueRange{x},
        ValueRange{amax, scales, cast.getOutputs()[0]}, /*stream=*/0,
        b.getArrayAttr(consts));
    if (Attribute stat = cast->getAttr("rt.fp8_stat"))
      fused->setAttr("rt.fp8_stat", stat);
    cast.erase();
    scaleOp.erase();
    amaxOp.erase();
    ++fusedCasts;
  }
};

} // namespace
