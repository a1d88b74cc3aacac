// cuBLASLt GEMMs (gptrt_gemm) against the CPU: f32 operands (every
// transpose combination, batched, broadcast b) and bf16 ones against
// float64; FP8 operands against the CPU ABI's exact emulation (decoded
// codes, f32 accumulation: equal up to accumulation order), including the
// layouts that need the transpose kernel, and its refusals.
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Fp8.h"
#include "runtime/cpu/Kernels.h"
#include "test/gpu/GpuTestUtil.h"
#include "test/unit/runtime/Gemm.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <cstdio>

namespace gptrt::gputest {
namespace {

using gptrt::test::bf16Gemm;
using gptrt::test::fp8Gemm;
using gptrt::test::fp8RowwiseGemm;
using gptrt::test::gemmDesc;

struct Shape {
  int64_t batch, m, n, k;
  bool broadcastB;
};

const Shape kShapes[] = {
    {1, 1, 1, 1, false},      {1, 33, 17, 65, false},
    {4, 64, 96, 128, false},  {3, 128, 48, 80, true},
    {1, 512, 768, 768, false}};

// double reference of one gptrt_gemm call on f32 (or decoded) inputs.
std::vector<double> refGemm(const std::vector<float> &a,
                            const std::vector<float> &b, const Shape &s,
                            bool ta, bool tb) {
  std::vector<double> ad = toDouble(a), bd = toDouble(b),
                      c(s.batch * s.m * s.n);
  cpu::gemmBatched<double>(c.data(), ad.data(), bd.data(), s.batch, s.m, s.n,
                           s.k, ta, tb, 0.0, s.m * s.k,
                           s.broadcastB ? 0 : s.n * s.k, s.m * s.n);
  return c;
}

TEST_F(GpuTest, GemmF32AllLayouts) {
  for (const Shape &s : kShapes)
    for (int ta : {0, 1})
      for (int tb : {0, 1}) {
        std::vector<float> a = randn(s.batch * s.m * s.k),
                           b = randn((s.broadcastB ? 1 : s.batch) * s.n * s.k);
        float *c = alloc<float>(s.batch * s.m * s.n);
        const gptrt_gemm_desc d =
            gemmDesc(s.batch, s.m, s.n, s.k, ta, tb, s.m * s.k,
                     s.broadcastB ? 0 : s.n * s.k, s.m * s.n);
        gptrt_gemm(g(), upload(a), upload(b), nullptr, nullptr, nullptr,
                   nullptr, nullptr, c, nullptr, nullptr, nullptr, nullptr, &d,
                   nullptr);
        expectOk();
        EXPECT_LT(relErr(download(c, s.batch * s.m * s.n),
                         refGemm(a, b, s, ta, tb)),
                  kF32Tol)
            << s.batch << "x" << s.m << "x" << s.n << "x" << s.k << " ta "
            << ta << " tb " << tb;
      }
}

TEST_F(GpuTest, GemmBf16AllLayouts) {
  for (const Shape &s : kShapes)
    for (int ta : {0, 1})
      for (int tb : {0, 1}) {
        std::vector<float> a = randn(s.batch * s.m * s.k),
                           b = randn((s.broadcastB ? 1 : s.batch) * s.n * s.k);
        std::vector<uint16_t> ah = toBf16(a), bh = toBf16(b);
        float *c = alloc<float>(s.batch * s.m * s.n);
        dev().matmulBf16(upload(ah), upload(bh), nullptr, c, GPTRT_DTYPE_F32,
                         s.batch, s.m, s.n, s.k, ta, tb, s.m * s.k,
                         s.broadcastB ? 0 : s.n * s.k, s.m * s.n);
        expectOk();
        // Against the exact product of the f32 inputs: bf16 tolerance.
        std::vector<float> f32 = download(c, s.batch * s.m * s.n);
        EXPECT_LT(relErr(f32, refGemm(a, b, s, ta, tb)), kBf16Tol)
            << s.batch << "x" << s.m << "x" << s.n << "x" << s.k;
        // The ABI's bf16 result (gpt-bf16-gemm folds a cast after a
        // bias-free GEMM into it): the f32 result rounded once, so within
        // 2^-8 norm-wise (cuBLASLt may pick another algorithm for it, hence
        // no element-wise bound); poisoned first (0xFFFF is a bf16 NaN), so
        // an unwritten element shows.
        const int64_t count = s.batch * s.m * s.n;
        uint16_t *narrow = upload(std::vector<uint16_t>(count, 0xFFFF));
        const gptrt_gemm_desc toBf16 =
            bf16Gemm(s.batch, s.m, s.n, s.k, ta, tb, s.m * s.k,
                     s.broadcastB ? 0 : s.n * s.k, s.m * s.n, GPTRT_DTYPE_BF16);
        gptrt_gemm(g(), upload(ah), upload(bh), nullptr, nullptr, nullptr,
                   nullptr, nullptr, narrow, nullptr, nullptr, nullptr, nullptr,
                   &toBf16, nullptr);
        expectOk();
        std::vector<uint16_t> bf16 = download(narrow, count);
        std::vector<float> rounded(count);
        for (int64_t i = 0; i < count; ++i) {
          rounded[i] = cpu::bf16ToFloat(bf16[i]);
          ASSERT_FALSE(std::isnan(rounded[i])) << "element " << i << " unwritten";
        }
        EXPECT_LT(relErr(rounded, toDouble(f32)), 1.0 / 256)
            << s.batch << "x" << s.m << "x" << s.n << "x" << s.k;
        // With an f32 bias (gpt-bf16-gemm: a linear layer's forward GEMM),
        // through cuBLASLt's bias epilogue or, where it has none, the f32
        // GEMM plus one bias-and-store pass: against the f32 result plus
        // the bias, in f32 and in bf16 storage.
        std::vector<float> bias = randn(s.n);
        std::vector<double> withBias = toDouble(f32);
        for (int64_t i = 0; i < count; ++i)
          withBias[i] += bias[i % s.n];
        float *cb = upload(std::vector<float>(count, std::nanf("")));
        const gptrt_gemm_desc toF32 =
            bf16Gemm(s.batch, s.m, s.n, s.k, ta, tb, s.m * s.k,
                     s.broadcastB ? 0 : s.n * s.k, s.m * s.n, GPTRT_DTYPE_F32);
        gptrt_gemm(g(), upload(ah), upload(bh), nullptr, nullptr, upload(bias),
                   nullptr, nullptr, cb, nullptr, nullptr, nullptr, nullptr,
                   &toF32, nullptr);
        expectOk();
        EXPECT_LT(relErr(download(cb, count), withBias), kBf16Tol)
            << "bias f32 " << s.batch << "x" << s.m << "x" << s.n;
        uint16_t *nb = upload(std::vector<uint16_t>(count, 0xFFFF));
        gptrt_gemm(g(), upload(ah), upload(bh), nullptr, nullptr, upload(bias),
                   nullptr, nullptr, nb, nullptr, nullptr, nullptr, nullptr,
                   &toBf16, nullptr);
        expectOk();
        std::vector<uint16_t> nbh = download(nb, count);
        std::vector<float> nbf(count);
        for (int64_t i = 0; i < count; ++i) {
          nbf[i] = cpu::bf16ToFloat(nbh[i]);
          ASSERT_FALSE(std::isnan(nbf[i])) << "element " << i << " unwritten";
        }
        // Two roundings (the bias to bf16 for cuBLASLt's epilogue, the
        // result), each within 2^-9 of its own term: where the product
        // cancels the bias (a 1 x 1 result), of the terms' size.
        std::vector<double> terms(count);
        for (int64_t i = 0; i < count; ++i)
          terms[i] = std::fabs(f32[i]) + std::fabs(bias[i % s.n]);
        EXPECT_LT(relErrAbove(nbf, withBias, normOf(terms)), 1.0 / 256)
            << "bias bf16 " << s.batch << "x" << s.m << "x" << s.n;
      }
}

// The GELU epilogues (gptrt_gemm with bias and gelu_pre / with dgelu_pre)
// and the bias gradient's (with dbias): cuBLASLt's
// GELU_AUX_BIAS and DGELU where n is a multiple of 8, the GEMM and the GELU
// kernel otherwise (n = 36), against the CPU's two kernels. The GPU takes
// the GELU of the f32 sum (and a bf16-rounded bias), the CPU of the stored
// bf16 pre-activation, so bf16 tolerance; outputs poisoned (0xFFFF).
TEST_F(GpuTest, GeluEpiloguesMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  struct Case {
    int64_t batch, m, n, k;
  };
  for (Case s :
       {Case{1, 64, 256, 128}, Case{2, 32, 64, 96}, Case{1, 48, 36, 64}}) {
    SCOPED_TRACE(std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" +
                 std::to_string(s.n) + "x" + std::to_string(s.k));
    const int64_t count = s.batch * s.m * s.n;
    std::vector<uint16_t> a = toBf16(randn(s.batch * s.m * s.k)),
                          w = toBf16(randn(s.n * s.k, 0.2f)),
                          dy = toBf16(randn(s.batch * s.m * s.k));
    std::vector<float> bias = randn(s.n, 0.5f);
    auto poisoned = [&] {
      return upload(std::vector<uint16_t>(count, uint16_t(0xFFFF)));
    };
    // Forward: x [m, k] times w [n, k] transposed, as a linear layer.
    uint16_t *pre = poisoned(), *out = poisoned();
    gptrt_gemm_desc gelu = bf16Gemm(s.batch, s.m, s.n, s.k, 0, 1, s.m * s.k, 0,
                                    s.m * s.n, GPTRT_DTYPE_BF16);
    gelu.gelu_pre_dtype = GPTRT_DTYPE_BF16;
    gptrt_gemm(g(), upload(a), upload(w), nullptr, nullptr, upload(bias),
               nullptr, nullptr, out, pre, nullptr, nullptr, nullptr, &gelu,
               nullptr);
    expectOk();
    std::vector<uint16_t> cpuPre(count), cpuOut(count);
    gptrt_gemm(cpuCtx.handle(), a.data(), w.data(), nullptr, nullptr,
               bias.data(), nullptr, nullptr, cpuOut.data(), cpuPre.data(),
               nullptr, nullptr, nullptr, &gelu, nullptr);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    EXPECT_LT(relErr(bf16Values(download(pre, count)), bf16Values(cpuPre)),
              kBf16Tol);
    EXPECT_LT(relErr(bf16Values(download(out, count)), bf16Values(cpuOut)),
              kBf16Tol);
    // Backward: dy [m, k] times w' [k, n] (the next layer's weight, here
    // any [k, n] matrix), times gelu'(pre) -- the CPU's pre for both.
    std::vector<uint16_t> w2 = toBf16(randn(s.k * s.n, 0.2f));
    uint16_t *dx = poisoned();
    gptrt_gemm_desc dgelu = bf16Gemm(s.batch, s.m, s.n, s.k, 0, 0, s.m * s.k, 0,
                                     s.m * s.n, GPTRT_DTYPE_BF16);
    dgelu.product_dtype = GPTRT_DTYPE_BF16;
    dgelu.dgelu_pre_dtype = GPTRT_DTYPE_BF16;
    gptrt_gemm(g(), upload(dy), upload(w2), nullptr, nullptr, nullptr,
               upload(cpuPre), nullptr, dx, nullptr, nullptr, nullptr, nullptr,
               &dgelu, nullptr);
    expectOk();
    std::vector<uint16_t> cpuDx(count);
    gptrt_gemm(cpuCtx.handle(), dy.data(), w2.data(), nullptr, nullptr, nullptr,
               cpuPre.data(), nullptr, cpuDx.data(), nullptr, nullptr, nullptr,
               nullptr, &dgelu, nullptr);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    EXPECT_LT(relErr(bf16Values(download(dx, count)), bf16Values(cpuDx)),
              kBf16Tol);
    // The weight gradient with its bias gradient (BGRADB, or the GEMM and
    // reduce_rows): dW [n, k] = dx^T [n, batch m] times a [batch m, k],
    // db = the column sums of dx; dx as the GPU computed it above.
    std::vector<uint16_t> gdx = download(dx, count);
    const int64_t tokens = s.batch * s.m;
    uint16_t *dw = upload(std::vector<uint16_t>(s.n * s.k, uint16_t(0xFFFF)));
    uint16_t *db = upload(std::vector<uint16_t>(s.n, uint16_t(0xFFFF)));
    gptrt_gemm_desc bgrad =
        bf16Gemm(1, s.n, s.k, tokens, 1, 0, 0, 0, 0, GPTRT_DTYPE_BF16);
    bgrad.dbias_dtype = GPTRT_DTYPE_BF16;
    gptrt_gemm(g(), upload(gdx), upload(a), nullptr, nullptr, nullptr, nullptr,
               nullptr, dw, nullptr, db, nullptr, nullptr, &bgrad, nullptr);
    expectOk();
    std::vector<uint16_t> cpuDw(s.n * s.k), cpuDb(s.n);
    gptrt_gemm(cpuCtx.handle(), gdx.data(), a.data(), nullptr, nullptr, nullptr,
               nullptr, nullptr, cpuDw.data(), nullptr, cpuDb.data(), nullptr,
               nullptr, &bgrad, nullptr);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    EXPECT_LT(relErr(bf16Values(download(dw, s.n * s.k)), bf16Values(cpuDw)),
              kBf16Tol);
    EXPECT_LT(relErr(bf16Values(download(db, s.n)), bf16Values(cpuDb)),
              kBf16Tol);
  }
}

// See the comment at its use. Hopper's FP8 tensor cores keep about 14
// mantissa bits while adding an MMA's products (DeepSeek-V3 technical
// report, "Increasing Accumulation Precision"), so the bounds sit a few
// times above 2^-14 per promotion; a wrong scale, format or layout is off
// by O(1), far above either.
constexpr double kFp8GemmTol = 5e-4;
// With fast_accum (the forward GEMMs' setting) nothing promotes the tensor
// cores' partial sums to full f32, so the error grows with k; at k <= 768
// it must stay below what bf16 storage of the result loses (2^-9 each).
constexpr double kFp8FastGemmTol = 5e-3;

TEST_F(GpuTest, GemmFp8MatchesEmulation) {
  Context cpuCtx(Device::Cpu, {});
  double worst = 0, worstFast = 0;
  const Shape shapes[] = {{1, 16, 16, 16, false},
                          {2, 64, 128, 96, false},
                          {3, 128, 64, 256, true},
                          {1, 512, 768, 768, false}};
  const std::pair<int64_t, int64_t> formats[] = {
      {GPTRT_FP8_E4M3, GPTRT_FP8_E4M3},
      {GPTRT_FP8_E5M2, GPTRT_FP8_E4M3},
      {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}};
  for (const Shape &s : shapes)
    for (auto [fa, fb] : formats)
      for (int ta : {0, 1})
        for (int tb : {0, 1}) {
          // Random codes of finite values: quantized normal data.
          const float sa = 16.0f, sb = 0.5f;
          auto codes = [&](size_t n, int64_t f, float scale) {
            std::vector<float> x = randn(n);
            std::vector<uint8_t> q(n);
            for (size_t i = 0; i < n; ++i)
              q[i] = f == GPTRT_FP8_E4M3 ? cpu::floatToE4M3(x[i] * scale)
                                         : cpu::floatToE5M2(x[i] * scale);
            return q;
          };
          std::vector<uint8_t> a = codes(s.batch * s.m * s.k, fa, sa);
          std::vector<uint8_t> b =
              codes((s.broadcastB ? 1 : s.batch) * s.n * s.k, fb, sb);
          const int64_t sA = s.m * s.k, sB = s.broadcastB ? 0 : s.n * s.k,
                        sC = s.m * s.n;
          float *c = alloc<float>(s.batch * sC);
          const gptrt_gemm_desc precise =
              fp8Gemm(s.batch, s.m, s.n, s.k, ta, tb, sA, sB, sC, fa, fb, 0,
                      GPTRT_DTYPE_F32);
          gptrt_gemm(g(), upload(a), upload(b), upload(std::vector<float>{sa}),
                     upload(std::vector<float>{sb}), nullptr, nullptr, nullptr,
                     c, nullptr, nullptr, nullptr, nullptr, &precise, nullptr);
          expectOk();
          std::vector<float> ref(s.batch * sC);
          gptrt_gemm(cpuCtx.handle(), a.data(), b.data(), &sa, &sb, nullptr,
                     nullptr, nullptr, ref.data(), nullptr, nullptr, nullptr,
                     nullptr, &precise, nullptr);
          ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
          // Fast accumulation, as the forward GEMMs run.
          float *cFast = alloc<float>(s.batch * sC);
          gptrt_gemm_desc fast = precise;
          fast.fast_accum = 1;
          gptrt_gemm(g(), upload(a), upload(b), upload(std::vector<float>{sa}),
                     upload(std::vector<float>{sb}), nullptr, nullptr, nullptr,
                     cFast, nullptr, nullptr, nullptr, nullptr, &fast, nullptr);
          expectOk();
          const double fastErr =
              relErr(download(cFast, s.batch * sC), toDouble(ref));
          worstFast = std::max(worstFast, fastErr);
          EXPECT_LT(fastErr, kFp8FastGemmTol)
              << "fast_accum " << s.batch << "x" << s.m << "x" << s.n << "x"
              << s.k << " formats " << fa << "," << fb;
          // Same exact products (FP8 x FP8 fits f32; power-of-two scales
          // make the reciprocals exact); what differs is the summation: f32
          // in another order, and Hopper's FP8 tensor cores add each MMA's
          // products with fewer mantissa bits before cuBLASLt promotes them
          // into the f32 accumulator. Hence kFp8GemmTol; the error is
          // printed so the first GPU run records what the hardware gives.
          const double err = relErr(download(c, s.batch * sC), toDouble(ref));
          worst = std::max(worst, err);
          EXPECT_LT(err, kFp8GemmTol)
              << s.batch << "x" << s.m << "x" << s.n << "x" << s.k
              << " formats " << fa << "," << fb << " ta " << ta << " tb "
              << tb;
          // D in bf16 (gpt-bf16-gemm folds the store of the result): the
          // f32 result rounded once, poisoned first (0xFFFF: bf16 NaN).
          uint16_t *c16 =
              upload(std::vector<uint16_t>(s.batch * sC, uint16_t(0xFFFF)));
          gptrt_gemm_desc toBf16 = precise;
          toBf16.c_dtype = GPTRT_DTYPE_BF16;
          gptrt_gemm(g(), upload(a), upload(b), upload(std::vector<float>{sa}),
                     upload(std::vector<float>{sb}), nullptr, nullptr, nullptr,
                     c16, nullptr, nullptr, nullptr, nullptr, &toBf16, nullptr);
          expectOk();
          std::vector<uint16_t> got16 = download(c16, s.batch * sC);
          std::vector<float> wide16(got16.size());
          for (size_t i = 0; i < got16.size(); ++i) {
            wide16[i] = cpu::bf16ToFloat(got16[i]);
            ASSERT_FALSE(std::isnan(wide16[i])) << "element " << i;
          }
          EXPECT_LT(relErr(wide16, toDouble(ref)), 1.0 / 256)
              << "bf16 D " << s.batch << "x" << s.m << "x" << s.n;
        }
  std::printf("FP8 GEMM vs CPU emulation: worst norm-wise error %.3g, "
              "%.3g with fast_accum\n",
              worst, worstFast);
}

// fp8-rowwise on the device: row/column amaxes, power-of-two scales and
// the rowwise casts equal the CPU's bit for bit; the rowwise GEMM (unit-
// scale FP8 GEMM, then each element divided by its row's and column's
// scales) agrees within the FP8 GEMM tolerance.
TEST_F(GpuTest, RowwiseFp8MatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t batch = 2, m = 64, n = 128, k = 96;
  std::vector<float> x = randn(batch * m * k, 3.0f), w = randn(n * k, 0.05f);
  // a: one scale per row of the batch x m rows; b ([n, k], transposed in
  // the GEMM): one per row too, i.e. per output column.
  std::vector<float> amaxA(batch * m), amaxW(n), amaxCols(k);
  gptrt_amax_rows(cpuCtx.handle(), x.data(), amaxA.data(), batch * m, k, 0,
                  GPTRT_DTYPE_F32);
  gptrt_amax_rows(cpuCtx.handle(), w.data(), amaxW.data(), n, k, 0,
                  GPTRT_DTYPE_F32);
  gptrt_amax_rows(cpuCtx.handle(), x.data(), amaxCols.data(), batch * m, k, 1,
                  GPTRT_DTYPE_F32);
  float *dAmaxA = alloc<float>(batch * m), *dAmaxW = alloc<float>(n),
        *dAmaxCols = alloc<float>(k);
  const float *dx = upload(x), *dw = upload(w);
  gptrt_amax_rows(g(), dx, dAmaxA, batch * m, k, 0, GPTRT_DTYPE_F32);
  gptrt_amax_rows(g(), dw, dAmaxW, n, k, 0, GPTRT_DTYPE_F32);
  gptrt_amax_rows(g(), dx, dAmaxCols, batch * m, k, 1, GPTRT_DTYPE_F32);
  expectOk();
  EXPECT_EQ(download(dAmaxA, batch * m), amaxA);
  EXPECT_EQ(download(dAmaxW, n), amaxW);
  EXPECT_EQ(download(dAmaxCols, k), amaxCols);
  // Column amaxes of a tall bf16 gradient (many row slices, poisoned
  // output): a zero column stays 0, a NaN wins its column.
  {
    const int64_t tall = 20000, wide = 77;
    std::vector<float> t = randn(tall * wide, 2.0f);
    for (int64_t r = 0; r < tall; ++r)
      t[r * wide + 5] = 0.0f;
    t[12345 * wide + 9] = std::nanf("");
    std::vector<uint16_t> t16 = toBf16(t);
    std::vector<float> want(wide);
    gptrt_amax_rows(cpuCtx.handle(), t16.data(), want.data(), tall, wide, 1,
                    GPTRT_DTYPE_BF16);
    float *dAmax = upload(std::vector<float>(wide, -1.0f));
    gptrt_amax_rows(g(), upload(t16), dAmax, tall, wide, 1, GPTRT_DTYPE_BF16);
    expectOk();
    std::vector<float> got = download(dAmax, wide);
    for (int64_t c = 0; c < wide; ++c)
      if (std::isnan(want[c]))
        EXPECT_TRUE(std::isnan(got[c])) << "column " << c;
      else
        EXPECT_EQ(got[c], want[c]) << "column " << c;
    EXPECT_EQ(got[5], 0.0f);
    EXPECT_TRUE(std::isnan(got[9]));
  }

  std::vector<float> scaleA(batch * m), scaleW(n);
  gptrt_row_scales(cpuCtx.handle(), amaxA.data(), scaleA.data(), batch * m,
                   448.0, 0, 1, 1e-12);
  gptrt_row_scales(cpuCtx.handle(), amaxW.data(), scaleW.data(), n, 448.0, 0,
                   1, 1e-12);
  float *dScaleA = alloc<float>(batch * m), *dScaleW = alloc<float>(n);
  gptrt_row_scales(g(), dAmaxA, dScaleA, batch * m, 448.0, 0, 1, 1e-12);
  gptrt_row_scales(g(), dAmaxW, dScaleW, n, 448.0, 0, 1, 1e-12);
  expectOk();
  EXPECT_EQ(download(dScaleA, batch * m), scaleA);
  EXPECT_EQ(download(dScaleW, n), scaleW);

  std::vector<uint8_t> qa(x.size()), qw(w.size()), qCols(x.size());
  gptrt_quantize_rows(cpuCtx.handle(), x.data(), scaleA.data(), qa.data(),
                      batch * m, k, 0, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32);
  gptrt_quantize_rows(cpuCtx.handle(), w.data(), scaleW.data(), qw.data(), n, k,
                      0, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32);
  // Along columns, with the column scales of x (scales from amaxCols).
  std::vector<float> scaleCols(k);
  gptrt_row_scales(cpuCtx.handle(), amaxCols.data(), scaleCols.data(), k,
                   57344.0, 0, 1, 1e-12);
  gptrt_quantize_rows(cpuCtx.handle(), x.data(), scaleCols.data(), qCols.data(),
                      batch * m, k, 1, GPTRT_FP8_E5M2, -1, GPTRT_DTYPE_F32);
  uint8_t *dqa = alloc<uint8_t>(x.size()), *dqw = alloc<uint8_t>(w.size()),
          *dqCols = alloc<uint8_t>(x.size());
  gptrt_quantize_rows(g(), dx, dScaleA, dqa, batch * m, k, 0, GPTRT_FP8_E4M3,
                      -1, GPTRT_DTYPE_F32);
  gptrt_quantize_rows(g(), dw, dScaleW, dqw, n, k, 0, GPTRT_FP8_E4M3, -1,
                      GPTRT_DTYPE_F32);
  gptrt_quantize_rows(g(), dx, upload(scaleCols), dqCols, batch * m, k, 1,
                      GPTRT_FP8_E5M2, -1, GPTRT_DTYPE_F32);
  expectOk();
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  EXPECT_EQ(download(dqa, x.size()), qa);
  EXPECT_EQ(download(dqw, w.size()), qw);
  EXPECT_EQ(download(dqCols, x.size()), qCols);

  std::vector<float> ref(batch * m * n);
  const gptrt_gemm_desc rowwise =
      fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, 0, m * n, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(cpuCtx.handle(), qa.data(), qw.data(), scaleA.data(),
             scaleW.data(), nullptr, nullptr, nullptr, ref.data(), nullptr,
             nullptr, nullptr, nullptr, &rowwise, nullptr);
  float *c = alloc<float>(batch * m * n);
  gptrt_gemm(g(), dqa, dqw, dScaleA, dScaleW, nullptr, nullptr, nullptr, c,
             nullptr, nullptr, nullptr, nullptr, &rowwise, nullptr);
  expectOk();
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  const double err = relErr(download(c, batch * m * n), toDouble(ref));
  std::printf("rowwise FP8 GEMM vs CPU emulation: norm-wise error %.3g\n", err);
  EXPECT_LT(err, kFp8GemmTol);
  // A bf16 result (gpt-bf16-gemm): the unscaled quotient rounded once;
  // poisoned first, and bf16 inputs to the amaxes and casts give the codes
  // of their exact widening.
  uint16_t *c16 = upload(std::vector<uint16_t>(batch * m * n, 0xFFFF));
  gptrt_gemm_desc rowwiseToBf16 = rowwise;
  rowwiseToBf16.c_dtype = GPTRT_DTYPE_BF16;
  gptrt_gemm(g(), dqa, dqw, dScaleA, dScaleW, nullptr, nullptr, nullptr, c16,
             nullptr, nullptr, nullptr, nullptr, &rowwiseToBf16, nullptr);
  expectOk();
  EXPECT_LT(relErr(bf16Values(download(c16, batch * m * n)), toDouble(ref)),
            1.0 / 256);
  std::vector<uint16_t> x16 = toBf16(x);
  std::vector<float> amax16(batch * m), amaxRef16(batch * m);
  gptrt_amax_rows(cpuCtx.handle(), x16.data(), amaxRef16.data(), batch * m, k,
                  0, GPTRT_DTYPE_BF16);
  float *dAmax16 = alloc<float>(batch * m);
  const uint16_t *dx16 = upload(x16);
  gptrt_amax_rows(g(), dx16, dAmax16, batch * m, k, 0, GPTRT_DTYPE_BF16);
  std::vector<uint8_t> q16Ref(x.size());
  gptrt_quantize_rows(cpuCtx.handle(), x16.data(), scaleA.data(),
                      q16Ref.data(), batch * m, k, 0, GPTRT_FP8_E4M3, -1,
                      GPTRT_DTYPE_BF16);
  uint8_t *dq16 = alloc<uint8_t>(x.size());
  gptrt_quantize_rows(g(), dx16, dScaleA, dq16, batch * m, k, 0,
                      GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16);
  expectOk();
  EXPECT_EQ(download(dAmax16, batch * m), amaxRef16);
  EXPECT_EQ(download(dq16, x.size()), q16Ref);
}

// The FP8 GEMM with its bias (rt-fuse-gemm-epilogue): cuBLASLt's BIAS
// epilogue adds the bias to the f32 sum before the one rounding, the CPU
// (the two unfused kernels) rounds the product first -- so bf16 precision
// against the CPU, every element written (output poisoned); the f32 D goes
// through the GEMM and an add, within the GEMM's tolerance.
TEST_F(GpuTest, GemmFp8BiasMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t batch = 2, m = 128, n = 768, k = 256;
  auto codes = [&](size_t count, float scale) {
    std::vector<float> x = randn(count);
    std::vector<uint8_t> q(count);
    for (size_t i = 0; i < count; ++i)
      q[i] = cpu::floatToE4M3(x[i] * scale);
    return q;
  };
  std::vector<uint8_t> a = codes(batch * m * k, 16.0f), b = codes(n * k, 8.0f);
  std::vector<float> bias = randn(n, 2.0f);
  const float sa = 16.0f, sb = 8.0f;
  const int64_t count = batch * m * n;
  for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32}) {
    const bool bf16 = dtype == GPTRT_DTYPE_BF16;
    std::vector<float> ref(count);
    std::vector<uint16_t> ref16(count);
    void *refOut = bf16 ? static_cast<void *>(ref16.data())
                        : static_cast<void *>(ref.data());
    const gptrt_gemm_desc d = fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, m * n,
                                      GPTRT_FP8_E4M3, GPTRT_FP8_E4M3, 1, dtype);
    gptrt_gemm(cpuCtx.handle(), a.data(), b.data(), &sa, &sb, bias.data(),
               nullptr, nullptr, refOut, nullptr, nullptr, nullptr, nullptr, &d,
               nullptr);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    void *c = bf16 ? static_cast<void *>(
                         upload(std::vector<uint16_t>(count, uint16_t(0xFFFF))))
                   : static_cast<void *>(alloc<float>(count));
    gptrt_gemm(g(), upload(a), upload(b), upload(std::vector<float>{sa}),
               upload(std::vector<float>{sb}), upload(bias), nullptr, nullptr,
               c, nullptr, nullptr, nullptr, nullptr, &d, nullptr);
    expectOk();
    if (bf16) {
      std::vector<uint16_t> got = download(static_cast<uint16_t *>(c), count);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_FALSE(std::isnan(cpu::bf16ToFloat(got[i]))) << "element " << i;
      EXPECT_LT(relErr(bf16Values(got), bf16Values(ref16)), kBf16Tol);
    } else {
      EXPECT_LT(relErr(download(static_cast<float *>(c), count), toDouble(ref)),
                kFp8FastGemmTol);
    }
  }
}

// rt-fuse-grad-accumulation's GEMMs (c_dtype GPTRT_DTYPE_F32_ACCUMULATE):
// cuBLASLt with beta = 1 adds the f32 product into the gradient, against
// the CPU's product-then-add. The gradient starts random and of the
// product's size, so a GEMM that stored instead of adding, or wrote
// nothing, fails by far.
// Weight-gradient layouts: a stored [k, m] (trans_a) for the bf16 GEMMs;
// the FP8 ones both in the TN form rt-fuse-dual-cast feeds them and with
// a transposed a (through the transpose kernel).
TEST_F(GpuTest, AccumulatingGemmsMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  double worstBf16 = 0, worstFp8 = 0;
  struct Dims {
    int64_t m, n, k;
  };
  for (Dims d : {Dims{64, 96, 128}, Dims{768, 3072, 512}, Dims{48, 40, 24}}) {
    SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" +
                 std::to_string(d.k));
    const int64_t count = d.m * d.n;
    std::vector<uint16_t> dy = toBf16(randn(d.k * d.m)),
                          x = toBf16(randn(d.k * d.n));
    const std::vector<float> grad = randn(count, std::sqrt(float(d.k)));
    std::vector<float> want = grad;
    const gptrt_gemm_desc accumulate =
        bf16Gemm(1, d.m, d.n, d.k, 1, 0, 0, 0, 0, GPTRT_DTYPE_F32_ACCUMULATE);
    gptrt_gemm(cpuCtx.handle(), dy.data(), x.data(), nullptr, nullptr, nullptr,
               nullptr, nullptr, want.data(), nullptr, nullptr, nullptr,
               nullptr, &accumulate, nullptr);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    float *c = upload(grad);
    gptrt_gemm(g(), upload(dy), upload(x), nullptr, nullptr, nullptr, nullptr,
               nullptr, c, nullptr, nullptr, nullptr, nullptr, &accumulate,
               nullptr);
    expectOk();
    double err = relErr(download(c, count), toDouble(want));
    worstBf16 = std::max(worstBf16, err);
    EXPECT_LT(err, kF32Tol) << "bf16 gemm, c_dtype accumulate";

    // With the bias gradient: BGRADB writes it in D's type (f32), so a
    // bf16 db goes through f32 sums first; either way the CPU's tree sum
    // in f32 is the reference (db rounded once when bf16).
    for (int64_t dbDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      SCOPED_TRACE("db_dtype " + std::to_string(dbDtype));
      const bool bf16 = dbDtype == GPTRT_DTYPE_BF16;
      std::vector<float> wantDw = grad, wantDb(d.m);
      std::vector<uint16_t> wantDb16(d.m);
      void *refDb = bf16 ? static_cast<void *>(wantDb16.data())
                         : static_cast<void *>(wantDb.data());
      gptrt_gemm_desc bgrad = accumulate;
      bgrad.dbias_dtype = dbDtype;
      gptrt_gemm(cpuCtx.handle(), dy.data(), x.data(), nullptr, nullptr,
                 nullptr, nullptr, nullptr, wantDw.data(), nullptr, refDb,
                 nullptr, nullptr, &bgrad, nullptr);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      float *dw = upload(grad);
      void *db = bf16 ? static_cast<void *>(upload(
                            std::vector<uint16_t>(d.m, uint16_t(0xFFFF))))
                      : static_cast<void *>(alloc<float>(d.m));
      gptrt_gemm(g(), upload(dy), upload(x), nullptr, nullptr, nullptr, nullptr,
                 nullptr, dw, nullptr, db, nullptr, nullptr, &bgrad, nullptr);
      expectOk();
      EXPECT_LT(relErr(download(dw, count), toDouble(wantDw)), kF32Tol)
          << "bf16 gemm with dbias, c_dtype accumulate: dw";
      if (bf16)
        EXPECT_LT(relErr(bf16Values(download(static_cast<uint16_t *>(db), d.m)),
                         bf16Values(wantDb16)),
                  1.0 / 256)
            << "db";
      else
        EXPECT_LT(
            relErr(download(static_cast<float *>(db), d.m), toDouble(wantDb)),
            kF32Tol)
            << "db";
    }

    // FP8 (multiples of 16 only): E5M2 gradient x E4M3 activation, split
    // accumulation as the backward runs it; plain and rowwise scales.
    if (d.m % 16 || d.n % 16 || d.k % 16)
      continue;
    auto codes = [&](size_t n, bool e5m2, float scale) {
      std::vector<float> v = randn(n);
      std::vector<uint8_t> q(n);
      for (size_t i = 0; i < n; ++i)
        q[i] = e5m2 ? cpu::floatToE5M2(v[i] * scale)
                    : cpu::floatToE4M3(v[i] * scale);
      return q;
    };
    const float sa = 256.0f, sb = 64.0f;
    for (int ta : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta));
      // a is [m, k] (ta 0) or stored [k, m] (ta 1); b stored [n, k] (tb 1)
      // with ta 0, [k, n] (tb 0) with ta 1.
      const int tb = ta ? 0 : 1;
      std::vector<uint8_t> a = codes(d.m * d.k, true, sa),
                           b = codes(d.n * d.k, false, sb);
      const std::vector<float> fpGrad = randn(count, 1.0f);
      std::vector<float> fpWant = fpGrad;
      const gptrt_gemm_desc fp8Accumulate =
          fp8Gemm(1, d.m, d.n, d.k, ta, tb, 0, 0, 0, GPTRT_FP8_E5M2,
                  GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32_ACCUMULATE);
      gptrt_gemm(cpuCtx.handle(), a.data(), b.data(), &sa, &sb, nullptr,
                 nullptr, nullptr, fpWant.data(), nullptr, nullptr, nullptr,
                 nullptr, &fp8Accumulate, nullptr);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      float *fc = upload(fpGrad);
      gptrt_gemm(g(), upload(a), upload(b), upload(std::vector<float>{sa}),
                 upload(std::vector<float>{sb}), nullptr, nullptr, nullptr, fc,
                 nullptr, nullptr, nullptr, nullptr, &fp8Accumulate, nullptr);
      expectOk();
      err = relErr(download(fc, count), toDouble(fpWant));
      worstFp8 = std::max(worstFp8, err);
      EXPECT_LT(err, kFp8GemmTol) << "fp8 gemm, c_dtype accumulate";

      // Rowwise: a scale per row of a and per column of b.
      std::vector<float> perRow(d.m), perCol(d.n);
      for (float &v : perRow)
        v = std::ldexp(1.0f, int(rng_() % 9));
      for (float &v : perCol)
        v = std::ldexp(1.0f, int(rng_() % 9));
      std::vector<float> rowWant = fpGrad;
      const gptrt_gemm_desc rowwiseAccumulate =
          fp8RowwiseGemm(1, d.m, d.n, d.k, ta, tb, 0, 0, 0, GPTRT_FP8_E5M2,
                         GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32_ACCUMULATE);
      gptrt_gemm(cpuCtx.handle(), a.data(), b.data(), perRow.data(),
                 perCol.data(), nullptr, nullptr, nullptr, rowWant.data(),
                 nullptr, nullptr, nullptr, nullptr, &rowwiseAccumulate,
                 nullptr);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      float *rc = upload(fpGrad);
      gptrt_gemm(g(), upload(a), upload(b), upload(perRow), upload(perCol),
                 nullptr, nullptr, nullptr, rc, nullptr, nullptr, nullptr,
                 nullptr, &rowwiseAccumulate, nullptr);
      expectOk();
      EXPECT_LT(relErr(download(rc, count), toDouble(rowWant)), kFp8GemmTol)
          << "rowwise fp8 gemm, c_dtype accumulate";
    }
  }
  std::printf("accumulating GEMMs vs CPU: worst norm-wise error bf16 %.3g, "
              "FP8 %.3g\n",
              worstBf16, worstFp8);
}

// The rowwise GEMM with its bias (rt-fuse-gemm-epilogue): added in the
// unscaling pass with the two kernels' roundings, so bit for bit the GPU's
// own rowwise GEMM followed by gptrt_add, and within the FP8 GEMM
// tolerance of the CPU; bf16 and f32 results, every element written.
TEST_F(GpuTest, RowwiseBiasMatchesTheTwoKernels) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t batch = 2, m = 64, n = 768, k = 128, count = batch * m * n;
  auto codes = [&](size_t size, float scale) {
    std::vector<float> x = randn(size);
    std::vector<uint8_t> q(size);
    for (size_t i = 0; i < size; ++i)
      q[i] = cpu::floatToE4M3(x[i] * scale);
    return q;
  };
  std::vector<uint8_t> a = codes(batch * m * k, 16.0f), b = codes(n * k, 8.0f);
  std::vector<float> rowScales(batch * m), colScales(n);
  for (float &v : rowScales)
    v = std::ldexp(1.0f, 2 + int(rng_() % 4));
  for (float &v : colScales)
    v = std::ldexp(1.0f, 1 + int(rng_() % 4));
  const std::vector<float> bias = randn(n, 2.0f);
  const uint8_t *ga = upload(a), *gb = upload(b);
  const float *gsa = upload(rowScales), *gsb = upload(colScales),
              *gbias = upload(bias);
  for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32}) {
    SCOPED_TRACE("dtype " + std::to_string(dtype));
    const bool bf16 = dtype == GPTRT_DTYPE_BF16;
    const size_t bytes = size_t(count) * (bf16 ? 2 : 4);
    auto poisoned = [&] {
      return upload(std::vector<unsigned char>(bytes, 0xFF));
    };
    unsigned char *fused = poisoned(), *product = poisoned(),
                  *twoKernels = poisoned();
    const gptrt_gemm_desc rowwise =
        fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, 0, m * n, GPTRT_FP8_E4M3,
                       GPTRT_FP8_E4M3, 1, 1, 1, dtype);
    gptrt_gemm(g(), ga, gb, gsa, gsb, gbias, nullptr, nullptr, fused, nullptr,
               nullptr, nullptr, nullptr, &rowwise, nullptr);
    gptrt_gemm(g(), ga, gb, gsa, gsb, nullptr, nullptr, nullptr, product,
               nullptr, nullptr, nullptr, nullptr, &rowwise, nullptr);
    gptrt_add(g(), product, gbias, nullptr, twoKernels, nullptr, nullptr,
              batch * m, n, 1, dtype, GPTRT_DTYPE_F32, dtype, nullptr);
    expectOk();
    EXPECT_EQ(download(fused, bytes), download(twoKernels, bytes));
    std::vector<unsigned char> ref(bytes);
    gptrt_gemm(cpuCtx.handle(), a.data(), b.data(), rowScales.data(),
               colScales.data(), bias.data(), nullptr, nullptr, ref.data(),
               nullptr, nullptr, nullptr, nullptr, &rowwise, nullptr);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    std::vector<unsigned char> got = download(fused, bytes);
    std::vector<double> gotValues(count), refValues(count);
    for (int64_t i = 0; i < count; ++i) {
      if (bf16) {
        uint16_t gv, rv;
        std::memcpy(&gv, &got[2 * i], 2);
        std::memcpy(&rv, &ref[2 * i], 2);
        gotValues[i] = cpu::bf16ToFloat(gv);
        refValues[i] = cpu::bf16ToFloat(rv);
      } else {
        float gv, rv;
        std::memcpy(&gv, &got[4 * i], 4);
        std::memcpy(&rv, &ref[4 * i], 4);
        gotValues[i] = gv;
        refValues[i] = rv;
      }
    }
    EXPECT_LT(relErr(gotValues, refValues), bf16 ? kBf16Tol : kFp8FastGemmTol);
  }
}

// The rowwise GEMM with operands it must transpose into the TN layout
// (a weight gradient: a stored [k, m], b stored [k, n]) and a bf16 result:
// its f32 sum and the transposed operands need separate buffers.
TEST_F(GpuTest, RowwiseWithTransposedOperandsMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t m = 96, n = 64, k = 128;
  auto codes = [&](size_t count) {
    std::vector<float> x = randn(count, 8.0f);
    std::vector<uint8_t> q(count);
    for (size_t i = 0; i < count; ++i)
      q[i] = cpu::floatToE4M3(x[i]);
    return q;
  };
  std::vector<uint8_t> a = codes(k * m), b = codes(k * n);
  std::vector<float> sa(m), sb(n);
  for (int64_t i = 0; i < m; ++i)
    sa[i] = float(1 << (i % 5));
  for (int64_t j = 0; j < n; ++j)
    sb[j] = 1.0f / float(1 << (j % 3));
  std::vector<uint16_t> ref(m * n);
  const gptrt_gemm_desc rowwise =
      fp8RowwiseGemm(1, m, n, k, 1, 0, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3,
                     0, 1, 1, GPTRT_DTYPE_BF16);
  gptrt_gemm(cpuCtx.handle(), a.data(), b.data(), sa.data(), sb.data(), nullptr,
             nullptr, nullptr, ref.data(), nullptr, nullptr, nullptr, nullptr,
             &rowwise, nullptr);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  uint16_t *c = upload(std::vector<uint16_t>(m * n, 0xFFFF));
  gptrt_gemm(g(), upload(a), upload(b), upload(sa), upload(sb), nullptr,
             nullptr, nullptr, c, nullptr, nullptr, nullptr, nullptr, &rowwise,
             nullptr);
  expectOk();
  EXPECT_LT(relErr(bf16Values(download(c, m * n)), bf16Values(ref)), 1.0 / 256);
}

// The rowwise GEMM as one cuBLASLt call with OUTER_VEC_32F scales
// (setRowwiseOuterVecScales, gptrun --fp8-rowwise-gemm outer-vec): each
// form (f32, bf16, accumulating, with a bias), layout (the forward's TN,
// the two backward ones that move an operand) and scale kind (rows and
// columns, rows only, columns only, non-power-of-two scales) against the
// CPU emulation, and against the unscaling pass's result on the same
// GPU, poisoned first. On Hopper cuBLASLt must take the E4M3 x E4M3 calls
// with a bf16 result (the counter), the form PyTorch's rowwise _scaled_mm
// runs there; the others may fall back (listed in the output, which
// decides whether outer-vec can be the default), with the same results
// either way. A batch that does not fold into one GEMM falls back.
TEST_F(GpuTest, RowwiseOuterVecScalesMatchCpuAndTheUnscalingPass) {
  struct Restore {
    cuda::Device &d;
    ~Restore() { d.setRowwiseOuterVecScales(false); }
  } restore{dev()};
  Context cpuCtx(Device::Cpu, {});
  const int64_t m = 128, n = 96, k = 256;
  auto codes = [&](size_t count, bool e5m2) {
    std::vector<float> x = randn(count, 8.0f);
    std::vector<uint8_t> q(count);
    for (size_t i = 0; i < count; ++i)
      q[i] = e5m2 ? cpu::floatToE5M2(x[i]) : cpu::floatToE4M3(x[i]);
    return q;
  };
  auto scales = [&](int64_t count, bool powersOfTwo) {
    std::vector<float> v(count);
    for (float &x : v)
      x = powersOfTwo ? std::ldexp(1.0f, int(rng_() % 9) - 2)
                      : 0.3f + float(rng_() % 1000) / 97.0f;
    return v;
  };
  const std::vector<float> bias = randn(n, 2.0f), start = randn(m * n);
  const float *dBias = upload(bias);
  int64_t expectedOuterVec = 0;
  std::string refused;
  struct Layout {
    int ta, tb;
  };
  for (Layout layout : {Layout{0, 1}, Layout{1, 0}, Layout{0, 0}})
    for (int scaleKind = 0; scaleKind < 4; ++scaleKind)
      for (int form = 0; form < 5; ++form) {
        // form: 0 f32, 1 bf16, 2 accumulating f32, 3 bf16 + bias,
        // 4 f32 + bias.
        const bool rowwiseA = scaleKind != 2, rowwiseB = scaleKind != 1;
        SCOPED_TRACE("trans_a " + std::to_string(layout.ta) + " trans_b " +
                     std::to_string(layout.tb) + " scales " +
                     std::to_string(scaleKind) + " form " +
                     std::to_string(form));
        const bool e5m2A = layout.ta == 1; // a gradient, as wgrad's
        const std::vector<uint8_t> a = codes(m * k, e5m2A),
                                   b = codes(n * k, false);
        const std::vector<float> sa = scales(rowwiseA ? m : 1, scaleKind != 3),
                                 sb = scales(rowwiseB ? n : 1, scaleKind != 3);
        const bool bf16 = form == 1 || form == 3;
        const int64_t dtype = bf16 ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32;
        const size_t bytes = size_t(m * n) * (bf16 ? 2 : 4);
        const int64_t fa = e5m2A ? GPTRT_FP8_E5M2 : GPTRT_FP8_E4M3;
        const int fast = layout.ta == 0 && layout.tb == 1 ? 1 : 0;
        auto run = [&](gptrt_context *ctx, const uint8_t *da, const uint8_t *db,
                       const float *dsa, const float *dsb, const float *dbias,
                       void *c) {
          const gptrt_gemm_desc desc =
              fp8RowwiseGemm(1, m, n, k, layout.ta, layout.tb, 0, 0, 0, fa,
                             GPTRT_FP8_E4M3, fast, rowwiseA, rowwiseB,
                             form == 2 ? GPTRT_DTYPE_F32_ACCUMULATE : dtype);
          gptrt_gemm(ctx, da, db, dsa, dsb, form >= 3 ? dbias : nullptr,
                     nullptr, nullptr, c, nullptr, nullptr, nullptr, nullptr,
                     &desc, nullptr);
        };
        // The accumulating form starts from `start`, the others poisoned.
        std::vector<unsigned char> initial(bytes, 0xFF);
        if (form == 2)
          std::memcpy(initial.data(), start.data(), bytes);
        std::vector<unsigned char> ref = initial;
        run(cpuCtx.handle(), a.data(), b.data(), sa.data(), sb.data(),
            bias.data(), ref.data());
        ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
        const uint8_t *da = upload(a), *db = upload(b);
        const float *dsa = upload(sa), *dsb = upload(sb);
        unsigned char *outerVec = upload(initial), *unscaled = upload(initial);
        dev().setRowwiseOuterVecScales(true);
        const int64_t before = dev().outerVecGemms();
        run(g(), da, db, dsa, dsb, dBias, outerVec);
        expectOk();
        const bool taken = dev().outerVecGemms() == before + 1;
        expectedOuterVec += taken;
        if (!taken)
          refused += " (" + std::to_string(layout.ta) +
                     std::to_string(layout.tb) + " scales " +
                     std::to_string(scaleKind) + " form " +
                     std::to_string(form) + ")";
        if (dev().computeCapability() == 90 && bf16 && !e5m2A)
          EXPECT_TRUE(taken) << "cuBLASLt refused OUTER_VEC_32F scales on "
                                "Hopper for E4M3 operands and a bf16 result";
        dev().setRowwiseOuterVecScales(false);
        run(g(), da, db, dsa, dsb, dBias, unscaled);
        expectOk();
        auto values = [&](const std::vector<unsigned char> &raw) {
          std::vector<double> v(m * n);
          for (int64_t i = 0; i < m * n; ++i)
            if (bf16) {
              uint16_t code;
              std::memcpy(&code, &raw[2 * i], 2);
              v[i] = cpu::bf16ToFloat(code);
            } else {
              float f;
              std::memcpy(&f, &raw[4 * i], 4);
              v[i] = f;
            }
          return v;
        };
        const std::vector<double> want = values(ref),
                                  got = values(download(outerVec, bytes)),
                                  other = values(download(unscaled, bytes));
        const double tol = bf16   ? kBf16Tol
                           : fast ? kFp8FastGemmTol
                                  : kFp8GemmTol;
        EXPECT_LT(relErr(got, want), tol) << "outer-vec vs CPU";
        EXPECT_LT(relErr(other, want), tol) << "unscaling pass vs CPU";
        EXPECT_LT(relErr(got, other), tol) << "outer-vec vs unscaling pass";
      }
  std::printf("rowwise GEMMs through OUTER_VEC_32F scales: %lld of 60 (compute "
              "capability %d); fell back (trans_a trans_b, scales, form):%s\n",
              (long long)expectedOuterVec, dev().computeCapability(),
              refused.empty() ? " none" : refused.c_str());

  // Two batches with a b each: no single GEMM, so the unscaling pass,
  // with the same result as with the option off.
  const int64_t batch = 2;
  const std::vector<uint8_t> a = codes(batch * m * k, false),
                             b = codes(batch * n * k, false);
  const std::vector<float> sa = scales(batch * m, true), sb = scales(n, true);
  const uint8_t *da = upload(a), *db = upload(b);
  const float *dsa = upload(sa), *dsb = upload(sb);
  float *on = alloc<float>(batch * m * n), *off = alloc<float>(batch * m * n);
  dev().setRowwiseOuterVecScales(true);
  const int64_t before = dev().outerVecGemms();
  const gptrt_gemm_desc batched =
      fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, n * k, m * n, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(g(), da, db, dsa, dsb, nullptr, nullptr, nullptr, on, nullptr,
             nullptr, nullptr, nullptr, &batched, nullptr);
  expectOk();
  EXPECT_EQ(dev().outerVecGemms(), before);
  dev().setRowwiseOuterVecScales(false);
  gptrt_gemm(g(), da, db, dsa, dsb, nullptr, nullptr, nullptr, off, nullptr,
             nullptr, nullptr, nullptr, &batched, nullptr);
  expectOk();
  EXPECT_EQ(download(on, batch * m * n), download(off, batch * m * n));
}

// An FP8 GEMM with k = 0 is an empty sum, as on the CPU: zeros in every
// batch (the gaps between strided batches keep their bits), the bias alone
// with a bias, and an accumulating c unchanged -- whether or not cuBLASLt
// would take the shape.
TEST_F(GpuTest, EmptyFp8GemmsMatchCpu) {
  const int64_t batch = 2, m = 16, n = 32, strideC = m * n + 16;
  const size_t extent = (batch - 1) * strideC + m * n;
  uint8_t *a = alloc<uint8_t>(16), *b = alloc<uint8_t>(16);
  float *s = upload(std::vector<float>{2.0f, 4.0f});
  const std::vector<float> before = randn(extent);
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    SCOPED_TRACE("out dtype " + std::to_string(dtype));
    const size_t elementBytes = dtype == GPTRT_DTYPE_F32 ? 4 : 2;
    std::vector<unsigned char> hostBefore(extent * elementBytes);
    if (dtype == GPTRT_DTYPE_F32)
      std::memcpy(hostBefore.data(), before.data(), hostBefore.size());
    else
      std::memcpy(hostBefore.data(), toBf16(before).data(), hostBefore.size());
    unsigned char *c = upload(hostBefore);
    const gptrt_gemm_desc empty =
        fp8Gemm(batch, m, n, 0, 0, 1, 0, 0, strideC, GPTRT_FP8_E4M3,
                GPTRT_FP8_E4M3, 0, dtype);
    gptrt_gemm(g(), a, b, s, s + 1, nullptr, nullptr, nullptr, c, nullptr,
               nullptr, nullptr, nullptr, &empty, nullptr);
    expectOk();
    const std::vector<unsigned char> got = download(c, hostBefore.size());
    for (size_t i = 0; i < extent; ++i) {
      const bool gap = int64_t(i % strideC) >= m * n;
      const bool zero = std::all_of(
          got.begin() + i * elementBytes, got.begin() + (i + 1) * elementBytes,
          [](unsigned char byte) { return byte == 0; });
      const bool kept = std::equal(got.begin() + i * elementBytes,
                                   got.begin() + (i + 1) * elementBytes,
                                   hostBefore.begin() + i * elementBytes);
      ASSERT_TRUE(gap ? kept : zero) << "element " << i;
    }
  }
  // The bias alone, as gptrt_add of the bias to zeros stores it.
  const std::vector<float> bias = randn(n);
  float *biasDev = upload(bias);
  uint16_t *withBias = alloc<uint16_t>(m * n);
  const gptrt_gemm_desc emptyWithBias =
      fp8Gemm(1, m, n, 0, 0, 1, 0, 0, m * n, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3, 0,
              GPTRT_DTYPE_BF16);
  gptrt_gemm(g(), a, b, s, s + 1, biasDev, nullptr, nullptr, withBias, nullptr,
             nullptr, nullptr, nullptr, &emptyWithBias, nullptr);
  expectOk();
  const std::vector<uint16_t> gotBias = download(withBias, m * n);
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_EQ(gotBias[i], cpu::floatToBf16(bias[i % n])) << "element " << i;
  // An accumulating c gains nothing, tensorwise and rowwise (a scale per
  // row of a and per column of b).
  float *acc = upload(before);
  const gptrt_gemm_desc emptyAccumulate =
      fp8Gemm(1, m, n, 0, 0, 1, 0, 0, m * n, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3, 0,
              GPTRT_DTYPE_F32_ACCUMULATE);
  gptrt_gemm(g(), a, b, s, s + 1, nullptr, nullptr, nullptr, acc, nullptr,
             nullptr, nullptr, nullptr, &emptyAccumulate, nullptr);
  const gptrt_gemm_desc emptyRowwiseAccumulate =
      fp8RowwiseGemm(1, m, n, 0, 0, 1, 0, 0, m * n, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32_ACCUMULATE);
  const float *rowScales = upload(std::vector<float>(m, 2.0f)),
              *colScales = upload(std::vector<float>(n, 4.0f));
  gptrt_gemm(g(), a, b, rowScales, colScales, nullptr, nullptr, nullptr, acc,
             nullptr, nullptr, nullptr, nullptr, &emptyRowwiseAccumulate,
             nullptr);
  expectOk();
  const std::vector<float> gotAcc = download(acc, m * n);
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_EQ(gotAcc[i], before[i]) << "element " << i;
}

TEST_F(GpuTest, GemmFp8RefusesWhatCublasLtCannotDo) {
  uint8_t *a = alloc<uint8_t>(64 * 64), *b = alloc<uint8_t>(64 * 64);
  float *s = upload(std::vector<float>{1.0f, 1.0f});
  float *c = alloc<float>(64 * 64);
  const gptrt_gemm_desc bothE5m2 =
      fp8Gemm(1, 64, 64, 64, 0, 1, 0, 0, 0, GPTRT_FP8_E5M2, GPTRT_FP8_E5M2, 0,
              GPTRT_DTYPE_F32);
  gptrt_gemm(g(), a, b, s, s + 1, nullptr, nullptr, nullptr, c, nullptr,
             nullptr, nullptr, nullptr, &bothE5m2, nullptr);
  EXPECT_THAT(gpu().error(), ::testing::HasSubstr("both E5M2"));
  gpu().clearError();
  const gptrt_gemm_desc m24 =
      fp8Gemm(1, 24, 64, 64, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3, 0,
              GPTRT_DTYPE_F32);
  gptrt_gemm(g(), a, b, s, s + 1, nullptr, nullptr, nullptr, c, nullptr,
             nullptr, nullptr, nullptr, &m24, nullptr);
  EXPECT_THAT(gpu().error(), ::testing::HasSubstr("multiples of 16"));
  gpu().clearError();
}

} // namespace
} // namespace gptrt::gputest
