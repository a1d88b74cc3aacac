// gptrt_* optimizer kernels: gradient norm and clipping, AdamW, and their
// ZeRO-1 sharded forms.
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

using namespace gptrt::abi;

GPTRT_EXPORT void gptrt_global_norm(gptrt_context *ctx, const float *x,
                                    float *out, int64_t n) {
  guarded(ctx, "gptrt_global_norm", [&](Context &) {
    *out = static_cast<float>(std::sqrt(cpu::sumSquares(x, n)));
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    g.globalNorm(x, out, n);
  });
}

GPTRT_EXPORT void gptrt_clip_scale(gptrt_context *ctx, const float *norm,
                                   float *out, double max_norm) {
  guarded(ctx, "gptrt_clip_scale", [&](Context &) {
    if (max_norm <= 0) {
      *out = 1.0f;
      return;
    }
    // As torch.nn.utils.clip_grad_norm_ computes it on an f32 norm tensor:
    // max_norm / (norm + 1e-6) is Tensor.__rtruediv__, i.e.
    // reciprocal(norm + 1e-6) * max_norm, each op rounded to f32, then
    // clamp(max=1) (which keeps a NaN, so a NaN norm stays visible).
    const float denom = norm[0] + 1e-6f;
    const float coef = (1.0f / denom) * static_cast<float>(max_norm);
    *out = std::isnan(coef) ? coef : std::min(coef, 1.0f);
  }, [&](Context &, Gpu &g) {
    g.clipScale(norm, out, max_norm <= 0 ? 0.0f : static_cast<float>(max_norm));
  });
}

namespace {

// gptrt_adamw's bodies, shared with gptrt_adamw_sharded.
void adamwCpu(Context &c, const float *grad, const float *grad_scale,
              const float *lr, const float *step, float *param, float *m,
              float *v, int64_t n, double beta1, double beta2, double eps,
              double weight_decay) {
  requireNonNegative(n, "n");
  const float s = step[0];
  if (!(s >= 1.0f) || s != std::floor(s))
    throw std::invalid_argument(
        "step scalar is " + std::to_string(s) +
        ", expected an integer >= 1: set it with Context::setStep before "
        "optimizer_step");
  const float scale = grad_scale[0];
  const float *g = grad;
  if (scale != 1.0f) {
    float *scaled = c.scratch(static_cast<size_t>(n));
    cpu::scale(scaled, grad, scale, n);
    g = scaled;
  }
  cpu::adamw(param, g, m, v, n, static_cast<double>(lr[0]), beta1, beta2, eps,
             weight_decay, static_cast<int64_t>(s));
}

void checkStepSet(const Context &c) {
  // On CUDA `step` is device memory; the value the runner set is checked
  // here (the kernel reads the pointer, so a captured step replays).
  if (c.step() < 1)
    throw std::invalid_argument(
        "optimizer step is " + std::to_string(c.step()) +
        ", expected an integer >= 1: set it with Context::setStep before "
        "optimizer_step");
}

// Calls update(first, count, mIndex, vIndex) for each run of the n elements
// of a parameter (gradient at element gradOffset) that this rank owns:
// elements [first, first + count) of the parameter, whose moments are at
// those indices of the optimizer arena. Unsharded, that is all of it.
template <typename Update>
void forEachOwnedRun(const Context &c, int64_t gradOffset, int64_t n,
                     int64_t gradElements, Update &&update) {
  const OptimizerShard *shard = c.optimizerShard();
  if (shard == nullptr) {
    update(0, n, gradOffset, gradElements + gradOffset);
    return;
  }
  for (const OptimizerShard::Range &r : shard->owned()) {
    const int64_t lo = std::max(r.gradBegin, gradOffset);
    const int64_t hi = std::min(r.gradBegin + r.count, gradOffset + n);
    if (lo >= hi)
      continue;
    const int64_t local = r.localBegin + (lo - r.gradBegin);
    update(lo - gradOffset, hi - lo, local, shard->localElements() + local);
  }
}

} // namespace

GPTRT_EXPORT void gptrt_adamw(gptrt_context *ctx, const float *grad,
                              const float *grad_scale, const float *lr,
                              const float *step, float *param, float *m,
                              float *v, int64_t n, double beta1, double beta2,
                              double eps, double weight_decay) {
  guarded(
      ctx, "gptrt_adamw",
      [&](Context &c) {
        adamwCpu(c, grad, grad_scale, lr, step, param, m, v, n, beta1, beta2,
                 eps, weight_decay);
      },
      [&](Context &c, Gpu &gpu) {
        requireNonNegative(n, "n");
        checkStepSet(c);
        gpu.adamw(grad, grad_scale, lr, step, param, m, v, n, beta1, beta2, eps,
                  weight_decay, gptrt::cuda::AdamwDecay::all(n));
      });
}

static_assert(gptrt::cuda::AdamwDecay::kMaxRanges ==
              GPTRT_ADAMW_MAX_DECAY_RANGES);

GPTRT_EXPORT void gptrt_adamw_multi(gptrt_context *ctx, const float *grad,
                                    const float *grad_scale, const float *lr,
                                    const float *step, float *param, float *m,
                                    float *v, int64_t n, double beta1,
                                    double beta2, double eps,
                                    double weight_decay, int64_t decay_count,
                                    const int64_t *decay_ranges) {
  // The ranges as the CUDA kernels take them, checked.
  auto decayOf = [&] {
    requireNonNegative(n, "n");
    if (decay_count < 0 || decay_count > GPTRT_ADAMW_MAX_DECAY_RANGES)
      throw std::invalid_argument(
          "decay_count " + std::to_string(decay_count) + ", expected 0 to " +
          std::to_string(GPTRT_ADAMW_MAX_DECAY_RANGES) +
          ": split the parameters over more gptrt_adamw_multi calls");
    if (decay_count > 0 && decay_ranges == nullptr)
      throw std::invalid_argument("decay_ranges is null with decay_count " +
                                  std::to_string(decay_count) +
                                  ", expected 2 * decay_count bounds");
    gptrt::cuda::AdamwDecay d;
    d.count = decay_count;
    for (int64_t i = 0; i < 2 * decay_count; ++i) {
      d.bounds[i] = decay_ranges[i];
      const int64_t low = i == 0 ? 0 : d.bounds[i - 1];
      if (d.bounds[i] < low || d.bounds[i] > n)
        throw std::invalid_argument("decay_ranges[" + std::to_string(i) +
                                    "] is " + std::to_string(d.bounds[i]) +
                                    ", expected " + std::to_string(low) +
                                    " to n = " + std::to_string(n) +
                                    " (ascending ranges within the elements)");
    }
    return d;
  };
  guarded(
      ctx, "gptrt_adamw_multi",
      [&](Context &c) {
        const gptrt::cuda::AdamwDecay d = decayOf();
        // One gptrt_adamw per stretch of equal weight decay: the same bits.
        int64_t at = 0;
        for (int64_t j = 0; j <= d.count; ++j) {
          const int64_t begin = j < d.count ? d.bounds[2 * j] : n;
          if (begin > at)
            adamwCpu(c, grad + at, grad_scale, lr, step, param + at, m + at,
                     v + at, begin - at, beta1, beta2, eps, 0.0);
          if (j == d.count)
            break;
          const int64_t end = d.bounds[2 * j + 1];
          if (end > begin)
            adamwCpu(c, grad + begin, grad_scale, lr, step, param + begin,
                     m + begin, v + begin, end - begin, beta1, beta2, eps,
                     weight_decay);
          at = end;
        }
      },
      [&](Context &c, Gpu &gpu) {
        const gptrt::cuda::AdamwDecay d = decayOf();
        checkStepSet(c);
        gpu.adamw(grad, grad_scale, lr, step, param, m, v, n, beta1, beta2, eps,
                  weight_decay, d);
      });
}

GPTRT_EXPORT void gptrt_global_norm_sharded(gptrt_context *ctx,
                                            const float *grads, float *out,
                                            int64_t n) {
  guarded(ctx, "gptrt_global_norm_sharded", [&](Context &c) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr) {
      *out = static_cast<float>(std::sqrt(cpu::sumSquares(grads, n)));
      return;
    }
    checkShardFits(*shard, n, "grads");
    double sum = 0;
    for (const OptimizerShard::Range &r : shard->owned())
      sum += cpu::sumSquares(grads + r.gradBegin, r.count);
    if (shard->world() > 1)
      sum = exchangeFor(c, *shard).sumOverRanks(sum);
    *out = static_cast<float>(std::sqrt(sum));
  }, [&](Context &c, Gpu &g) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr) {
      g.globalNorm(grads, out, n);
      return;
    }
    checkShardFits(*shard, n, "grads");
    // Each owned run's norm on the device, their squares summed on the
    // host and over the ranks: ZeRO-1 waits for the device here, once per
    // optimizer step (the CPU sums each run in double instead).
    double sum = 0;
    for (const OptimizerShard::Range &r : shard->owned()) {
      g.globalNorm(grads + r.gradBegin, out, r.count);
      float norm = 0;
      g.toHost(&norm, out, sizeof norm);
      sum += static_cast<double>(norm) * norm;
    }
    if (shard->world() > 1)
      sum = exchangeFor(c, *shard).sumOverRanks(sum);
    const float total = static_cast<float>(std::sqrt(sum));
    g.toDevice(out, &total, sizeof total);
  });
}

GPTRT_EXPORT void gptrt_adamw_sharded(gptrt_context *ctx, const float *grad,
                                      const float *grad_scale, const float *lr,
                                      const float *step, float *param,
                                      float *optimizer, int64_t n,
                                      int64_t grad_offset,
                                      int64_t grad_elements, double beta1,
                                      double beta2, double eps,
                                      double weight_decay) {
  guarded(ctx, "gptrt_adamw_sharded", [&](Context &c) {
    requireNonNegative(n, "n");
    requireNonNegative(grad_offset, "grad_offset");
    forEachOwnedRun(c, grad_offset, n, grad_elements,
                    [&](int64_t first, int64_t count, int64_t mAt,
                        int64_t vAt) {
                      adamwCpu(c, grad + first, grad_scale, lr, step,
                               param + first, optimizer + mAt,
                               optimizer + vAt, count, beta1, beta2, eps,
                               weight_decay);
                    });
  }, [&](Context &c, Gpu &gpu) {
    requireNonNegative(n, "n");
    checkStepSet(c);
    forEachOwnedRun(
        c, grad_offset, n, grad_elements,
        [&](int64_t first, int64_t count, int64_t mAt, int64_t vAt) {
          gpu.adamw(grad + first, grad_scale, lr, step, param + first,
                    optimizer + mAt, optimizer + vAt, count, beta1, beta2, eps,
                    weight_decay, gptrt::cuda::AdamwDecay::all(count));
        });
  });
}
