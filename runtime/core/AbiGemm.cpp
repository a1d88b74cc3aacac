// gptrt_gemm: the one GEMM entry. Its descriptor (gptrt_gemm_desc in
// gptrt_kernels.def) says the operands' formats and scaling and the result's
// dtype; its optional buffers say the epilogue (bias, GELU, GELU gradient,
// bias gradient, the FP8 output epilogue). Here the call is checked and
// dispatched: on the CPU each form is the kernels it stands for, so fused
// and unfused agree bit for bit; on a GPU the cuBLASLt form of Gemm.cu.
#include "runtime/abi/GemmForm.h"
#include "runtime/core/AbiEpilogue.h"
#include "runtime/core/AbiSupport.h"
#include "runtime/cpu/Kernels.h"

#include <string>
#include <vector>

using namespace gptrt::abi;

namespace {

using Operands = gptrt::GemmOperands;

// A gptrt_gemm call, checked: its descriptor, buffers and what they ask.
struct GemmCall {
  const gptrt_gemm_desc &d;
  const void *a, *b;
  const float *scaleA, *scaleB, *bias;
  const void *dgeluPre;
  void *c, *geluPre, *dbias;
  Operands operands;
  bool accumulate; // c_dtype GPTRT_DTYPE_F32_ACCUMULATE

  bool fp8() const {
    return operands == Operands::Fp8 || operands == Operands::Fp8Rowwise;
  }
  // The FP8 formats (GPTRT_FP8_*) of FP8 operands.
  int64_t formatA() const { return d.a_dtype - GPTRT_DTYPE_E4M3; }
  int64_t formatB() const { return d.b_dtype - GPTRT_DTYPE_E4M3; }
  // What the product is stored as before c: c's dtype, f32 when c
  // accumulates.
  int64_t resultDtype() const {
    return accumulate ? GPTRT_DTYPE_F32 : d.c_dtype;
  }
  int64_t elements() const { return d.batch * d.m * d.n; }
};

bool isFp8Dtype(int64_t dtype) {
  return dtype == GPTRT_DTYPE_E4M3 || dtype == GPTRT_DTYPE_E5M2;
}

std::string field(const char *name, int64_t value) {
  return std::string(name) + " " + std::to_string(value);
}

// Which operands, from the descriptor (and the scales FP8 needs).
Operands operandsOf(const gptrt_gemm_desc &d, const float *scaleA,
                    const float *scaleB) {
  if (d.a_dtype == GPTRT_DTYPE_F32 && d.b_dtype == GPTRT_DTYPE_F32)
    return Operands::F32;
  if (d.a_dtype == GPTRT_DTYPE_BF16 && d.b_dtype == GPTRT_DTYPE_BF16)
    return Operands::Bf16;
  if (!isFp8Dtype(d.a_dtype) || !isFp8Dtype(d.b_dtype))
    throw std::invalid_argument(
        field("a_dtype", d.a_dtype) + ", " + field("b_dtype", d.b_dtype) +
        ": expected both f32 (1), both bf16 (2), or FP8 codes for both (4 "
        "E4M3, 5 E5M2)");
  if (scaleA == nullptr || scaleB == nullptr)
    throw std::invalid_argument(std::string(scaleA ? "scale_b" : "scale_a") +
                                " is null: FP8 operands need both scales");
  for (auto [scaling, name] :
       {std::pair{d.a_scaling, "a_scaling"}, {d.b_scaling, "b_scaling"}})
    if (scaling != GPTRT_SCALING_TENSOR && scaling != GPTRT_SCALING_ROWWISE)
      throw std::invalid_argument(field(name, scaling) +
                                  ", expected 0 (one scale for the tensor) "
                                  "or 1 (one per row / column)");
  requireFlag(d.fast_accum, "fast_accum");
  return gptrt::gemmOperands(d.a_dtype, d.a_scaling, d.b_scaling);
}

// The epilogues work over the whole result as one array.
void requireContiguous(const gptrt_gemm_desc &d, const char *why) {
  if (d.batch > 1 && d.stride_c != d.m * d.n)
    throw std::invalid_argument(
        field("stride_c", d.stride_c) +
        ", expected m * n = " + std::to_string(d.m * d.n) + " (" + why + ")");
}

void refuseUnless(bool ok, const std::string &what) {
  if (!ok)
    throw std::invalid_argument(what);
}

GemmCall checkedCall(const gptrt_gemm_desc *d, const void *a, const void *b,
                     const float *scaleA, const float *scaleB,
                     const float *bias, const void *dgeluPre, void *c,
                     void *geluPre, void *dbias) {
  if (d == nullptr)
    throw std::invalid_argument("the gemm descriptor is null; every call "
                                "passes one (gptrt_gemm_desc in gptrt.h)");
  for (auto [value, name] : {std::pair{d->batch, "batch"},
                             {d->m, "m"},
                             {d->n, "n"},
                             {d->k, "k"},
                             {d->stride_a, "stride_a"},
                             {d->stride_b, "stride_b"},
                             {d->stride_c, "stride_c"}})
    requireNonNegative(value, name);
  requireFlag(d->trans_a, "trans_a");
  requireFlag(d->trans_b, "trans_b");
  const Operands operands = operandsOf(*d, scaleA, scaleB);
  const bool fp8 =
      operands == Operands::Fp8 || operands == Operands::Fp8Rowwise;
  if (!fp8 && (scaleA || scaleB))
    throw std::invalid_argument(std::string(scaleA ? "scale_a" : "scale_b") +
                                " is given, but the operands are not FP8 "
                                "(a_dtype " +
                                std::to_string(d->a_dtype) + ")");
  const bool accumulate = d->c_dtype == GPTRT_DTYPE_F32_ACCUMULATE;
  if (!accumulate)
    requireStorageDtype(d->c_dtype, "c_dtype");
  const bool bf16 = operands == Operands::Bf16;
  refuseUnless(operands != Operands::F32 ||
                   (d->c_dtype == GPTRT_DTYPE_F32 && !bias && !dgeluPre &&
                    !geluPre && !dbias),
               "an f32 GEMM (a_dtype 1) writes an f32 c (c_dtype 1) and takes "
               "no bias, GELU or bias-gradient epilogue (gptrt_bias_add adds a "
               "bias after it)");
  // (A bf16 GEMM adds its bias per batch, in place; the other epilogues
  // run over the whole result as one array.)
  if ((bias && fp8) || geluPre || dgeluPre)
    requireContiguous(*d, "a fused GEMM epilogue needs a contiguous result");
  if (operands == Operands::Fp8Rowwise)
    requireContiguous(*d, "rowwise scales index contiguous rows");
  if (geluPre) {
    refuseUnless(bf16 && bias, "gelu_pre (the GELU epilogue) needs bf16 "
                               "operands and a bias");
    requireStorageDtype(d->gelu_pre_dtype, "gelu_pre_dtype");
  }
  if (dgeluPre) {
    refuseUnless(bf16 && !bias && !geluPre,
                 "dgelu_pre (the GELU-gradient epilogue) needs bf16 operands "
                 "and no bias or gelu_pre");
    requireStorageDtype(d->dgelu_pre_dtype, "dgelu_pre_dtype");
    requireStorageDtype(d->product_dtype, "product_dtype");
  }
  if (dbias) {
    refuseUnless(bf16 && !bias && !geluPre && !dgeluPre,
                 "dbias (the bias-gradient epilogue) needs bf16 operands and "
                 "no other epilogue");
    refuseUnless(d->batch == 1 && d->trans_a == 1,
                 field("batch", d->batch) + ", " +
                     field("trans_a", d->trans_a) +
                     ": dbias needs 1 and 1 (the weight gradient's GEMM, a "
                     "stored [k, m])");
    requireGradientDtype(d->dbias_dtype, "dbias_dtype");
  }
  if (accumulate) {
    refuseUnless(!bias && !geluPre && !dgeluPre,
                 "c_dtype 257 (accumulate into c) takes no bias or GELU "
                 "epilogue");
    requireContiguous(*d, "c accumulates as one array");
  }
  return GemmCall{*d,       a, b,       scaleA, scaleB,   bias,
                  dgeluPre, c, geluPre, dbias,  operands, accumulate};
}

// The call's name in profiles and errors: gptrt_gemm.<form> with the
// output epilogue's work after a '+' ("gptrt_gemm.bf16+bias+gelu",
// "gptrt_gemm.fp8+cast"). Every name is made once, not on each call.
const char *labelOf(const GemmCall &g, EpilogueWork work) {
  constexpr unsigned kWorks = 4;
  static const std::vector<std::string> labels = [] {
    const char *workNames[kWorks] = {"", "+amax", "+cast", "+dual_cast"};
    std::vector<std::string> all;
    for (unsigned w = 0; w < kWorks; ++w)
      for (unsigned i = 0; i < gptrt::GemmForm::kCount; ++i)
        all.push_back("gptrt_gemm." + gptrt::GemmForm::fromIndex(i).name() +
                      workNames[w]);
    return all;
  }();
  gptrt::GemmForm form;
  form.operands = g.operands;
  form.bias = g.bias != nullptr;
  form.gelu = g.geluPre != nullptr;
  form.dgelu = g.dgeluPre != nullptr;
  form.dbias = g.dbias != nullptr;
  form.accumulate = g.accumulate;
  return labels[static_cast<size_t>(work) * gptrt::GemmForm::kCount +
                form.index()]
      .c_str();
}

// ------------------------------------------------------------ the CPU

/// An FP8 GEMM before its scales are divided out: FP8 codes decode exactly
/// to f32, so an f32 GEMM of the decoded values is the FP8 product up to
/// accumulation order.
void fp8GemmUnscaled(Context &ctx, const GemmCall &g, float *c) {
  const gptrt_gemm_desc &d = g.d;
  requireFormat(g.formatA());
  requireFormat(g.formatB());
  // Elements spanned by `batch` matrices of `size` elements, `stride` apart
  // (0 when there are none; one shared matrix when the stride is 0).
  auto extent = [&](int64_t stride, int64_t size) -> int64_t {
    return d.batch == 0 ? 0 : (d.batch - 1) * stride + size;
  };
  const int64_t aElems = extent(d.stride_a, d.m * d.k);
  const int64_t bElems = extent(d.stride_b, d.n * d.k);
  float *fa = temporary(ctx, Temporary::Fp8OperandA, aElems),
        *fb = temporary(ctx, Temporary::Fp8OperandB, bElems);
  // Every code's value, once: a table lookup per element.
  float valueA[256], valueB[256];
  for (int code = 0; code < 256; ++code) {
    valueA[code] = fp8Decode(static_cast<uint8_t>(code), g.formatA());
    valueB[code] = fp8Decode(static_cast<uint8_t>(code), g.formatB());
  }
  const uint8_t *a = static_cast<const uint8_t *>(g.a),
                *b = static_cast<const uint8_t *>(g.b);
  for (int64_t i = 0; i < aElems; ++i)
    fa[i] = valueA[a[i]];
  for (int64_t i = 0; i < bElems; ++i)
    fb[i] = valueB[b[i]];
  cpu::gemmBatched(c, fa, fb, d.batch, d.m, d.n, d.k, d.trans_a != 0,
                   d.trans_b != 0, 0.0f, d.stride_a, d.stride_b, d.stride_c);
}

// The product of any operands into `c`, stored as `dtype` (f32 or bf16),
// with `bias` (bf16 operands only) added in f32 before the rounding.
void productInto(Context &ctx, const GemmCall &g, void *c, int64_t dtype,
                 const float *bias) {
  const gptrt_gemm_desc &d = g.d;
  if (d.batch == 0)
    return;
  const bool narrow = dtype == GPTRT_DTYPE_BF16;
  const int64_t extentC = (d.batch - 1) * d.stride_c + d.m * d.n;
  switch (g.operands) {
  case Operands::F32:
    cpu::gemmBatched(static_cast<float *>(c), static_cast<const float *>(g.a),
                     static_cast<const float *>(g.b), d.batch, d.m, d.n, d.k,
                     d.trans_a != 0, d.trans_b != 0, 0.0f, d.stride_a,
                     d.stride_b, d.stride_c);
    return;
  case Operands::Bf16: {
    // Widened in their own layout (strides included), then the f32 GEMM:
    // widening is exact, so this is the f32 GEMM of the bf16 values.
    const int64_t extentA = (d.batch - 1) * d.stride_a + d.m * d.k;
    const int64_t extentB = (d.batch - 1) * d.stride_b + d.k * d.n;
    float *wide = ctx.scratch(
        static_cast<size_t>(extentA + extentB + (narrow ? extentC : 0)));
    const uint16_t *a = static_cast<const uint16_t *>(g.a),
                   *b = static_cast<const uint16_t *>(g.b);
    for (int64_t i = 0; i < extentA; ++i)
      wide[i] = cpu::bf16ToFloat(a[i]);
    for (int64_t i = 0; i < extentB; ++i)
      wide[extentA + i] = cpu::bf16ToFloat(b[i]);
    float *result = narrow ? wide + extentA + extentB : static_cast<float *>(c);
    cpu::gemmBatched(result, wide, wide + extentA, d.batch, d.m, d.n, d.k,
                     d.trans_a != 0, d.trans_b != 0, 0.0f, d.stride_a,
                     d.stride_b, d.stride_c);
    // Only the result's own elements: the gaps between strided batches
    // belong to someone else.
    for (int64_t p = 0; p < d.batch; ++p) {
      float *batchResult = result + p * d.stride_c;
      if (bias)
        cpu::addBias(batchResult, bias, d.m, d.n);
      if (narrow) {
        uint16_t *out = static_cast<uint16_t *>(c) + p * d.stride_c;
        for (int64_t i = 0; i < d.m * d.n; ++i)
          out[i] = cpu::floatToBf16(batchResult[i]);
      }
    }
    return;
  }
  case Operands::Fp8: {
    // A bf16 c: the f32 result in scratch, rounded once.
    float *result = narrow ? ctx.scratch(static_cast<size_t>(extentC))
                           : static_cast<float *>(c);
    fp8GemmUnscaled(ctx, g, result);
    const float dequant = g.scaleA[0] * g.scaleB[0];
    uint16_t *out = static_cast<uint16_t *>(c);
    for (int64_t p = 0; p < d.batch; ++p)
      for (int64_t i = p * d.stride_c; i < p * d.stride_c + d.m * d.n; ++i) {
        result[i] /= dequant;
        if (narrow)
          out[i] = cpu::floatToBf16(result[i]);
      }
    return;
  }
  case Operands::Fp8Rowwise: {
    F32Staging f32(ctx, {{c, dtype, g.elements(), true, "c_dtype"}});
    float *result = f32[0];
    fp8GemmUnscaled(ctx, g, result);
    // Row r of all batch x m rows of c, column j: divided by a's scale of
    // its row and b's of its column (each a scalar when not rowwise).
    const bool rowsA = d.a_scaling == GPTRT_SCALING_ROWWISE,
               colsB = d.b_scaling == GPTRT_SCALING_ROWWISE;
    for (int64_t r = 0; r < d.batch * d.m; ++r)
      for (int64_t j = 0; j < d.n; ++j)
        result[r * d.n + j] /= (rowsA ? g.scaleA[r] : g.scaleA[0]) *
                               (colsB ? g.scaleB[j] : g.scaleB[0]);
    f32.finish();
    return;
  }
  }
}

// The CPU's gptrt_gemm: the product and each epilogue as the kernels the
// fused forms replace.
void gemmOnCpu(gptrt_context *ctx, Context &c, const GemmCall &g) {
  const gptrt_gemm_desc &d = g.d;
  const int64_t count = g.elements();
  // Where the product goes before its epilogue: c itself, or a temporary
  // when the epilogue reads it and writes c.
  auto product = [&](void *into, int64_t dtype) {
    if (g.fp8() && g.bias) {
      // The FP8 product as stored in c_dtype, then gptrt_add of the bias.
      float *stored =
          temporary(c, Temporary::GemmProduct,
                    dtype == GPTRT_DTYPE_BF16 ? (count + 1) / 2 : count);
      productInto(c, g, stored, dtype, nullptr);
      gptrt_add(ctx, stored, g.bias, nullptr, into, nullptr, nullptr,
                d.batch * d.m, d.n, 1, dtype, GPTRT_DTYPE_F32, dtype, nullptr);
      return;
    }
    productInto(c, g, into, dtype, g.bias);
  };
  if (g.geluPre) {
    product(g.geluPre, d.gelu_pre_dtype);
    gptrt_gelu_fwd(ctx, g.geluPre, nullptr, g.c, nullptr, nullptr, nullptr,
                   count, d.gelu_pre_dtype, d.c_dtype, nullptr);
    return;
  }
  if (g.dgeluPre) {
    float *dg = temporary(c, Temporary::GemmProduct,
                          d.product_dtype == GPTRT_DTYPE_BF16 ? (count + 1) / 2
                                                              : count);
    product(dg, d.product_dtype);
    gptrt_gelu_bwd(ctx, dg, g.dgeluPre, nullptr, g.c, nullptr, nullptr, nullptr,
                   nullptr, count, d.product_dtype, d.dgelu_pre_dtype,
                   d.c_dtype, nullptr);
    return;
  }
  if (g.accumulate) {
    // c[i] += the f32 result, one addition each.
    float *result = temporary(c, Temporary::GemmResult, count);
    product(result, GPTRT_DTYPE_F32);
    if (c.failed())
      return;
    float *sum = static_cast<float *>(g.c);
    for (int64_t i = 0; i < count; ++i)
      sum[i] += result[i];
  } else {
    product(g.c, d.c_dtype);
  }
  if (g.dbias)
    gptrt_reduce_rows(ctx, g.a, g.dbias, d.k, d.m, GPTRT_DTYPE_BF16,
                      d.dbias_dtype);
}

// ------------------------------------------------------------ a GPU

void gemmOnGpu(const GemmCall &g, Gpu &gpu) {
  const gptrt_gemm_desc &d = g.d;
  const bool ta = d.trans_a != 0, tb = d.trans_b != 0;
  switch (g.operands) {
  case Operands::F32:
    gpu.matmul(static_cast<const float *>(g.a), static_cast<const float *>(g.b),
               static_cast<float *>(g.c), d.batch, d.m, d.n, d.k, ta, tb,
               d.stride_a, d.stride_b, d.stride_c);
    return;
  case Operands::Bf16: {
    const uint16_t *a = static_cast<const uint16_t *>(g.a),
                   *b = static_cast<const uint16_t *>(g.b);
    if (g.geluPre)
      return gpu.matmulBf16BiasGelu(a, b, g.bias, g.geluPre, d.gelu_pre_dtype,
                                    g.c, d.c_dtype, d.batch, d.m, d.n, d.k, ta,
                                    tb, d.stride_a, d.stride_b, d.stride_c);
    if (g.dgeluPre)
      return gpu.matmulBf16Dgelu(
          a, b, g.dgeluPre, d.dgelu_pre_dtype, g.c, d.c_dtype, d.product_dtype,
          d.batch, d.m, d.n, d.k, ta, tb, d.stride_a, d.stride_b, d.stride_c);
    if (g.dbias)
      return gpu.matmulBf16Bgrad(a, b, g.c, d.c_dtype, g.dbias, d.dbias_dtype,
                                 d.m, d.n, d.k, tb, d.stride_a, d.stride_b,
                                 d.stride_c);
    // c_dtype may be kAccumulateF32 (AbiSupport.h checks it is 257).
    return gpu.matmulBf16(a, b, g.bias, g.c, d.c_dtype, d.batch, d.m, d.n, d.k,
                          ta, tb, d.stride_a, d.stride_b, d.stride_c);
  }
  case Operands::Fp8:
  case Operands::Fp8Rowwise: {
    const uint8_t *a = static_cast<const uint8_t *>(g.a),
                  *b = static_cast<const uint8_t *>(g.b);
    if (g.operands == Operands::Fp8Rowwise)
      return gpu.scaledMatmulRowwise(
          a, b, g.scaleA, g.scaleB, g.bias, g.c, d.batch, d.m, d.n, d.k, ta, tb,
          d.stride_a, d.stride_b, d.stride_c, g.formatA(), g.formatB(),
          d.fast_accum != 0, d.a_scaling == GPTRT_SCALING_ROWWISE,
          d.b_scaling == GPTRT_SCALING_ROWWISE, d.c_dtype);
    if (g.bias)
      return gpu.scaledMatmulBias(a, b, g.scaleA, g.scaleB, g.bias, g.c,
                                  d.batch, d.m, d.n, d.k, ta, tb, d.stride_a,
                                  d.stride_b, d.stride_c, g.formatA(),
                                  g.formatB(), d.fast_accum != 0, d.c_dtype);
    return gpu.scaledMatmul(a, b, g.scaleA, g.scaleB, g.c, d.batch, d.m, d.n,
                            d.k, ta, tb, d.stride_a, d.stride_b, d.stride_c,
                            g.formatA(), g.formatB(), d.fast_accum != 0,
                            d.c_dtype);
  }
  }
}

} // namespace

GPTRT_EXPORT void gptrt_gemm(gptrt_context *ctx, const void *a, const void *b,
                             const float *scale_a, const float *scale_b,
                             const float *bias, const void *dgelu_pre,
                             const float *scale, void *c, void *gelu_pre,
                             void *dbias, float *amax, uint8_t *q,
                             const gptrt_gemm_desc *gemm_desc,
                             const gptrt_epilogue *epilogue) {
  // The call is checked before it is timed: its name in the profile says
  // its form.
  Context &context = contextOf(ctx, "gptrt_gemm");
  if (context.failed())
    return;
  std::optional<GemmCall> call;
  try {
    call.emplace(checkedCall(gemm_desc, a, b, scale_a, scale_b, bias, dgelu_pre,
                             c, gelu_pre, dbias));
  } catch (const std::exception &e) {
    context.recordError(std::string("gptrt_gemm: ") + e.what());
    return;
  }
  const EpilogueCall output{epilogue, scale, amax, q};
  const std::optional<EpilogueWork> work =
      epilogueWork(ctx, "gptrt_gemm", output, c, /*dualCast=*/false);
  if (!work)
    return;
  const char *fn = labelOf(*call, *work);
  const TimedCall timed(ctx, fn);
  if (*work != EpilogueWork::None) {
    const bool plain =
        !bias && !gelu_pre && !dgelu_pre && !dbias && !call->accumulate;
    if (!plain) {
      context.recordError(std::string(fn) +
                          ": the output epilogue (amax, scale, q) works on a "
                          "stored c without a bias, GELU, bias-gradient or "
                          "accumulating epilogue");
      return;
    }
    if (!agreeingDtypes(ctx, fn, gemm_desc->c_dtype, output.epilogue().dtype))
      return;
  }
  guarded(
      ctx, fn, [&](Context &cpuContext) { gemmOnCpu(ctx, cpuContext, *call); },
      [&](Context &, Gpu &gpu) { gemmOnGpu(*call, gpu); });
  if (*work != EpilogueWork::None)
    finish(ctx, fn, c, output.epilogue());
}
