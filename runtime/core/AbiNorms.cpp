// gptrt_* layer norm kernels (forward, backward, the residual add fused
// into either) and their fused FP8 forms.
#include "runtime/core/AbiEpilogue.h"
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

using namespace gptrt::abi;

namespace {

// The GPU body of the layer norm forward, whose kernel also takes the fused
// FP8 epilogue (an empty one for the plain entry point).
void layerNormOnGpu(Gpu &g, const void *x, const float *w, const float *b,
                    void *out, float *mean, float *rstd, int64_t rows,
                    int64_t width, double eps, int64_t xDtype,
                    int64_t outDtype, const gptrt::cuda::Fp8Epilogue &fp8) {
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.layerNormForwardFp8(x, xDtype, w, b, out, outDtype, mean, rstd, rows,
                        width, static_cast<float>(eps), fp8);
}

// The kernels' own work, which their exported functions (at the end of
// this file) run with or without an output epilogue.
void layerNormValues(gptrt_context *ctx, const void *x, const float *w,
                     const float *b, void *out, float *mean, float *rstd,
                     int64_t rows, int64_t width, double eps, int64_t x_dtype,
                     int64_t out_dtype) {
  guarded(ctx, "gptrt_layernorm_fwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    F32Staging f32(c, {{x, x_dtype, rows * width, false, "x_dtype"},
                       {out, out_dtype, rows * width, true, "out_dtype"}});
    cpu::layerNormForward(f32[1], mean, rstd, f32[0], w, b, rows, width,
                          static_cast<float>(eps));
    f32.finish();
  }, [&](Context &, Gpu &g) {
    layerNormOnGpu(g, x, w, b, out, mean, rstd, rows, width, eps, x_dtype,
                   out_dtype, {});
  });
}

// gptrt_add_layernorm_fwd and its amax / cast epilogue on a GPU.
void addLayerNormOnGpu(Gpu &g, const void *a, const void *b, const float *w,
                       const float *bias, void *x, void *out, float *mean,
                       float *rstd, int64_t rows, int64_t width, double eps,
                       int64_t aDtype, int64_t bDtype, int64_t xDtype,
                       int64_t outDtype,
                       const gptrt::cuda::Fp8Epilogue &fp8 = {}) {
  requireNonNegative(rows, "rows");
  requireNonNegative(width, "width");
  requireStorageDtype(aDtype, "a_dtype");
  requireStorageDtype(bDtype, "b_dtype");
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.addLayerNormForward(a, aDtype, b, bDtype, w, bias, x, xDtype, out, outDtype,
                        mean, rstd, rows, width, static_cast<float>(eps), fp8);
}

void addLayerNormValues(gptrt_context *ctx, const void *a, const void *b,
                        const float *w, const float *bias, void *x, void *out,
                        float *mean, float *rstd, int64_t rows, int64_t width,
                        double eps, int64_t a_dtype, int64_t b_dtype,
                        int64_t x_dtype, int64_t out_dtype) {
  guarded(
      ctx, "gptrt_add_layernorm_fwd",
      [&](Context &) {
        requireNonNegative(rows, "rows");
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_add(ctx, a, b, nullptr, x, nullptr, nullptr, rows, width, 0,
                  a_dtype, b_dtype, x_dtype, nullptr);
        layerNormValues(ctx, x, w, bias, out, mean, rstd, rows, width, eps,
                        x_dtype, out_dtype);
      },
      [&](Context &, Gpu &g) {
        addLayerNormOnGpu(g, a, b, w, bias, x, out, mean, rstd, rows, width,
                          eps, a_dtype, b_dtype, x_dtype, out_dtype);
      });
}

// gptrt_layernorm_bwd and its fused forms on a GPU: the amax / cast
// epilogue through `fp8`, gptrt_layernorm_bwd_add (dx added into the
// residual, the sum stored at dx) through `residual`.
void layerNormBackwardOnGpu(
    Gpu &g, const void *dout, const void *x, const float *w, const float *mean,
    const float *rstd, void *dx, void *dw, void *db, int64_t rows,
    int64_t width, int64_t doutDtype, int64_t xDtype, int64_t dxDtype,
    int64_t dwDtype, int64_t dbDtype, const gptrt::cuda::Fp8Epilogue &fp8 = {},
    const gptrt::cuda::ResidualGradient &residual = {}) {
  requireNonNegative(width, "width");
  for (auto [dtype, name] : {std::pair{doutDtype, "dout_dtype"},
                             {xDtype, "x_dtype"},
                             {dxDtype, "dx_dtype"}})
    requireStorageDtype(dtype, name);
  if (residual.resid) {
    requireStorageDtype(residual.residDtype, "resid_dtype");
    requireStorageDtype(residual.sumDtype, "sum_dtype");
  }
  requireGradientDtype(dwDtype, "dw_dtype");
  requireGradientDtype(dbDtype, "db_dtype");
  g.layerNormBackward(dout, doutDtype, x, xDtype, w, mean, rstd, dx, dxDtype,
                      dw, dwDtype, db, dbDtype, rows, width, fp8, residual);
}

void layerNormGradValues(gptrt_context *ctx, const void *dout, const void *x,
                         const float *w, const float *mean, const float *rstd,
                         void *dx, void *dw, void *db, int64_t rows,
                         int64_t width, int64_t dout_dtype, int64_t x_dtype,
                         int64_t dx_dtype, int64_t dw_dtype,
                         int64_t db_dtype) {
  guarded(
      ctx, "gptrt_layernorm_bwd",
      [&](Context &c) {
        requireNonNegative(rows, "rows");
        requireNonNegative(width, "width");
        const int64_t n = rows * width;
        F32Staging f32(c, {{dout, dout_dtype, n, false, "dout_dtype"},
                           {x, x_dtype, n, false, "x_dtype"},
                           {dx, dx_dtype, n, true, "dx_dtype"},
                           {dw, dw_dtype, width, true, "dw_dtype", true},
                           {db, db_dtype, width, true, "db_dtype", true}});
        // The ABI writes dw and db; the kernel accumulates into them.
        cpu::fill(f32[3], 0.0f, width);
        cpu::fill(f32[4], 0.0f, width);
        cpu::layerNormBackward(f32[2], f32[3], f32[4], f32[0], f32[1], mean,
                               rstd, w, rows, width);
        f32.finish();
      },
      [&](Context &, Gpu &g) {
        layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, dx, dw, db, rows,
                               width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                               db_dtype);
      });
}

void requireResidual(const void *resid) {
  if (resid == nullptr)
    throw std::invalid_argument(
        "resid is null, expected the residual gradient dx is added into");
}

// gptrt_layernorm_bwd_add on the CPU: the two kernels it fuses, dx in a
// buffer of its own (the kernels use the context's scratch).
void layerNormBackwardThenAdd(gptrt_context *ctx, const void *dout,
                              const void *x, const float *w, const float *mean,
                              const float *rstd, const void *resid, void *sum,
                              void *dw, void *db, int64_t rows, int64_t width,
                              int64_t doutDtype, int64_t xDtype,
                              int64_t dxDtype, int64_t dwDtype, int64_t dbDtype,
                              int64_t residDtype, int64_t sumDtype) {
  requireResidual(resid);
  requireNonNegative(rows, "rows");
  requireNonNegative(width, "width");
  requireStorageDtype(dxDtype, "dx_dtype");
  const int64_t n = rows * width;
  float *dx = temporary(Context::fromHandle(ctx), Temporary::LayerNormDx,
                        dxDtype == GPTRT_DTYPE_BF16 ? (n + 1) / 2 : n);
  layerNormGradValues(ctx, dout, x, w, mean, rstd, dx, dw, db, rows, width,
                      doutDtype, xDtype, dxDtype, dwDtype, dbDtype);
  gptrt_add(ctx, resid, dx, nullptr, sum, nullptr, nullptr, rows, width,
            /*broadcast_b=*/0, residDtype, dxDtype, sumDtype, nullptr);
}

// gptrt_layernorm_bwd_add and its amax / cast epilogue on a GPU.
void layerNormBackwardAddOnGpu(
    Gpu &g, const void *dout, const void *x, const float *w, const float *mean,
    const float *rstd, const void *resid, void *sum, void *dw, void *db,
    int64_t rows, int64_t width, int64_t doutDtype, int64_t xDtype,
    int64_t dxDtype, int64_t dwDtype, int64_t dbDtype, int64_t residDtype,
    int64_t sumDtype, const gptrt::cuda::Fp8Epilogue &fp8 = {}) {
  requireResidual(resid);
  layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, sum, dw, db, rows, width,
                         doutDtype, xDtype, dxDtype, dwDtype, dbDtype, fp8,
                         {resid, residDtype, sumDtype});
}

void layerNormGradAddValues(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, void *sum,
    void *dw, void *db, int64_t rows, int64_t width, int64_t dout_dtype,
    int64_t x_dtype, int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype,
    int64_t resid_dtype, int64_t sum_dtype) {
  guarded(
      ctx, "gptrt_layernorm_bwd_add",
      [&](Context &) {
        layerNormBackwardThenAdd(ctx, dout, x, w, mean, rstd, resid, sum, dw,
                                 db, rows, width, dout_dtype, x_dtype, dx_dtype,
                                 dw_dtype, db_dtype, resid_dtype, sum_dtype);
      },
      [&](Context &, Gpu &g) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, dout_dtype, x_dtype, dx_dtype,
                                  dw_dtype, db_dtype, resid_dtype, sum_dtype);
      });
}

// The dual cast of a layernorm (a null) or add + layernorm output: on the
// CPU the producer cast into a temporary output and the transposed cast
// of it; on a GPU the producer kernel without its output, then its codes
// transposed.
void layerNormCastDual(gptrt_context *ctx, const char *fn, const void *a,
                       const void *b, int64_t aDtype, int64_t bDtype, void *x,
                       int64_t xDtype, const float *w, const float *bias,
                       const EpilogueCall &call, float *mean, float *rstd,
                       int64_t rows, int64_t width, double eps,
                       int64_t yDtype) {
  const gptrt_epilogue &e = *call.descriptor;
  auto validate = [&] {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    requireStorageDtype(xDtype, "x_dtype");
    requireStorageDtype(yDtype, "out_dtype");
    if (a) {
      requireStorageDtype(aDtype, "a_dtype");
      requireStorageDtype(bDtype, "b_dtype");
    }
    if (e.rows != rows || e.cols != width || e.out_dtype != yDtype ||
        e.transpose != 0)
      throw std::invalid_argument(
          "the dual cast's epilogue is rows " + std::to_string(e.rows) +
          " x cols " + std::to_string(e.cols) + " of out_dtype " +
          std::to_string(e.out_dtype) + ", transpose " +
          std::to_string(e.transpose) + "; expected the layernorm's output: " +
          std::to_string(rows) + " x " + std::to_string(width) + " of " +
          std::to_string(yDtype) + ", transpose 0");
    requireFormat(e.format);
    requireAmax(call.amax);
  };
  guarded(
      ctx, fn,
      [&](Context &c) {
        validate();
        // f32 room serves a bf16 output too.
        float *y = temporary(c, Temporary::ProducerOutput, rows * width);
        const EpilogueCall cast{call.descriptor, call.scale, call.amax, call.q};
        fusedProducer(
            ctx, fn, yDtype, y, rows * width, cast.epilogue(),
            [&](Gpu &, const gptrt::cuda::Fp8Epilogue &) {},
            [&] {
              if (a)
                addLayerNormValues(ctx, a, b, w, bias, x, y, mean, rstd, rows,
                                   width, eps, aDtype, bDtype, xDtype, yDtype);
              else
                layerNormValues(ctx, x, w, bias, y, mean, rstd, rows, width,
                                eps, xDtype, yDtype);
            });
        gptrt_quantize_fp8_transposed(ctx, y, call.scale, call.qT, rows, width,
                                      e.format, e.stat_slot_t, yDtype);
      },
      [&](Context &c, Gpu &g) {
        validate();
        const bool stats = c.collectingFp8Stats();
        g.layerNormCastDual(a, aDtype, b, bDtype, x, xDtype, w, bias, yDtype,
                            mean, rstd, rows, width, static_cast<float>(eps),
                            {call.amax, call.scale, call.q, e.format}, call.qT,
                            stats ? e.stat_slot : -1,
                            stats ? e.stat_slot_t : -1);
      });
}

} // namespace

// ------------------------------- producers with their output epilogue

GPTRT_EXPORT void gptrt_layernorm_fwd(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    const float *scale, void *out, float *mean, float *rstd, float *amax,
    uint8_t *q, uint8_t *q_t, int64_t rows, int64_t width, double eps,
    int64_t x_dtype, int64_t out_dtype, const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_layernorm_fwd");
  const EpilogueCall call{epilogue, scale, amax, q, q_t};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_layernorm_fwd", call, out, /*dualCast=*/true);
  if (!work)
    return;
  const char *fn = labels[*work];
  switch (*work) {
  case EpilogueWork::None:
    return layerNormValues(ctx, x, w, b, out, mean, rstd, rows, width, eps,
                           x_dtype, out_dtype);
  case EpilogueWork::DualCast:
    return layerNormCastDual(ctx, fn, nullptr, nullptr, 0, 0,
                             const_cast<void *>(x), x_dtype, w, b, call, mean,
                             rstd, rows, width, eps, out_dtype);
  case EpilogueWork::Amax:
  case EpilogueWork::Cast:
    return fusedProducer(
        ctx, fn, out_dtype, out, rows * width, call.epilogue(),
        [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
          layerNormOnGpu(g, x, w, b, out, mean, rstd, rows, width, eps,
                         x_dtype, out_dtype, fp8);
        },
        [&] {
          layerNormValues(ctx, x, w, b, out, mean, rstd, rows, width, eps,
                          x_dtype, out_dtype);
        });
  }
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, void *out, float *mean,
    float *rstd, float *amax, uint8_t *q, uint8_t *q_t, int64_t rows,
    int64_t width, double eps, int64_t a_dtype, int64_t b_dtype,
    int64_t x_dtype, int64_t out_dtype, const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_add_layernorm_fwd");
  const EpilogueCall call{epilogue, scale, amax, q, q_t};
  const std::optional<EpilogueWork> work = epilogueWork(
      ctx, "gptrt_add_layernorm_fwd", call, out, /*dualCast=*/true);
  if (!work)
    return;
  const char *fn = labels[*work];
  switch (*work) {
  case EpilogueWork::None:
    return addLayerNormValues(ctx, a, b, w, bias, x, out, mean, rstd, rows,
                              width, eps, a_dtype, b_dtype, x_dtype, out_dtype);
  case EpilogueWork::DualCast:
    return layerNormCastDual(ctx, fn, a, b, a_dtype, b_dtype, x, x_dtype, w,
                             bias, call, mean, rstd, rows, width, eps,
                             out_dtype);
  case EpilogueWork::Amax:
  case EpilogueWork::Cast:
    return fusedProducer(
        ctx, fn, out_dtype, out, rows * width, call.epilogue(),
        [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
          addLayerNormOnGpu(g, a, b, w, bias, x, out, mean, rstd, rows, width,
                            eps, a_dtype, b_dtype, x_dtype, out_dtype, fp8);
        },
        [&] {
          addLayerNormValues(ctx, a, b, w, bias, x, out, mean, rstd, rows,
                             width, eps, a_dtype, b_dtype, x_dtype, out_dtype);
        });
  }
}

GPTRT_EXPORT void gptrt_layernorm_bwd(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, void *dx, void *dw, void *db,
    float *amax, int64_t rows, int64_t width, int64_t dout_dtype,
    int64_t x_dtype, int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype,
    const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_layernorm_bwd");
  const EpilogueCall call{epilogue, nullptr, amax};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_layernorm_bwd", call, dx, /*dualCast=*/false);
  if (!work)
    return;
  if (*work == EpilogueWork::None)
    return layerNormGradValues(ctx, dout, x, w, mean, rstd, dx, dw, db, rows,
                               width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                               db_dtype);
  fusedProducer(
      ctx, labels[*work], dx_dtype, dx, rows * width, call.epilogue(),
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, dx, dw, db, rows,
                               width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                               db_dtype, fp8);
      },
      [&] {
        layerNormGradValues(ctx, dout, x, w, mean, rstd, dx, dw, db, rows,
                            width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                            db_dtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_bwd_add(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid,
    const float *scale, void *sum, void *dw, void *db, float *amax, uint8_t *q,
    int64_t rows, int64_t width, int64_t dout_dtype, int64_t x_dtype,
    int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype, int64_t resid_dtype,
    int64_t sum_dtype, const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_layernorm_bwd_add");
  const EpilogueCall call{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work = epilogueWork(
      ctx, "gptrt_layernorm_bwd_add", call, sum, /*dualCast=*/false);
  if (!work)
    return;
  if (*work == EpilogueWork::None)
    return layerNormGradAddValues(ctx, dout, x, w, mean, rstd, resid, sum, dw,
                                  db, rows, width, dout_dtype, x_dtype,
                                  dx_dtype, dw_dtype, db_dtype, resid_dtype,
                                  sum_dtype);
  fusedProducer(
      ctx, labels[*work], sum_dtype, sum, rows * width, call.epilogue(),
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, dout_dtype, x_dtype, dx_dtype,
                                  dw_dtype, db_dtype, resid_dtype, sum_dtype,
                                  fp8);
      },
      [&] {
        layerNormGradAddValues(ctx, dout, x, w, mean, rstd, resid, sum, dw, db,
                               rows, width, dout_dtype, x_dtype, dx_dtype,
                               dw_dtype, db_dtype, resid_dtype, sum_dtype);
      });
}
