// gptrt_* FP8 scaling and casts: amax, scales from amaxes or histories,
// the delayed-scaling state, and the tensorwise and rowwise quantize forms.
#include "runtime/core/AbiSupport.h"

#include "runtime/cpu/Formulas.h"

#include <cstring>

using namespace gptrt::abi;
namespace formulas = gptrt::formulas;

GPTRT_EXPORT void gptrt_amax(gptrt_context *ctx, const void *x, float *out,
                             int64_t n, int64_t x_dtype) {
  guarded(ctx, "gptrt_amax", [&](Context &c) {
    requireNonNegative(n, "n");
    requireAmax(out);
    F32Staging f32(c, {{x, x_dtype, n, false, "x_dtype"}});
    out[0] = amaxOf(f32[0], n);
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    requireAmax(out);
    requireStorageDtype(x_dtype, "x_dtype");
    g.amax(x, x_dtype, out, n);
  });
}

GPTRT_EXPORT void gptrt_scale_from_amax(gptrt_context *ctx, const float *amax,
                                        float *out, double fp8Max,
                                        int64_t margin, int64_t powerOfTwo,
                                        double eps) {
  guarded(ctx, "gptrt_scale_from_amax", [&](Context &) {
    out[0] = scaleFromAmax(amax[0], fp8Max, margin, powerOfTwo, eps);
  }, [&](Context &, Gpu &g) {
    g.scaleFromAmax(amax, out, fp8Max, margin, powerOfTwo != 0, eps);
  });
}

GPTRT_EXPORT void gptrt_fp8_state_scale(gptrt_context *ctx,
                                        const float *history, float *out,
                                        int64_t length, double fp8Max,
                                        int64_t margin, int64_t powerOfTwo,
                                        double eps, int64_t mostRecent) {
  guarded(ctx, "gptrt_fp8_state_scale", [&](Context &) {
    if (length <= 0)
      throw std::invalid_argument("history_length " + std::to_string(length) +
                                  ", expected >= 1");
    out[0] = formulas::scaleFromHistory(
        history, length, static_cast<float>(fp8Max), static_cast<int>(margin),
        powerOfTwo != 0, static_cast<float>(eps), mostRecent != 0);
  }, [&](Context &, Gpu &g) {
    g.fp8StateScale(history, out, length, fp8Max, margin, powerOfTwo != 0,
                    eps, mostRecent != 0);
  });
}

GPTRT_EXPORT void gptrt_fp8_state_update(gptrt_context *ctx, const float *amax,
                                         float *history, int64_t length) {
  guarded(ctx, "gptrt_fp8_state_update", [&](Context &) {
    if (length <= 0)
      throw std::invalid_argument("history_length " + std::to_string(length) +
                                  ", expected >= 1");
    if (!std::isfinite(amax[0]))
      return;
    std::memmove(history + 1, history, (length - 1) * sizeof(float));
    history[0] = amax[0];
  }, [&](Context &, Gpu &g) { g.fp8StateUpdate(amax, history, length); });
}

namespace {

// The arguments both batched state kernels take: count states of
// `length` amaxes each, `stride` floats apart, one mask bit each.
void checkStateBatch(int64_t count, int64_t length, int64_t stride) {
  requireNonNegative(count, "count");
  if (count > 64)
    throw std::invalid_argument("count " + std::to_string(count) +
                                ", expected at most 64 (one mask bit each)");
  if (length <= 0)
    throw std::invalid_argument("history_length " + std::to_string(length) +
                                ", expected >= 1");
  if (stride < length)
    throw std::invalid_argument("history_stride " + std::to_string(stride) +
                                ", expected >= history_length " +
                                std::to_string(length));
}

} // namespace

GPTRT_EXPORT void gptrt_fp8_state_update_batch(gptrt_context *ctx,
                                               const float *amax,
                                               float *history, int64_t count,
                                               int64_t length, int64_t stride,
                                               int64_t mask) {
  guarded(
      ctx, "gptrt_fp8_state_update_batch",
      [&](Context &) {
        checkStateBatch(count, length, stride);
        for (int64_t i = 0; i < count; ++i)
          if ((uint64_t(mask) >> i) & 1)
            gptrt_fp8_state_update(ctx, amax + i, history + i * stride, length);
      },
      [&](Context &, Gpu &g) {
        checkStateBatch(count, length, stride);
        g.fp8StateUpdateBatch(amax, history, count, length, stride,
                              uint64_t(mask));
      });
}

GPTRT_EXPORT void gptrt_fp8_state_scale_batch(
    gptrt_context *ctx, const float *history, float *out, int64_t count,
    int64_t length, int64_t stride, int64_t mask, double fp8Max, int64_t margin,
    int64_t powerOfTwo, double eps, int64_t mostRecent) {
  guarded(
      ctx, "gptrt_fp8_state_scale_batch",
      [&](Context &) {
        checkStateBatch(count, length, stride);
        for (int64_t i = 0; i < count; ++i)
          if ((uint64_t(mask) >> i) & 1)
            gptrt_fp8_state_scale(ctx, history + i * stride, out + i, length,
                                  fp8Max, margin, powerOfTwo, eps, mostRecent);
      },
      [&](Context &, Gpu &g) {
        checkStateBatch(count, length, stride);
        g.fp8StateScaleBatch(history, out, count, length, stride,
                             uint64_t(mask), fp8Max, margin, powerOfTwo != 0,
                             eps, mostRecent != 0);
      });
}

namespace {

// The scale a fused cast makes (rt-fuse-cast-scale), stored to own.out:
// scale_from_amax of amax[0] (current scaling), or fp8_state_scale of an
// amax history (delayed scaling), with those kernels' constants.
struct CastScaleArgs {
  gptrt::cuda::ScaleFromAmax own;
  int64_t powerOfTwo, mostRecent; // as passed, checked by checked()

  static CastScaleArgs fromAmax(const float *amax, float *out, double fp8Max,
                                int64_t margin, int64_t powerOfTwo,
                                double eps) {
    gptrt::cuda::ScaleFromAmax own;
    own.amax = amax;
    own.out = out;
    own.fp8Max = fp8Max;
    own.margin = margin;
    own.powerOfTwo = powerOfTwo != 0;
    own.eps = eps;
    return {own, powerOfTwo, 0};
  }
  static CastScaleArgs fromHistory(const float *history, float *out,
                                   int64_t length, double fp8Max,
                                   int64_t margin, int64_t powerOfTwo,
                                   double eps, int64_t mostRecent) {
    CastScaleArgs args =
        fromAmax(nullptr, out, fp8Max, margin, powerOfTwo, eps);
    args.own.history = history;
    args.own.historyLength = length;
    args.own.mostRecent = mostRecent != 0;
    args.mostRecent = mostRecent;
    return args;
  }

  // The arguments checked, as the GPU kernels take them.
  const gptrt::cuda::ScaleFromAmax &checked() const {
    if (own.amax == nullptr && own.history == nullptr)
      throw std::invalid_argument(
          "amax is null, expected the one float the scale is made from");
    if (own.history != nullptr && own.historyLength <= 0)
      throw std::invalid_argument("history_length " +
                                  std::to_string(own.historyLength) +
                                  ", expected >= 1");
    if (own.out == nullptr)
      throw std::invalid_argument(
          "scale is null, expected a pointer to one float for the scale");
    requireFlag(powerOfTwo, "power_of_two");
    requireFlag(mostRecent, "most_recent");
    return own;
  }
  // The CPU: the standalone kernel's arithmetic.
  void runOnCpu(gptrt_context *ctx) const {
    checked();
    if (own.amax != nullptr)
      gptrt_scale_from_amax(ctx, own.amax, own.out, own.fp8Max, own.margin,
                            powerOfTwo, own.eps);
    else
      gptrt_fp8_state_scale(ctx, own.history, own.out, own.historyLength,
                            own.fp8Max, own.margin, powerOfTwo, own.eps,
                            mostRecent);
  }
  // What the GPU kernels take: none of it without args.
  static gptrt::cuda::ScaleFromAmax onGpu(const CastScaleArgs *args) {
    return args ? args->checked() : gptrt::cuda::ScaleFromAmax{};
  }
};

// gptrt_quantize_fp8, and with scaleArgs its scale_ / state_ forms, whose
// scale is made first (on a GPU, by the cast's kernel).
void quantizeCast(gptrt_context *ctx, const char *name, const void *xData,
                  const float *scale, uint8_t *q, int64_t n, int64_t format,
                  int64_t statSlot, int64_t xDtype,
                  const CastScaleArgs *scaleArgs = nullptr) {
  guarded(
      ctx, name,
      [&](Context &c) {
        if (scaleArgs)
          scaleArgs->runOnCpu(ctx);
        requireNonNegative(n, "n");
        requireFormat(format);
        F32Staging f32(c, {{xData, xDtype, n, false, "x_dtype"}});
        const float *x = f32[0];
        encodeFp8(x, 1, n, nullptr, nullptr, scale[0], format,
                  /*transpose=*/false, q);
        recordCastStats(
            c, statSlot, x, n, [&](int64_t) { return scale[0]; }, format,
            /*oneScale=*/true);
      },
      [&](Context &c, Gpu &g) {
        const gptrt::cuda::ScaleFromAmax own = CastScaleArgs::onGpu(scaleArgs);
        requireNonNegative(n, "n");
        requireStorageDtype(xDtype, "x_dtype");
        g.quantizeFp8(xData, xDtype, scale, q, n, format, own);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordCastStats(xData, xDtype, n, scale, format, statSlot);
      });
}

// gptrt_quantize_fp8_transposed and its state_ form.
void quantizeCastTransposed(gptrt_context *ctx, const char *name,
                            const void *xData, const float *scale, uint8_t *q,
                            int64_t rows, int64_t cols, int64_t format,
                            int64_t statSlot, int64_t xDtype,
                            const CastScaleArgs *scaleArgs = nullptr) {
  guarded(
      ctx, name,
      [&](Context &c) {
        if (scaleArgs)
          scaleArgs->runOnCpu(ctx);
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFormat(format);
        const int64_t n = rows * cols;
        F32Staging f32(c, {{xData, xDtype, n, false, "x_dtype"}});
        const float *x = f32[0];
        const float s = scale[0];
        encodeFp8(x, rows, cols, nullptr, nullptr, s, format,
                  /*transpose=*/true, q);
        recordCastStats(
            c, statSlot, x, n, [&](int64_t) { return s; }, format,
            /*oneScale=*/true);
      },
      [&](Context &c, Gpu &g) {
        const gptrt::cuda::ScaleFromAmax own = CastScaleArgs::onGpu(scaleArgs);
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireStorageDtype(xDtype, "x_dtype");
        g.quantizeFp8Transposed(xData, xDtype, scale, q, rows, cols, format,
                                own);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordCastStats(xData, xDtype, rows * cols, scale, format,
                            statSlot);
      });
}

} // namespace

GPTRT_EXPORT void gptrt_quantize_fp8(gptrt_context *ctx, const void *xData,
                                     const float *scale, uint8_t *q, int64_t n,
                                     int64_t format, int64_t statSlot,
                                     int64_t xDtype) {
  quantizeCast(ctx, "gptrt_quantize_fp8", xData, scale, q, n, format, statSlot,
               xDtype);
}

GPTRT_EXPORT void gptrt_scale_quantize_fp8(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    float *scale, int64_t n, int64_t format, int64_t statSlot, int64_t xDtype,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps) {
  const CastScaleArgs scaleArgs =
      CastScaleArgs::fromAmax(amax, scale, fp8Max, margin, powerOfTwo, eps);
  quantizeCast(ctx, "gptrt_scale_quantize_fp8", xData, scale, q, n, format,
               statSlot, xDtype, &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    float *scale, int64_t n, int64_t format, int64_t statSlot, int64_t xDtype,
    int64_t length, double fp8Max, int64_t margin, int64_t powerOfTwo,
    double eps, int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeCast(ctx, "gptrt_state_quantize_fp8", xData, scale, q, n, format,
               statSlot, xDtype, &scaleArgs);
}

GPTRT_EXPORT void
gptrt_quantize_fp8_transposed(gptrt_context *ctx, const void *xData,
                              const float *scale, uint8_t *q, int64_t rows,
                              int64_t cols, int64_t format, int64_t statSlot,
                              int64_t xDtype) {
  quantizeCastTransposed(ctx, "gptrt_quantize_fp8_transposed", xData, scale, q,
                         rows, cols, format, statSlot, xDtype);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_transposed(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    float *scale, int64_t rows, int64_t cols, int64_t format, int64_t statSlot,
    int64_t xDtype, int64_t length, double fp8Max, int64_t margin,
    int64_t powerOfTwo, double eps, int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeCastTransposed(ctx, "gptrt_state_quantize_fp8_transposed", xData,
                         scale, q, rows, cols, format, statSlot, xDtype,
                         &scaleArgs);
}

namespace {

// gptrt_quantize_fp8_dual and its _bgrad forms: the transposed codes qT,
// the row-major ones q unless null, and db = gptrt_reduce_rows of x unless
// null, from one read on a GPU; on the CPU the kernels they fuse, so the
// same codes, sums and statistics.
// With scaleArgs (the scale_ / state_ forms) the scale is made first.
void quantizeDual(gptrt_context *ctx, const char *name, const void *xData,
                  const float *scale, uint8_t *q, uint8_t *qT, void *db,
                  int64_t rows, int64_t cols, int64_t format, int64_t statSlot,
                  int64_t statSlotT, int64_t xDtype, int64_t dbDtype,
                  const CastScaleArgs *scaleArgs = nullptr) {
  guarded(
      ctx, name,
      [&](Context &) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        if (scaleArgs)
          scaleArgs->runOnCpu(ctx);
        if (q)
          gptrt_quantize_fp8(ctx, xData, scale, q, rows * cols, format,
                             statSlot, xDtype);
        gptrt_quantize_fp8_transposed(ctx, xData, scale, qT, rows, cols, format,
                                      statSlotT, xDtype);
        if (db)
          gptrt_reduce_rows(ctx, xData, db, rows, cols, xDtype, dbDtype);
      },
      [&](Context &c, Gpu &g) {
        const gptrt::cuda::ScaleFromAmax own = CastScaleArgs::onGpu(scaleArgs);
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireStorageDtype(xDtype, "x_dtype");
        if (db)
          requireGradientDtype(dbDtype, "db_dtype");
        g.quantizeFp8Dual(xData, xDtype, scale, q, qT, rows, cols, format, db,
                          dbDtype, own);
        if (c.collectingFp8Stats())
          for (int64_t slot : {q ? statSlot : -1, statSlotT})
            if (slot >= 0)
              g.recordCastStats(xData, xDtype, rows * cols, scale, format,
                                slot);
      });
}

} // namespace

GPTRT_EXPORT void gptrt_quantize_fp8_dual(gptrt_context *ctx, const void *xData,
                                          const float *scale, uint8_t *q,
                                          uint8_t *qT, int64_t rows,
                                          int64_t cols, int64_t format,
                                          int64_t statSlot, int64_t statSlotT,
                                          int64_t xDtype) {
  quantizeDual(ctx, "gptrt_quantize_fp8_dual", xData, scale, q, qT,
               /*db=*/nullptr, rows, cols, format, statSlot, statSlotT, xDtype,
               /*dbDtype=*/0);
}

GPTRT_EXPORT void gptrt_quantize_fp8_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *scale, uint8_t *q,
    void *db, int64_t rows, int64_t cols, int64_t format, int64_t statSlot,
    int64_t xDtype, int64_t dbDtype) {
  quantizeDual(ctx, "gptrt_quantize_fp8_transposed_bgrad", xData, scale,
               /*q=*/nullptr, q, db, rows, cols, format, /*statSlot=*/-1,
               statSlot, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *xData, const float *scale, uint8_t *q,
    uint8_t *qT, void *db, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t statSlotT, int64_t xDtype, int64_t dbDtype) {
  quantizeDual(ctx, "gptrt_quantize_fp8_dual_bgrad", xData, scale, q, qT, db,
               rows, cols, format, statSlot, statSlotT, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_scale_quantize_fp8_dual(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    uint8_t *qT, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t statSlotT, int64_t xDtype, double fp8Max,
    int64_t margin, int64_t powerOfTwo, double eps) {
  const CastScaleArgs scaleArgs =
      CastScaleArgs::fromAmax(amax, scale, fp8Max, margin, powerOfTwo, eps);
  quantizeDual(ctx, "gptrt_scale_quantize_fp8_dual", xData, scale, q, qT,
               /*db=*/nullptr, rows, cols, format, statSlot, statSlotT, xDtype,
               /*dbDtype=*/0, &scaleArgs);
}

GPTRT_EXPORT void gptrt_scale_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    uint8_t *qT, void *db, float *scale, int64_t rows, int64_t cols,
    int64_t format, int64_t statSlot, int64_t statSlotT, int64_t xDtype,
    int64_t dbDtype, double fp8Max, int64_t margin, int64_t powerOfTwo,
    double eps) {
  const CastScaleArgs scaleArgs =
      CastScaleArgs::fromAmax(amax, scale, fp8Max, margin, powerOfTwo, eps);
  quantizeDual(ctx, "gptrt_scale_quantize_fp8_dual_bgrad", xData, scale, q, qT,
               db, rows, cols, format, statSlot, statSlotT, xDtype, dbDtype,
               &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    void *db, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t xDtype, int64_t dbDtype, int64_t length,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps,
    int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeDual(ctx, "gptrt_state_quantize_fp8_transposed_bgrad", xData, scale,
               /*q=*/nullptr, q, db, rows, cols, format, /*statSlot=*/-1,
               statSlot, xDtype, dbDtype, &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_dual(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    uint8_t *qT, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t statSlotT, int64_t xDtype, int64_t length,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps,
    int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeDual(ctx, "gptrt_state_quantize_fp8_dual", xData, scale, q, qT,
               /*db=*/nullptr, rows, cols, format, statSlot, statSlotT, xDtype,
               /*dbDtype=*/0, &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    uint8_t *qT, void *db, float *scale, int64_t rows, int64_t cols,
    int64_t format, int64_t statSlot, int64_t statSlotT, int64_t xDtype,
    int64_t dbDtype, int64_t length, double fp8Max, int64_t margin,
    int64_t powerOfTwo, double eps, int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeDual(ctx, "gptrt_state_quantize_fp8_dual_bgrad", xData, scale, q, qT,
               db, rows, cols, format, statSlot, statSlotT, xDtype, dbDtype,
               &scaleArgs);
}

// ----------------------------------------------------- rowwise scaling

GPTRT_EXPORT void gptrt_amax_rows(gptrt_context *ctx, const void *xData,
                                  float *out, int64_t rows, int64_t cols,
                                  int64_t alongCols, int64_t xDtype) {
  guarded(ctx, "gptrt_amax_rows", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    F32Staging f32(c, {{xData, xDtype, rows * cols, false, "x_dtype"}});
    const float *x = f32[0];
    if (!alongCols) {
      for (int64_t r = 0; r < rows; ++r)
        out[r] = amaxOf(x + r * cols, cols);
      return;
    }
    std::fill(out, out + cols, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float a = std::fabs(x[r * cols + c]);
        // NaN wins, as in amaxOf.
        out[c] = std::isnan(out[c]) || std::isnan(a) ? NAN : std::max(out[c], a);
      }
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(xDtype, "x_dtype");
    g.amaxRows(xData, xDtype, out, rows, cols, alongCols != 0);
  });
}

GPTRT_EXPORT void gptrt_row_scales(gptrt_context *ctx, const float *amax,
                                   float *out, int64_t n, double fp8Max,
                                   int64_t margin, int64_t powerOfTwo,
                                   double eps) {
  guarded(ctx, "gptrt_row_scales", [&](Context &) {
    requireNonNegative(n, "n");
    for (int64_t i = 0; i < n; ++i)
      out[i] = scaleFromAmax(amax[i], fp8Max, margin, powerOfTwo, eps);
  }, [&](Context &, Gpu &g) {
    g.rowScales(amax, out, n, fp8Max, margin, powerOfTwo != 0, eps);
  });
}

GPTRT_EXPORT void gptrt_quantize_rows(gptrt_context *ctx, const void *xData,
                                      const float *scales, uint8_t *q,
                                      int64_t rows, int64_t cols,
                                      int64_t alongCols, int64_t format,
                                      int64_t statSlot, int64_t xDtype) {
  guarded(
      ctx, "gptrt_quantize_rows",
      [&](Context &c) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFormat(format);
        F32Staging f32(c, {{xData, xDtype, rows * cols, false, "x_dtype"}});
        const float *x = f32[0];
        auto scaleAt = [&](int64_t i) {
          return alongCols ? scales[i % cols] : scales[i / cols];
        };
        encodeFp8(x, rows, cols, alongCols ? nullptr : scales,
                  alongCols ? scales : nullptr, 0.0f, format,
                  /*transpose=*/false, q);
        recordCastStats(c, statSlot, x, rows * cols, scaleAt, format);
      },
      [&](Context &c, Gpu &g) {
        requireStorageDtype(xDtype, "x_dtype");
        g.quantizeRows(xData, xDtype, scales, q, rows, cols, alongCols != 0,
                       format);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordRowwiseCastStats(xData, xDtype, rows, cols, scales,
                                   alongCols != 0, format, statSlot);
      });
}

GPTRT_EXPORT void
gptrt_amax_quantize_rows(gptrt_context *ctx, const void *xData, float *amax,
                         float *scales, uint8_t *q, int64_t rows, int64_t cols,
                         int64_t format, int64_t statSlot, int64_t xDtype,
                         double fp8Max, int64_t margin, int64_t powerOfTwo,
                         double eps) {
  guarded(
      ctx, "gptrt_amax_quantize_rows",
      [&](Context &) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFormat(format);
        gptrt_amax_rows(ctx, xData, amax, rows, cols, /*alongCols=*/0, xDtype);
        gptrt_row_scales(ctx, amax, scales, rows, fp8Max, margin, powerOfTwo,
                         eps);
        gptrt_quantize_rows(ctx, xData, scales, q, rows, cols, /*alongCols=*/0,
                            format, statSlot, xDtype);
      },
      [&](Context &c, Gpu &g) {
        requireStorageDtype(xDtype, "x_dtype");
        g.amaxQuantizeRows(xData, xDtype, amax, scales, q, rows, cols, format,
                           fp8Max, margin, powerOfTwo != 0, eps);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordRowwiseCastStats(xData, xDtype, rows, cols, scales,
                                   /*alongCols=*/false, format, statSlot);
      });
}

namespace {

/// gptrt_row_scales' arguments, for the scale_ forms of the rowwise
/// transposed casts: the scales made from amax into out.
struct RowScaleArgs {
  const float *amax;
  float *out;
  double fp8Max;
  int64_t margin, powerOfTwo;
  double eps;
};

/// gptrt_quantize_rows_transposed and its forms: with scaleArgs the scales
/// (of x's columns along_cols 1, else of its rows) are made first, into
/// scaleArgs->out, which is then `scales`; with db, db = gptrt_reduce_rows
/// of x as well (on a GPU from the cast's own read).
void rowsTransposedCast(gptrt_context *ctx, const char *name, const void *xData,
                        const RowScaleArgs *scaleArgs, const float *scales,
                        uint8_t *q, void *db, int64_t rows, int64_t cols,
                        int64_t alongCols, int64_t format, int64_t statSlot,
                        int64_t xDtype, int64_t dbDtype) {
  guarded(
      ctx, name,
      [&](Context &c) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFlag(alongCols, "along_cols");
        requireFormat(format);
        if (db)
          requireGradientDtype(dbDtype, "db_dtype");
        if (scaleArgs)
          gptrt_row_scales(ctx, scaleArgs->amax, scaleArgs->out,
                           alongCols ? cols : rows, scaleArgs->fp8Max,
                           scaleArgs->margin, scaleArgs->powerOfTwo,
                           scaleArgs->eps);
        F32Staging f32(c, {{xData, xDtype, rows * cols, false, "x_dtype"}});
        const float *x = f32[0];
        auto scaleAt = [&](int64_t i) {
          return alongCols ? scales[i % cols] : scales[i / cols];
        };
        encodeFp8(x, rows, cols, alongCols ? nullptr : scales,
                  alongCols ? scales : nullptr, 0.0f, format,
                  /*transpose=*/true, q);
        recordCastStats(c, statSlot, x, rows * cols, scaleAt, format);
        if (db)
          gptrt_reduce_rows(ctx, xData, db, rows, cols, xDtype, dbDtype);
      },
      [&](Context &c, Gpu &g) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFlag(alongCols, "along_cols");
        requireStorageDtype(xDtype, "x_dtype");
        if (db)
          requireGradientDtype(dbDtype, "db_dtype");
        if (scaleArgs)
          g.scaleQuantizeRowsTransposed(
              xData, xDtype, scaleArgs->amax, q, scaleArgs->out, rows, cols,
              alongCols != 0, format, scaleArgs->fp8Max, scaleArgs->margin,
              scaleArgs->powerOfTwo != 0, scaleArgs->eps, db, dbDtype);
        else
          g.quantizeRowsTransposed(xData, xDtype, scales, q, rows, cols,
                                   alongCols != 0, format, db, dbDtype);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordRowwiseCastStats(xData, xDtype, rows, cols, scales,
                                   alongCols != 0, format, statSlot);
      });
}

} // namespace

GPTRT_EXPORT void
gptrt_quantize_rows_transposed(gptrt_context *ctx, const void *xData,
                               const float *scales, uint8_t *q, int64_t rows,
                               int64_t cols, int64_t alongCols, int64_t format,
                               int64_t statSlot, int64_t xDtype) {
  rowsTransposedCast(ctx, "gptrt_quantize_rows_transposed", xData, nullptr,
                     scales, q, /*db=*/nullptr, rows, cols, alongCols, format,
                     statSlot, xDtype, 0);
}

GPTRT_EXPORT void gptrt_quantize_rows_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *scales, uint8_t *q,
    void *db, int64_t rows, int64_t cols, int64_t alongCols, int64_t format,
    int64_t statSlot, int64_t xDtype, int64_t dbDtype) {
  rowsTransposedCast(ctx, "gptrt_quantize_rows_transposed_bgrad", xData,
                     nullptr, scales, q, db, rows, cols, alongCols, format,
                     statSlot, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_scale_quantize_rows_transposed(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    float *scales, int64_t rows, int64_t cols, int64_t alongCols,
    int64_t format, int64_t statSlot, int64_t xDtype, double fp8Max,
    int64_t margin, int64_t powerOfTwo, double eps) {
  const RowScaleArgs scaleArgs{amax, scales, fp8Max, margin, powerOfTwo, eps};
  rowsTransposedCast(ctx, "gptrt_scale_quantize_rows_transposed", xData,
                     &scaleArgs, scales, q, /*db=*/nullptr, rows, cols,
                     alongCols, format, statSlot, xDtype, 0);
}

GPTRT_EXPORT void gptrt_scale_quantize_rows_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    void *db, float *scales, int64_t rows, int64_t cols, int64_t alongCols,
    int64_t format, int64_t statSlot, int64_t xDtype, int64_t dbDtype,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps) {
  const RowScaleArgs scaleArgs{amax, scales, fp8Max, margin, powerOfTwo, eps};
  rowsTransposedCast(ctx, "gptrt_scale_quantize_rows_transposed_bgrad", xData,
                     &scaleArgs, scales, q, db, rows, cols, alongCols, format,
                     statSlot, xDtype, dbDtype);
}
