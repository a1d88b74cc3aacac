// rt-fuse-delayed-dual-cast: under delayed scaling, a tensor's row-major
// and transposed FP8 casts that read one amax history -- so make one
// scale -- become one state_quantize_fp8_dual that reads the tensor once
// (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEDELAYEDDUALCAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// The state_ casts take the cast's own constants (4 for
// state_quantize_fp8; 5 for the transposed form, 6 for _bgrad), then the
// six of the scale's recipe, from history_length on.
constexpr unsigned kScaleConsts = 6;
constexpr unsigned kCastConsts = 4 + kScaleConsts;

class RtFuseDelayedDualCastPass
    : public gptc::impl::RtFuseDelayedDualCastBase<RtFuseDelayedDualCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> casts;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "state_quantize_fp8")
        casts.push_back(op);
    });
    for (rt::KernelOp cast : casts)
      fuse(cast);
  }

private:
  // The first state_quantize_fp8_transposed(_bgrad) after `cast` of the same
  // bytes from the same history, or null.
  static rt::KernelOp findTwin(rt::KernelOp cast) {
    Value x = cast.getInputs()[0], history = cast.getInputs()[1];
    for (Operation *op = cast->getNextNode(); op; op = op->getNextNode()) {
      auto kernel = dyn_cast<rt::KernelOp>(op);
      if (kernel &&
          (kernel.getKernel() == "state_quantize_fp8_transposed" ||
           kernel.getKernel() == "state_quantize_fp8_transposed_bgrad") &&
          kernel.getInputs().size() == 2 &&
          rt::sameBytes(kernel.getInputs()[0], x) &&
          rt::sameBytes(kernel.getInputs()[1], history))
        return kernel;
    }
    return {};
  }

  void fuse(rt::KernelOp cast) {
    if (cast.getInputs().size() != 2 || cast.getOutputs().size() != 2 ||
        cast.getConsts().size() != kCastConsts)
      return;
    rt::KernelOp twin = findTwin(cast);
    if (!twin)
      return;
    const bool bgrad = twin.getKernel().ends_with("_bgrad");
    const unsigned twinOwn = bgrad ? 6 : 5; // its constants before the scale's
    if (twin.getOutputs().size() != (bgrad ? 3u : 2u) ||
        twin.getConsts().size() != twinOwn + kScaleConsts)
      return;
    auto c = [&](StringRef name) { return rt::constAttrNamed(cast, name); };
    auto t = [&](StringRef name) { return rt::constAttrNamed(twin, name); };
    // One tensor in one format and storage, scaled by one recipe.
    if (rt::constNamed(twin, "rows") * rt::constNamed(twin, "cols") !=
            rt::constNamed(cast, "n") ||
        t("format") != c("format") || t("x_dtype") != c("x_dtype") ||
        rt::constsFrom(twin, "history_length") !=
            rt::constsFrom(cast, "history_length"))
      return;
    Value x = cast.getInputs()[0], history = cast.getInputs()[1];
    Value q = cast.getOutputs()[0], scale = cast.getOutputs()[1];
    Value qT = twin.getOutputs()[0], twinScale = twin.getOutputs().back();
    // x and the history keep their values until the twin read them (the
    // histories' updates wait for the end of the step), so its scale is
    // the cast's: every later reader of the twin's scale reads the cast's,
    // which nothing may overwrite before them.
    Operation *lastScaleUse = twin;
    for (Operation *user : twinScale.getUsers())
      if (lastScaleUse->isBeforeInBlock(user))
        lastScaleUse = user;
    if (rt::touchedBetween(cast, twin, x, /*reads=*/false) ||
        rt::touchedBetween(cast, twin, history, /*reads=*/false) ||
        rt::touchedBetween(cast, lastScaleUse, scale, /*reads=*/false) ||
        rt::mayAlias(twinScale, scale))
      return;
    // qT (and db) are written where the cast runs: nothing may use them in
    // between.
    for (Value out : twin.getOutputs().drop_back()) {
      Operation *def = out.getDefiningOp();
      if (!def || !isa<rt::AllocOp, rt::ViewOp>(def) ||
          rt::touchedBetween(cast, twin, out, /*reads=*/true))
        return;
    }
    if (!rt::dualCastPays(cast, twin, x, q))
      return;
    for (Value out : twin.getOutputs().drop_back())
      if (Operation *def = out.getDefiningOp(); cast->isBeforeInBlock(def))
        def->moveBefore(cast);

    OpBuilder b(cast);
    SmallVector<Value> outs{q, qT};
    if (bgrad)
      outs.push_back(twin.getOutputs()[1]);
    outs.push_back(scale);
    // The dual's constants: the twin's rows and cols, the cast's format and
    // stat_slot, the twin's stat_slot as stat_slot_t, x_dtype (and the
    // twin's db_dtype), then the recipe.
    SmallVector<Attribute> consts{t("rows"),      t("cols"),      c("format"),
                                  c("stat_slot"), t("stat_slot"), c("x_dtype")};
    if (bgrad)
      consts.push_back(t("db_dtype"));
    llvm::append_range(consts, rt::constsFrom(cast, "history_length"));
    auto dual = rt::KernelOp::create(
        b, cast.getLoc(),
        bgrad ? "state_quantize_fp8_dual_bgrad" : "state_quantize_fp8_dual",
        ValueRange{x, history}, outs, /*stream=*/0, b.getArrayAttr(consts));
    if (Attribute stats = rt::dualCastStats(b, cast, twin))
      dual->setAttr("rt.fp8_stat", stats);
    Value twinX = twin.getInputs()[0], twinHistory = twin.getInputs()[1];
    twin.erase();
    cast.erase();
    twinScale.replaceAllUsesWith(scale);
    for (Value dead : {twinScale, twinX, twinHistory})
      if (Operation *def = dead.getDefiningOp();
          def && dead.use_empty() &&
          isa<rt::AllocOp, rt::ViewOp, rt::ReshapeOp>(def))
        def->erase();
    ++fused;
  }
};

} // namespace
