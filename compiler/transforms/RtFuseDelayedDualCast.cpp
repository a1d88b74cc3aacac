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

// gptrt_state_quantize_fp8's constants: n, format, stat_slot, x_dtype, then
// the six of the scale (history_length, fp8_max, margin, power_of_two, eps,
// most_recent). The transposed forms start with rows, cols, format,
// stat_slot, x_dtype (and db_dtype for _bgrad) before the same six.
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
    ArrayRef<Attribute> c = cast.getConsts().getValue(),
                        t = twin.getConsts().getValue();
    // One tensor in one format and storage, scaled by one recipe.
    if (rt::constAt(twin, 0) * rt::constAt(twin, 1) != rt::constAt(cast, 0) ||
        t[2] != c[1] || t[4] != c[3] ||
        t.drop_front(twinOwn) != c.drop_front(4))
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
    SmallVector<Attribute> consts{t[0], t[1], c[1], c[2], t[3], c[3]};
    if (bgrad)
      consts.push_back(t[5]);
    llvm::append_range(consts, c.drop_front(4));
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
