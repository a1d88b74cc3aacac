// rt-batch-fp8-state-updates: delayed scaling's states recording the same
// amax share one history, and the per-tensor history updates move to the
// end of the entry point as one kernel per 64 states, their amaxes kept in
// the fp8_state arena (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

#include "llvm/Support/MathExtras.h"

#include <map>
#include <set>
#include <tuple>

namespace gptc {
#define GEN_PASS_DEF_RTBATCHFP8STATEUPDATES
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// An fp8_state_update that can move to the end of its function and the
// state it updates (its index in the arena). Its amax is an rt.alloc of
// the function (amax), or (cachedAmax) a weight's amax in the weight_cache
// arena, which cast_weights writes and every view of which (one f32 at
// that offset) then moves to the state's slot.
struct MovableUpdate {
  rt::KernelOp update;
  rt::AllocOp amax;
  rt::ViewOp cachedAmax;
  int64_t state;
};

class RtBatchFp8StateUpdatesPass
    : public gptc::impl::RtBatchFp8StateUpdatesBase<
          RtBatchFp8StateUpdatesPass> {
public:
  using Base::Base;

private:
  // History length -> byte offset of its states' amax slots in fp8_state.
  std::map<int64_t, int64_t> slotBase;

public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto arena = module.lookupSymbol<rt::ArenaOp>("fp8_state");
    if (!arena)
      return;
    shareHistories(module);
    // The amaxes go after the histories: for each history length, one f32
    // per state the arena can hold at that length's stride.
    const int64_t historyBytes = arena.getSize();
    std::set<int64_t> lengths;
    module.walk([&](rt::KernelOp k) {
      if (k.getKernel() == "fp8_state_update" && k.getConsts().size() == 1 &&
          rt::constNamed(k, "history_length") >= 1)
        lengths.insert(rt::constNamed(k, "history_length"));
    });
    int64_t end = int64_t(llvm::alignTo(historyBytes, 64));
    for (int64_t length : lengths) {
      slotBase[length] = end;
      end += 4 * llvm::divideCeil(historyBytes, rt::fp8StateStride(length));
    }
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        any |= batch(func);
    if (any)
      arena.setSize(end);
  }

private:
  // Where an amax is: its rt.alloc, or the arena and offset of its view
  // (a weight's, in weight_cache, seen through one view per use).
  static std::pair<Operation *, int64_t> amaxKey(Value amax) {
    Value root = rt::rootBuffer(amax);
    if (auto view = root.getDefiningOp<rt::ViewOp>())
      return {SymbolTable::lookupNearestSymbolFrom(view, view.getArenaAttr()),
              view.getOffset()};
    return {root.getDefiningOp(), -1};
  }

  // Two states updated once each in the module, with the same amax and
  // history length, hold the same history (both start at zero and record
  // the same values): where nothing reads the first history or changes
  // the amax between the two updates, the first update moves down to the
  // second, which goes, and the second history's readers read the first.
  void shareHistories(ModuleOp module) {
    // History offset -> its updates in the module.
    std::map<int64_t, SmallVector<rt::KernelOp>> updatesOf;
    SmallVector<rt::ViewOp> stateViews;
    module.walk([&](Operation *op) {
      if (auto view = dyn_cast<rt::ViewOp>(op);
          view && view.getArena() == "fp8_state")
        stateViews.push_back(view);
      auto update = dyn_cast<rt::KernelOp>(op);
      if (!update || update.getKernel() != "fp8_state_update" ||
          update.getInputs().size() != 1 || update.getOutputs().size() != 1 ||
          update.getConsts().size() != 1)
        return;
      if (auto history = update.getOutputs()[0].getDefiningOp<rt::ViewOp>();
          history && history.getArena() == "fp8_state")
        updatesOf[history.getOffset()].push_back(update);
    });
    // (amax, history length) -> the first update recording it.
    std::map<std::tuple<Operation *, int64_t, int64_t>, rt::KernelOp> first;
    std::map<int64_t, int64_t> sharedWith; // dropped offset -> kept offset
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (auto update :
           llvm::make_early_inc_range(func.getOps<rt::KernelOp>())) {
        if (update.getKernel() != "fp8_state_update")
          continue;
        auto history = update.getOutputs()[0].getDefiningOp<rt::ViewOp>();
        if (!history || history.getArena() != "fp8_state" ||
            updatesOf[history.getOffset()].size() != 1)
          continue;
        auto [where, offset] = amaxKey(update.getInputs()[0]);
        auto [it, isFirst] = first.try_emplace(
            {where, offset, rt::constNamed(update, "history_length")}, update);
        if (isFirst)
          continue;
        // The first update moves down to the second, which goes: nothing
        // between may read the first history (the second's readers there
        // see the history before both updates, as before) or change the
        // amax.
        rt::KernelOp kept = it->second;
        Value keptHistory = kept.getOutputs()[0];
        if (kept->getBlock() != update->getBlock() ||
            keptHistory.getType() != history.getType() ||
            rt::touchedBetween(kept, update, keptHistory, /*reads=*/true) ||
            rt::touchedBetween(kept, update, kept.getInputs()[0],
                               /*reads=*/false))
          continue;
        sharedWith[history.getOffset()] =
            keptHistory.getDefiningOp<rt::ViewOp>().getOffset();
        kept->moveBefore(update);
        update.erase();
        first.erase(it); // a third state starts a pair of its own
        ++shared;
      }
    }
    for (rt::ViewOp view : stateViews)
      if (auto it = sharedWith.find(view.getOffset()); it != sharedWith.end())
        view.setOffset(it->second);
  }

  // Batches func's movable updates; whether it changed anything.
  bool batch(func::FuncOp func) {
    Operation *end = func.getBody().front().getTerminator();
    // history length -> state index -> update; a state updated twice in
    // one call keeps its updates where they are.
    std::map<int64_t, std::map<int64_t, MovableUpdate>> byLength;
    std::set<std::pair<int64_t, int64_t>> twice;
    for (auto update : func.getOps<rt::KernelOp>()) {
      std::optional<MovableUpdate> movable = movableUpdate(update, end);
      if (!movable)
        continue;
      const int64_t length = rt::constNamed(update, "history_length");
      if (!byLength[length].try_emplace(movable->state, *movable).second)
        twice.insert({length, movable->state});
    }
    for (auto [length, state] : twice)
      byLength[length].erase(state);
    // A weight's amax can move to one slot only: where two states of this
    // function still record it, both updates stay.
    std::map<int64_t, int> cachedUses;
    for (auto &[length, updates] : byLength)
      for (auto &[state, u] : updates)
        if (u.cachedAmax)
          ++cachedUses[u.cachedAmax.getOffset()];
    for (auto &[length, updates] : byLength)
      for (auto it = updates.begin(); it != updates.end();)
        it = it->second.cachedAmax &&
                     cachedUses[it->second.cachedAmax.getOffset()] > 1
                 ? updates.erase(it)
                 : std::next(it);
    bool any = false;
    for (auto &[length, updates] : byLength) {
      // Windows of up to 64 states from the first movable one, the states
      // between them that are not (a weight's) masked out.
      auto begin = updates.begin();
      while (begin != updates.end()) {
        auto last = begin;
        while (std::next(last) != updates.end() &&
               std::next(last)->first < begin->first + 64)
          ++last;
        if (begin != last) {
          emitBatch(end, begin, std::next(last), length);
          any = true;
        }
        begin = std::next(last);
      }
    }
    return any;
  }

  // `update` if it can move to `end`: it updates a whole history in the
  // fp8_state arena from an amax in an rt.alloc that nothing uses after it,
  // or from a weight's amax in weight_cache that the function does not
  // write; nothing after it reads or writes that history.
  std::optional<MovableUpdate> movableUpdate(rt::KernelOp update,
                                             Operation *end) {
    if (update.getKernel() != "fp8_state_update" ||
        update.getInputs().size() != 1 || update.getOutputs().size() != 1 ||
        update.getConsts().size() != 1)
      return std::nullopt;
    const int64_t length = rt::constNamed(update, "history_length");
    auto history = update.getOutputs()[0].getDefiningOp<rt::ViewOp>();
    auto type = history ? dyn_cast<MemRefType>(history.getType()) : nullptr;
    if (!history || history.getArena() != "fp8_state" || length < 1 || !type ||
        type.getShape() != ArrayRef<int64_t>{length} ||
        !type.getElementType().isF32() ||
        int64_t(history.getOffset()) % rt::fp8StateStride(length) != 0)
      return std::nullopt;
    Value amaxValue = update.getInputs()[0];
    auto amaxType = cast<MemRefType>(amaxValue.getType());
    if (amaxType.getNumElements() != 1 || !amaxType.getElementType().isF32() ||
        rt::touchedBetween(update, end, history, /*reads=*/true) ||
        rt::touchedBetween(update, end, amaxValue, /*reads=*/false))
      return std::nullopt;
    const int64_t state =
        int64_t(history.getOffset()) / rt::fp8StateStride(length);
    if (auto cached = amaxValue.getDefiningOp<rt::ViewOp>()) {
      // Nothing in this function writes it.
      if (cached.getArena() != "weight_cache" || !onlyWholeViews(cached) ||
          llvm::any_of(update->getBlock()->getOps<rt::KernelOp>(),
                       [&](rt::KernelOp kernel) {
                         return llvm::any_of(kernel.getOutputs(),
                                             [&](Value out) {
                                               return rt::mayAlias(out, cached);
                                             });
                       }))
        return std::nullopt;
      return MovableUpdate{update, {}, cached, state};
    }
    auto amax = amaxValue.getDefiningOp<rt::AllocOp>();
    if (!amax)
      return std::nullopt;
    for (Operation *user : amax->getUsers())
      if (user != update && !user->isBeforeInBlock(update))
        return std::nullopt;
    return MovableUpdate{update, amax, {}, state};
  }

  // The views of `view`'s arena that overlap it, in the whole module.
  static SmallVector<rt::ViewOp> overlappingViews(rt::ViewOp view) {
    SmallVector<rt::ViewOp> views;
    view->getParentOfType<ModuleOp>().walk([&](rt::ViewOp other) {
      if (rt::mayAlias(other, view))
        views.push_back(other);
    });
    return views;
  }

  // Whether every view overlapping `view` is the same f32 at the same
  // offset (so that all of them can move together).
  static bool onlyWholeViews(rt::ViewOp view) {
    return llvm::all_of(overlappingViews(view), [&](rt::ViewOp other) {
      return other.getOffset() == view.getOffset() &&
             other.getType() == view.getType();
    });
  }

  // One fp8_state_update_batch before `end` over the states from first's
  // to last's (at most 64), a mask bit for each of [first, last); each
  // such state's amax now lives in its slot after the histories.
  void emitBatch(Operation *end,
                 std::map<int64_t, MovableUpdate>::iterator first,
                 std::map<int64_t, MovableUpdate>::iterator last,
                 int64_t length) {
    const int64_t amaxBase = slotBase.at(length);
    const int64_t k0 = first->first;
    const int64_t count = std::prev(last)->first - k0 + 1;
    const int64_t stride = rt::fp8StateStride(length);
    uint64_t mask = 0;
    for (auto it = first; it != last; ++it) {
      MovableUpdate u = it->second;
      mask |= uint64_t(1) << (it->first - k0);
      const int64_t slotOffset = amaxBase + 4 * it->first;
      if (u.cachedAmax) {
        // cast_weights now writes the weight's amax into the slot.
        auto arena =
            FlatSymbolRefAttr::get(u.cachedAmax->getContext(), "fp8_state");
        for (rt::ViewOp view : overlappingViews(u.cachedAmax)) {
          view.setArenaAttr(arena);
          view.setOffset(slotOffset);
        }
      } else {
        OpBuilder b(u.amax);
        Value slot = rt::ViewOp::create(b, u.amax.getLoc(), u.amax.getType(),
                                        "fp8_state", slotOffset);
        u.amax.getResult().replaceAllUsesWith(slot);
        u.amax.erase();
      }
      u.update.erase();
      ++batched;
    }
    OpBuilder b(end);
    Location loc = end->getLoc();
    auto f32 = b.getF32Type();
    Value amaxes = rt::ViewOp::create(b, loc, MemRefType::get({count}, f32),
                                      "fp8_state", amaxBase + 4 * k0);
    Value histories =
        rt::ViewOp::create(b, loc, MemRefType::get({count * stride / 4}, f32),
                           "fp8_state", k0 * stride);
    rt::KernelOp::create(b, loc, "fp8_state_update_batch", ValueRange{amaxes},
                         ValueRange{histories}, /*stream=*/0,
                         b.getI64ArrayAttr({count, length, stride / 4,
                                            int64_t(mask)}));
  }
};

} // namespace
