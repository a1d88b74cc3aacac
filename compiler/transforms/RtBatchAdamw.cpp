// rt-batch-adamw: back-to-back adamw kernels over parameters that lie one
// after another in the arenas become one adamw_multi kernel, weight decay
// given per range of elements (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

#include "runtime/abi/gptrt.h"

namespace gptc {
#define GEN_PASS_DEF_RTBATCHADAMW
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// The hyperparameters every kernel of a batch shares, in the order
// adamw_multi takes them (after n, before weight_decay).
constexpr StringRef kHyperparameters[] = {"beta1", "beta2", "eps"};

// One adamw kernel: gptrt_adamw(grad, grad_scale, lr, step; param, m, v;
// n, beta1, beta2, eps, weight_decay), its four tensors views of arenas.
struct AdamwCall {
  rt::KernelOp kernel;
  int64_t n;
  double weightDecay;
  rt::ViewOp grad, param, m, v;

  SmallVector<rt::ViewOp, 4> tensors() const { return {grad, param, m, v}; }
};

std::optional<AdamwCall> adamwCall(rt::KernelOp kernel) {
  if (kernel.getKernel() != "adamw" || kernel.getInputs().size() != 4 ||
      kernel.getOutputs().size() != 3 || kernel.getConsts().size() != 5 ||
      !isa<IntegerAttr>(rt::constAttrNamed(kernel, "n")) ||
      !isa<FloatAttr>(rt::constAttrNamed(kernel, "weight_decay")))
    return std::nullopt;
  AdamwCall call{kernel,
                 rt::constNamed(kernel, "n"),
                 cast<FloatAttr>(rt::constAttrNamed(kernel, "weight_decay"))
                     .getValueAsDouble(),
                 kernel.getInputs()[0].getDefiningOp<rt::ViewOp>(),
                 kernel.getOutputs()[0].getDefiningOp<rt::ViewOp>(),
                 kernel.getOutputs()[1].getDefiningOp<rt::ViewOp>(),
                 kernel.getOutputs()[2].getDefiningOp<rt::ViewOp>()};
  for (rt::ViewOp view : call.tensors()) {
    auto type = view ? dyn_cast<MemRefType>(view.getType()) : nullptr;
    if (!type || !type.getElementType().isF32() ||
        type.getNumElements() != call.n)
      return std::nullopt;
  }
  return call;
}

// Whether two scalar operands are the same f32: one value, or views of the
// same bytes.
bool sameScalar(Value a, Value b) {
  if (a == b)
    return true;
  auto viewA = a.getDefiningOp<rt::ViewOp>();
  auto viewB = b.getDefiningOp<rt::ViewOp>();
  return viewA && viewB && viewA.getArenaAttr() == viewB.getArenaAttr() &&
         viewA.getOffset() == viewB.getOffset() &&
         viewA.getType() == viewB.getType();
}

class RtBatchAdamwPass : public gptc::impl::RtBatchAdamwBase<RtBatchAdamwPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (maxDecayRanges < 1 || maxDecayRanges > GPTRT_ADAMW_MAX_DECAY_RANGES) {
      getOperation().emitError()
          << "rt-batch-adamw: max-decay-ranges is " << int64_t(maxDecayRanges)
          << ", expected 1 to " << GPTRT_ADAMW_MAX_DECAY_RANGES
          << " (the runtime's GPTRT_ADAMW_MAX_DECAY_RANGES)";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<AdamwCall> group;
      for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
        if (isa<rt::AllocOp, rt::ViewOp, rt::ReshapeOp>(op))
          continue; // buffer definitions do not separate two calls
        auto kernel = dyn_cast<rt::KernelOp>(op);
        std::optional<AdamwCall> call =
            kernel ? adamwCall(kernel) : std::nullopt;
        if (call && !group.empty() && joins(group, *call)) {
          group.push_back(*call);
          continue;
        }
        emit(group);
        group.clear();
        if (call)
          group.push_back(*call);
      }
      emit(group);
    }
  }

private:
  // Whether `call`, the next kernel after group's last, can join it: the
  // same step scalars and hyperparameters, one nonzero weight decay, its
  // four tensors right after the last one's, and room for its range.
  bool joins(ArrayRef<AdamwCall> group, const AdamwCall &call) const {
    const AdamwCall &last = group.back();
    rt::KernelOp a = last.kernel, b = call.kernel;
    for (unsigned i = 1; i < 4; ++i)
      if (!sameScalar(a.getInputs()[i], b.getInputs()[i]))
        return false;
    for (StringRef name : kHyperparameters)
      if (rt::constAttrNamed(a, name) != rt::constAttrNamed(b, name))
        return false;
    double decay = 0;
    for (const AdamwCall &c : group)
      decay = c.weightDecay != 0 ? c.weightDecay : decay;
    if (call.weightDecay != 0 && decay != 0 && call.weightDecay != decay)
      return false;
    for (auto [before, after] : llvm::zip(last.tensors(), call.tensors()))
      if (before.getArenaAttr() != after.getArenaAttr() ||
          int64_t(after.getOffset()) !=
              int64_t(before.getOffset()) + 4 * last.n)
        return false;
    SmallVector<AdamwCall> with(group);
    with.push_back(call);
    return int64_t(decayRanges(with).size() / 2) <= maxDecayRanges;
  }

  // The element ranges of the group's decayed parameters, adjacent ones
  // merged: [begin0, end0, begin1, end1, ...].
  static SmallVector<int64_t> decayRanges(ArrayRef<AdamwCall> group) {
    SmallVector<int64_t> bounds;
    int64_t at = 0;
    for (const AdamwCall &c : group) {
      if (c.weightDecay != 0) {
        if (!bounds.empty() && bounds.back() == at)
          bounds.back() = at + c.n;
        else
          bounds.append({at, at + c.n});
      }
      at += c.n;
    }
    return bounds;
  }

  // One adamw_multi where the group's last kernel was, for two or more.
  void emit(ArrayRef<AdamwCall> group) {
    if (group.size() < 2)
      return;
    rt::KernelOp first = group.front().kernel;
    rt::KernelOp last = group.back().kernel;
    int64_t n = 0;
    double decay = 0;
    for (const AdamwCall &c : group) {
      n += c.n;
      decay = c.weightDecay != 0 ? c.weightDecay : decay;
    }
    SmallVector<int64_t> bounds = decayRanges(group);
    OpBuilder b(last);
    Location loc = last.getLoc();
    auto type = MemRefType::get({n}, b.getF32Type());
    SmallVector<Value, 4> whole;
    for (rt::ViewOp view : group.front().tensors())
      whole.push_back(
          rt::ViewOp::create(b, loc, type, view.getArena(), view.getOffset()));
    SmallVector<Attribute> consts{b.getI64IntegerAttr(n)};
    for (StringRef name : kHyperparameters)
      consts.push_back(rt::constAttrNamed(first, name));
    consts.push_back(b.getF64FloatAttr(decay));
    consts.push_back(b.getI64IntegerAttr(int64_t(bounds.size() / 2)));
    consts.push_back(b.getDenseI64ArrayAttr(bounds));
    ValueRange in = first.getInputs();
    rt::KernelOp::create(b, loc, "adamw_multi",
                         ValueRange{whole[0], in[1], in[2], in[3]},
                         ValueRange{whole[1], whole[2], whole[3]},
                         /*stream=*/0, b.getArrayAttr(consts));
    for (AdamwCall c : group)
      c.kernel.erase();
    batched += group.size();
  }
};

} // namespace
