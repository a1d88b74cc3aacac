// rt-fuse-producer-cast: under delayed scaling, the FP8 cast of the output
// of a producer whose epilogue takes its amax, with a scale made from an
// amax history, moves into that epilogue, the scale made before it (see
// Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEPRODUCERCAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// A producer whose epilogue may take its output's amax and cast, the
// output, and the constant holding its dtype, by their names in its row.
struct ProducerForm {
  StringRef kernel;
  StringRef output;
  StringRef dtypeConst;
};

// The forward producers fp8-fuse-cast already folds their casts into at
// the fp8 level; these are the kernels rt passes make after it.
const ProducerForm kForms[] = {
    {"attention_fwd_packed", "out", "dtype"},
};

class RtFuseProducerCastPass
    : public gptc::impl::RtFuseProducerCastBase<RtFuseProducerCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto [producer, form] : rt::kernelsNamedBy(
             getOperation(), kForms,
             [](const ProducerForm &form) { return form.kernel; }))
      fuse(producer, *form);
  }

private:
  void fuse(rt::KernelOp producer, const ProducerForm &form) {
    // Its epilogue takes the amax and casts nothing yet.
    Value out = rt::bufferNamed(producer, form.output);
    if (!out || !rt::bufferNamed(producer, "amax") ||
        rt::bufferNamed(producer, "q"))
      return;
    Value root = rt::rootBuffer(out);
    auto type = cast<MemRefType>(root.getType());
    if (!root.getDefiningOp<rt::AllocOp>() || type.getRank() < 1 ||
        !type.hasStaticShape())
      return;
    const int64_t dtype = rt::constNamed(producer, form.dtypeConst);

    // The cast: the next kernel reading the output, of all of it, in its
    // dtype.
    rt::KernelOp castOp;
    for (Operation *op = producer->getNextNode(); op && !castOp;
         op = op->getNextNode())
      if (rt::touches(op, root, /*reads=*/true)) {
        castOp = dyn_cast<rt::KernelOp>(op);
        if (!castOp)
          return;
      }
    if (!castOp || castOp.getKernel() != "quantize_fp8" ||
        castOp.getInputs().size() != 2 || castOp.getOutputs().size() != 1 ||
        castOp.getConsts().size() != 4 ||
        !rt::sameBytes(castOp.getInputs()[0], out) ||
        rt::constNamed(castOp, "n") != type.getNumElements() ||
        rt::constNamed(castOp, "x_dtype") != dtype ||
        rt::touchedBetween(producer, castOp, out, /*reads=*/false) ||
        !rt::outputsCanMoveUp(producer, castOp))
      return;

    // Its scale made from a history: fp8_state_scale, which moves in front
    // of the producer when nothing in between writes the history or
    // touches the scale.
    Value scale = castOp.getInputs()[1];
    auto scaleOp =
        dyn_cast_or_null<rt::KernelOp>(rt::lastWriter(castOp, scale));
    if (!scaleOp || scaleOp.getKernel() != "fp8_state_scale" ||
        scaleOp.getInputs().size() != 1 || scaleOp.getOutputs().size() != 1 ||
        scaleOp.getOutputs()[0] != scale)
      return;
    Value history = scaleOp.getInputs()[0];
    const bool scaleAfter = producer->isBeforeInBlock(scaleOp);
    if (scaleAfter) {
      for (Value buffer : {history, scale}) {
        Operation *def = buffer.getDefiningOp();
        if (!def || !isa<rt::AllocOp, rt::ViewOp>(def))
          return;
      }
      if (rt::touchedBetween(producer, scaleOp, history, /*reads=*/false) ||
          rt::touchedBetween(producer, scaleOp, scale, /*reads=*/true) ||
          rt::touches(producer, history, /*reads=*/false) ||
          rt::touches(producer, scale, /*reads=*/true))
        return;
    } else if (rt::touchedBetween(scaleOp, castOp, scale, /*reads=*/false)) {
      return;
    }

    if (scaleAfter) {
      for (Value buffer : {history, scale})
        if (Operation *def = buffer.getDefiningOp();
            producer->isBeforeInBlock(def))
          def->moveBefore(producer);
      scaleOp->moveBefore(producer);
    }
    rt::moveOutputDefsBefore(producer, castOp);

    // The epilogue (rows x cols of the output, its last dimension, as
    // rt-fuse-amax set it) gains the scale, q, format and stat_slot.
    Attribute stat = castOp->getAttr("rt.fp8_stat");
    rt::KernelOp withCast = rt::withEpilogue(
        producer, {{"scale", scale}, {"q", castOp.getOutputs()[0]}},
        {{"format", rt::constNamed(castOp, "format")},
         {"transpose", 0},
         {"stat_slot", rt::constNamed(castOp, "stat_slot")}});
    if (stat)
      withCast->setAttr("rt.fp8_stat", stat);
    castOp.erase();
    ++fused;
  }
};

} // namespace
