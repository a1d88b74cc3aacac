// rt-plan-memory: places activation buffers by liveness (see Passes.td).
// Greedy by size, the strategy of TensorFlow Lite's arena planner: sort by
// size, give each buffer the lowest offset that fits between the buffers
// already placed whose lifetimes overlap its own.
#include "compiler/transforms/Passes.h"

#include "llvm/Support/MathExtras.h"

namespace gptc {
#define GEN_PASS_DEF_RTPLANMEMORY
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

struct Interval {
  rt::AllocOp alloc;
  int64_t bytes;
  int64_t first, last;  // op indices, inclusive
  int64_t offset = -1;
};

class RtPlanMemoryPass : public gptc::impl::RtPlanMemoryBase<RtPlanMemoryPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto arena = module.lookupSymbol<rt::ArenaOp>("activations");
    if (!arena) {
      module.emitError("has no @activations arena; run rt-bufferize first");
      return signalPassFailure();
    }
    int64_t arenaBytes = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      int64_t peak = plan(func);
      func->setAttr("rt.peak_bytes",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), peak));
      arenaBytes = std::max(arenaBytes, peak);
    }
    arena.setSize(arenaBytes);
  }

private:
  int64_t plan(func::FuncOp func) {
    if (func.isExternal())
      return 0;
    Block &body = func.front();
    DenseMap<Operation *, int64_t> index;
    for (Operation &op : body)
      index[&op] = index.size();
    int64_t end = body.getOperations().size();

    std::vector<Interval> intervals;
    for (auto alloc : body.getOps<rt::AllocOp>()) {
      MemRefType type = alloc.getType();
      int64_t bytes = type.getNumElements() *
                      static_cast<int64_t>(
                          llvm::divideCeil(type.getElementTypeBitWidth(), 8));
      int64_t first = index[alloc], last = first;
      SmallVector<Value> aliases{alloc.getResult()};
      while (!aliases.empty()) {
        Value value = aliases.pop_back_val();
        for (Operation *user : value.getUsers()) {
          if (isa<rt::BindOp>(user))
            last = end;  // the runtime reads it after the entry returns
          last = std::max(last, index[user]);
          if (auto reshape = dyn_cast<rt::ReshapeOp>(user))
            aliases.push_back(reshape.getResult());
        }
      }
      intervals.push_back({alloc, bytes, first, last});
    }

    std::vector<Interval *> bySize;
    for (Interval &i : intervals)
      bySize.push_back(&i);
    llvm::stable_sort(bySize, [](Interval *a, Interval *b) {
      return a->bytes > b->bytes;
    });
    std::vector<Interval *> placed;
    int64_t peak = 0;
    for (Interval *next : bySize) {
      // Buffers alive at the same time, by offset.
      std::vector<Interval *> busy;
      for (Interval *other : placed)
        if (other->first <= next->last && next->first <= other->last)
          busy.push_back(other);
      llvm::sort(busy, [](Interval *a, Interval *b) {
        return a->offset < b->offset;
      });
      int64_t offset = 0;
      for (Interval *other : busy) {
        if (offset + next->bytes <= other->offset)
          break;
        offset = std::max<int64_t>(
            offset, llvm::alignTo(other->offset + other->bytes,
                                  static_cast<uint64_t>(alignment)));
      }
      next->offset = offset;
      placed.push_back(next);
      peak = std::max(peak, offset + next->bytes);
    }

    for (Interval &i : intervals) {
      OpBuilder builder(i.alloc);
      Value view = rt::ViewOp::create(builder, i.alloc.getLoc(),
                                      i.alloc.getType(), "activations",
                                      i.offset);
      i.alloc.replaceAllUsesWith(view);
      i.alloc.erase();
    }
    return llvm::alignTo(peak, static_cast<uint64_t>(alignment));
  }
};

} // namespace
