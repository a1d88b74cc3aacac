// gpt-data-parallel: gradients summed across ranks in buckets, each started
// as soon as the backward has produced its last gradient (see Passes.td).
#include "compiler/transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace gptc {
#define GEN_PASS_DEF_GPTDATAPARALLEL
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace gpt = gptc::gpt;

namespace {

struct ParamInfo {
  gpt::ParamOp op;
  int64_t index = 0;     // declaration order = order of the grads arena
  int64_t bytes = 0;     // f32 gradient
  Operation *ready = nullptr;  // its last accumulate_grad in train_step
  int64_t readyAt = 0;
};

class GptDataParallelPass
    : public gptc::impl::GptDataParallelBase<GptDataParallelPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketMb < 0) {
      module.emitError() << "gpt-data-parallel bucket-mb=" << bucketMb
                         << " must be >= 0 (0: no buckets, the runtime sums "
                            "all gradients after the step)";
      return signalPassFailure();
    }
    if (gradComm != "f32" && gradComm != "fp8") {
      module.emitError() << "gpt-data-parallel grad-comm='" << gradComm
                         << "' is not a format; use f32 or fp8";
      return signalPassFailure();
    }
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train || bucketMb == 0)
      return;
    const int64_t limit = static_cast<int64_t>(bucketMb * 1024 * 1024);

    // Parameters with a gradient buffer (tied ones use their target's), and
    // where train_step last adds into each.
    SmallVector<ParamInfo> params;
    llvm::StringMap<size_t> byName;
    for (auto param : module.getOps<gpt::ParamOp>()) {
      if (param.getTiedTo())
        continue;
      auto type = cast<RankedTensorType>(param.getType());
      byName[param.getSymName()] = params.size();
      params.push_back({param, static_cast<int64_t>(params.size()),
                        type.getNumElements() * 4});
    }
    int64_t position = 0;
    for (Operation &op : train.front()) {
      ++position;
      if (auto acc = dyn_cast<gpt::AccumulateGradOp>(op)) {
        auto it = byName.find(acc.getParam());
        if (it == byName.end())
          continue;
        params[it->second].ready = &op;
        params[it->second].readyAt = position;
      }
    }

    // Greedy buckets in the order gradients become final, each a run of
    // consecutive parameters (one contiguous range of the grads arena).
    SmallVector<ParamInfo *> order;
    for (ParamInfo &p : params)
      if (p.ready)
        order.push_back(&p);
    llvm::stable_sort(order, [](ParamInfo *a, ParamInfo *b) {
      return a->readyAt < b->readyAt;
    });
    SmallVector<SmallVector<ParamInfo *>> buckets;
    int64_t lo = 0, hi = -1, bytes = 0;
    for (ParamInfo *p : order) {
      bool adjacent = !buckets.empty() && (p->index == lo - 1 || p->index == hi + 1);
      if (!adjacent || bytes + p->bytes > limit) {
        buckets.emplace_back();
        lo = hi = p->index;
        bytes = 0;
      }
      buckets.back().push_back(p);
      lo = std::min(lo, p->index);
      hi = std::max(hi, p->index);
      bytes += p->bytes;
    }

    MLIRContext *context = &getContext();
    for (auto [i, bucket] : llvm::enumerate(buckets)) {
      llvm::sort(bucket, [](ParamInfo *a, ParamInfo *b) { return a->index < b->index; });
      // After the bucket's last gradient is final.
      ParamInfo *latest = bucket.front();
      SmallVector<Attribute> names;
      for (ParamInfo *p : bucket) {
        names.push_back(FlatSymbolRefAttr::get(context, p->op.getSymName()));
        if (p->readyAt > latest->readyAt)
          latest = p;
      }
      Operation *last = latest->ready;
      OpBuilder b(context);
      b.setInsertionPointAfter(last);
      gpt::GradBucketReadyOp::create(b, last->getLoc(),
                                     static_cast<uint64_t>(i),
                                     ArrayAttr::get(context, names),
                                     /*fp8=*/gradComm == "fp8");
    }
    if (buckets.empty())
      return;
    OpBuilder b(train.front().getTerminator());
    gpt::GradSyncOp::create(b, train.getLoc(),
                            static_cast<uint64_t>(buckets.size()));
  }
};

} // namespace
