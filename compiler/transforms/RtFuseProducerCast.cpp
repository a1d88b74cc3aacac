// rt-fuse-producer-cast: under delayed scaling, the FP8 cast of an _amax
// producer's output whose scale comes from an amax history moves into the
// producer, its _cast form, the scale made before it (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEPRODUCERCAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// A producer that takes its output's amax as it stores it, its form that
// also casts it (gptrt.h), the output, and the constant holding its dtype.
struct ProducerForm {
  StringRef amaxForm;
  StringRef castForm;
  unsigned outIndex;
  unsigned dtypeConst;
};

// The forward producers fp8-fuse-cast already folds their casts into at
// the fp8 level; these are the kernels rt passes make after it.
const ProducerForm kForms[] = {
    // consts: batch, seq, width, heads, causal, dtype
    {"attention_fwd_packed_amax", "attention_fwd_packed_cast", 0, 5},
};

class RtFuseProducerCastPass
    : public gptc::impl::RtFuseProducerCastBase<RtFuseProducerCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto [producer, form] : rt::kernelsNamedBy(
             getOperation(), kForms,
             [](const ProducerForm &form) { return form.amaxForm; }))
      fuse(producer, *form);
  }

private:
  void fuse(rt::KernelOp producer, const ProducerForm &form) {
    if (producer.getOutputs().size() <= form.outIndex ||
        producer.getConsts().size() <= form.dtypeConst)
      return;
    Value out = producer.getOutputs()[form.outIndex];
    Value root = rt::rootBuffer(out);
    auto type = cast<MemRefType>(root.getType());
    if (!root.getDefiningOp<rt::AllocOp>() || type.getRank() < 1 ||
        !type.hasStaticShape())
      return;
    const int64_t dtype = rt::constAt(producer, form.dtypeConst);

    // The cast: the next kernel reading the output, of all of it, in its
    // dtype. gptrt_quantize_fp8's constants: n, format, stat_slot, x_dtype.
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
        rt::constAt(castOp, 0) != type.getNumElements() ||
        rt::constAt(castOp, 3) != dtype ||
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

    // The epilogue's constants: rows, cols (the output's last dimension),
    // out_dtype, format, transpose, stat_slot.
    OpBuilder b(producer);
    const int64_t cols = type.getShape().back();
    SmallVector<Attribute> consts(producer.getConsts().getValue());
    for (int64_t v :
         {cols == 0 ? int64_t(0) : type.getNumElements() / cols, cols, dtype,
          rt::constAt(castOp, 1), int64_t(0), rt::constAt(castOp, 2)})
      consts.push_back(b.getI64IntegerAttr(v));
    SmallVector<Value> ins(producer.getInputs());
    ins.push_back(scale);
    SmallVector<Value> outs(producer.getOutputs());
    outs.push_back(castOp.getOutputs()[0]);
    auto withCast =
        rt::KernelOp::create(b, producer.getLoc(), form.castForm, ins, outs,
                             /*stream=*/0, b.getArrayAttr(consts));
    if (Attribute stat = castOp->getAttr("rt.fp8_stat"))
      withCast->setAttr("rt.fp8_stat", stat);
    castOp.erase();
    producer.erase();
    ++fused;
  }
};

} // namespace
