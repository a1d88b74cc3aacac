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

} // namespace

GPTRT_EXPORT void gptrt_layernorm_fwd(gptrt_context *ctx, const void *x,
                                      const float *w, const float *b,
                                      void *out, float *mean, float *rstd,
                                      int64_t rows, int64_t width, double eps,
                                      int64_t x_dtype, int64_t out_dtype) {
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

namespace {

// gptrt_add_layernorm_fwd and its _amax and _cast forms on a GPU.
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

} // namespace

GPTRT_EXPORT void
gptrt_add_layernorm_fwd(gptrt_context *ctx, const void *a, const void *b,
                        const float *w, const float *bias, void *x, void *out,
                        float *mean, float *rstd, int64_t rows, int64_t width,
                        double eps, int64_t a_dtype, int64_t b_dtype,
                        int64_t x_dtype, int64_t out_dtype) {
  guarded(
      ctx, "gptrt_add_layernorm_fwd",
      [&](Context &) {
        requireNonNegative(rows, "rows");
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_add(ctx, a, b, x, rows, width, 0, a_dtype, b_dtype, x_dtype);
        gptrt_layernorm_fwd(ctx, x, w, bias, out, mean, rstd, rows, width, eps,
                            x_dtype, out_dtype);
      },
      [&](Context &, Gpu &g) {
        addLayerNormOnGpu(g, a, b, w, bias, x, out, mean, rstd, rows, width,
                          eps, a_dtype, b_dtype, x_dtype, out_dtype);
      });
}

namespace {

// gptrt_layernorm_bwd and its fused forms on a GPU: _amax and _cast
// through `fp8`, _add (dx added into the residual, the sum stored at dx)
// through `residual`.
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

} // namespace

GPTRT_EXPORT void gptrt_layernorm_bwd(gptrt_context *ctx, const void *dout,
                                      const void *x, const float *w,
                                      const float *mean, const float *rstd,
                                      void *dx, void *dw, void *db,
                                      int64_t rows, int64_t width,
                                      int64_t dout_dtype, int64_t x_dtype,
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

GPTRT_EXPORT void gptrt_layernorm_bwd_amax(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, void *dx, void *dw, void *db,
    float *amax, int64_t rows, int64_t width, int64_t dout_dtype,
    int64_t x_dtype, int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype) {
  guarded(
      ctx, "gptrt_layernorm_bwd_amax",
      [&](Context &) {
        requireAmax(amax);
        gptrt_layernorm_bwd(ctx, dout, x, w, mean, rstd, dx, dw, db, rows,
                            width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                            db_dtype);
        gptrt_amax(ctx, dx, amax, rows * width, dx_dtype);
      },
      [&](Context &, Gpu &g) {
        requireAmax(amax);
        gptrt::cuda::Fp8Epilogue fp8;
        fp8.amax = amax;
        layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, dx, dw, db, rows,
                               width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                               db_dtype, fp8);
      });
}

namespace {

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
  gptrt_layernorm_bwd(ctx, dout, x, w, mean, rstd, dx, dw, db, rows, width,
                      doutDtype, xDtype, dxDtype, dwDtype, dbDtype);
  gptrt_add(ctx, resid, dx, sum, rows, width, /*broadcast_b=*/0, residDtype,
            dxDtype, sumDtype);
}

// gptrt_layernorm_bwd_add and its fused forms on a GPU.
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

} // namespace

GPTRT_EXPORT void gptrt_layernorm_bwd_add(
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

// ------------------------------------------------ fused FP8 epilogues

GPTRT_EXPORT void gptrt_layernorm_fwd_amax(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    void *y, float *mean, float *rstd, float *amax, int64_t rows,
    int64_t width, double eps, int64_t xDtype, int64_t yDtype,
    int64_t outRows, int64_t outCols, int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_layernorm_fwd_amax", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormOnGpu(g, x, w, b, y, mean, rstd, rows, width, eps, xDtype,
                       yDtype, fp8);
      },
      [&] {
        gptrt_layernorm_fwd(ctx, x, w, b, y, mean, rstd, rows, width, eps,
                            xDtype, yDtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_fwd_cast(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    const float *scale, void *y, float *mean, float *rstd, float *amax,
    uint8_t *q, int64_t rows, int64_t width, double eps, int64_t xDtype,
    int64_t yDtype, int64_t outRows, int64_t outCols, int64_t outDtype,
    int64_t format, int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_layernorm_fwd_cast", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormOnGpu(g, x, w, b, y, mean, rstd, rows, width, eps, xDtype,
                       yDtype, fp8);
      },
      [&] {
        gptrt_layernorm_fwd(ctx, x, w, b, y, mean, rstd, rows, width, eps,
                            xDtype, yDtype);
      });
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd_amax(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, void *x, void *y, float *mean, float *rstd, float *amax,
    int64_t rows, int64_t width, double eps, int64_t aDtype, int64_t bDtype,
    int64_t xDtype, int64_t yDtype, int64_t outRows, int64_t outCols,
    int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_add_layernorm_fwd_amax", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addLayerNormOnGpu(g, a, b, w, bias, x, y, mean, rstd, rows, width, eps,
                          aDtype, bDtype, xDtype, yDtype, fp8);
      },
      [&] {
        gptrt_add_layernorm_fwd(ctx, a, b, w, bias, x, y, mean, rstd, rows,
                                width, eps, aDtype, bDtype, xDtype, yDtype);
      });
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd_cast(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, void *y, float *mean,
    float *rstd, float *amax, uint8_t *q, int64_t rows, int64_t width,
    double eps, int64_t aDtype, int64_t bDtype, int64_t xDtype, int64_t yDtype,
    int64_t outRows, int64_t outCols, int64_t outDtype, int64_t format,
    int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_add_layernorm_fwd_cast", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addLayerNormOnGpu(g, a, b, w, bias, x, y, mean, rstd, rows, width, eps,
                          aDtype, bDtype, xDtype, yDtype, fp8);
      },
      [&] {
        gptrt_add_layernorm_fwd(ctx, a, b, w, bias, x, y, mean, rstd, rows,
                                width, eps, aDtype, bDtype, xDtype, yDtype);
      });
}

namespace {
// gptrt_layernorm_fwd_cast_dual and its _add form (`a` non-null): on the
// CPU the producer cast into a temporary output and the transposed cast
// of it; on a GPU the producer kernel without its output, then its codes
// transposed.
void layerNormCastDual(gptrt_context *ctx, const char *fn, const void *a,
                       const void *b, int64_t aDtype, int64_t bDtype, void *x,
                       int64_t xDtype, const float *w, const float *bias,
                       const float *scale, float *mean, float *rstd,
                       float *amax, uint8_t *q, uint8_t *qT, int64_t rows,
                       int64_t width, double eps, int64_t yDtype,
                       int64_t format, int64_t statSlot, int64_t statSlotT) {
  auto validate = [&] {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    requireStorageDtype(xDtype, "x_dtype");
    requireStorageDtype(yDtype, "y_dtype");
    if (a) {
      requireStorageDtype(aDtype, "a_dtype");
      requireStorageDtype(bDtype, "b_dtype");
    }
    requireFormat(format);
    requireAmax(amax);
  };
  guarded(
      ctx, fn,
      [&](Context &c) {
        validate();
        // f32 room serves a bf16 output too.
        float *y = temporary(c, Temporary::ProducerOutput, rows * width);
        if (a)
          gptrt_add_layernorm_fwd_cast(
              ctx, a, b, w, bias, scale, x, y, mean, rstd, amax, q, rows, width,
              eps, aDtype, bDtype, xDtype, yDtype, rows, width, yDtype, format,
              /*transpose=*/0, statSlot);
        else
          gptrt_layernorm_fwd_cast(ctx, x, w, bias, scale, y, mean, rstd, amax,
                                   q, rows, width, eps, xDtype, yDtype, rows,
                                   width, yDtype, format,
                                   /*transpose=*/0, statSlot);
        gptrt_quantize_fp8_transposed(ctx, y, scale, qT, rows, width, format,
                                      statSlotT, yDtype);
      },
      [&](Context &c, Gpu &g) {
        validate();
        const bool stats = c.collectingFp8Stats();
        g.layerNormCastDual(a, aDtype, b, bDtype, x, xDtype, w, bias, yDtype,
                            mean, rstd, rows, width, static_cast<float>(eps),
                            {amax, scale, q, format}, qT, stats ? statSlot : -1,
                            stats ? statSlotT : -1);
      });
}
} // namespace

GPTRT_EXPORT void gptrt_layernorm_fwd_cast_dual(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    const float *scale, float *mean, float *rstd, float *amax, uint8_t *q,
    uint8_t *qT, int64_t rows, int64_t width, double eps, int64_t xDtype,
    int64_t yDtype, int64_t format, int64_t statSlot, int64_t statSlotT) {
  layerNormCastDual(ctx, "gptrt_layernorm_fwd_cast_dual", nullptr, nullptr, 0,
                    0, const_cast<void *>(x), xDtype, w, b, scale, mean, rstd,
                    amax, q, qT, rows, width, eps, yDtype, format, statSlot,
                    statSlotT);
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd_cast_dual(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, float *mean, float *rstd,
    float *amax, uint8_t *q, uint8_t *qT, int64_t rows, int64_t width,
    double eps, int64_t aDtype, int64_t bDtype, int64_t xDtype, int64_t yDtype,
    int64_t format, int64_t statSlot, int64_t statSlotT) {
  layerNormCastDual(ctx, "gptrt_add_layernorm_fwd_cast_dual", a, b, aDtype,
                    bDtype, x, xDtype, w, bias, scale, mean, rstd, amax, q, qT,
                    rows, width, eps, yDtype, format, statSlot, statSlotT);
}

GPTRT_EXPORT void gptrt_layernorm_bwd_add_amax(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, void *sum,
    void *dw, void *db, float *amax, int64_t rows, int64_t width,
    int64_t doutDtype, int64_t xDtype, int64_t dxDtype, int64_t dwDtype,
    int64_t dbDtype, int64_t residDtype, int64_t sumDtype, int64_t outRows,
    int64_t outCols, int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_layernorm_bwd_add_amax", sumDtype, sum, rows * width,
      {outRows, outCols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, doutDtype, xDtype, dxDtype,
                                  dwDtype, dbDtype, residDtype, sumDtype, fp8);
      },
      [&] {
        gptrt_layernorm_bwd_add(ctx, dout, x, w, mean, rstd, resid, sum, dw, db,
                                rows, width, doutDtype, xDtype, dxDtype,
                                dwDtype, dbDtype, residDtype, sumDtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_bwd_add_cast(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, const float *scale,
    void *sum, void *dw, void *db, float *amax, uint8_t *q, int64_t rows,
    int64_t width, int64_t doutDtype, int64_t xDtype, int64_t dxDtype,
    int64_t dwDtype, int64_t dbDtype, int64_t residDtype, int64_t sumDtype,
    int64_t outRows, int64_t outCols, int64_t outDtype, int64_t format,
    int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_layernorm_bwd_add_cast", sumDtype, sum, rows * width,
      {outRows, outCols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, doutDtype, xDtype, dxDtype,
                                  dwDtype, dbDtype, residDtype, sumDtype, fp8);
      },
      [&] {
        gptrt_layernorm_bwd_add(ctx, dout, x, w, mean, rstd, resid, sum, dw, db,
                                rows, width, doutDtype, xDtype, dxDtype,
                                dwDtype, dbDtype, residDtype, sumDtype);
      });
}
