// gptrt_* elementwise and data-movement kernels: convert, fill, add, scale,
// GELU, copies, permute, embedding, row sums; convert, add and GELU with
// their FP8 output epilogue.
#include "runtime/core/AbiEpilogue.h"
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

using namespace gptrt::abi;

namespace {
// The producers' own work, which their exported functions (at the end of
// this file) run with or without an output epilogue.
void convertValues(gptrt_context *ctx, const void *src, void *dst, int64_t n,
                   int64_t from, int64_t to) {
  guarded(ctx, "gptrt_convert", [&](Context &) {
    requireNonNegative(n, "n");
    if (from == GPTRT_DTYPE_F32 && to == GPTRT_DTYPE_BF16) {
      const float *in = static_cast<const float *>(src);
      uint16_t *out = static_cast<uint16_t *>(dst);
      for (int64_t i = 0; i < n; ++i)
        out[i] = cpu::floatToBf16(in[i]);
    } else if (from == GPTRT_DTYPE_BF16 && to == GPTRT_DTYPE_F32) {
      const uint16_t *in = static_cast<const uint16_t *>(src);
      float *out = static_cast<float *>(dst);
      for (int64_t i = 0; i < n; ++i)
        out[i] = cpu::bf16ToFloat(in[i]);
    } else {
      throw std::invalid_argument(
          "converts dtype " + std::to_string(from) + " to " +
          std::to_string(to) + ", expected f32 (1) <-> bf16 (2)");
    }
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    g.convert(src, dst, n, from, to);
  });
}
} // namespace

GPTRT_EXPORT void gptrt_fill(gptrt_context *ctx, float *out, int64_t n,
                             double value) {
  guarded(ctx, "gptrt_fill", [&](Context &) {
    requireNonNegative(n, "n");
    cpu::fill(out, static_cast<float>(value), n);
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    g.fill(out, n, static_cast<float>(value));
  });
}

GPTRT_EXPORT void gptrt_accumulate(gptrt_context *ctx, const void *src,
                                   float *dst, int64_t n, int64_t src_dtype) {
  guarded(ctx, "gptrt_accumulate", [&](Context &c) {
    requireNonNegative(n, "n");
    F32Staging f32(c, {{src, src_dtype, n, false, "src_dtype"}});
    // add's output may alias its first operand.
    cpu::add(dst, dst, f32[0], 1, n, false);
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    requireStorageDtype(src_dtype, "src_dtype");
    g.accumulate(src, src_dtype, dst, n);
  });
}

GPTRT_EXPORT void gptrt_arange(gptrt_context *ctx, int32_t *out, int64_t n) {
  guarded(
      ctx, "gptrt_arange", [&](Context &) { cpu::arange(out, n); },
      [&](Context &, Gpu &g) { g.arange(out, n); });
}

GPTRT_EXPORT void gptrt_embedding_fwd(gptrt_context *ctx, const void *table,
                                      const int32_t *ids, void *out,
                                      int64_t rows, int64_t width,
                                      int64_t dtype) {
  // The table's row count is not passed, so ids cannot be range-checked
  // here; the runtime checks token ids against the vocabulary when it
  // writes the inputs (writeBatch).
  guarded(ctx, "gptrt_embedding_fwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    int64_t tableRows = 0;
    for (int64_t i = 0; i < rows; ++i)
      tableRows = std::max<int64_t>(tableRows, int64_t(ids[i]) + 1);
    // Only the rows the ids reach are widened (the bf16 case).
    F32Staging f32(c, {{table, dtype, tableRows * width, false, "dtype"},
                       {out, dtype, rows * width, true, "dtype"}});
    cpu::embeddingForward(f32[1], f32[0], ids, rows, width);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.embeddingForward(table, ids, out, rows, width, dtype);
  });
}

namespace {

// The CPU checks every id of an embedding's backward (the GPU skips bad
// ones; the host checked the batch when it wrote it).
void requireEmbeddingIds(const int32_t *ids, int64_t rows, int64_t tableRows,
                         int64_t width) {
  requireNonNegative(rows, "rows");
  requireNonNegative(tableRows, "table_rows");
  requireNonNegative(width, "width");
  for (int64_t i = 0; i < rows; ++i)
    if (ids[i] < 0 || ids[i] >= tableRows)
      throw std::out_of_range("id " + std::to_string(ids[i]) + " of row " +
                              std::to_string(i) + " is outside [0, " +
                              std::to_string(tableRows) +
                              "), the embedding table's rows");
}

} // namespace

GPTRT_EXPORT void gptrt_embedding_bwd(gptrt_context *ctx, const void *dout,
                                      const int32_t *ids, void *dtable,
                                      int64_t rows, int64_t table_rows,
                                      int64_t width, int64_t dout_dtype,
                                      int64_t dtable_dtype) {
  guarded(
      ctx, "gptrt_embedding_bwd",
      [&](Context &c) {
        requireEmbeddingIds(ids, rows, table_rows, width);
        F32Staging f32(
            c,
            {{dout, dout_dtype, rows * width, false, "dout_dtype"},
             {dtable, dtable_dtype, table_rows * width, true, "dtable_dtype"}});
        // The ABI writes dtable; the kernel accumulates.
        cpu::fill(f32[1], 0.0f, table_rows * width);
        cpu::embeddingBackward(f32[1], f32[0], ids, rows, width);
        f32.finish();
      },
      [&](Context &, Gpu &g) {
        requireNonNegative(table_rows, "table_rows");
        requireStorageDtype(dout_dtype, "dout_dtype");
        requireStorageDtype(dtable_dtype, "dtable_dtype");
        g.embeddingBackward(dout, dout_dtype, ids, dtable, dtable_dtype, rows,
                            table_rows, width);
      });
}

GPTRT_EXPORT void gptrt_embedding_bwd_accumulate(
    gptrt_context *ctx, const void *dout, const int32_t *ids, float *dtable,
    int64_t rows, int64_t table_rows, int64_t width, int64_t dout_dtype) {
  guarded(
      ctx, "gptrt_embedding_bwd_accumulate",
      [&](Context &c) {
        requireEmbeddingIds(ids, rows, table_rows, width);
        F32Staging f32(c,
                       {{dout, dout_dtype, rows * width, false, "dout_dtype"}});
        cpu::embeddingBackward(dtable, f32[0], ids, rows, width);
      },
      [&](Context &, Gpu &g) {
        requireNonNegative(table_rows, "table_rows");
        requireStorageDtype(dout_dtype, "dout_dtype");
        g.embeddingBackward(dout, dout_dtype, ids, dtable,
                            gptrt::cuda::kAccumulateF32, rows, table_rows,
                            width);
      });
}

namespace {

// The GPU bodies of the producers whose kernels also take the fused FP8
// epilogue (an empty one for the plain entry points).
void geluOnGpu(Gpu &g, const void *x, void *out, int64_t n, int64_t xDtype,
               int64_t outDtype, const gptrt::cuda::Fp8Epilogue &fp8) {
  requireNonNegative(n, "n");
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.geluForwardFp8(x, xDtype, out, outDtype, n, fp8);
}

void geluGradOnGpu(Gpu &g, const void *dout, const void *x, void *dx, int64_t n,
                   int64_t doutDtype, int64_t xDtype, int64_t dxDtype,
                   const gptrt::cuda::Fp8Epilogue &fp8) {
  requireNonNegative(n, "n");
  requireStorageDtype(doutDtype, "dout_dtype");
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(dxDtype, "dx_dtype");
  g.geluBackwardFp8(dout, doutDtype, x, xDtype, dx, dxDtype, n, fp8);
}

void addOnGpu(Gpu &g, const void *a, const void *b, void *out, int64_t outer,
              int64_t inner, int64_t broadcastB, int64_t aDtype,
              int64_t bDtype, int64_t outDtype,
              const gptrt::cuda::Fp8Epilogue &fp8) {
  requireNonNegative(outer, "outer");
  requireNonNegative(inner, "inner");
  requireStorageDtype(aDtype, "a_dtype");
  requireStorageDtype(bDtype, "b_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.addFp8(a, aDtype, b, bDtype, out, outDtype, outer, inner, broadcastB != 0,
           fp8);
}

} // namespace

GPTRT_EXPORT void gptrt_bias_add(gptrt_context *ctx, const float *bias,
                                 float *c, int64_t rows, int64_t cols) {
  guarded(
      ctx, "gptrt_bias_add",
      [&](Context &) { cpu::addBias(c, bias, rows, cols); },
      [&](Context &, Gpu &g) { g.biasAdd(bias, c, rows, cols); });
}

GPTRT_EXPORT void gptrt_reduce_rows(gptrt_context *ctx, const void *x,
                                    void *out, int64_t rows, int64_t cols,
                                    int64_t x_dtype, int64_t out_dtype) {
  guarded(ctx, "gptrt_reduce_rows", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    F32Staging f32(c, {{x, x_dtype, rows * cols, false, "x_dtype"},
                       {out, out_dtype, cols, true, "out_dtype", true}});
    cpu::sumRowsTree(f32[1], f32[0], rows, cols);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    requireStorageDtype(x_dtype, "x_dtype");
    requireGradientDtype(out_dtype, "out_dtype");
    g.reduceRows(x, x_dtype, out, out_dtype, rows, cols);
  });
}

namespace {
void addValues(gptrt_context *ctx, const void *a, const void *b, void *out,
               int64_t outer, int64_t inner, int64_t broadcast_b,
               int64_t a_dtype, int64_t b_dtype, int64_t out_dtype) {
  guarded(ctx, "gptrt_add", [&](Context &c) {
    requireNonNegative(outer, "outer");
    requireNonNegative(inner, "inner");
    const int64_t n = outer * inner;
    F32Staging f32(c, {{a, a_dtype, n, false, "a_dtype"},
                       {b, b_dtype, broadcast_b ? inner : n, false, "b_dtype"},
                       {out, out_dtype, n, true, "out_dtype"}});
    cpu::add(f32[2], f32[0], f32[1], outer, inner, broadcast_b != 0);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    addOnGpu(g, a, b, out, outer, inner, broadcast_b, a_dtype, b_dtype,
             out_dtype, {});
  });
}
} // namespace

GPTRT_EXPORT void gptrt_scale(gptrt_context *ctx, const float *x, float *out,
                              int64_t n, double s) {
  guarded(
      ctx, "gptrt_scale",
      [&](Context &) { cpu::scale(out, x, static_cast<float>(s), n); },
      [&](Context &, Gpu &g) { g.scale(x, out, n, static_cast<float>(s)); });
}

namespace {
void geluValues(gptrt_context *ctx, const void *x, void *out, int64_t n,
                int64_t x_dtype, int64_t out_dtype) {
  guarded(ctx, "gptrt_gelu_fwd", [&](Context &c) {
    F32Staging f32(c, {{x, x_dtype, n, false, "x_dtype"},
                       {out, out_dtype, n, true, "out_dtype"}});
    cpu::geluForward(f32[1], f32[0], n);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    geluOnGpu(g, x, out, n, x_dtype, out_dtype, {});
  });
}

void geluGradValues(gptrt_context *ctx, const void *dout, const void *x,
                    void *dx, int64_t n, int64_t dout_dtype, int64_t x_dtype,
                    int64_t dx_dtype) {
  guarded(
      ctx, "gptrt_gelu_bwd",
      [&](Context &c) {
        F32Staging f32(c, {{dout, dout_dtype, n, false, "dout_dtype"},
                           {x, x_dtype, n, false, "x_dtype"},
                           {dx, dx_dtype, n, true, "dx_dtype"}});
        cpu::geluBackward(f32[2], f32[1], f32[0], n);
        f32.finish();
      },
      [&](Context &, Gpu &g) {
        geluGradOnGpu(g, dout, x, dx, n, dout_dtype, x_dtype, dx_dtype, {});
      });
}
} // namespace

GPTRT_EXPORT void gptrt_copy_blocks(gptrt_context *ctx, const void *src,
                                    void *dst, int64_t outer, int64_t len,
                                    int64_t dst_stride, int64_t src_stride,
                                    int64_t dst_offset, int64_t src_offset,
                                    int64_t dtype) {
  guarded(ctx, "gptrt_copy_blocks", [&](Context &) {
    requireStorageDtype(dtype, "dtype");
    if (dtype == GPTRT_DTYPE_BF16)
      cpu::copyBlocks(static_cast<uint16_t *>(dst),
                      static_cast<const uint16_t *>(src), outer, len,
                      dst_stride, src_stride, dst_offset, src_offset);
    else
      cpu::copyBlocks(static_cast<float *>(dst),
                      static_cast<const float *>(src), outer, len, dst_stride,
                      src_stride, dst_offset, src_offset);
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.copyBlocks(src, dst, outer, len, dst_stride, src_stride, dst_offset,
                 src_offset, dtype == GPTRT_DTYPE_BF16 ? 2 : 4);
  });
}

GPTRT_EXPORT void gptrt_permute(gptrt_context *ctx, const float *src,
                                float *dst, int64_t rank, int64_t s0,
                                int64_t s1, int64_t s2, int64_t s3,
                                int64_t s4, int64_t s5, int64_t p0,
                                int64_t p1, int64_t p2, int64_t p3,
                                int64_t p4, int64_t p5) {
  guarded(ctx, "gptrt_permute", [&](Context &) {
    if (rank < 0 || rank > 6)
      throw std::invalid_argument("rank " + std::to_string(rank) +
                                  " is out of range, expected 0..6");
    const int64_t shape[6] = {s0, s1, s2, s3, s4, s5};
    const int64_t perm[6] = {p0, p1, p2, p3, p4, p5};
    cpu::permute(dst, src, shape, perm, static_cast<int>(rank));
  }, [&](Context &, Gpu &g) {
    if (rank < 0 || rank > 6)
      throw std::invalid_argument("rank " + std::to_string(rank) +
                                  " is out of range, expected 0..6");
    const int64_t shape[6] = {s0, s1, s2, s3, s4, s5};
    const int64_t perm[6] = {p0, p1, p2, p3, p4, p5};
    g.permute(src, dst, shape, perm, static_cast<int>(rank));
  });
}

// ------------------------------- producers with their output epilogue

GPTRT_EXPORT void gptrt_convert(gptrt_context *ctx, const void *src,
                                const float *scale, void *dst, float *amax,
                                uint8_t *q, int64_t n, int64_t from,
                                int64_t to, const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_convert");
  const EpilogueCall call{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_convert", call, dst, /*dualCast=*/false);
  if (!work)
    return;
  if (*work == EpilogueWork::None)
    return convertValues(ctx, src, dst, n, from, to);
  const char *fn = labels[*work];
  const TimedCall timed(ctx, fn);
  convertValues(ctx, src, dst, n, from, to);
  finish(ctx, fn, dst, call.epilogue());
}

GPTRT_EXPORT void gptrt_add(gptrt_context *ctx, const void *a, const void *b,
                            const float *scale, void *out, float *amax,
                            uint8_t *q, int64_t outer, int64_t inner,
                            int64_t broadcast_b, int64_t a_dtype,
                            int64_t b_dtype, int64_t out_dtype,
                            const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_add");
  const EpilogueCall call{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_add", call, out, /*dualCast=*/false);
  if (!work)
    return;
  if (*work == EpilogueWork::None)
    return addValues(ctx, a, b, out, outer, inner, broadcast_b, a_dtype,
                     b_dtype, out_dtype);
  fusedProducer(
      ctx, labels[*work], out_dtype, out, outer * inner, call.epilogue(),
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addOnGpu(g, a, b, out, outer, inner, broadcast_b, a_dtype, b_dtype,
                 out_dtype, fp8);
      },
      [&] {
        addValues(ctx, a, b, out, outer, inner, broadcast_b, a_dtype, b_dtype,
                  out_dtype);
      });
}

namespace {
// The dual cast of a GELU (dout null) or GELU gradient: on the CPU the
// producer cast into a temporary output and the transposed cast (with the
// bias gradient) of it; on a GPU one kernel that never stores it.
void geluCastDual(gptrt_context *ctx, const char *fn, const void *dout,
                  int64_t doutDtype, const void *x, int64_t xDtype,
                  const EpilogueCall &call, int64_t n, int64_t yDtype) {
  const gptrt_epilogue &e = *call.descriptor;
  auto validate = [&] {
    requireNonNegative(n, "n");
    requireNonNegative(e.rows, "rows");
    requireNonNegative(e.cols, "cols");
    if (e.rows * e.cols != n)
      throw std::invalid_argument(
          "rows * cols = " + std::to_string(e.rows * e.cols) +
          ", expected n = " + std::to_string(n) +
          " (both casts cover the whole output)");
    requireStorageDtype(yDtype, dout ? "dx_dtype" : "out_dtype");
    if (e.out_dtype != yDtype)
      throw std::invalid_argument("out_dtype " + std::to_string(e.out_dtype) +
                                  " differs from the output's dtype " +
                                  std::to_string(yDtype) +
                                  ": the casts read what the producer stores");
    if (e.transpose != 0)
      throw std::invalid_argument("transpose " + std::to_string(e.transpose) +
                                  " with q_t: the dual cast's q is row-major");
    requireFormat(e.format);
  };
  guarded(
      ctx, fn,
      [&](Context &c) {
        validate();
        // f32 room serves a bf16 output too.
        float *y = temporary(c, Temporary::ProducerOutput, n);
        if (dout == nullptr)
          gptrt_gelu_fwd(ctx, x, call.scale, y, call.amax, call.q, nullptr, n,
                         xDtype, yDtype, call.descriptor);
        else
          gptrt_gelu_bwd(ctx, dout, x, call.scale, y, call.amax, call.q,
                         nullptr, nullptr, n, doutDtype, xDtype, yDtype,
                         call.descriptor);
        if (call.db == nullptr)
          gptrt_quantize_fp8_transposed(ctx, y, call.scale, call.qT, e.rows,
                                        e.cols, e.format, e.stat_slot_t,
                                        e.out_dtype);
        else
          gptrt_quantize_fp8_transposed_bgrad(
              ctx, y, call.scale, call.qT, call.db, e.rows, e.cols, e.format,
              e.stat_slot_t, e.out_dtype, e.db_dtype);
      },
      [&](Context &c, Gpu &g) {
        validate();
        requireStorageDtype(xDtype, "x_dtype");
        if (dout != nullptr)
          requireStorageDtype(doutDtype, "dout_dtype");
        if (call.db != nullptr)
          requireGradientDtype(e.db_dtype, "db_dtype");
        const bool stats = c.collectingFp8Stats();
        g.geluCastDual(dout, doutDtype, x, xDtype, e.out_dtype, call.scale,
                       call.amax, call.q, call.qT, call.db, e.db_dtype, e.rows,
                       e.cols, e.format, stats ? e.stat_slot : -1,
                       stats ? e.stat_slot_t : -1);
      });
}
} // namespace

GPTRT_EXPORT void gptrt_gelu_fwd(gptrt_context *ctx, const void *x,
                                 const float *scale, void *out, float *amax,
                                 uint8_t *q, uint8_t *q_t, int64_t n,
                                 int64_t x_dtype, int64_t out_dtype,
                                 const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_gelu_fwd");
  const EpilogueCall call{epilogue, scale, amax, q, q_t};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_gelu_fwd", call, out, /*dualCast=*/true);
  if (!work)
    return;
  const char *fn = labels[*work];
  switch (*work) {
  case EpilogueWork::None:
    return geluValues(ctx, x, out, n, x_dtype, out_dtype);
  case EpilogueWork::DualCast:
    return geluCastDual(ctx, fn, nullptr, 0, x, x_dtype, call, n, out_dtype);
  case EpilogueWork::Amax:
  case EpilogueWork::Cast:
    return fusedProducer(
        ctx, fn, out_dtype, out, n, call.epilogue(),
        [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
          geluOnGpu(g, x, out, n, x_dtype, out_dtype, fp8);
        },
        [&] { geluValues(ctx, x, out, n, x_dtype, out_dtype); });
  }
}

GPTRT_EXPORT void gptrt_gelu_bwd(gptrt_context *ctx, const void *dout,
                                 const void *x, const float *scale, void *dx,
                                 float *amax, uint8_t *q, uint8_t *q_t,
                                 void *db, int64_t n, int64_t dout_dtype,
                                 int64_t x_dtype, int64_t dx_dtype,
                                 const gptrt_epilogue *epilogue) {
  static const EpilogueLabels labels("gptrt_gelu_bwd");
  const EpilogueCall call{epilogue, scale, amax, q, q_t, db};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_gelu_bwd", call, dx, /*dualCast=*/true,
                   /*biasGradient=*/true);
  if (!work)
    return;
  const char *fn = labels[*work];
  switch (*work) {
  case EpilogueWork::None:
    return geluGradValues(ctx, dout, x, dx, n, dout_dtype, x_dtype, dx_dtype);
  case EpilogueWork::DualCast:
    return geluCastDual(ctx, fn, dout, dout_dtype, x, x_dtype, call, n,
                        dx_dtype);
  case EpilogueWork::Amax:
  case EpilogueWork::Cast:
    return fusedProducer(
        ctx, fn, dx_dtype, dx, n, call.epilogue(),
        [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
          geluGradOnGpu(g, dout, x, dx, n, dout_dtype, x_dtype, dx_dtype, fp8);
        },
        [&] {
          geluGradValues(ctx, dout, x, dx, n, dout_dtype, x_dtype, dx_dtype);
        });
  }
}
