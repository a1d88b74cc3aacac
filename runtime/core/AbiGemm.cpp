// gptrt_* GEMMs: f32, bf16 and FP8 (scaled, tensorwise or rowwise), with
// their bias / GELU / gradient / accumulate epilogues; the f32 and the
// tensorwise FP8 GEMM with the FP8 output epilogue.
#include "runtime/core/AbiEpilogue.h"
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

#include <utility>

using namespace gptrt::abi;

namespace {

// The fused GEMM epilogues' sizes, and their results contiguous, so that
// the GELU or the bias runs over batch * m * n elements
// (rt-fuse-gemm-epilogue fuses only those).
void requireContiguous(int64_t batch, int64_t m, int64_t n, int64_t k,
                       int64_t strideC) {
  requireNonNegative(batch, "batch");
  requireNonNegative(m, "m");
  requireNonNegative(n, "n");
  requireNonNegative(k, "k");
  if (batch > 1 && strideC != m * n)
    throw std::invalid_argument(
        "stride_c " + std::to_string(strideC) +
        ", expected m * n = " + std::to_string(m * n) +
        " (a fused GEMM epilogue needs a contiguous result)");
}

// The CPU side of the *_accumulate GEMMs: c[i] += r[i] for the `count`
// f32 values r that `gemm` (the GEMM without the suffix, out_dtype f32)
// writes into its own buffer (the GEMMs use the context's scratch).
template <typename Gemm>
void addGemmResult(Context &ctx, float *c, int64_t count, Gemm &&gemm) {
  float *result = temporary(ctx, Temporary::GemmResult, count);
  gemm(result);
  if (ctx.failed())
    return;
  for (int64_t i = 0; i < count; ++i)
    c[i] += result[i];
}

// An FP8 GEMM's bias: a vector of n floats.
void requireBias(const float *bias) {
  if (bias == nullptr)
    throw std::invalid_argument("bias is null, expected a vector of n floats");
}

// The CPU side of the FP8 GEMMs with a bias (rt-fuse-gemm-epilogue): the
// two kernels they fuse, so the same numbers as without the fusion -- the
// product as `gemm` stores it in out_dtype (into its own buffer: the GEMMs
// use the context's scratch), then gptrt_add of the bias (n f32) into c.
template <typename Gemm>
void gemmThenBias(gptrt_context *ctx, const float *bias, void *c, int64_t batch,
                  int64_t m, int64_t n, int64_t outDtype, Gemm &&gemm) {
  requireBias(bias);
  const int64_t count = batch * m * n;
  float *product =
      temporary(Context::fromHandle(ctx), Temporary::GemmProduct,
                outDtype == GPTRT_DTYPE_BF16 ? (count + 1) / 2 : count);
  gemm(static_cast<void *>(product));
  gptrt_add(ctx, product, bias, nullptr, c, nullptr, nullptr, batch * m, n, 1,
            outDtype, GPTRT_DTYPE_F32, outDtype, nullptr);
}

/// The CPU emulation of an FP8 GEMM before its scales are divided out: FP8
/// codes decode exactly to f32, so an f32 GEMM of the decoded values is the
/// FP8 product up to accumulation order.
void fp8GemmUnscaled(Context &ctx, const uint8_t *a, const uint8_t *b, float *c,
                     int64_t batch, int64_t m, int64_t n, int64_t k,
                     int64_t transA, int64_t transB, int64_t strideA,
                     int64_t strideB, int64_t strideC, int64_t formatA,
                     int64_t formatB) {
  requireFormat(formatA);
  requireFormat(formatB);
  // Elements spanned by `batch` matrices of `size` elements, `stride` apart
  // (0 when there are none; one shared matrix when the stride is 0).
  auto extent = [&](int64_t stride, int64_t size) -> int64_t {
    return batch == 0 ? 0 : (batch - 1) * stride + size;
  };
  const int64_t aElems = extent(strideA, m * k);
  const int64_t bElems = extent(strideB, n * k);
  float *fa = temporary(ctx, Temporary::Fp8OperandA, aElems),
        *fb = temporary(ctx, Temporary::Fp8OperandB, bElems);
  // Every code's value, once: a table lookup per element.
  float valueA[256], valueB[256];
  for (int code = 0; code < 256; ++code) {
    valueA[code] = fp8Decode(static_cast<uint8_t>(code), formatA);
    valueB[code] = fp8Decode(static_cast<uint8_t>(code), formatB);
  }
  for (int64_t i = 0; i < aElems; ++i)
    fa[i] = valueA[a[i]];
  for (int64_t i = 0; i < bElems; ++i)
    fb[i] = valueB[b[i]];
  cpu::gemmBatched(c, fa, fb, batch, m, n, k, transA != 0, transB != 0, 0.0f,
                   strideA, strideB, strideC);
}

// The GEMMs' own work, which their exported functions run with or
// without an output epilogue.
void matmulValues(gptrt_context *ctx, const float *a, const float *b, float *c,
                  int64_t batch, int64_t m, int64_t n, int64_t k,
                  int64_t trans_a, int64_t trans_b, int64_t stride_a,
                  int64_t stride_b, int64_t stride_c) {
  guarded(ctx, "gptrt_matmul", [&](Context &) {
    requireNonNegative(batch, "batch");
    cpu::gemmBatched(c, a, b, batch, m, n, k, trans_a != 0, trans_b != 0,
                     0.0f, stride_a, stride_b, stride_c);
  }, [&](Context &, Gpu &g) {
    g.matmul(a, b, c, batch, m, n, k, trans_a != 0, trans_b != 0, stride_a,
             stride_b, stride_c);
  });
}

// gptrt_matmul_bf16 and, with a bias (`withBias`), gptrt_matmul_bf16_bias.
void matmulBf16(gptrt_context *ctx, const char *fn, bool withBias,
                const uint16_t *a, const uint16_t *b, const float *bias,
                void *c, int64_t batch, int64_t m, int64_t n, int64_t k,
                int64_t trans_a, int64_t trans_b, int64_t stride_a,
                int64_t stride_b, int64_t stride_c, int64_t out_dtype) {
  auto checkArguments = [&] {
    if (withBias && bias == nullptr)
      throw std::invalid_argument("bias is null, expected a vector of n "
                                  "floats (gptrt_matmul_bf16 has no bias)");
    requireNonNegative(batch, "batch");
    requireNonNegative(m, "m");
    requireNonNegative(n, "n");
    requireNonNegative(k, "k");
    requireNonNegative(stride_a, "stride_a");
    requireNonNegative(stride_b, "stride_b");
    requireNonNegative(stride_c, "stride_c");
    requireStorageDtype(out_dtype, "out_dtype");
  };
  guarded(ctx, fn, [&](Context &ctxRef) {
    checkArguments();
    if (batch == 0)
      return;
    // Widened in their own layout (strides included), then the f32 GEMM:
    // widening is exact, so this is the f32 GEMM of the bf16 values.
    const int64_t extentA = (batch - 1) * stride_a + m * k;
    const int64_t extentB = (batch - 1) * stride_b + k * n;
    const int64_t extentC = (batch - 1) * stride_c + m * n;
    const bool narrow = out_dtype == GPTRT_DTYPE_BF16;
    float *wide = ctxRef.scratch(
        static_cast<size_t>(extentA + extentB + (narrow ? extentC : 0)));
    for (int64_t i = 0; i < extentA; ++i)
      wide[i] = cpu::bf16ToFloat(a[i]);
    for (int64_t i = 0; i < extentB; ++i)
      wide[extentA + i] = cpu::bf16ToFloat(b[i]);
    float *result = narrow ? wide + extentA + extentB : static_cast<float *>(c);
    cpu::gemmBatched(result, wide, wide + extentA, batch, m, n, k,
                     trans_a != 0, trans_b != 0, 0.0f, stride_a, stride_b,
                     stride_c);
    // Only the result's own elements: the gaps between strided batches
    // belong to someone else.
    for (int64_t p = 0; p < batch; ++p) {
      float *batchResult = result + p * stride_c;
      if (bias)
        cpu::addBias(batchResult, bias, m, n);
      if (narrow) {
        uint16_t *out = static_cast<uint16_t *>(c) + p * stride_c;
        for (int64_t i = 0; i < m * n; ++i)
          out[i] = cpu::floatToBf16(batchResult[i]);
      }
    }
  }, [&](Context &, Gpu &g) {
    checkArguments();
    g.matmulBf16(a, b, bias, c, out_dtype, batch, m, n, k, trans_a != 0,
                 trans_b != 0, stride_a, stride_b, stride_c);
  });
}

} // namespace

GPTRT_EXPORT void gptrt_matmul_bf16(gptrt_context *ctx, const uint16_t *a,
                                    const uint16_t *b, void *c,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t trans_a,
                                    int64_t trans_b, int64_t stride_a,
                                    int64_t stride_b, int64_t stride_c,
                                    int64_t out_dtype) {
  matmulBf16(ctx, "gptrt_matmul_bf16", /*withBias=*/false, a, b, nullptr, c,
             batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c,
             out_dtype);
}

GPTRT_EXPORT void gptrt_matmul_bf16_bias(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b,
    const float *bias, void *c, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t trans_a, int64_t trans_b, int64_t stride_a,
    int64_t stride_b, int64_t stride_c, int64_t out_dtype) {
  matmulBf16(ctx, "gptrt_matmul_bf16_bias", /*withBias=*/true, a, b, bias, c,
             batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c,
             out_dtype);
}

GPTRT_EXPORT void gptrt_matmul_bf16_bias_gelu(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, const float *bias,
    void *pre, void *out, int64_t batch, int64_t m, int64_t n, int64_t k,
    int64_t trans_a, int64_t trans_b, int64_t stride_a, int64_t stride_b,
    int64_t stride_c, int64_t pre_dtype, int64_t out_dtype) {
  guarded(
      ctx, "gptrt_matmul_bf16_bias_gelu",
      [&](Context &) {
        requireContiguous(batch, m, n, k, stride_c);
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_matmul_bf16_bias(ctx, a, b, bias, pre, batch, m, n, k, trans_a,
                               trans_b, stride_a, stride_b, stride_c,
                               pre_dtype);
        gptrt_gelu_fwd(ctx, pre, nullptr, out, nullptr, nullptr, nullptr,
                       batch * m * n, pre_dtype, out_dtype, nullptr);
      },
      [&](Context &, Gpu &g) {
        if (bias == nullptr)
          throw std::invalid_argument("bias is null, expected a vector of n "
                                      "floats");
        requireContiguous(batch, m, n, k, stride_c);
        requireStorageDtype(pre_dtype, "pre_dtype");
        requireStorageDtype(out_dtype, "out_dtype");
        g.matmulBf16BiasGelu(a, b, bias, pre, pre_dtype, out, out_dtype, batch,
                             m, n, k, trans_a != 0, trans_b != 0, stride_a,
                             stride_b, stride_c);
      });
}

namespace {

// gptrt_matmul_bf16_bgrad's shapes: the bias gradient sums a's stored
// rows, so one GEMM with a stored [k, m].
void requireBiasGradientGemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                             int64_t trans_a, int64_t db_dtype) {
  requireNonNegative(m, "m");
  requireNonNegative(n, "n");
  requireNonNegative(k, "k");
  if (batch != 1 || trans_a != 1)
    throw std::invalid_argument(
        "batch " + std::to_string(batch) + ", trans_a " +
        std::to_string(trans_a) +
        ", expected 1 and 1 (the weight gradient's GEMM, a stored [k, m])");
  requireGradientDtype(db_dtype, "db_dtype");
}

} // namespace

GPTRT_EXPORT void gptrt_matmul_bf16_bgrad(gptrt_context *ctx, const uint16_t *a,
                                          const uint16_t *b, void *c, void *db,
                                          int64_t batch, int64_t m, int64_t n,
                                          int64_t k, int64_t trans_a,
                                          int64_t trans_b, int64_t stride_a,
                                          int64_t stride_b, int64_t stride_c,
                                          int64_t out_dtype, int64_t db_dtype) {
  auto checkShape = [&] {
    requireBiasGradientGemm(batch, m, n, k, trans_a, db_dtype);
  };
  guarded(
      ctx, "gptrt_matmul_bf16_bgrad",
      [&](Context &) {
        checkShape();
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_matmul_bf16(ctx, a, b, c, batch, m, n, k, trans_a, trans_b,
                          stride_a, stride_b, stride_c, out_dtype);
        gptrt_reduce_rows(ctx, a, db, k, m, GPTRT_DTYPE_BF16, db_dtype);
      },
      [&](Context &, Gpu &g) {
        checkShape();
        requireStorageDtype(out_dtype, "out_dtype");
        g.matmulBf16Bgrad(a, b, c, out_dtype, db, db_dtype, m, n, k,
                          trans_b != 0, stride_a, stride_b, stride_c);
      });
}

GPTRT_EXPORT void gptrt_matmul_bf16_accumulate(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, float *c,
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  guarded(
      ctx, "gptrt_matmul_bf16_accumulate",
      [&](Context &ctxRef) {
        requireContiguous(batch, m, n, k, stride_c);
        addGemmResult(ctxRef, c, batch * m * n, [&](float *result) {
          gptrt_matmul_bf16(ctx, a, b, result, batch, m, n, k, trans_a, trans_b,
                            stride_a, stride_b, stride_c, GPTRT_DTYPE_F32);
        });
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, stride_c);
        requireNonNegative(stride_a, "stride_a");
        requireNonNegative(stride_b, "stride_b");
        g.matmulBf16(a, b, nullptr, c, gptrt::cuda::kAccumulateF32, batch, m, n,
                     k, trans_a != 0, trans_b != 0, stride_a, stride_b,
                     stride_c);
      });
}

GPTRT_EXPORT void gptrt_matmul_bf16_bgrad_accumulate(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, float *c,
    void *db, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t db_dtype) {
  guarded(
      ctx, "gptrt_matmul_bf16_bgrad_accumulate",
      [&](Context &ctxRef) {
        requireBiasGradientGemm(batch, m, n, k, trans_a, db_dtype);
        addGemmResult(ctxRef, c, m * n, [&](float *result) {
          gptrt_matmul_bf16_bgrad(ctx, a, b, result, db, batch, m, n, k,
                                  trans_a, trans_b, stride_a, stride_b,
                                  stride_c, GPTRT_DTYPE_F32, db_dtype);
        });
      },
      [&](Context &, Gpu &g) {
        requireBiasGradientGemm(batch, m, n, k, trans_a, db_dtype);
        g.matmulBf16Bgrad(a, b, c, gptrt::cuda::kAccumulateF32, db, db_dtype, m,
                          n, k, trans_b != 0, stride_a, stride_b, stride_c);
      });
}

GPTRT_EXPORT void gptrt_matmul_bf16_dgelu(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, const void *pre,
    void *dx, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t dg_dtype, int64_t pre_dtype, int64_t dx_dtype) {
  guarded(
      ctx, "gptrt_matmul_bf16_dgelu",
      [&](Context &c) {
        requireContiguous(batch, m, n, k, stride_c);
        requireStorageDtype(dg_dtype, "dg_dtype");
        // The product as the unfused GEMM stored it (its own buffer: the GEMM
        // uses the context's scratch), then the GELU gradient.
        const int64_t count = batch * m * n;
        float *dg =
            temporary(c, Temporary::GemmProduct,
                      dg_dtype == GPTRT_DTYPE_BF16 ? (count + 1) / 2 : count);
        gptrt_matmul_bf16(ctx, a, b, dg, batch, m, n, k, trans_a, trans_b,
                          stride_a, stride_b, stride_c, dg_dtype);
        gptrt_gelu_bwd(ctx, dg, pre, nullptr, dx, nullptr, nullptr, nullptr,
                       nullptr, count, dg_dtype, pre_dtype, dx_dtype, nullptr);
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, stride_c);
        requireStorageDtype(dg_dtype, "dg_dtype");
        requireStorageDtype(pre_dtype, "pre_dtype");
        requireStorageDtype(dx_dtype, "dx_dtype");
        g.matmulBf16Dgelu(a, b, pre, pre_dtype, dx, dx_dtype, dg_dtype, batch,
                          m, n, k, trans_a != 0, trans_b != 0, stride_a,
                          stride_b, stride_c);
      });
}

namespace {
void scaledMatmulValues(gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
                        const float *scaleA, const float *scaleB, void *c,
                        int64_t batch, int64_t m, int64_t n, int64_t k,
                        int64_t transA, int64_t transB, int64_t strideA,
                        int64_t strideB, int64_t strideC, int64_t formatA,
                        int64_t formatB, int64_t fastAccum, int64_t outDtype) {
  guarded(ctx, "gptrt_scaled_matmul", [&](Context &ctxRef) {
    requireFlag(fastAccum, "fast_accum");
    requireStorageDtype(outDtype, "out_dtype");
    for (auto [value, name] :
         {std::pair{batch, "batch"}, {m, "m"}, {n, "n"}, {k, "k"}})
      requireNonNegative(value, name);
    const int64_t cElems = batch == 0 ? 0 : (batch - 1) * strideC + m * n;
    // A bf16 c: the f32 result in scratch, rounded once. Only the batches'
    // own elements are touched: the gaps between strided batches are
    // someone else's.
    const bool narrow = outDtype == GPTRT_DTYPE_BF16;
    float *result = narrow ? ctxRef.scratch(static_cast<size_t>(cElems))
                           : static_cast<float *>(c);
    fp8GemmUnscaled(ctxRef, a, b, result, batch, m, n, k, transA, transB,
                    strideA, strideB, strideC, formatA, formatB);
    const float dequant = scaleA[0] * scaleB[0];
    uint16_t *out = static_cast<uint16_t *>(c);
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = p * strideC; i < p * strideC + m * n; ++i) {
        result[i] /= dequant;
        if (narrow)
          out[i] = cpu::floatToBf16(result[i]);
      }
  }, [&](Context &, Gpu &g) {
    requireFlag(fastAccum, "fast_accum");
    requireStorageDtype(outDtype, "out_dtype");
    g.scaledMatmul(a, b, scaleA, scaleB, c, batch, m, n, k, transA != 0,
                   transB != 0, strideA, strideB, strideC, formatA, formatB,
                   fastAccum != 0, outDtype);
  });
}
} // namespace

GPTRT_EXPORT void gptrt_scaled_matmul_bias(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, const float *bias, void *c, int64_t batch, int64_t m,
    int64_t n, int64_t k, int64_t transA, int64_t transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
    int64_t fastAccum, int64_t outDtype) {
  guarded(
      ctx, "gptrt_scaled_matmul_bias",
      [&](Context &) {
        requireContiguous(batch, m, n, k, strideC);
        gemmThenBias(ctx, bias, c, batch, m, n, outDtype, [&](void *product) {
          scaledMatmulValues(ctx, a, b, scaleA, scaleB, product, batch, m, n,
                              k, transA, transB, strideA, strideB, strideC,
                              formatA, formatB, fastAccum, outDtype);
        });
      },
      [&](Context &, Gpu &g) {
        requireBias(bias);
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        requireStorageDtype(outDtype, "out_dtype");
        g.scaledMatmulBias(a, b, scaleA, scaleB, bias, c, batch, m, n, k,
                           transA != 0, transB != 0, strideA, strideB, strideC,
                           formatA, formatB, fastAccum != 0, outDtype);
      });
}

GPTRT_EXPORT void gptrt_scaled_matmul_rowwise(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scaleA, const float *scaleB, void *c, int64_t batch,
    int64_t m, int64_t n, int64_t k, int64_t transA, int64_t transB,
    int64_t strideA, int64_t strideB, int64_t strideC, int64_t formatA,
    int64_t formatB, int64_t fastAccum, int64_t rowwiseA, int64_t rowwiseB,
    int64_t outDtype) {
  guarded(ctx, "gptrt_scaled_matmul_rowwise", [&](Context &ctxRef) {
    requireFlag(fastAccum, "fast_accum");
    if (batch > 1 && strideC != m * n)
      throw std::invalid_argument("stride_c " + std::to_string(strideC) +
                                  ", expected m * n = " +
                                  std::to_string(m * n) +
                                  " (rowwise scales index contiguous rows)");
    F32Staging f32(ctxRef, {{c, outDtype, batch * m * n, true, "out_dtype"}});
    float *result = f32[0];
    fp8GemmUnscaled(ctxRef, a, b, result, batch, m, n, k, transA, transB,
                    strideA, strideB, strideC, formatA, formatB);
    // Row r of all batch x m rows of c, column j: divided by a's scale of
    // its row and b's of its column (each a scalar when not rowwise).
    for (int64_t r = 0; r < batch * m; ++r)
      for (int64_t j = 0; j < n; ++j)
        result[r * n + j] /= (rowwiseA ? scaleA[r] : scaleA[0]) *
                             (rowwiseB ? scaleB[j] : scaleB[0]);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireFlag(fastAccum, "fast_accum");
    requireStorageDtype(outDtype, "out_dtype");
    g.scaledMatmulRowwise(a, b, scaleA, scaleB, nullptr, c, batch, m, n, k,
                          transA != 0, transB != 0, strideA, strideB, strideC,
                          formatA, formatB, fastAccum != 0, rowwiseA != 0,
                          rowwiseB != 0, outDtype);
  });
}

GPTRT_EXPORT void gptrt_scaled_matmul_rowwise_bias(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, const float *bias, void *c, int64_t batch, int64_t m,
    int64_t n, int64_t k, int64_t transA, int64_t transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
    int64_t fastAccum, int64_t rowwiseA, int64_t rowwiseB, int64_t outDtype) {
  guarded(
      ctx, "gptrt_scaled_matmul_rowwise_bias",
      [&](Context &) {
        requireContiguous(batch, m, n, k, strideC);
        gemmThenBias(ctx, bias, c, batch, m, n, outDtype, [&](void *product) {
          gptrt_scaled_matmul_rowwise(ctx, a, b, scaleA, scaleB, product, batch,
                                      m, n, k, transA, transB, strideA, strideB,
                                      strideC, formatA, formatB, fastAccum,
                                      rowwiseA, rowwiseB, outDtype);
        });
      },
      [&](Context &, Gpu &g) {
        requireBias(bias);
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        requireStorageDtype(outDtype, "out_dtype");
        g.scaledMatmulRowwise(a, b, scaleA, scaleB, bias, c, batch, m, n, k,
                              transA != 0, transB != 0, strideA, strideB,
                              strideC, formatA, formatB, fastAccum != 0,
                              rowwiseA != 0, rowwiseB != 0, outDtype);
      });
}

GPTRT_EXPORT void gptrt_scaled_matmul_accumulate(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, float *c, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t transA, int64_t transB, int64_t strideA, int64_t strideB,
    int64_t strideC, int64_t formatA, int64_t formatB, int64_t fastAccum) {
  guarded(
      ctx, "gptrt_scaled_matmul_accumulate",
      [&](Context &ctxRef) {
        requireContiguous(batch, m, n, k, strideC);
        addGemmResult(ctxRef, c, batch * m * n, [&](float *result) {
          scaledMatmulValues(ctx, a, b, scaleA, scaleB, result, batch, m, n, k,
                              transA, transB, strideA, strideB, strideC,
                              formatA, formatB, fastAccum, GPTRT_DTYPE_F32);
        });
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        g.scaledMatmul(a, b, scaleA, scaleB, c, batch, m, n, k, transA != 0,
                       transB != 0, strideA, strideB, strideC, formatA, formatB,
                       fastAccum != 0, gptrt::cuda::kAccumulateF32);
      });
}

GPTRT_EXPORT void gptrt_scaled_matmul_rowwise_accumulate(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, float *c, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t transA, int64_t transB, int64_t strideA, int64_t strideB,
    int64_t strideC, int64_t formatA, int64_t formatB, int64_t fastAccum,
    int64_t rowwiseA, int64_t rowwiseB) {
  guarded(
      ctx, "gptrt_scaled_matmul_rowwise_accumulate",
      [&](Context &ctxRef) {
        requireContiguous(batch, m, n, k, strideC);
        addGemmResult(ctxRef, c, batch * m * n, [&](float *result) {
          gptrt_scaled_matmul_rowwise(ctx, a, b, scaleA, scaleB, result, batch,
                                      m, n, k, transA, transB, strideA, strideB,
                                      strideC, formatA, formatB, fastAccum,
                                      rowwiseA, rowwiseB, GPTRT_DTYPE_F32);
        });
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        g.scaledMatmulRowwise(a, b, scaleA, scaleB, nullptr, c, batch, m, n, k,
                              transA != 0, transB != 0, strideA, strideB,
                              strideC, formatA, formatB, fastAccum != 0,
                              rowwiseA != 0, rowwiseB != 0,
                              gptrt::cuda::kAccumulateF32);
      });
}

// ------------------------------- GEMMs with their output epilogue

GPTRT_EXPORT void gptrt_matmul(gptrt_context *ctx, const float *a,
                               const float *b, const float *scale, float *c,
                               float *amax, uint8_t *q, int64_t batch,
                               int64_t m, int64_t n, int64_t k,
                               int64_t trans_a, int64_t trans_b,
                               int64_t stride_a, int64_t stride_b,
                               int64_t stride_c,
                               const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_matmul");
  const EpilogueCall call{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_matmul", call, c, /*dualCast=*/false);
  if (!work)
    return;
  if (*work == EpilogueWork::None)
    return matmulValues(ctx, a, b, c, batch, m, n, k, trans_a, trans_b,
                        stride_a, stride_b, stride_c);
  const char *fn = labels[*work];
  const TimedCall timed(ctx, fn);
  matmulValues(ctx, a, b, c, batch, m, n, k, trans_a, trans_b, stride_a,
               stride_b, stride_c);
  finish(ctx, fn, c, call.epilogue());
}

GPTRT_EXPORT void gptrt_scaled_matmul(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, const float *scale, void *c,
    float *amax, uint8_t *q, int64_t batch, int64_t m, int64_t n, int64_t k,
    int64_t trans_a, int64_t trans_b, int64_t stride_a, int64_t stride_b,
    int64_t stride_c, int64_t format_a, int64_t format_b, int64_t fast_accum,
    int64_t out_dtype, const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_scaled_matmul");
  const EpilogueCall call{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_scaled_matmul", call, c, /*dualCast=*/false);
  if (!work)
    return;
  auto product = [&] {
    scaledMatmulValues(ctx, a, b, scale_a, scale_b, c, batch, m, n, k, trans_a,
                       trans_b, stride_a, stride_b, stride_c, format_a,
                       format_b, fast_accum, out_dtype);
  };
  if (*work == EpilogueWork::None)
    return product();
  const char *fn = labels[*work];
  const TimedCall timed(ctx, fn);
  const Epilogue e = call.epilogue();
  if (!agreeingDtypes(ctx, fn, out_dtype, e.dtype))
    return;
  product();
  finish(ctx, fn, c, e);
}
