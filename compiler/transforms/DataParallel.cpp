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

// A bucket larger than any model's gradients is a typo (1 TiB).
constexpr double kMaxBucketMb = 1024.0 * 1024.0;

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
    // (NaN fails every comparison: it is refused here too.)
    if (!(bucketMb >= 0 && bucketMb <= kMaxBucketMb)) {
      module.emitError() << "gpt-data-parallel bucket-mb=" << bucketMb
                         << " must be between 0 and " << kMaxBucketMb
                         << " MiB (0: no buckets, the runtime sums all "
                            "gradients after the step)";
      return signalPassFailure();
    }
    if (gradComm != "f32" && gradComm != "fp8") {
      module.emitError() << "gpt-data-parallel grad-comm='" << gradComm
                         << "' is not a format; use f32 or fp8";
      return signalPassFailure();
    }
    if (zero != 0 && zero != 1) {
      module.emitError() << "gpt-data-parallel zero=" << static_cast<int>(zero)
                         << " is not a ZeRO stage this compiler has; use 0 "
                            "(all-reduce) or 1 (sharded optimizer)";
      return signalPassFailure();
    }
    if (zero == 1 && bucketMb == 0) {
      module.emitError() << "gpt-data-parallel zero=1 shards along the "
                            "gradient buckets, but bucket-mb=0 makes none; "
                            "set bucket-mb > 0 (e.g. 25)";
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
    for (ParamInfo &p : params) {
      if (p.ready) {
        order.push_back(&p);
      } else if (zero == 1) {
        // Its elements would be in no bucket, so no rank would own them.
        p.op.emitError() << "parameter @" << p.op.getSymName()
                         << " gets no gradient in train_step, so zero=1 "
                            "cannot give it an owner; remove the parameter "
                            "or compile with zero=0";
        return signalPassFailure();
      }
    }
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
                                     /*fp8=*/gradComm == "fp8",
                                     /*scatter=*/zero == 1);
    }
    if (buckets.empty())
      return;
    OpBuilder b(train.front().getTerminator());
    gpt::GradSyncOp::create(b, train.getLoc(),
                            static_cast<uint64_t>(buckets.size()));
    if (zero == 1 && failed(shardOptimizer(module)))
      signalPassFailure();
  }

private:
  // ZeRO-1: the optimizer reads only this rank's slices, then the updated
  // parameters are gathered before the gradients are cleared.
  LogicalResult shardOptimizer(ModuleOp module) {
    auto optimizer = module.lookupSymbol<func::FuncOp>("optimizer_step");
    if (!optimizer)
      return module.emitError()
             << "gpt-data-parallel zero=1 shards @optimizer_step, which this "
                "module does not have; run gpt-optimizer first";
    Operation *lastUpdate = nullptr;
    bool normed = false;
    for (Operation &op : optimizer.front()) {
      if (auto norm = dyn_cast<gpt::GradNormOp>(op)) {
        norm.setSharded(true);
        normed = true;
      } else if (auto adamw = dyn_cast<gpt::AdamWOp>(op)) {
        adamw.setSharded(true);
        lastUpdate = &op;
      }
    }
    if (!lastUpdate || !normed)
      return optimizer.emitError()
             << "has no gpt.adamw or no gpt.grad_norm for zero=1 to shard; "
                "expected gpt-optimizer's @optimizer_step";
    OpBuilder b(lastUpdate->getContext());
    b.setInsertionPointAfter(lastUpdate);
    gpt::GatherParamsOp::create(b, optimizer.getLoc());
    return success();
  }
};

} // namespace
