// rt-fuse-dual-cast: the two FP8 casts the backward makes of one output
// gradient -- row-major for the grad_input GEMM, transposed for
// grad_weight -- become one quantize_fp8_dual kernel that reads the
// gradient once (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEDUALCAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

class RtFuseDualCastPass
    : public gptc::impl::RtFuseDualCastBase<RtFuseDualCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> casts;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "quantize_fp8")
        casts.push_back(op);
    });
    for (rt::KernelOp cast : casts)
      fuse(cast);
    // A transposed cast left alone (delayed scaling: its own scale;
    // rowwise scaling: scales of its own along the other axis) still reads
    // the whole gradient: the bias gradient joins it too.
    SmallVector<rt::KernelOp> transposed;
    getOperation().walk([&](rt::KernelOp op) {
      if ((op.getKernel() == "quantize_fp8_transposed" &&
           op.getConsts().size() == 5) ||
          (op.getKernel() == "quantize_rows_transposed" &&
           op.getConsts().size() == 6))
        transposed.push_back(op);
    });
    for (rt::KernelOp cast : transposed)
      fuseBiasGradient(cast);
  }

private:
  // quantize_fp8(x, scale) -> q, later quantize_fp8_transposed(view of x,
  // the same scale) -> qT: one quantize_fp8_dual writing both where the
  // first was.
  void fuse(rt::KernelOp cast) {
    if (cast.getInputs().size() != 2 || cast.getOutputs().size() != 1 ||
        cast.getConsts().size() != 4)
      return;
    Value x = cast.getInputs()[0], scale = cast.getInputs()[1];
    rt::KernelOp twin;
    SmallVector<Value> views = rt::viewsOf(rt::rootBuffer(x));
    for (Value view : views)
      for (Operation *user : view.getUsers()) {
        auto kernel = dyn_cast<rt::KernelOp>(user);
        if (kernel && kernel.getKernel() == "quantize_fp8_transposed" &&
            kernel.getInputs().size() == 2 && kernel.getInputs()[0] == view &&
            kernel.getInputs()[1] == scale && kernel.getOutputs().size() == 1 &&
            kernel.getConsts().size() == 5 && cast->isBeforeInBlock(kernel) &&
            (!twin || kernel->isBeforeInBlock(twin)))
          twin = kernel;
      }
    if (!twin ||
        rt::constNamed(twin, "rows") * rt::constNamed(twin, "cols") !=
            rt::constNamed(cast, "n") ||
        rt::constNamed(twin, "format") != rt::constNamed(cast, "format") ||
        rt::constNamed(twin, "x_dtype") != rt::constNamed(cast, "x_dtype"))
      return;
    // x and the scale keep their values until the twin read them.
    Value q = cast.getOutputs()[0], qT = twin.getOutputs()[0];
    if (rt::touchedBetween(cast, twin, x, /*reads=*/false) ||
        rt::touchedBetween(cast, twin, scale, /*reads=*/false) ||
        rt::touchedBetween(cast, twin, qT, /*reads=*/true))
      return;
    if (!rt::dualCastPays(cast, twin, x, q))
      return;
    Operation *qTDef = qT.getDefiningOp();
    if (qTDef && cast->isBeforeInBlock(qTDef)) {
      if (!isa<rt::AllocOp>(qTDef))
        return;
      qTDef->moveBefore(cast);
    }
    // The dual's constants: the twin's rows and cols, the cast's format and
    // stat_slot, the twin's stat_slot as stat_slot_t, x_dtype.
    auto c = [&](StringRef name) { return rt::constAttrNamed(cast, name); };
    auto t = [&](StringRef name) { return rt::constAttrNamed(twin, name); };
    OpBuilder b(cast);
    auto dual = rt::KernelOp::create(
        b, cast.getLoc(), "quantize_fp8_dual", ValueRange{x, scale},
        ValueRange{q, qT}, /*stream=*/0,
        b.getArrayAttr({t("rows"), t("cols"), c("format"), c("stat_slot"),
                        t("stat_slot"), c("x_dtype")}));
    if (Attribute stats = rt::dualCastStats(b, cast, twin))
      dual->setAttr("rt.fp8_stat", stats);
    Value twinInput = twin.getInputs()[0];
    twin.erase();
    cast.erase();
    if (auto reshape = twinInput.getDefiningOp<rt::ReshapeOp>();
        reshape && reshape->use_empty())
      reshape.erase();
    ++fused;
    fuseBiasGradient(dual);
  }

  // cast = quantize_fp8_dual(x) -> q, qT, or quantize_fp8_transposed(x) /
  // quantize_rows_transposed(x) -> qT; then reduce_rows(x) -> db (the bias
  // gradient of the GEMM whose output gradient x is): the same kernel with a
  // _bgrad suffix, summing x's columns from the same read.
  void fuseBiasGradient(rt::KernelOp cast) {
    Value x = cast.getInputs()[0];
    rt::KernelOp reduce =
        rt::nextKernelReading(cast, rt::rootBuffer(x), "reduce_rows");
    if (!reduce || reduce.getInputs().size() != 1 ||
        reduce.getOutputs().size() != 1 || reduce.getConsts().size() != 4 ||
        rt::constNamed(reduce, "rows") != rt::constNamed(cast, "rows") ||
        rt::constNamed(reduce, "cols") != rt::constNamed(cast, "cols") ||
        rt::constNamed(reduce, "x_dtype") != rt::constNamed(cast, "x_dtype"))
      return;
    if (rt::touchedBetween(cast, reduce, x, /*reads=*/false) ||
        !rt::outputsCanMoveUp(cast, reduce))
      return;
    rt::moveOutputDefsBefore(cast, reduce);
    OpBuilder b(cast);
    SmallVector<Value> outs(cast.getOutputs());
    outs.push_back(reduce.getOutputs()[0]);
    // The _bgrad form's constants: the cast's, then db_dtype (the
    // reduction's out_dtype).
    SmallVector<Attribute> consts(cast.getConsts().getValue());
    consts.push_back(rt::constAttrNamed(reduce, "out_dtype"));
    auto fusedKernel = rt::KernelOp::create(
        b, cast.getLoc(), (cast.getKernel() + "_bgrad").str(), cast.getInputs(),
        outs, /*stream=*/0, b.getArrayAttr(consts));
    // The statistics stay those of the FP8 outputs (the first ones).
    if (Attribute stat = cast->getAttr("rt.fp8_stat"))
      fusedKernel->setAttr("rt.fp8_stat", stat);
    reduce.erase();
    cast.erase();
    ++biasGradients;
  }
};

} // namespace
