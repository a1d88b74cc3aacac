// GEMM descriptors (gptrt_gemm_desc, runtime/abi/gptrt_kernels.def) for
// tests and tools that call gptrt_gemm directly. Each builder sets every
// field: the shape and layout as named, the operands' and result's dtypes
// of its form, and 0 in the rest (the GELU, GELU-gradient and
// bias-gradient dtypes), which a caller sets on the returned value for the
// epilogue it asks for:
//
//   gptrt_gemm_desc d = bf16Gemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_DTYPE_BF16);
//   d.gelu_pre_dtype = GPTRT_DTYPE_BF16;
//   gptrt_gemm(ctx, a, b, nullptr, nullptr, bias, nullptr, nullptr, out, pre,
//              nullptr, nullptr, nullptr, &d, nullptr);
//
// gptrt_gemm's buffers, in order: a, b, scale_a, scale_b, bias, dgelu_pre,
// scale (the output epilogue's), c, gelu_pre, dbias, amax, q; then the
// gemm descriptor and the (optional) output epilogue descriptor.
#ifndef GPTRT_TEST_UNIT_RUNTIME_GEMM_H
#define GPTRT_TEST_UNIT_RUNTIME_GEMM_H

#include "runtime/abi/gptrt.h"

namespace gptrt::test {

/// f32 operands and an f32 c: c[p] = op(a[p]) op(b[p]) for p < batch,
/// op transposing when transA / transB is 1, strides in elements.
inline gptrt_gemm_desc gemmDesc(int64_t batch, int64_t m, int64_t n, int64_t k,
                                int64_t transA, int64_t transB, int64_t strideA,
                                int64_t strideB, int64_t strideC) {
  gptrt_gemm_desc d{};
  d.batch = batch;
  d.m = m;
  d.n = n;
  d.k = k;
  d.trans_a = transA;
  d.trans_b = transB;
  d.stride_a = strideA;
  d.stride_b = strideB;
  d.stride_c = strideC;
  d.a_dtype = GPTRT_DTYPE_F32;
  d.b_dtype = GPTRT_DTYPE_F32;
  d.c_dtype = GPTRT_DTYPE_F32;
  d.a_scaling = GPTRT_SCALING_TENSOR;
  d.b_scaling = GPTRT_SCALING_TENSOR;
  d.fast_accum = 0;
  d.gelu_pre_dtype = 0;
  d.dgelu_pre_dtype = 0;
  d.product_dtype = 0;
  d.dbias_dtype = 0;
  return d;
}

/// bf16 operands (codes as uint16_t); c stored as cDtype: GPTRT_DTYPE_F32,
/// GPTRT_DTYPE_BF16, or GPTRT_DTYPE_F32_ACCUMULATE (an f32 c added into).
inline gptrt_gemm_desc bf16Gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                                int64_t transA, int64_t transB, int64_t strideA,
                                int64_t strideB, int64_t strideC,
                                int64_t cDtype) {
  gptrt_gemm_desc d =
      gemmDesc(batch, m, n, k, transA, transB, strideA, strideB, strideC);
  d.a_dtype = GPTRT_DTYPE_BF16;
  d.b_dtype = GPTRT_DTYPE_BF16;
  d.c_dtype = cDtype;
  return d;
}

/// FP8 operands (codes as uint8_t) of formats formatA and formatB
/// (GPTRT_FP8_E4M3 / GPTRT_FP8_E5M2), one scale each (scale_a[0],
/// scale_b[0]); fastAccum 0 or 1; c stored as cDtype (GPTRT_DTYPE_F32,
/// GPTRT_DTYPE_BF16 or GPTRT_DTYPE_F32_ACCUMULATE).
inline gptrt_gemm_desc fp8Gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                               int64_t transA, int64_t transB, int64_t strideA,
                               int64_t strideB, int64_t strideC,
                               int64_t formatA, int64_t formatB,
                               int64_t fastAccum, int64_t cDtype) {
  gptrt_gemm_desc d =
      gemmDesc(batch, m, n, k, transA, transB, strideA, strideB, strideC);
  d.a_dtype = GPTRT_DTYPE_E4M3 + formatA;
  d.b_dtype = GPTRT_DTYPE_E4M3 + formatB;
  d.fast_accum = fastAccum;
  d.c_dtype = cDtype;
  return d;
}

/// fp8Gemm with rowwise scaling: rowwiseA 1 divides row r of op(a) (over
/// all batch x m rows) by scale_a[r] (0: scale_a[0]), rowwiseB 1 column j
/// of op(b) by scale_b[j] (0: scale_b[0]).
inline gptrt_gemm_desc fp8RowwiseGemm(int64_t batch, int64_t m, int64_t n,
                                      int64_t k, int64_t transA, int64_t transB,
                                      int64_t strideA, int64_t strideB,
                                      int64_t strideC, int64_t formatA,
                                      int64_t formatB, int64_t fastAccum,
                                      int64_t rowwiseA, int64_t rowwiseB,
                                      int64_t cDtype) {
  gptrt_gemm_desc d = fp8Gemm(batch, m, n, k, transA, transB, strideA, strideB,
                              strideC, formatA, formatB, fastAccum, cDtype);
  d.a_scaling = rowwiseA ? GPTRT_SCALING_ROWWISE : GPTRT_SCALING_TENSOR;
  d.b_scaling = rowwiseB ? GPTRT_SCALING_ROWWISE : GPTRT_SCALING_TENSOR;
  return d;
}

} // namespace gptrt::test

#endif // GPTRT_TEST_UNIT_RUNTIME_GEMM_H
