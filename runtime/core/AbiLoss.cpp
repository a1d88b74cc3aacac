// gptrt_* cross-entropy kernels: forward, backward and the two fused (with
// the amax of the logits' gradient as its output epilogue).
#include "runtime/core/AbiEpilogue.h"
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

using namespace gptrt::abi;

GPTRT_EXPORT void gptrt_cross_entropy_fwd(gptrt_context *ctx,
                                          const void *logits,
                                          const int32_t *targets, float *loss,
                                          float *lse, int64_t rows,
                                          int64_t vocab, int64_t padded_vocab,
                                          int64_t ignore_index,
                                          int64_t logits_dtype) {
  guarded(ctx, "gptrt_cross_entropy_fwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(padded_vocab, "padded_vocab");
    F32Staging f32(c, {{logits, logits_dtype, rows * padded_vocab, false,
                        "logits_dtype"}});
    *loss = cpu::crossEntropyForward(lse, f32[0], targets, rows, vocab,
                                     padded_vocab, ignore_index);
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(logits_dtype, "logits_dtype");
    g.crossEntropyForward(logits, logits_dtype, targets, loss, lse, rows,
                          vocab, padded_vocab, ignore_index);
  });
}

GPTRT_EXPORT void gptrt_cross_entropy_bwd(gptrt_context *ctx,
                                          const float *dloss,
                                          const void *logits,
                                          const int32_t *targets,
                                          const float *lse, void *dlogits,
                                          int64_t rows, int64_t vocab,
                                          int64_t padded_vocab,
                                          int64_t ignore_index,
                                          int64_t dtype) {
  guarded(ctx, "gptrt_cross_entropy_bwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(padded_vocab, "padded_vocab");
    const int64_t n = rows * padded_vocab;
    F32Staging f32(c, {{logits, dtype, n, false, "dtype"},
                       {dlogits, dtype, n, true, "dtype"}});
    cpu::crossEntropyBackward(f32[1], f32[0], lse, targets, dloss[0], rows,
                              vocab, padded_vocab, ignore_index);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.crossEntropyBackward(dloss, logits, targets, lse, dlogits, dtype, rows,
                           vocab, padded_vocab, ignore_index);
  });
}

namespace {

// gptrt_cross_entropy_fwd_bwd, with the amax of dlogits (null without).
void crossEntropyFwdBwd(gptrt_context *ctx, const char *name,
                        const float *dloss, const void *logits,
                        const int32_t *targets, float *loss, float *lse,
                        void *dlogits, float *amax, int64_t rows, int64_t vocab,
                        int64_t padded_vocab, int64_t ignore_index,
                        int64_t dtype, bool withAmax) {
  guarded(
      ctx, name,
      [&](Context &c) {
        if (withAmax)
          requireAmax(amax);
        // The CPU has no memory traffic to save: the two kernels, in order,
        // then gptrt_amax's reduction of the stored gradient.
        requireNonNegative(rows, "rows");
        requireNonNegative(padded_vocab, "padded_vocab");
        const int64_t n = rows * padded_vocab;
        F32Staging f32(c, {{logits, dtype, n, false, "dtype"},
                           {dlogits, dtype, n, true, "dtype"}});
        *loss = cpu::crossEntropyForward(lse, f32[0], targets, rows, vocab,
                                         padded_vocab, ignore_index);
        cpu::crossEntropyBackward(f32[1], f32[0], lse, targets, dloss[0], rows,
                                  vocab, padded_vocab, ignore_index);
        f32.finish();
        if (amax) {
          F32Staging stored(c, {{dlogits, dtype, n, false, "dtype"}});
          *amax = amaxOf(stored[0], n);
        }
      },
      [&](Context &, Gpu &g) {
        if (withAmax)
          requireAmax(amax);
        requireStorageDtype(dtype, "dtype");
        g.crossEntropyFused(dloss, logits, targets, loss, lse, dlogits, amax,
                            dtype, rows, vocab, padded_vocab, ignore_index);
      });
}

} // namespace

GPTRT_EXPORT void gptrt_cross_entropy_fwd_bwd(
    gptrt_context *ctx, const float *dloss, const void *logits,
    const int32_t *targets, float *loss, float *lse, void *dlogits,
    float *amax, int64_t rows, int64_t vocab, int64_t padded_vocab,
    int64_t ignore_index, int64_t dtype, const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_cross_entropy_fwd_bwd");
  const EpilogueCall call{epilogue, nullptr, amax};
  const std::optional<EpilogueWork> work = epilogueWork(
      ctx, "gptrt_cross_entropy_fwd_bwd", call, dlogits, /*dualCast=*/false);
  if (!work)
    return;
  const char *fn = labels[*work];
  if (!coversOutput(ctx, fn, epilogue, rows * padded_vocab, dtype))
    return;
  crossEntropyFwdBwd(ctx, fn, dloss, logits, targets, loss, lse, dlogits, amax,
                     rows, vocab, padded_vocab, ignore_index, dtype,
                     /*withAmax=*/amax != nullptr);
}
