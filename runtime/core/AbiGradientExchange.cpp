// gptrt_* data-parallel calls: gradient buckets handed to the exchange,
// the wait for them, and the ZeRO-1 parameter gather.
#include "runtime/core/AbiSupport.h"

using namespace gptrt::abi;

namespace {

void checkBucketArgs(int64_t n, int64_t fp8Format, int64_t scatter) {
  requireNonNegative(n, "n");
  if (fp8Format != -1)
    requireFormat(fp8Format);
  if (scatter != 0 && scatter != 1)
    throw std::invalid_argument("scatter = " + std::to_string(scatter) +
                                ", expected 0 or 1");
}

} // namespace

GPTRT_EXPORT void gptrt_grad_bucket_ready(gptrt_context *ctx, float *grads,
                                          int64_t n, int64_t bucket,
                                          int64_t fp8Format, int64_t scatter) {
  guarded(ctx, "gptrt_grad_bucket_ready", [&](Context &c) {
    checkBucketArgs(n, fp8Format, scatter);
    if (c.gradientExchange() && c.lastMicroStep())
      c.gradientExchange()->start(grads, n, bucket, fp8Format, scatter == 1,
                                  nullptr);
  }, [&](Context &c, Gpu &g) {
    checkBucketArgs(n, fp8Format, scatter);
    if (!c.gradientExchange() || !c.lastMicroStep())
      return;
    // The bucket must be final before the communication stream reads it:
    // an event after the kernels that wrote it, which that stream waits
    // for on the device, so this thread goes on launching the backward.
    c.gradientExchange()->start(grads, n, bucket, fp8Format, scatter == 1,
                                g.recordBucketEvent(bucket));
  });
}

GPTRT_EXPORT void gptrt_grad_sync(gptrt_context *ctx, float *,
                                  int64_t buckets) {
  guarded(ctx, "gptrt_grad_sync", [&](Context &c) {
    if (c.gradientExchange() && c.lastMicroStep())
      c.gradientExchange()->finish(buckets);
  }, [&](Context &c, Gpu &) {
    if (c.gradientExchange() && c.lastMicroStep())
      c.gradientExchange()->finish(buckets);
  });
}

GPTRT_EXPORT void gptrt_gather_params(gptrt_context *ctx, float *params,
                                      int64_t n) {
  guarded(ctx, "gptrt_gather_params", [&](Context &c) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr || shard->world() == 1)
      return;
    checkShardFits(*shard, n, "params");
    exchangeFor(c, *shard).gatherParams(params, *shard);
  }, [&](Context &c, Gpu &g) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr || shard->world() == 1)
      return;
    checkShardFits(*shard, n, "params");
    // The exchange copies on its own stream: the updates must be done.
    g.synchronize();
    exchangeFor(c, *shard).gatherParams(params, *shard);
  });
}
