// rt-fuse-cast-scale: a kernel that only makes a cast's scale --
// scale_from_amax (current scaling) or fp8_state_scale (delayed) -- folds
// into the FP8 cast that first reads the scale, which then makes the scale
// itself and stores it for the GEMMs (see Passes.td).
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

// A scale kernel and the casts that can take it in: the fused kernel is
// `prefix` + the cast's name. gptrt.h has these forms.
struct ScaleKind {
  StringRef scaleKernel;
  unsigned scaleConsts; // its constants, after its one input
  StringRef prefix;
  ArrayRef<StringRef> casts;
  // Its constant n is the number of scales (row_scales): the fused kernel
  // takes it from the cast's shape instead.
  bool countsScales = false;
};

constexpr StringRef kCurrentCasts[] = {"quantize_fp8", "quantize_fp8_dual",
                                       "quantize_fp8_dual_bgrad"};
constexpr StringRef kDelayedCasts[] = {
    "quantize_fp8", "quantize_fp8_transposed", "quantize_fp8_transposed_bgrad"};
// Rowwise casts along rows fuse with their amax too (rt-fuse-rowwise-cast);
// the transposed ones along columns, whose amaxes span every row, take in
// only their scales.
constexpr StringRef kRowwiseCasts[] = {"quantize_rows_transposed",
                                       "quantize_rows_transposed_bgrad"};

// gptrt_scale_from_amax's constants: fp8_max, margin, power_of_two, eps;
// gptrt_fp8_state_scale's: history_length, the same four, most_recent;
// gptrt_row_scales's: n and the same four.
const ScaleKind kScaleKinds[] = {
    {"scale_from_amax", 4, "scale_", kCurrentCasts},
    {"fp8_state_scale", 6, "state_", kDelayedCasts},
    {"row_scales", 5, "scale_", kRowwiseCasts, /*countsScales=*/true},
};

// How many constants gptrt.h gives each cast; each reads (x, scale).
std::optional<unsigned> castConstCount(StringRef kernel) {
  return llvm::StringSwitch<std::optional<unsigned>>(kernel)
      .Case("quantize_fp8", 4)            // n, format, stat_slot, x_dtype
      .Case("quantize_fp8_transposed", 5) // rows, cols, format, slot, x_dtype
      .Case("quantize_fp8_transposed_bgrad", 6) // ... and db_dtype
      .Case("quantize_fp8_dual", 6) // rows, cols, format, 2 slots, x_dtype
      .Case("quantize_fp8_dual_bgrad", 7) // ... and db_dtype
      // rows, cols, along_cols, format, stat_slot, x_dtype
      .Case("quantize_rows_transposed", 6)
      .Case("quantize_rows_transposed_bgrad", 7) // ... and db_dtype
      .Default(std::nullopt);
}

class RtFuseCastScalePass
    : public gptc::impl::RtFuseCastScaleBase<RtFuseCastScalePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto [scale, kind] : rt::kernelsNamedBy(
             getOperation(), kScaleKinds,
             [](const ScaleKind &kind) { return kind.scaleKernel; }))
      fuse(scale, *kind);
  }

private:
  void fuse(rt::KernelOp scaleOp, const ScaleKind &kind) {
    if (scaleOp.getInputs().size() != 1 || scaleOp.getOutputs().size() != 1 ||
        scaleOp.getConsts().size() != kind.scaleConsts)
      return;
    // The amax, or the amax history.
    Value amax = scaleOp.getInputs()[0], scale = scaleOp.getOutputs()[0];
    auto cast = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(scaleOp, scale));
    if (!cast || !llvm::is_contained(kind.casts, cast.getKernel()))
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
        rt::touchedBetween(scaleOp, cast, scale, /*reads=*/true))
      return;
    // One scale for each of the cast's rows (along_cols 0) or columns.
    if (kind.countsScales &&
        rt::constNamed(scaleOp, "n") !=
            rt::constNamed(cast, rt::constNamed(cast, "along_cols") != 0
                                     ? "cols"
                                     : "rows"))
      return;
    // Delayed scaling records a weight's amax (known since cast_weights) in
    // its history right after the scale is made, before the weight's cast:
    // such updates move after the cast, which then still sees the history
    // the scale was made from.
    SmallVector<Operation *> laterUpdates;
    for (Operation *op = scaleOp->getNextNode(); op != cast.getOperation();
         op = op->getNextNode()) {
      auto update = dyn_cast<rt::KernelOp>(op);
      // Its amax must keep its value until after the cast.
      if (update && update.getKernel() == "fp8_state_update" &&
          update.getInputs().size() == 1 && update.getOutputs().size() == 1 &&
          rt::mayAlias(update.getOutputs()[0], amax) &&
          !rt::touchedBetween(update, cast, update.getInputs()[0],
                              /*reads=*/false) &&
          llvm::none_of(cast.getOutputs(), [&](Value out) {
            return rt::mayAlias(out, update.getInputs()[0]);
          }))
        laterUpdates.push_back(op);
    }
    // Nothing else reads or writes the history before the cast.
    if (rt::touchedBetween(scaleOp, cast, amax, /*reads=*/true, laterUpdates))
      return;
    for (Operation *update : llvm::reverse(laterUpdates))
      update->moveAfter(cast);
    OpBuilder b(cast);
    SmallVector<Value> outs(cast.getOutputs());
    outs.push_back(scale);
    SmallVector<Attribute> allConsts(cast.getConsts().getValue());
    llvm::append_range(allConsts, kind.countsScales
                                      ? rt::constsFrom(scaleOp, "fp8_max")
                                      : scaleOp.getConsts().getValue());
    auto fused = rt::KernelOp::create(
        b, cast.getLoc(), (kind.prefix + cast.getKernel()).str(),
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
