// gptrt_* attention kernels, separate and packed q/k/v, the packed ones
// with their FP8 output epilogue.
#include "runtime/core/AbiEpilogue.h"
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

#include <cstring>

using namespace gptrt::abi;

namespace {
// batch * seq * width, each checked: the elements of q, k, v and out.
int64_t attentionElements(int64_t batch, int64_t seq, int64_t width) {
  requireNonNegative(batch, "batch");
  requireNonNegative(seq, "seq");
  requireNonNegative(width, "width");
  return batch * seq * width;
}
} // namespace

GPTRT_EXPORT void gptrt_attention_fwd(gptrt_context *ctx, const void *q,
                                      const void *k, const void *v, void *out,
                                      float *lse, int64_t batch, int64_t seq,
                                      int64_t width, int64_t heads,
                                      int64_t causal, int64_t dtype) {
  guarded(ctx, "gptrt_attention_fwd", [&](Context &c) {
    const int64_t n = attentionElements(batch, seq, width);
    F32Staging f32(c, {{q, dtype, n, false, "dtype"},
                       {k, dtype, n, false, "dtype"},
                       {v, dtype, n, false, "dtype"},
                       {out, dtype, n, true, "dtype"}});
    cpu::attentionForward(f32[3], lse, f32[0], f32[1], f32[2], batch, seq,
                          width, heads, causal != 0);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.attentionForward(q, k, v, out, lse, batch, seq, width, heads,
                       causal != 0, dtype);
  });
}

GPTRT_EXPORT void gptrt_attention_bwd(gptrt_context *ctx, const void *dout,
                                      const void *q, const void *k,
                                      const void *v, const void *out,
                                      const float *lse, void *dq, void *dk,
                                      void *dv, int64_t batch, int64_t seq,
                                      int64_t width, int64_t heads,
                                      int64_t causal, int64_t dtype) {
  guarded(ctx, "gptrt_attention_bwd", [&](Context &c) {
    const int64_t n = attentionElements(batch, seq, width);
    F32Staging f32(c, {{dout, dtype, n, false, "dtype"},
                       {q, dtype, n, false, "dtype"},
                       {k, dtype, n, false, "dtype"},
                       {v, dtype, n, false, "dtype"},
                       {out, dtype, n, false, "dtype"},
                       {dq, dtype, n, true, "dtype"},
                       {dk, dtype, n, true, "dtype"},
                       {dv, dtype, n, true, "dtype"}});
    cpu::attentionBackward(f32[5], f32[6], f32[7], f32[0], f32[1], f32[2],
                           f32[3], f32[4], lse, batch, seq, width, heads,
                           causal != 0);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.attentionBackward(dout, q, k, v, out, lse, dq, dk, dv, batch, seq,
                        width, heads, causal != 0, dtype);
  });
}

namespace {

/// q, k, v (or dq, dk, dv) as three [batch, seq, width] tensors from one
/// [batch, seq, 3 width] buffer, and back: the CPU's packed attention runs
/// the unpacked kernels on copies, so its numbers are theirs.
class PackedQkv {
public:
  PackedQkv(int64_t batch, int64_t seq, int64_t width, int64_t dtype)
      : rows_(batch * seq), width_(width),
        bytes_(dtype == GPTRT_DTYPE_BF16 ? 2 : 4),
        parts_(3, std::vector<unsigned char>(
                      static_cast<size_t>(rows_ * width_ * bytes_))) {
    requireStorageDtype(dtype, "dtype");
  }
  void *part(int i) { return parts_[i].data(); }
  void unpack(const void *packed) {
    const auto *src = static_cast<const unsigned char *>(packed);
    for (int i = 0; i < 3; ++i)
      for (int64_t r = 0; r < rows_; ++r)
        std::memcpy(parts_[i].data() + r * width_ * bytes_,
                    src + (r * 3 + i) * width_ * bytes_, width_ * bytes_);
  }
  void pack(void *packed) const {
    auto *dst = static_cast<unsigned char *>(packed);
    for (int i = 0; i < 3; ++i)
      for (int64_t r = 0; r < rows_; ++r)
        std::memcpy(dst + (r * 3 + i) * width_ * bytes_,
                    parts_[i].data() + r * width_ * bytes_, width_ * bytes_);
  }

private:
  int64_t rows_, width_, bytes_;
  std::vector<std::vector<unsigned char>> parts_;
};

} // namespace

namespace {
// The packed kernels' own work; `amax` (null without) the amax of the
// output as stored, which the flash kernels take as they write it.
void attentionPacked(gptrt_context *ctx, const char *fn, const void *qkv,
                     void *out, float *lse, float *amax, int64_t batch,
                     int64_t seq, int64_t width, int64_t heads, int64_t causal,
                     int64_t dtype) {
  guarded(
      ctx, fn,
      [&](Context &c) {
        attentionElements(batch, seq, width);
        PackedQkv parts(batch, seq, width, dtype);
        parts.unpack(qkv);
        gptrt_attention_fwd(ctx, parts.part(0), parts.part(1), parts.part(2),
                            out, lse, batch, seq, width, heads, causal, dtype);
        if (amax) {
          F32Staging stored(c, {{out, dtype, batch * seq * width, false,
                                 "dtype"}});
          *amax = amaxOf(stored[0], batch * seq * width);
        }
      },
      [&](Context &, Gpu &g) {
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        gptrt::cuda::Fp8Epilogue fp8;
        fp8.amax = amax;
        g.attentionForwardPacked(qkv, out, lse, fp8, batch, seq, width, heads,
                                 causal != 0, dtype);
      });
}

void attentionGradPacked(gptrt_context *ctx, const char *fn, const void *dout,
                         const void *qkv, const void *out, const float *lse,
                         void *dqkv, float *amax, int64_t batch, int64_t seq,
                         int64_t width, int64_t heads, int64_t causal,
                         int64_t dtype) {
  guarded(
      ctx, fn,
      [&](Context &c) {
        attentionElements(batch, seq, width);
        PackedQkv parts(batch, seq, width, dtype),
            grads(batch, seq, width, dtype);
        parts.unpack(qkv);
        gptrt_attention_bwd(ctx, dout, parts.part(0), parts.part(1),
                            parts.part(2), out, lse, grads.part(0),
                            grads.part(1), grads.part(2), batch, seq, width,
                            heads, causal, dtype);
        grads.pack(dqkv);
        if (amax) {
          F32Staging stored(c, {{dqkv, dtype, 3 * batch * seq * width, false,
                                 "dtype"}});
          *amax = amaxOf(stored[0], 3 * batch * seq * width);
        }
      },
      [&](Context &, Gpu &g) {
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionBackwardPacked(dout, qkv, out, lse, dqkv, amax, batch, seq,
                                  width, heads, causal != 0, dtype);
      });
}
} // namespace

GPTRT_EXPORT void gptrt_attention_fwd_packed(
    gptrt_context *ctx, const void *qkv, const float *scale, void *out,
    float *lse, float *amax, uint8_t *q, int64_t batch, int64_t seq,
    int64_t width, int64_t heads, int64_t causal, int64_t dtype,
    const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_attention_fwd_packed");
  const EpilogueCall call{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work = epilogueWork(
      ctx, "gptrt_attention_fwd_packed", call, out, /*dualCast=*/false);
  if (!work)
    return;
  const char *fn = labels[*work];
  if (*work != EpilogueWork::Cast) {
    if (!coversOutput(ctx, fn, epilogue, batch * seq * width, dtype))
      return;
    return attentionPacked(ctx, fn, qkv, out, lse, amax, batch, seq, width,
                           heads, causal, dtype);
  }
  fusedProducer(
      ctx, fn, dtype, out, batch * seq * width, call.epilogue(),
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionForwardPacked(qkv, out, lse, fp8, batch, seq, width, heads,
                                 causal != 0, dtype);
      },
      [&] {
        attentionPacked(ctx, "gptrt_attention_fwd_packed", qkv, out, lse,
                        nullptr, batch, seq, width, heads, causal, dtype);
      });
}

GPTRT_EXPORT void gptrt_attention_bwd_packed(
    gptrt_context *ctx, const void *dout, const void *qkv, const void *out,
    const float *lse, void *dqkv, float *amax, int64_t batch, int64_t seq,
    int64_t width, int64_t heads, int64_t causal, int64_t dtype,
    const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_attention_bwd_packed");
  const EpilogueCall call{epilogue, nullptr, amax};
  const std::optional<EpilogueWork> work = epilogueWork(
      ctx, "gptrt_attention_bwd_packed", call, dqkv, /*dualCast=*/false);
  if (!work)
    return;
  const char *fn = labels[*work];
  if (!coversOutput(ctx, fn, epilogue, 3 * batch * seq * width, dtype))
    return;
  attentionGradPacked(ctx, fn, dout, qkv, out, lse, dqkv, amax, batch, seq,
                      width, heads, causal, dtype);
}
