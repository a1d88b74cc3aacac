// rt-batch-fp8-state-scales: delayed scaling's scale kernels whose history
// nothing writes earlier in the entry point move to its start as one kernel
// per 64 states, their scales kept in the fp8_state arena (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

#include "llvm/Support/MathExtras.h"

#include <map>

namespace gptc {
#define GEN_PASS_DEF_RTBATCHFP8STATESCALES
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// An fp8_state_scale that can run at the start of its function: the
// history it reads (state index `state` at its length's stride) holds
// there what it holds where the kernel is, and its scale is an rt.alloc
// that nothing writes or reads before it.
struct HoistableScale {
  rt::KernelOp scale;
  rt::AllocOp out;
  int64_t state;
};

// An fp8_state_scale's constants. Kernels with equal constants (so equal
// history lengths) batch together; their array attribute is unique.
using ScaleConsts = ArrayAttr;

class RtBatchFp8StateScalesPass
    : public gptc::impl::RtBatchFp8StateScalesBase<RtBatchFp8StateScalesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto arena = module.lookupSymbol<rt::ArenaOp>("fp8_state");
    if (!arena)
      return;
    // Per function, per constants, per state: its hoistable kernels.
    using ByState = std::map<int64_t, SmallVector<HoistableScale>>;
    SmallVector<
        std::pair<func::FuncOp, SmallVector<std::pair<ScaleConsts, ByState>>>>
        work;
    // Constants in module order -> one past the largest state batched.
    SmallVector<std::pair<ScaleConsts, int64_t>> regions;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<std::pair<ScaleConsts, ByState>> groups;
      for (auto kernel : func.getOps<rt::KernelOp>()) {
        std::optional<HoistableScale> hoistable = hoistableScale(kernel);
        if (!hoistable)
          continue;
        ScaleConsts consts = kernel.getConsts();
        auto group = llvm::find_if(
            groups, [&](const auto &g) { return g.first == consts; });
        if (group == groups.end())
          group = groups.insert(groups.end(), {consts, ByState{}});
        group->second[hoistable->state].push_back(*hoistable);
      }
      for (auto &[groupConsts, byState] : groups) {
        dropLoneWindows(byState);
        if (byState.empty())
          continue;
        const int64_t end = byState.rbegin()->first + 1;
        // (A lambda may not capture a structured binding before C++20.)
        const ScaleConsts consts = groupConsts;
        auto region = llvm::find_if(
            regions, [&](const auto &r) { return r.first == consts; });
        if (region == regions.end())
          regions.push_back({consts, end});
        else
          region->second = std::max(region->second, end);
      }
      work.push_back({func, std::move(groups)});
    }
    if (regions.empty())
      return;
    // The scales go after everything the arena holds so far, one f32 per
    // state for each set of constants.
    DenseMap<Attribute, int64_t> slotBase;
    int64_t end = int64_t(llvm::alignTo(arena.getSize(), 64));
    for (auto [consts, states] : regions) {
      slotBase[consts] = end;
      end += 4 * states;
    }
    for (auto &[func, groups] : work) {
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      for (auto &[consts, byState] : groups)
        emitBatches(b, consts, byState, slotBase.at(consts));
    }
    arena.setSize(end);
  }

private:
  static std::optional<HoistableScale> hoistableScale(rt::KernelOp kernel) {
    if (kernel.getKernel() != "fp8_state_scale" ||
        kernel.getInputs().size() != 1 || kernel.getOutputs().size() != 1 ||
        kernel.getConsts().size() != 6 ||
        !isa<IntegerAttr>(rt::constAttrNamed(kernel, "history_length")))
      return std::nullopt;
    const int64_t length = rt::constNamed(kernel, "history_length");
    Value historyValue = kernel.getInputs()[0];
    auto history = historyValue.getDefiningOp<rt::ViewOp>();
    auto type = history ? dyn_cast<MemRefType>(history.getType()) : nullptr;
    if (!history || history.getArena() != "fp8_state" || length < 1 || !type ||
        type.getShape() != ArrayRef<int64_t>{length} ||
        !type.getElementType().isF32() ||
        int64_t(history.getOffset()) % rt::fp8StateStride(length) != 0 ||
        rt::touchedBefore(kernel, historyValue, /*reads=*/false))
      return std::nullopt;
    auto out = kernel.getOutputs()[0].getDefiningOp<rt::AllocOp>();
    auto outType = out ? dyn_cast<MemRefType>(out.getType()) : nullptr;
    if (!out || outType.getNumElements() != 1 ||
        !outType.getElementType().isF32())
      return std::nullopt;
    // The scale kernel is the first to use its scale and the only one to
    // write it.
    for (Value view : rt::viewsOf(out))
      for (Operation *user : view.getUsers()) {
        if (user == kernel.getOperation() || isa<rt::ReshapeOp>(user))
          continue;
        if (!kernel->isBeforeInBlock(user) ||
            rt::touches(user, view, /*reads=*/false))
          return std::nullopt;
      }
    return HoistableScale{
        kernel, out, int64_t(history.getOffset()) / rt::fp8StateStride(length)};
  }

  // Windows of up to 64 states from the first one left, as emitBatches
  // cuts them; a window of one kernel stays where it is (a batch would
  // save nothing).
  static void
  dropLoneWindows(std::map<int64_t, SmallVector<HoistableScale>> &byState) {
    auto begin = byState.begin();
    while (begin != byState.end()) {
      auto last = windowEnd(byState, begin);
      if (std::next(begin) == last && begin->second.size() == 1)
        begin = byState.erase(begin);
      else
        begin = last;
    }
  }

  static std::map<int64_t, SmallVector<HoistableScale>>::iterator
  windowEnd(std::map<int64_t, SmallVector<HoistableScale>> &byState,
            std::map<int64_t, SmallVector<HoistableScale>>::iterator begin) {
    auto last = begin;
    while (last != byState.end() && last->first < begin->first + 64)
      ++last;
    return last;
  }

  // One fp8_state_scale_batch per window at b's insertion point (the
  // function's start); each scale kernel of the window goes, its scale
  // read from its state's slot (kernels of one state, seeing one history
  // with the same constants, share it).
  void emitBatches(OpBuilder &b, ScaleConsts consts,
                   std::map<int64_t, SmallVector<HoistableScale>> &byState,
                   int64_t scaleBase) {
    const unsigned lengthAt =
        rt::constIndex("fp8_state_scale", "history_length");
    const int64_t length = cast<IntegerAttr>(consts[lengthAt]).getInt();
    const int64_t stride = rt::fp8StateStride(length);
    auto f32 = b.getF32Type();
    for (auto begin = byState.begin(); begin != byState.end();) {
      auto last = windowEnd(byState, begin);
      const int64_t k0 = begin->first;
      const int64_t count = std::prev(last)->first - k0 + 1;
      Location loc = begin->second.front().scale.getLoc();
      uint64_t mask = 0;
      for (auto it = begin; it != last; ++it) {
        mask |= uint64_t(1) << (it->first - k0);
        for (HoistableScale &h : it->second) {
          OpBuilder at(h.out);
          Value slot =
              rt::ViewOp::create(at, h.out.getLoc(), h.out.getType(),
                                 "fp8_state", scaleBase + 4 * it->first);
          h.out.getResult().replaceAllUsesWith(slot);
          h.scale.erase();
          h.out.erase();
          ++batched;
        }
      }
      Value histories =
          rt::ViewOp::create(b, loc, MemRefType::get({count * stride / 4}, f32),
                             "fp8_state", k0 * stride);
      Value scales = rt::ViewOp::create(b, loc, MemRefType::get({count}, f32),
                                        "fp8_state", scaleBase + 4 * k0);
      // count, history_length, history_stride, mask, then the recipe
      // (fp8_state_scale's constants after its history_length).
      SmallVector<Attribute> batchConsts{
          b.getI64IntegerAttr(count), consts[lengthAt],
          b.getI64IntegerAttr(stride / 4), b.getI64IntegerAttr(int64_t(mask))};
      llvm::append_range(batchConsts,
                         consts.getValue().drop_front(lengthAt + 1));
      rt::KernelOp::create(b, loc, "fp8_state_scale_batch",
                           ValueRange{histories}, ValueRange{scales},
                           /*stream=*/0, b.getArrayAttr(batchConsts));
      begin = last;
    }
  }
};

} // namespace
