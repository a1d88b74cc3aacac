// The precision kernels of the C ABI: gptrt_convert (bf16 storage) and the
// FP8 ones (amax, scale, quantize, scaled GEMM), against references written
// here from the formulas of DESIGN.md section 4 and the decoders of Fp8.h.
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Fp8.h"
#include "test/unit/runtime/Epilogue.h"
#include "test/unit/runtime/Gemm.h"
#include "test/unit/runtime/TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace gptrt::test {
namespace {

namespace cpu = gptrt::cpu;

class AbiFp8Test : public ::testing::Test {
protected:
  Context ctx{Device::Cpu, {}};
  gptrt_context *h = ctx.handle();
  void TearDown() override {
    EXPECT_FALSE(ctx.failed()) << "unexpected kernel error: " << ctx.error();
  }
};

// A fused cast records what the separate one does: the same amax, scale,
// underflow and saturation counts.
void expectSameCastStats(const Fp8CastStats &got, const Fp8CastStats &want) {
  EXPECT_EQ(got.amax, want.amax);
  EXPECT_EQ(got.scale, want.scale);
  EXPECT_EQ(got.underflow, want.underflow);
  EXPECT_EQ(got.saturated, want.saturated);
}

std::vector<float> randomF(size_t n, uint64_t seed, double lo, double hi) {
  return convert<float>(randomVec(n, seed, lo, hi));
}

// x's bf16 codes, rounded to nearest even.
std::vector<uint16_t> bf16Codes(const std::vector<float> &x) {
  std::vector<uint16_t> codes(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    codes[i] = cpu::floatToBf16(x[i]);
  return codes;
}

TEST_F(AbiFp8Test, ConvertRoundsToBf16AndBack) {
  std::vector<float> x = randomF(1001, 3, -50.0, 50.0);
  std::vector<uint16_t> bf(x.size(), 0xFFFF);
  gptrt_convert(h, x.data(), nullptr, bf.data(), nullptr, nullptr, x.size(),
                GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, nullptr);
  std::vector<float> back(x.size(), NAN);
  gptrt_convert(h, bf.data(), nullptr, back.data(), nullptr, nullptr, x.size(),
                GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, nullptr);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(bf[i], cpu::floatToBf16(x[i])) << i;
    EXPECT_EQ(back[i], cpu::bf16ToFloat(bf[i])) << i;
    // Round to nearest: within half a bf16 ulp (8 mantissa bits).
    EXPECT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << i;
  }
}

TEST_F(AbiFp8Test, ConvertRejectsOtherTypes) {
  float x = 1.0f, y = 0.0f;
  gptrt_convert(h, &x, nullptr, &y, nullptr, nullptr, 1, GPTRT_DTYPE_F32,
                GPTRT_DTYPE_F32, nullptr);
  ASSERT_TRUE(ctx.failed());
  EXPECT_NE(ctx.error().find("expected f32 (1) <-> bf16 (2)"), std::string::npos)
      << ctx.error();
  ctx.clearError();
}

TEST_F(AbiFp8Test, AmaxIsLargestMagnitudeAndPropagatesNaN) {
  std::vector<float> x = randomF(777, 5, -3.0, 3.0);
  x[123] = -7.25f;
  float amax = 0;
  gptrt_amax(h, x.data(), &amax, x.size(), GPTRT_DTYPE_F32);
  EXPECT_EQ(amax, 7.25f);
  x[500] = NAN;
  gptrt_amax(h, x.data(), &amax, x.size(), GPTRT_DTYPE_F32);
  EXPECT_TRUE(std::isnan(amax));
}

TEST_F(AbiFp8Test, ScaleFromAmax) {
  float amax = 3.5f, scale = 0;
  gptrt_scale_from_amax(h, &amax, &scale, 448.0, 0, 0, 1e-12);
  EXPECT_EQ(scale, 448.0f / 3.5f);
  // Margin divides by 2^margin, power_of_two rounds down:
  // 448 / 3 = 149.3, / 2^2 = 37.3, -> 32.
  amax = 3.0f;
  gptrt_scale_from_amax(h, &amax, &scale, 448.0, 2, 1, 1e-12);
  EXPECT_EQ(scale, 32.0f);
}

TEST_F(AbiFp8Test, ScaleFromAmaxFloorsAmaxAtEps) {
  float amax = 0.0f, scale = 0;
  gptrt_scale_from_amax(h, &amax, &scale, 57344.0, 0, 0, 1e-4);
  EXPECT_EQ(scale, 57344.0f / 1e-4f);
}

TEST_F(AbiFp8Test, DelayedStateStartsAtScaleOneThenUsesTheHistoryMax) {
  std::vector<float> history(4, 0.0f);
  float scale = 0;
  gptrt_fp8_state_scale(h, history.data(), &scale, 4, 448.0, 0, 0, 1e-12, 0);
  EXPECT_EQ(scale, 1.0f) << "no amax recorded yet";
  for (float amax : {2.0f, 7.0f, 3.5f}) {
    gptrt_fp8_state_update(h, &amax, history.data(), 4);
  }
  EXPECT_EQ(history, (std::vector<float>{3.5f, 7.0f, 2.0f, 0.0f}));
  gptrt_fp8_state_scale(h, history.data(), &scale, 4, 448.0, 0, 0, 1e-12, 0);
  EXPECT_EQ(scale, 448.0f / 7.0f) << "max over the history";
  // A non-finite amax is not recorded: the scale stays.
  float inf = INFINITY, nan = NAN;
  gptrt_fp8_state_update(h, &inf, history.data(), 4);
  gptrt_fp8_state_update(h, &nan, history.data(), 4);
  EXPECT_EQ(history, (std::vector<float>{3.5f, 7.0f, 2.0f, 0.0f}));
  // The oldest amax leaves the window.
  for (float amax : {1.0f, 1.0f, 1.0f})
    gptrt_fp8_state_update(h, &amax, history.data(), 4);
  gptrt_fp8_state_scale(h, history.data(), &scale, 4, 448.0, 0, 0, 1e-12, 0);
  EXPECT_EQ(scale, 448.0f / 3.5f);
  // most_recent: the newest amax alone; a margin halves the scale per step.
  gptrt_fp8_state_scale(h, history.data(), &scale, 4, 448.0, 0, 0, 1e-12, 1);
  EXPECT_EQ(scale, 448.0f);
  gptrt_fp8_state_scale(h, history.data(), &scale, 4, 448.0, 2, 0, 1e-12, 1);
  EXPECT_EQ(scale, 112.0f);
}

// rt-batch-fp8-state-updates' kernel: each state whose mask bit is set
// gets gptrt_fp8_state_update of its amax (a non-finite one not recorded),
// the others and the padding between histories stay as they were.
TEST_F(AbiFp8Test, StateUpdateBatchIsOneUpdatePerMaskedState) {
  const int64_t count = 5, length = 3, stride = 4;
  std::vector<float> history(count * stride), want;
  for (size_t i = 0; i < history.size(); ++i)
    history[i] = float(i) + 0.5f;
  const std::vector<float> amax = {9.0f, 8.0f, NAN, 6.0f, 5.0f};
  const int64_t mask = 0b11101; // state 1 left alone
  want = history;
  for (int64_t s = 0; s < count; ++s)
    if ((mask >> s) & 1)
      gptrt_fp8_state_update(h, &amax[s], want.data() + s * stride, length);
  gptrt_fp8_state_update_batch(h, amax.data(), history.data(), count, length,
                               stride, mask);
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(history, want);
  EXPECT_EQ(history[0], 9.0f);
  EXPECT_EQ(history[4], 4.5f) << "state 1 is not in the mask";
  EXPECT_EQ(history[8], 8.5f) << "a NaN amax is not recorded";
  EXPECT_EQ(history[3], 3.5f) << "padding after a history";

  gptrt_fp8_state_update_batch(h, amax.data(), history.data(), 65, length,
                               stride, -1);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("count 65, expected at most 64"));
  ctx.clearError();
  gptrt_fp8_state_update_batch(h, amax.data(), history.data(), count, length, 2,
                               mask);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("history_stride 2"));
  ctx.clearError();
}

// rt-batch-fp8-state-scales' kernel: each state whose mask bit is set
// gets gptrt_fp8_state_scale of its history (1 for an empty one), the
// other scales stay as they were.
TEST_F(AbiFp8Test, StateScaleBatchIsOneScalePerMaskedState) {
  const int64_t count = 5, length = 3, stride = 4;
  std::vector<float> history(count * stride, 0.0f);
  for (int64_t s = 0; s < count; ++s)
    if (s != 2) // state 2 has recorded nothing yet
      for (int64_t i = 0; i < length; ++i)
        history[s * stride + i] = float(s + 1) * 0.25f + float(i);
  history[3] = 1000.0f;         // padding after a history, never read
  const int64_t mask = 0b11101; // state 1 left alone
  for (int64_t recent : {0, 1}) {
    SCOPED_TRACE(recent ? "most_recent" : "history max");
    std::vector<float> out(count, -7.0f), want(count, -7.0f);
    for (int64_t s = 0; s < count; ++s)
      if ((mask >> s) & 1)
        gptrt_fp8_state_scale(h, history.data() + s * stride, &want[s], length,
                              57344.0, 1, 0, 1e-12, recent);
    gptrt_fp8_state_scale_batch(h, history.data(), out.data(), count, length,
                                stride, mask, 57344.0, 1, 0, 1e-12, recent);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(out, want);
    EXPECT_EQ(out[1], -7.0f) << "state 1 is not in the mask";
    EXPECT_EQ(out[2], 1.0f) << "an empty history scales by 1";
    EXPECT_NE(out[0], out[3]);
  }
  std::vector<float> out(count);
  gptrt_fp8_state_scale_batch(h, history.data(), out.data(), 65, length, stride,
                              -1, 448.0, 0, 0, 1e-12, 0);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("count 65, expected at most 64"));
  ctx.clearError();
  gptrt_fp8_state_scale_batch(h, history.data(), out.data(), count, 0, stride,
                              mask, 448.0, 0, 0, 1e-12, 0);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("history_length 0"));
  ctx.clearError();
}

TEST_F(AbiFp8Test, QuantizeMatchesFp8Conversions) {
  std::vector<float> x = randomF(513, 9, -10.0, 10.0);
  x[0] = 1e9f;  // saturates
  float scale = 20.0f;
  std::vector<uint8_t> q4(x.size()), q5(x.size());
  gptrt_quantize_fp8(h, x.data(), &scale, q4.data(), x.size(), GPTRT_FP8_E4M3,
                     -1, GPTRT_DTYPE_F32);
  gptrt_quantize_fp8(h, x.data(), &scale, q5.data(), x.size(), GPTRT_FP8_E5M2,
                     -1, GPTRT_DTYPE_F32);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(q4[i], cpu::floatToE4M3(x[i] * scale)) << i;
    EXPECT_EQ(q5[i], cpu::floatToE5M2(x[i] * scale)) << i;
  }
  EXPECT_EQ(cpu::e4m3ToFloat(q4[0]), 448.0f);
}

TEST_F(AbiFp8Test, QuantizeRecordsStatisticsOnlyWhenAsked) {
  // Values chosen against the E4M3 grid at scale 1: 2^-10 is below half the
  // smallest subnormal (2^-9) and becomes 0; 460 rounds to 448 (not counted
  // as saturated); 470 and -1e6 are clamped.
  std::vector<float> x = {0.0f, 0.0009765625f, 1.0f, -3.0f, 460.0f, 470.0f,
                          -1e6f, 2e-3f};
  std::vector<uint8_t> q(x.size());
  float scale = 1.0f;
  gptrt_quantize_fp8(h, x.data(), &scale, q.data(), x.size(), GPTRT_FP8_E4M3, 1,
                     GPTRT_DTYPE_F32);
  EXPECT_TRUE(ctx.fp8Stats().empty()) << "nothing recorded outside a window";

  ctx.beginFp8Stats(2);
  gptrt_quantize_fp8(h, x.data(), &scale, q.data(), x.size(), GPTRT_FP8_E4M3, 1,
                     GPTRT_DTYPE_F32);
  float half = 0.5f;  // a second micro-step: counts add, amax is the max
  std::vector<float> y = {8.0f, -4.0f};
  std::vector<uint8_t> qy(y.size());
  gptrt_quantize_fp8(h, y.data(), &half, qy.data(), y.size(), GPTRT_FP8_E4M3, 1,
                     GPTRT_DTYPE_F32);
  ctx.endFp8Stats();
  gptrt_quantize_fp8(h, x.data(), &scale, q.data(), x.size(), GPTRT_FP8_E4M3, 0,
                     GPTRT_DTYPE_F32);
  ASSERT_FALSE(ctx.failed()) << ctx.error();

  const Fp8CastStats &s = ctx.fp8Stats()[1];
  EXPECT_EQ(s.amax, 1e6f);
  EXPECT_EQ(s.scale, 0.5f);
  EXPECT_EQ(s.underflow, 1);
  EXPECT_EQ(s.saturated, 2);
  EXPECT_EQ(s.elements, 10);
  EXPECT_EQ(ctx.fp8Stats()[0].elements, 0) << "slot 0 ran after the window";

  // A NaN scale (a NaN amax's) is logged as NaN, as the GPU logs it, not
  // skipped as a NaN row scale is.
  ctx.beginFp8Stats(1);
  float nanScale = std::nanf("");
  gptrt_quantize_fp8(h, y.data(), &nanScale, qy.data(), y.size(),
                     GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  ctx.endFp8Stats();
  EXPECT_TRUE(std::isnan(ctx.fp8Stats()[0].scale));

  // E5M2 at scale 1: 61440 is the first value clamped beyond rounding.
  std::vector<float> z = {61439.0f, 61440.0f};
  std::vector<uint8_t> qz(z.size());
  ctx.beginFp8Stats(1);
  gptrt_quantize_fp8(h, z.data(), &scale, qz.data(), z.size(), GPTRT_FP8_E5M2,
                     0, GPTRT_DTYPE_F32);
  EXPECT_EQ(ctx.fp8Stats()[0].saturated, 1);

  gptrt_quantize_fp8(h, z.data(), &scale, qz.data(), z.size(), GPTRT_FP8_E5M2,
                     4, GPTRT_DTYPE_F32);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                                "stat_slot 4, expected < 1 (the manifest's "
                                "fp8_stats)"));
  ctx.clearError();
  ctx.endFp8Stats();
}

TEST_F(AbiFp8Test, TransposedQuantizeIsTheCastWithRowsAndColumnsSwapped) {
  // Odd sizes (not multiples of the GPU's 32 x 32 tiles), f32 and bf16
  // storage, both formats, with statistics: the same codes as the plain
  // cast, at q[c * rows + r], and the same statistics.
  const int64_t rows = 37, cols = 19;
  std::vector<float> x = randomF(rows * cols, 41, -30.0, 30.0);
  x[5] = 1e7f;  // saturates
  x[6] = 1e-9f; // underflows
  const std::vector<uint16_t> x16 = bf16Codes(x);
  const float scale = 7.5f;
  for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
    for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      const void *in = dtype == GPTRT_DTYPE_F32
                           ? static_cast<const void *>(x.data())
                           : static_cast<const void *>(x16.data());
      std::vector<uint8_t> plain(x.size()), transposed(x.size(), 0xAA);
      ctx.beginFp8Stats(2);
      gptrt_quantize_fp8(h, in, &scale, plain.data(), rows * cols, format, 0,
                         dtype);
      gptrt_quantize_fp8_transposed(h, in, &scale, transposed.data(), rows,
                                    cols, format, 1, dtype);
      ctx.endFp8Stats();
      ASSERT_FALSE(ctx.failed()) << ctx.error();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(transposed[c * rows + r], plain[r * cols + c])
              << "format " << format << " dtype " << dtype << " at " << r
              << ", " << c;
      const Fp8CastStats &a = ctx.fp8Stats()[0], &b = ctx.fp8Stats()[1];
      expectSameCastStats(b, a);
      EXPECT_EQ(b.elements, rows * cols);
      EXPECT_GT(a.saturated, 0);
      EXPECT_GT(a.underflow, 0);
    }
  }
  std::vector<uint8_t> q(4);
  gptrt_quantize_fp8_transposed(h, x.data(), &scale, q.data(), -2, 2,
                                GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("rows = -2, expected >= 0"));
  ctx.clearError();
}

TEST_F(AbiFp8Test, GemmFp8IsTheProductOfDecodedValues) {
  // c[m, n] = sum_k a[m, k] b[n, k] / (sa sb), a E5M2, b E4M3, b transposed.
  const int64_t m = 7, n = 5, k = 33;
  std::vector<uint8_t> a(m * k), b(n * k);
  std::vector<float> xa = randomF(a.size(), 11, -4.0, 4.0),
                     xb = randomF(b.size(), 12, -4.0, 4.0);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = cpu::floatToE5M2(xa[i] * 8.0f);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = cpu::floatToE4M3(xb[i] * 16.0f);
  float sa = 8.0f, sb = 16.0f;
  std::vector<float> c = poisoned<float>(m * n);
  const gptrt_gemm_desc d = fp8Gemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_FP8_E5M2,
                                    GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &d, nullptr);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += double(cpu::e5m2ToFloat(a[i * k + p])) *
                cpu::e4m3ToFloat(b[j * k + p]);
      want /= double(sa) * sb;
      EXPECT_NEAR(c[i * n + j], want, 1e-5 * (1 + std::fabs(want)))
          << i << "," << j;
    }
}

// bf16 storage (gpt-bf16-kernels, gpt-bf16-gemm): amax and quantize of a
// bf16 input are those of its exact widening, and a bf16 GEMM result is
// the f32 one rounded once (the gap between strided batches untouched).
TEST_F(AbiFp8Test, Bf16InputsAndOutputsAreTheF32OnesBetweenConversions) {
  std::vector<float> x = randomF(301, 31, -50.0, 50.0);
  std::vector<uint16_t> x16(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x16[i] = cpu::floatToBf16(x[i]);
    x[i] = cpu::bf16ToFloat(x16[i]);
  }
  float amax = -1, amax16 = -2;
  gptrt_amax(h, x.data(), &amax, x.size(), GPTRT_DTYPE_F32);
  gptrt_amax(h, x16.data(), &amax16, x.size(), GPTRT_DTYPE_BF16);
  EXPECT_EQ(amax16, amax);
  const float scale = 448.0f / amax;
  std::vector<uint8_t> q(x.size()), q16(x.size(), 0xAA);
  gptrt_quantize_fp8(h, x.data(), &scale, q.data(), x.size(), GPTRT_FP8_E4M3,
                     -1, GPTRT_DTYPE_F32);
  gptrt_quantize_fp8(h, x16.data(), &scale, q16.data(), x.size(),
                     GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16);
  EXPECT_EQ(q16, q);

  const int64_t batch = 2, m = 3, n = 4, k = 16, strideC = m * n + 2;
  std::vector<uint8_t> a(batch * m * k), b(n * k);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = cpu::floatToE4M3(x[i % x.size()] * scale);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = cpu::floatToE4M3(x[(i * 7) % x.size()] * scale);
  std::vector<float> c32((batch - 1) * strideC + m * n);
  const gptrt_gemm_desc toF32 =
      fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, strideC, GPTRT_FP8_E4M3,
              GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &scale, &scale, nullptr, nullptr, nullptr,
             c32.data(), nullptr, nullptr, nullptr, nullptr, &toF32, nullptr);
  std::vector<uint16_t> c16(c32.size(), 0xBEEF);
  const gptrt_gemm_desc toBf16 =
      fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, strideC, GPTRT_FP8_E4M3,
              GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_BF16);
  gptrt_gemm(h, a.data(), b.data(), &scale, &scale, nullptr, nullptr, nullptr,
             c16.data(), nullptr, nullptr, nullptr, nullptr, &toBf16, nullptr);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m * n; ++i)
      EXPECT_EQ(c16[p * strideC + i], cpu::floatToBf16(c32[p * strideC + i]))
          << "batch " << p << " element " << i;
    if (p + 1 < batch)
      EXPECT_EQ(c16[p * strideC + m * n], 0xBEEF) << "gap written";
  }
}

// Rowwise on bf16 storage: amax_rows and quantize_rows of a bf16 input are
// those of its exact widening; a bf16 rowwise GEMM result is the f32 one
// rounded once.
TEST_F(AbiFp8Test, RowwiseOnBf16StorageIsTheF32OneBetweenConversions) {
  const int64_t rows = 6, cols = 32;
  std::vector<float> x = randomF(rows * cols, 41, -9.0, 9.0);
  std::vector<uint16_t> x16(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x16[i] = cpu::floatToBf16(x[i]);
    x[i] = cpu::bf16ToFloat(x16[i]);
  }
  for (int64_t alongCols : {0, 1}) {
    const int64_t count = alongCols ? cols : rows;
    std::vector<float> amax(count), amax16(count), scales(count);
    gptrt_amax_rows(h, x.data(), amax.data(), rows, cols, alongCols,
                    GPTRT_DTYPE_F32);
    gptrt_amax_rows(h, x16.data(), amax16.data(), rows, cols, alongCols,
                    GPTRT_DTYPE_BF16);
    EXPECT_EQ(amax16, amax) << "along cols " << alongCols;
    gptrt_row_scales(h, amax.data(), scales.data(), count, 448.0, 0, 1,
                     1e-12);
    std::vector<uint8_t> q(x.size()), q16(x.size(), 0xAA);
    gptrt_quantize_rows(h, x.data(), scales.data(), q.data(), rows, cols,
                        alongCols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32);
    gptrt_quantize_rows(h, x16.data(), scales.data(), q16.data(), rows, cols,
                        alongCols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16);
    EXPECT_EQ(q16, q) << "along cols " << alongCols;
  }
  // c = a b^T with a's scales per row and b's per row of b (columns of c).
  std::vector<float> sa(rows), sb(rows), ones(1, 1.0f);
  gptrt_amax_rows(h, x.data(), sa.data(), rows, cols, 0, GPTRT_DTYPE_F32);
  gptrt_row_scales(h, sa.data(), sa.data(), rows, 448.0, 0, 1, 1e-12);
  sb = sa;
  std::vector<uint8_t> q(x.size());
  gptrt_quantize_rows(h, x.data(), sa.data(), q.data(), rows, cols, 0,
                      GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32);
  std::vector<float> c32(rows * rows);
  std::vector<uint16_t> c16(rows * rows, 0xBEEF);
  const gptrt_gemm_desc toF32 =
      fp8RowwiseGemm(1, rows, rows, cols, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(h, q.data(), q.data(), sa.data(), sb.data(), nullptr, nullptr,
             nullptr, c32.data(), nullptr, nullptr, nullptr, nullptr, &toF32,
             nullptr);
  const gptrt_gemm_desc toBf16 =
      fp8RowwiseGemm(1, rows, rows, cols, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_BF16);
  gptrt_gemm(h, q.data(), q.data(), sa.data(), sb.data(), nullptr, nullptr,
             nullptr, c16.data(), nullptr, nullptr, nullptr, nullptr, &toBf16,
             nullptr);
  for (size_t i = 0; i < c32.size(); ++i)
    EXPECT_EQ(c16[i], cpu::floatToBf16(c32[i])) << "element " << i;
}

TEST_F(AbiFp8Test, RowwiseAmaxScalesAndCast) {
  const int64_t rows = 3, cols = 4;
  std::vector<float> x = {1, -2, 3, -4,  //
                          0.5f, 0, 0, 0, //
                          -8, 1, NAN, 2};
  std::vector<float> perRow(rows), perCol(cols);
  gptrt_amax_rows(h, x.data(), perRow.data(), rows, cols, 0, GPTRT_DTYPE_F32);
  gptrt_amax_rows(h, x.data(), perCol.data(), rows, cols, 1, GPTRT_DTYPE_F32);
  EXPECT_EQ(perRow[0], 4.0f);
  EXPECT_EQ(perRow[1], 0.5f);
  EXPECT_TRUE(std::isnan(perRow[2])) << "NaN in a row makes its amax NaN";
  EXPECT_EQ(perCol[0], 8.0f);
  EXPECT_EQ(perCol[1], 2.0f);
  EXPECT_TRUE(std::isnan(perCol[2]));
  EXPECT_EQ(perCol[3], 4.0f);

  // Power-of-two scales: 448 / 4 = 112 -> 64; 448 / 0.5 = 896 -> 512.
  std::vector<float> scales(2);
  std::vector<float> amax = {4.0f, 0.5f};
  gptrt_row_scales(h, amax.data(), scales.data(), 2, 448.0, 0, 1, 1e-12);
  EXPECT_EQ(scales, (std::vector<float>{64.0f, 512.0f}));

  // Each element cast with its row's (or column's) scale.
  std::vector<float> y = randomF(rows * cols, 21, -3.0, 3.0);
  std::vector<float> rs = {2.0f, 64.0f, 0.25f}, cs = {1.0f, 8.0f, 16.0f, 0.5f};
  std::vector<uint8_t> qr(y.size()), qc(y.size());
  gptrt_quantize_rows(h, y.data(), rs.data(), qr.data(), rows, cols, 0,
                      GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32);
  gptrt_quantize_rows(h, y.data(), cs.data(), qc.data(), rows, cols, 1,
                      GPTRT_FP8_E5M2, -1, GPTRT_DTYPE_F32);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_EQ(qr[r * cols + c], cpu::floatToE4M3(y[r * cols + c] * rs[r]));
      EXPECT_EQ(qc[r * cols + c], cpu::floatToE5M2(y[r * cols + c] * cs[c]));
    }
}

// rt-fuse-rowwise-cast's kernel: amax_rows, row_scales and quantize_rows
// along rows in one call, bit for bit the three (a NaN row, a zero row, bf16
// storage, E4M3 and E5M2, with and without power-of-two scales), the cast's
// statistics recorded as quantize_rows records them; bad sizes and formats
// are errors naming the value.
TEST_F(AbiFp8Test, AmaxQuantizeRowsIsTheThreeRowwiseKernels) {
  const int64_t rows = 37, cols = 45, n = rows * cols;
  std::vector<float> x = randomF(n, 71, -30.0, 30.0);
  x[3 * cols + 4] = NAN;
  for (int64_t c = 0; c < cols; ++c)
    x[5 * cols + c] = 0.0f;
  const std::vector<uint16_t> x16 = bf16Codes(x);
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16})
    for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2})
      for (int64_t powerOfTwo : {0, 1}) {
        SCOPED_TRACE("dtype " + std::to_string(dtype) + ", format " +
                     std::to_string(format) + ", power_of_two " +
                     std::to_string(powerOfTwo));
        const void *in = dtype == GPTRT_DTYPE_F32
                             ? static_cast<const void *>(x.data())
                             : static_cast<const void *>(x16.data());
        const double fp8Max = format == GPTRT_FP8_E4M3 ? 448.0 : 57344.0;
        std::vector<float> amax(rows), scales(rows);
        std::vector<uint8_t> q(n);
        gptrt_amax_rows(h, in, amax.data(), rows, cols, 0, dtype);
        gptrt_row_scales(h, amax.data(), scales.data(), rows, fp8Max, 1,
                         powerOfTwo, 1e-12);
        gptrt_quantize_rows(h, in, scales.data(), q.data(), rows, cols, 0,
                            format, -1, dtype);
        std::vector<float> amaxGot(rows, -1.0f), scalesGot(rows, -1.0f);
        std::vector<uint8_t> qGot(n, 0xDD);
        gptrt_amax_quantize_rows(h, in, amaxGot.data(), scalesGot.data(),
                                 qGot.data(), rows, cols, format, -1, dtype,
                                 fp8Max, 1, powerOfTwo, 1e-12);
        ASSERT_FALSE(ctx.failed()) << ctx.error();
        EXPECT_EQ(std::memcmp(amaxGot.data(), amax.data(), 4 * rows), 0);
        EXPECT_EQ(std::memcmp(scalesGot.data(), scales.data(), 4 * rows), 0);
        EXPECT_EQ(qGot, q);
        EXPECT_TRUE(std::isnan(amaxGot[3]));
        EXPECT_EQ(amaxGot[5], 0.0f);
      }
  // The statistics slot: the same counts as quantize_rows records.
  std::vector<float> amax(rows), scales(rows);
  std::vector<uint8_t> q(n);
  ctx.beginFp8Stats(2);
  gptrt_amax_quantize_rows(h, x.data(), amax.data(), scales.data(), q.data(),
                           rows, cols, GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32,
                           448.0, 0, 0, 1e-12);
  gptrt_quantize_rows(h, x.data(), scales.data(), q.data(), rows, cols, 0,
                      GPTRT_FP8_E4M3, 1, GPTRT_DTYPE_F32);
  ctx.endFp8Stats();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(ctx.fp8Stats()[0].elements, n);
  expectSameCastStats(ctx.fp8Stats()[0], ctx.fp8Stats()[1]);
  gptrt_amax_quantize_rows(h, x.data(), amax.data(), scales.data(), q.data(),
                           -1, cols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, 448.0,
                           0, 0, 1e-12);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("gptrt_amax_quantize_rows"));
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("rows"));
  ctx.clearError();
  gptrt_amax_quantize_rows(h, x.data(), amax.data(), scales.data(), q.data(),
                           rows, cols, 9, -1, GPTRT_DTYPE_F32, 448.0, 0, 0,
                           1e-12);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("format"));
  ctx.clearError();
}

// rt-fuse-cast-scale's rowwise form: row_scales then the transposed cast,
// in one call, bit for bit the two (scales per column and per row, a NaN
// and a zero amax, bf16 storage, E4M3 and E5M2, power-of-two scales or
// not), the cast's statistics as quantize_rows_transposed records them.
TEST_F(AbiFp8Test, ScaleQuantizeRowsTransposedIsRowScalesThenTheCast) {
  const int64_t rows = 37, cols = 45, n = rows * cols;
  std::vector<float> x = randomF(n, 83, -30.0, 30.0);
  const std::vector<uint16_t> x16 = bf16Codes(x);
  for (int64_t alongCols : {1, 0})
    for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16})
      for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2})
        for (int64_t powerOfTwo : {0, 1}) {
          SCOPED_TRACE("along_cols " + std::to_string(alongCols) + ", dtype " +
                       std::to_string(dtype) + ", format " +
                       std::to_string(format) + ", power_of_two " +
                       std::to_string(powerOfTwo));
          const void *in = dtype == GPTRT_DTYPE_F32
                               ? static_cast<const void *>(x.data())
                               : static_cast<const void *>(x16.data());
          const int64_t count = alongCols ? cols : rows;
          std::vector<float> amax(count);
          gptrt_amax_rows(h, in, amax.data(), rows, cols, alongCols, dtype);
          amax[2] = NAN;
          amax[4] = 0.0f;
          const double fp8Max = format == GPTRT_FP8_E4M3 ? 448.0 : 57344.0;
          std::vector<float> scales(count);
          std::vector<uint8_t> q(n);
          gptrt_row_scales(h, amax.data(), scales.data(), count, fp8Max, 1,
                           powerOfTwo, 1e-12);
          gptrt_quantize_rows_transposed(h, in, scales.data(), q.data(), rows,
                                         cols, alongCols, format, -1, dtype);
          std::vector<float> scalesGot(count, -1.0f);
          std::vector<uint8_t> qGot(n, 0xDD);
          gptrt_scale_quantize_rows_transposed(
              h, in, amax.data(), qGot.data(), scalesGot.data(), rows, cols,
              alongCols, format, -1, dtype, fp8Max, 1, powerOfTwo, 1e-12);
          ASSERT_FALSE(ctx.failed()) << ctx.error();
          EXPECT_EQ(std::memcmp(scalesGot.data(), scales.data(), 4 * count), 0);
          EXPECT_EQ(qGot, q);
        }
  // The statistics slot: the same counts as the cast alone records.
  std::vector<float> amax(cols), scales(cols);
  std::vector<uint8_t> q(n);
  gptrt_amax_rows(h, x.data(), amax.data(), rows, cols, 1, GPTRT_DTYPE_F32);
  ctx.beginFp8Stats(2);
  gptrt_scale_quantize_rows_transposed(
      h, x.data(), amax.data(), q.data(), scales.data(), rows, cols, 1,
      GPTRT_FP8_E5M2, 0, GPTRT_DTYPE_F32, 57344.0, 0, 0, 1e-12);
  gptrt_quantize_rows_transposed(h, x.data(), scales.data(), q.data(), rows,
                                 cols, 1, GPTRT_FP8_E5M2, 1, GPTRT_DTYPE_F32);
  ctx.endFp8Stats();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(ctx.fp8Stats()[0].elements, n);
  expectSameCastStats(ctx.fp8Stats()[0], ctx.fp8Stats()[1]);
  gptrt_scale_quantize_rows_transposed(
      h, x.data(), amax.data(), q.data(), scales.data(), rows, cols, 2,
      GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, 448.0, 0, 0, 1e-12);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("gptrt_scale_quantize_rows_transposed"));
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("along_cols"));
  ctx.clearError();
  gptrt_scale_quantize_rows_transposed(
      h, x.data(), amax.data(), q.data(), scales.data(), rows, -3, 1,
      GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, 448.0, 0, 0, 1e-12);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("cols"));
  ctx.clearError();
}

// The rowwise transposed casts' _bgrad forms (rt-fuse-dual-cast with the
// bias gradient): the codes and scales of the cast without it, and db bit
// for bit gptrt_reduce_rows of x -- f32, bf16 and accumulated into f32 --
// for scales per column and per row, f32 and bf16 x; a bad db_dtype is
// named.
TEST_F(AbiFp8Test, RowwiseTransposedCastsWithBiasGradientAddReduceRows) {
  const int64_t rows = 70, cols = 45, n = rows * cols;
  std::vector<float> x = randomF(n, 89, -30.0, 30.0);
  const std::vector<uint16_t> x16 = bf16Codes(x);
  const std::vector<float> start = randomF(cols, 97, -1.0, 1.0);
  for (int64_t alongCols : {1, 0})
    for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16})
      for (int64_t dbDtype :
           {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE}) {
        SCOPED_TRACE("along_cols " + std::to_string(alongCols) + ", dtype " +
                     std::to_string(dtype) + ", db_dtype " +
                     std::to_string(dbDtype));
        const void *in = dtype == GPTRT_DTYPE_F32
                             ? static_cast<const void *>(x.data())
                             : static_cast<const void *>(x16.data());
        const int64_t count = alongCols ? cols : rows;
        std::vector<float> amax(count);
        gptrt_amax_rows(h, in, amax.data(), rows, cols, alongCols, dtype);
        // The reference: scales, codes and the bias gradient, three calls.
        std::vector<float> scales(count);
        gptrt_row_scales(h, amax.data(), scales.data(), count, 57344.0, 0, 1,
                         1e-12);
        std::vector<uint8_t> q(n);
        gptrt_quantize_rows_transposed(h, in, scales.data(), q.data(), rows,
                                       cols, alongCols, GPTRT_FP8_E5M2, -1,
                                       dtype);
        // db: cols floats (f32, accumulated) or bf16 codes, in 4 bytes each.
        std::vector<float> db = start, dbGot = start, dbScaled = start;
        gptrt_reduce_rows(h, in, db.data(), rows, cols, dtype, dbDtype);
        std::vector<uint8_t> qGot(n, 0xDD), qScaled(n, 0xDD);
        gptrt_quantize_rows_transposed_bgrad(
            h, in, scales.data(), qGot.data(), dbGot.data(), rows, cols,
            alongCols, GPTRT_FP8_E5M2, -1, dtype, dbDtype);
        std::vector<float> scalesGot(count, -1.0f);
        gptrt_scale_quantize_rows_transposed_bgrad(
            h, in, amax.data(), qScaled.data(), dbScaled.data(),
            scalesGot.data(), rows, cols, alongCols, GPTRT_FP8_E5M2, -1, dtype,
            dbDtype, 57344.0, 0, 1, 1e-12);
        ASSERT_FALSE(ctx.failed()) << ctx.error();
        EXPECT_EQ(qGot, q);
        EXPECT_EQ(qScaled, q);
        EXPECT_EQ(std::memcmp(scalesGot.data(), scales.data(), 4 * count), 0);
        EXPECT_EQ(std::memcmp(dbGot.data(), db.data(), 4 * cols), 0);
        EXPECT_EQ(std::memcmp(dbScaled.data(), db.data(), 4 * cols), 0);
      }
  std::vector<float> scales(cols, 1.0f), db(cols);
  std::vector<uint8_t> q(n);
  gptrt_quantize_rows_transposed_bgrad(h, x.data(), scales.data(), q.data(),
                                       db.data(), rows, cols, 1, GPTRT_FP8_E4M3,
                                       -1, GPTRT_DTYPE_F32, 9);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("gptrt_quantize_rows_transposed_bgrad"));
  ctx.clearError();
}

TEST_F(AbiFp8Test, DualQuantizeWritesBothLayoutsAndBothStatistics) {
  // rt-fuse-dual-cast's kernel: the row-major and the transposed cast of
  // one tensor, bit for bit those of the two kernels, each recording its
  // own statistics slot.
  const int64_t rows = 21, cols = 34;
  std::vector<float> x = randomF(rows * cols, 61, -40.0, 40.0);
  x[7] = 1e6f;  // saturates
  x[8] = 1e-9f; // underflows
  const std::vector<uint16_t> x16 = bf16Codes(x);
  const float scale = 3.5f;
  std::vector<uint8_t> q(x.size()), qT(x.size()), wantQ(x.size()),
      wantQT(x.size());
  ctx.beginFp8Stats(4);
  gptrt_quantize_fp8(h, x16.data(), &scale, wantQ.data(), rows * cols,
                     GPTRT_FP8_E5M2, 0, GPTRT_DTYPE_BF16);
  gptrt_quantize_fp8_transposed(h, x16.data(), &scale, wantQT.data(), rows,
                                cols, GPTRT_FP8_E5M2, 1, GPTRT_DTYPE_BF16);
  gptrt_quantize_fp8_dual(h, x16.data(), &scale, q.data(), qT.data(), rows,
                          cols, GPTRT_FP8_E5M2, 2, 3, GPTRT_DTYPE_BF16);
  ctx.endFp8Stats();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(q, wantQ);
  EXPECT_EQ(qT, wantQT);
  for (int slot : {2, 3}) {
    const Fp8CastStats &got = ctx.fp8Stats()[slot], &want = ctx.fp8Stats()[0];
    EXPECT_EQ(got.amax, want.amax) << slot;
    EXPECT_EQ(got.underflow, want.underflow) << slot;
    EXPECT_EQ(got.saturated, want.saturated) << slot;
    EXPECT_EQ(got.elements, rows * cols) << slot;
  }
  EXPECT_GT(ctx.fp8Stats()[0].saturated, 0);
  EXPECT_GT(ctx.fp8Stats()[0].underflow, 0);

  // _bgrad: the same codes, and gptrt_reduce_rows of x, bf16 and f32, on a
  // gradient taller than one 32-row chunk.
  const int64_t tall = 100;
  std::vector<uint16_t> t16(tall * cols);
  std::vector<float> t = randomF(tall * cols, 62, -4.0, 4.0);
  for (size_t i = 0; i < t.size(); ++i)
    t16[i] = cpu::floatToBf16(t[i]);
  std::vector<uint8_t> tq(t.size()), tqT(t.size()), bq(t.size()), bqT(t.size());
  gptrt_quantize_fp8_dual(h, t16.data(), &scale, tq.data(), tqT.data(), tall,
                          cols, GPTRT_FP8_E5M2, -1, -1, GPTRT_DTYPE_BF16);
  for (int64_t dbDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    std::vector<float> db(cols, NAN), wantDb(cols, NAN);
    gptrt_quantize_fp8_dual_bgrad(h, t16.data(), &scale, bq.data(), bqT.data(),
                                  db.data(), tall, cols, GPTRT_FP8_E5M2, -1, -1,
                                  GPTRT_DTYPE_BF16, dbDtype);
    gptrt_reduce_rows(h, t16.data(), wantDb.data(), tall, cols,
                      GPTRT_DTYPE_BF16, dbDtype);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(bq, tq);
    EXPECT_EQ(bqT, tqT);
    EXPECT_EQ(0, std::memcmp(db.data(), wantDb.data(),
                             dbDtype == GPTRT_DTYPE_F32 ? cols * 4 : cols * 2))
        << "db dtype " << dbDtype;
    // The transposed cast alone with the bias gradient.
    std::vector<float> tdb(cols, NAN);
    std::vector<uint8_t> tbqT(t.size());
    gptrt_quantize_fp8_transposed_bgrad(h, t16.data(), &scale, tbqT.data(),
                                        tdb.data(), tall, cols, GPTRT_FP8_E5M2,
                                        -1, GPTRT_DTYPE_BF16, dbDtype);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(tbqT, tqT);
    EXPECT_EQ(0, std::memcmp(tdb.data(), wantDb.data(),
                             dbDtype == GPTRT_DTYPE_F32 ? cols * 4 : cols * 2))
        << "transposed, db dtype " << dbDtype;
  }
}

TEST_F(AbiFp8Test, GemmFp8BiasIsTheGemmThenTheBiasAdd) {
  // rt-fuse-gemm-epilogue's FP8 kernel: on the CPU bit for bit the two
  // kernels it replaces, in f32 and in bf16 (rounded twice, as they do),
  // over two contiguous batches.
  const int64_t batch = 2, m = 3, n = 16, k = 32;
  std::vector<float> xa = randomF(batch * m * k, 51, -2, 2),
                     xb = randomF(n * k, 52, -2, 2),
                     bias = randomF(n, 53, -1, 1);
  std::vector<uint8_t> a(xa.size()), b(xb.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = cpu::floatToE4M3(xa[i] * 64.0f);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = cpu::floatToE5M2(xb[i] * 8.0f);
  const float sa = 64.0f, sb = 8.0f;
  const int64_t count = batch * m * n;
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    const size_t bytes = count * (dtype == GPTRT_DTYPE_F32 ? 4 : 2);
    std::vector<unsigned char> product(bytes), want(bytes, 0xEE),
        got(bytes, 0xDD);
    const gptrt_gemm_desc d = fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, m * n,
                                      GPTRT_FP8_E4M3, GPTRT_FP8_E5M2, 1, dtype);
    gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
               product.data(), nullptr, nullptr, nullptr, nullptr, &d, nullptr);
    gptrt_add(h, product.data(), bias.data(), nullptr, want.data(), nullptr,
              nullptr, batch * m, n, 1, dtype, GPTRT_DTYPE_F32, dtype, nullptr);
    gptrt_gemm(h, a.data(), b.data(), &sa, &sb, bias.data(), nullptr, nullptr,
               got.data(), nullptr, nullptr, nullptr, nullptr, &d, nullptr);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(got, want) << "dtype " << dtype;
    EXPECT_NE(got, product) << "the bias was added";

    // The rowwise form, a scale per row of a and per column of b.
    std::vector<float> rowScales = randomF(batch * m, 54, 16, 64),
                       colScales = randomF(n, 55, 4, 8);
    std::vector<unsigned char> rowProduct(bytes), rowWant(bytes, 0xEE),
        rowGot(bytes, 0xDD);
    const gptrt_gemm_desc rowwise =
        fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, 0, m * n, GPTRT_FP8_E4M3,
                       GPTRT_FP8_E5M2, 1, 1, 1, dtype);
    gptrt_gemm(h, a.data(), b.data(), rowScales.data(), colScales.data(),
               nullptr, nullptr, nullptr, rowProduct.data(), nullptr, nullptr,
               nullptr, nullptr, &rowwise, nullptr);
    gptrt_add(h, rowProduct.data(), bias.data(), nullptr, rowWant.data(),
              nullptr, nullptr, batch * m, n, 1, dtype, GPTRT_DTYPE_F32, dtype,
              nullptr);
    gptrt_gemm(h, a.data(), b.data(), rowScales.data(), colScales.data(),
               bias.data(), nullptr, nullptr, rowGot.data(), nullptr, nullptr,
               nullptr, nullptr, &rowwise, nullptr);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(rowGot, rowWant) << "rowwise, dtype " << dtype;
    EXPECT_NE(rowGot, rowProduct) << "the bias was added (rowwise)";
  }
  std::vector<float> c(count);
  const gptrt_gemm_desc strided =
      fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, m * n + 1, GPTRT_FP8_E4M3,
              GPTRT_FP8_E5M2, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, bias.data(), nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &strided, nullptr);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("stride_c 49, expected m * n = 48"));
  ctx.clearError();
}

TEST_F(AbiFp8Test, TransposedRowwiseCastKeepsEachRowsScale) {
  // fp8-transpose-casts on a rowwise cast: the codes of quantize_rows,
  // at q[c * rows + r], along rows and along columns, f32 and bf16.
  const int64_t rows = 9, cols = 13;
  std::vector<float> x = randomF(rows * cols, 81, -20.0, 20.0);
  const std::vector<uint16_t> x16 = bf16Codes(x);
  std::vector<float> byRow = randomF(rows, 82, 1.0, 30.0),
                     byCol = randomF(cols, 83, 1.0, 30.0);
  for (int64_t along : {0, 1})
    for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      const float *scales = along ? byCol.data() : byRow.data();
      const void *in = dtype == GPTRT_DTYPE_F32
                           ? static_cast<const void *>(x.data())
                           : static_cast<const void *>(x16.data());
      std::vector<uint8_t> plain(x.size()), transposed(x.size(), 0xAA);
      gptrt_quantize_rows(h, in, scales, plain.data(), rows, cols, along,
                          GPTRT_FP8_E4M3, -1, dtype);
      gptrt_quantize_rows_transposed(h, in, scales, transposed.data(), rows,
                                     cols, along, GPTRT_FP8_E4M3, -1, dtype);
      ASSERT_FALSE(ctx.failed()) << ctx.error();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(transposed[c * rows + r], plain[r * cols + c])
              << "along " << along << " dtype " << dtype << " at " << r << ", "
              << c;
    }
}

TEST_F(AbiFp8Test, GemmFp8RowwiseDividesEachRowAndColumn) {
  // Two batches of c[i, j] = sum_p a[i, p] b[j, p], a per-row scales over
  // all 2 x m rows, b per-column ones; then a scalar a scale.
  const int64_t batch = 2, m = 3, n = 4, k = 16;
  std::vector<uint8_t> a(batch * m * k), b(batch * n * k);
  std::vector<float> xa = randomF(a.size(), 31, -2, 2), xb = randomF(b.size(), 32, -2, 2);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = cpu::floatToE4M3(xa[i] * 32.0f);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = cpu::floatToE4M3(xb[i] * 32.0f);
  std::vector<float> sa = {1, 2, 4, 8, 16, 32}, sb = {0.5f, 1, 2, 4};
  std::vector<float> c(batch * m * n);
  const gptrt_gemm_desc rowwise =
      fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, n * k, m * n, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), sa.data(), sb.data(), nullptr, nullptr,
             nullptr, c.data(), nullptr, nullptr, nullptr, nullptr, &rowwise,
             nullptr);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t p = 0; p < k; ++p)
          want += double(cpu::e4m3ToFloat(a[(t * m + i) * k + p])) *
                  cpu::e4m3ToFloat(b[(t * n + j) * k + p]);
        want /= double(sa[t * m + i]) * sb[j];
        EXPECT_NEAR(c[(t * m + i) * n + j], want, 1e-5 * (1 + std::fabs(want)));
      }
  float scalar = 4.0f;
  std::vector<float> c2(c.size());
  const gptrt_gemm_desc columnsOnly =
      fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, n * k, m * n, GPTRT_FP8_E4M3,
                     GPTRT_FP8_E4M3, 0, 0, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &scalar, sb.data(), nullptr, nullptr,
             nullptr, c2.data(), nullptr, nullptr, nullptr, nullptr,
             &columnsOnly, nullptr);
  for (int64_t r = 0; r < batch * m; ++r)
    for (int64_t j = 0; j < n; ++j)
      EXPECT_NEAR(c2[r * n + j] * scalar, c[r * n + j] * sa[r],
                  1e-5 * (1 + std::fabs(c[r * n + j] * sa[r])));
}

// rt-fuse-grad-accumulation's FP8 GEMMs (c_dtype GPTRT_DTYPE_F32_ACCUMULATE):
// c += the f32 result of the FP8 GEMM (tensorwise or rowwise) with an f32
// c, bit for bit.
TEST_F(AbiFp8Test, AccumulatingFp8GemmsAddTheF32Result) {
  const int64_t batch = 2, m = 16, n = 32, k = 48, count = batch * m * n;
  std::vector<uint8_t> a(batch * m * k), b(n * k);
  std::vector<float> xa = randomF(a.size(), 41, -2, 2),
                     xb = randomF(b.size(), 42, -2, 2);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = cpu::floatToE5M2(xa[i] * 64.0f);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = cpu::floatToE4M3(xb[i] * 32.0f);
  const std::vector<float> grad = randomF(count, 43, -1, 1);
  auto expectAdds = [&](const std::vector<float> &product,
                        const std::vector<float> &got, const char *what) {
    std::vector<float> want = grad;
    for (int64_t i = 0; i < count; ++i)
      want[i] += product[i];
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), count * sizeof(float)))
        << what;
  };
  float sa = 64.0f, sb = 32.0f;
  std::vector<float> product(count), c = grad;
  const gptrt_gemm_desc toF32 =
      fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, m * n, GPTRT_FP8_E5M2,
              GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             product.data(), nullptr, nullptr, nullptr, nullptr, &toF32,
             nullptr);
  gptrt_gemm_desc accumulate = toF32;
  accumulate.c_dtype = GPTRT_DTYPE_F32_ACCUMULATE;
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &accumulate,
             nullptr);
  expectAdds(product, c, "fp8 gemm, c_dtype accumulate");

  std::vector<float> rowScales = randomF(batch * m, 44, 1, 64),
                     colScales = randomF(n, 45, 1, 64);
  std::vector<float> rowProduct(count), rowC = grad;
  const gptrt_gemm_desc rowwiseToF32 =
      fp8RowwiseGemm(batch, m, n, k, 0, 1, m * k, 0, m * n, GPTRT_FP8_E5M2,
                     GPTRT_FP8_E4M3, 0, 1, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), rowScales.data(), colScales.data(), nullptr,
             nullptr, nullptr, rowProduct.data(), nullptr, nullptr, nullptr,
             nullptr, &rowwiseToF32, nullptr);
  gptrt_gemm_desc rowwiseAccumulate = rowwiseToF32;
  rowwiseAccumulate.c_dtype = GPTRT_DTYPE_F32_ACCUMULATE;
  gptrt_gemm(h, a.data(), b.data(), rowScales.data(), colScales.data(), nullptr,
             nullptr, nullptr, rowC.data(), nullptr, nullptr, nullptr, nullptr,
             &rowwiseAccumulate, nullptr);
  expectAdds(rowProduct, rowC, "rowwise fp8 gemm, c_dtype accumulate");

  // Unknown operand dtypes are errors, as for the GEMM into a stored c,
  // and the gradient is left alone.
  std::vector<float> untouched = grad;
  gptrt_gemm_desc unknown = accumulate;
  unknown.a_dtype = 7;
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             untouched.data(), nullptr, nullptr, nullptr, nullptr, &unknown,
             nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("a_dtype 7, b_dtype 4"));
  EXPECT_EQ(untouched, grad);
  ctx.clearError();
}

// The bias gradient of the dual cast (and of the bf16 weight-gradient
// GEMM) added into its f32 gradient with GPTRT_DTYPE_F32_ACCUMULATE: the
// same codes, and db += the sums the f32 db would hold, bit for bit.
TEST_F(AbiFp8Test, BiasGradientsAccumulateWithDtype257) {
  const int64_t rows = 70, cols = 16;
  std::vector<float> x = randomF(rows * cols, 61, -3, 3);
  std::vector<float> grad = randomF(cols, 62, -1, 1);
  const float scale = 16.0f;
  std::vector<uint8_t> q(x.size()), qT(x.size()), wantQ(x.size()),
      wantQT(x.size());
  std::vector<float> sums(cols), got = grad;
  gptrt_quantize_fp8_dual_bgrad(
      h, x.data(), &scale, wantQ.data(), wantQT.data(), sums.data(), rows, cols,
      GPTRT_FP8_E5M2, -1, -1, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32);
  gptrt_quantize_fp8_dual_bgrad(h, x.data(), &scale, q.data(), qT.data(),
                                got.data(), rows, cols, GPTRT_FP8_E5M2, -1, -1,
                                GPTRT_DTYPE_F32, GPTRT_DTYPE_F32_ACCUMULATE);
  EXPECT_EQ(q, wantQ);
  EXPECT_EQ(qT, wantQT);
  std::vector<float> want = grad;
  for (int64_t j = 0; j < cols; ++j)
    want[j] += sums[j];
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), cols * sizeof(float)));

  // The bf16 weight-gradient GEMM with dbias, c accumulating, with an
  // accumulating db too.
  const int64_t m = cols, n = 8, k = rows;
  std::vector<uint16_t> dy(k * m), act(k * n);
  for (size_t i = 0; i < dy.size(); ++i)
    dy[i] = cpu::floatToBf16(x[i]);
  for (size_t i = 0; i < act.size(); ++i)
    act[i] = cpu::floatToBf16(x[i] * 0.5f);
  std::vector<float> dw(m * n, 0.0f), dbSums(m), dwWant(m * n, 0.0f),
      dbGot = grad;
  gptrt_gemm_desc dbToF32 =
      bf16Gemm(1, m, n, k, 1, 0, 0, 0, 0, GPTRT_DTYPE_F32_ACCUMULATE);
  dbToF32.dbias_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, dy.data(), act.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, dwWant.data(), nullptr, dbSums.data(), nullptr, nullptr,
             &dbToF32, nullptr);
  gptrt_gemm_desc dbAccumulates = dbToF32;
  dbAccumulates.dbias_dtype = GPTRT_DTYPE_F32_ACCUMULATE;
  gptrt_gemm(h, dy.data(), act.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, dw.data(), nullptr, dbGot.data(), nullptr, nullptr,
             &dbAccumulates, nullptr);
  EXPECT_EQ(dw, dwWant);
  want = grad;
  for (int64_t j = 0; j < m; ++j)
    want[j] += dbSums[j];
  EXPECT_EQ(0, std::memcmp(dbGot.data(), want.data(), m * sizeof(float)));
}

// fast_accum only changes how a GPU accumulates: the CPU's emulation sums
// in f32 either way, so both give the same bits; other values are refused.
TEST_F(AbiFp8Test, FastAccumulationIsAFlagTheCpuAccumulatesAlike) {
  const int64_t m = 16, n = 32, k = 48;
  std::vector<uint8_t> a(m * k), b(n * k);
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (uint8_t &q : a)
    q = cpu::floatToE4M3(d(rng) * 64.0f);
  for (uint8_t &q : b)
    q = cpu::floatToE4M3(d(rng) * 64.0f);
  float sa = 64.0f, sb = 64.0f;
  std::vector<float> precise = poisoned<float>(m * n),
                     fast = poisoned<float>(m * n);
  for (auto [fastAccum, c] : {std::pair{0, &precise}, std::pair{1, &fast}}) {
    const gptrt_gemm_desc desc =
        fp8Gemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3,
                fastAccum, GPTRT_DTYPE_F32);
    gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
               c->data(), nullptr, nullptr, nullptr, nullptr, &desc, nullptr);
  }
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(std::memcmp(precise.data(), fast.data(), m * n * sizeof(float)), 0);
  EXPECT_FALSE(std::isnan(fast[0]));

  const gptrt_gemm_desc two = fp8Gemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3,
                                      GPTRT_FP8_E4M3, 2, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             fast.data(), nullptr, nullptr, nullptr, nullptr, &two, nullptr);
  ASSERT_TRUE(ctx.failed());
  EXPECT_NE(ctx.error().find("fast_accum 2, expected 0 or 1"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
}

// The FP8 GEMM touches only its batches' own elements: an f32 c's gaps
// between strided batches keep their bits, no batches write nothing, and
// an empty sum (k = 0) is zeros.
TEST_F(AbiFp8Test, GemmFp8WritesOnlyItsBatchesElements) {
  const int64_t batch = 2, m = 2, n = 16, k = 16, strideC = m * n + 5;
  std::vector<float> xa = randomF(batch * m * k, 61, -2, 2),
                     xb = randomF(n * k, 62, -2, 2);
  std::vector<uint8_t> a(xa.size()), b(xb.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = cpu::floatToE4M3(xa[i] * 32.0f);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = cpu::floatToE4M3(xb[i] * 16.0f);
  const float sa = 32.0f, sb = 16.0f;
  const float sentinel = 1234.5f;
  std::vector<float> c((batch - 1) * strideC + m * n, sentinel);
  const gptrt_gemm_desc strided =
      fp8Gemm(batch, m, n, k, 0, 1, m * k, 0, strideC, GPTRT_FP8_E4M3,
              GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &strided, nullptr);
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  for (int64_t i = m * n; i < strideC; ++i)
    EXPECT_EQ(c[i], sentinel) << "gap element " << i;
  for (int64_t i : {int64_t(0), m * n - 1, strideC, strideC + m * n - 1})
    EXPECT_NE(c[i], sentinel) << "batch element " << i;

  std::vector<float> untouched(8, sentinel);
  gptrt_gemm_desc noBatches = strided;
  noBatches.batch = 0;
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             untouched.data(), nullptr, nullptr, nullptr, nullptr, &noBatches,
             nullptr);
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_THAT(untouched, ::testing::Each(sentinel)) << "batch 0";

  std::vector<float> empty(m * n, sentinel);
  const gptrt_gemm_desc emptySum =
      fp8Gemm(1, m, n, 0, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3, 0,
              GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             empty.data(), nullptr, nullptr, nullptr, nullptr, &emptySum,
             nullptr);
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_THAT(empty, ::testing::Each(0.0f)) << "k = 0";

  gptrt_gemm_desc negative = strided;
  negative.batch = -1;
  gptrt_gemm(h, a.data(), b.data(), &sa, &sb, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &negative, nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("batch = -1, expected >= 0"));
  ctx.clearError();
}

// A null buffer a call needs (an FP8 GEMM's scales, an epilogue's amax) is
// an error naming it, on the CPU as on a GPU, never a crash or a silently
// skipped reduction.
TEST_F(AbiFp8Test, NullScalesAndAmaxAreErrors) {
  const int64_t m = 16, n = 16, k = 16;
  std::vector<uint8_t> a(m * k, 0x38), b(n * k, 0x38); // E4M3 1.0
  const float one = 1.0f;
  std::vector<float> c(m * n, 0.0f);
  const gptrt_gemm_desc tensorwise =
      fp8Gemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3, 0,
              GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), &one, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &tensorwise,
             nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("scale_b is null"));
  ctx.clearError();
  const gptrt_gemm_desc rowwise =
      fp8RowwiseGemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3,
                     0, 1, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), nullptr, &one, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &rowwise, nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("scale_a is null"));
  ctx.clearError();
  const gptrt_gemm_desc f32 = gemmDesc(1, m, n, k, 0, 1, 0, 0, 0);
  std::vector<float> x32(m * k, 1.0f);
  gptrt_gemm(h, x32.data(), x32.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, c.data(), nullptr, nullptr, nullptr, nullptr, &f32,
             epilogue(m, n, GPTRT_DTYPE_F32));
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("gptrt_gemm: an epilogue descriptor "
                                   "without its amax buffer"));
  ctx.clearError();

  std::vector<float> x = randomF(m * n, 63, -1, 1), y(m * n);
  gptrt_amax(h, x.data(), nullptr, m * n, GPTRT_DTYPE_F32);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("amax is null"));
  ctx.clearError();
  gptrt_gelu_fwd(h, x.data(), nullptr, y.data(), nullptr, nullptr, nullptr,
                 m * n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 epilogue(m, n, GPTRT_DTYPE_F32));
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                               "an epilogue descriptor without its amax buffer"));
  ctx.clearError();
  std::vector<int32_t> targets(m, 1);
  std::vector<float> lse(m), dlogits(m * n);
  float loss = 0;
  gptrt_cross_entropy_fwd_bwd(h, &one, x.data(), targets.data(), &loss,
                              lse.data(), dlogits.data(), nullptr, m, n, n, -1,
                              GPTRT_DTYPE_F32, epilogue(m, n, GPTRT_DTYPE_F32));
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                               "an epilogue descriptor without its amax buffer"));
  ctx.clearError();
}

// rt-fuse-cast-scale's casts are scale_from_amax followed by the cast:
// the same scale, codes, bias gradient and statistics bit for bit, for
// each form, both formats, a margin and power-of-two scales; the scale a
// NaN amax makes is NaN as before. A null amax or scale is an error
// naming it.
TEST_F(AbiFp8Test, ScaleQuantizeIsScaleFromAmaxThenTheCast) {
  const int64_t rows = 48, cols = 40, n = rows * cols;
  const std::vector<float> x = randomF(n, 91, -300.0, 300.0);
  std::vector<uint16_t> xb(n);
  for (int64_t i = 0; i < n; ++i)
    xb[i] = cpu::floatToBf16(x[i]);
  struct Recipe {
    int64_t format;
    double fp8Max;
    int64_t margin, powerOfTwo;
  };
  for (Recipe r : {Recipe{GPTRT_FP8_E4M3, 448.0, 0, 0},
                   Recipe{GPTRT_FP8_E5M2, 57344.0, 1, 1}})
    for (float amax : {250.0f, 1e-20f, std::nanf("")}) {
      SCOPED_TRACE("format " + std::to_string(r.format) + ", amax " +
                   std::to_string(amax));
      ctx.beginFp8Stats(4);
      float want = -1, got = -1;
      std::vector<uint8_t> q(n, 0xEE), qGot(n, 0xDD), qT(n, 0xEE),
          qTGot(n, 0xDD);
      gptrt_scale_from_amax(h, &amax, &want, r.fp8Max, r.margin, r.powerOfTwo,
                            1e-12);
      gptrt_quantize_fp8(h, x.data(), &want, q.data(), n, r.format, 0,
                         GPTRT_DTYPE_F32);
      gptrt_scale_quantize_fp8(h, x.data(), &amax, qGot.data(), &got, n,
                               r.format, 1, GPTRT_DTYPE_F32, r.fp8Max, r.margin,
                               r.powerOfTwo, 1e-12);
      EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << got << " vs " << want;
      EXPECT_EQ(qGot, q);

      std::vector<float> db(cols, 7.0f), dbGot(cols, 7.0f);
      float got2 = -1;
      gptrt_quantize_fp8_dual_bgrad(
          h, xb.data(), &want, q.data(), qT.data(), db.data(), rows, cols,
          r.format, 0, 2, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE);
      gptrt_scale_quantize_fp8_dual_bgrad(
          h, xb.data(), &amax, qGot.data(), qTGot.data(), dbGot.data(), &got2,
          rows, cols, r.format, 1, 3, GPTRT_DTYPE_BF16,
          GPTRT_DTYPE_F32_ACCUMULATE, r.fp8Max, r.margin, r.powerOfTwo, 1e-12);
      EXPECT_EQ(std::memcmp(&got2, &want, 4), 0);
      EXPECT_EQ(qGot, q);
      EXPECT_EQ(qTGot, qT);
      EXPECT_EQ(dbGot, db);

      std::fill(qGot.begin(), qGot.end(), 0xDD);
      std::fill(qTGot.begin(), qTGot.end(), 0xDD);
      float got3 = -1;
      gptrt_scale_quantize_fp8_dual(h, xb.data(), &amax, qGot.data(),
                                    qTGot.data(), &got3, rows, cols, r.format,
                                    -1, -1, GPTRT_DTYPE_BF16, r.fp8Max,
                                    r.margin, r.powerOfTwo, 1e-12);
      EXPECT_EQ(std::memcmp(&got3, &want, 4), 0);
      EXPECT_EQ(qGot, q);
      EXPECT_EQ(qTGot, qT);
      ctx.endFp8Stats();
      ASSERT_FALSE(ctx.failed()) << ctx.error();
      // Slots 0 and 2 were the unfused casts', 1 and 3 the fused ones'.
      const std::vector<Fp8CastStats> &stats = ctx.fp8Stats();
      for (int slot : {0, 2}) {
        EXPECT_EQ(stats[slot].elements, stats[slot + 1].elements);
        EXPECT_EQ(stats[slot].underflow, stats[slot + 1].underflow);
        EXPECT_EQ(stats[slot].saturated, stats[slot + 1].saturated);
        EXPECT_EQ(std::memcmp(&stats[slot].scale, &stats[slot + 1].scale, 4),
                  0);
      }
      EXPECT_GT(stats[1].elements, 0);
    }

  std::vector<uint8_t> q(n);
  float scale = 0, amax = 1;
  gptrt_scale_quantize_fp8(h, x.data(), nullptr, q.data(), &scale, n,
                           GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, 448.0, 0, 0,
                           1e-12);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("amax is null"));
  ctx.clearError();
  gptrt_scale_quantize_fp8_dual(h, x.data(), &amax, q.data(), q.data(), nullptr,
                                rows, cols, GPTRT_FP8_E4M3, -1, -1,
                                GPTRT_DTYPE_F32, 448.0, 0, 0, 1e-12);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("scale is null"));
  ctx.clearError();
}

// The delayed-scaling forms (state_): fp8_state_scale of the history, then
// the cast -- the same scale, codes and bias gradient bit for bit, for an
// empty history (scale 1), the history's max and its newest entry; a
// history_length below 1 is an error naming it.
TEST_F(AbiFp8Test, StateQuantizeIsTheStateScaleThenTheCast) {
  const int64_t rows = 40, cols = 24, n = rows * cols, length = 4;
  const std::vector<float> x = randomF(n, 17, -90.0, 90.0);
  const std::vector<std::vector<float>> histories = {{0, 0, 0, 0},
                                                     {3.0f, 120.0f, 7.5f, 0}};
  for (const std::vector<float> &history : histories)
    for (int64_t mostRecent : {0, 1}) {
      SCOPED_TRACE("history[1] " + std::to_string(history[1]) +
                   ", most_recent " + std::to_string(mostRecent));
      float want = -1, got = -1, gotT = -1, gotB = -1;
      gptrt_fp8_state_scale(h, history.data(), &want, length, 448.0, 0, 0,
                            1e-12, mostRecent);
      std::vector<uint8_t> q(n), qGot(n, 0xDD), qT(n), qTGot(n, 0xDD),
          qBGot(n, 0xDD);
      std::vector<float> db(cols), dbGot(cols, -3.0f);
      gptrt_quantize_fp8(h, x.data(), &want, q.data(), n, GPTRT_FP8_E4M3, -1,
                         GPTRT_DTYPE_F32);
      gptrt_quantize_fp8_transposed_bgrad(h, x.data(), &want, qT.data(),
                                          db.data(), rows, cols, GPTRT_FP8_E4M3,
                                          -1, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32);
      gptrt_state_quantize_fp8(h, x.data(), history.data(), qGot.data(), &got,
                               n, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, length,
                               448.0, 0, 0, 1e-12, mostRecent);
      gptrt_state_quantize_fp8_transposed(
          h, x.data(), history.data(), qTGot.data(), &gotT, rows, cols,
          GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, length, 448.0, 0, 0, 1e-12,
          mostRecent);
      gptrt_state_quantize_fp8_transposed_bgrad(
          h, x.data(), history.data(), qBGot.data(), dbGot.data(), &gotB, rows,
          cols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, length,
          448.0, 0, 0, 1e-12, mostRecent);
      // Both copies from one history (rt-fuse-delayed-dual-cast).
      float gotD = -1, gotDB = -1;
      std::vector<uint8_t> qDGot(n, 0xDD), qDTGot(n, 0xDD), qDBGot(n, 0xDD),
          qDBTGot(n, 0xDD);
      std::vector<float> dbDGot(cols, -3.0f);
      gptrt_state_quantize_fp8_dual(h, x.data(), history.data(), qDGot.data(),
                                    qDTGot.data(), &gotD, rows, cols,
                                    GPTRT_FP8_E4M3, -1, -1, GPTRT_DTYPE_F32,
                                    length, 448.0, 0, 0, 1e-12, mostRecent);
      gptrt_state_quantize_fp8_dual_bgrad(
          h, x.data(), history.data(), qDBGot.data(), qDBTGot.data(),
          dbDGot.data(), &gotDB, rows, cols, GPTRT_FP8_E4M3, -1, -1,
          GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, length, 448.0, 0, 0, 1e-12,
          mostRecent);
      ASSERT_FALSE(ctx.failed()) << ctx.error();
      for (float s : {got, gotT, gotB, gotD, gotDB})
        EXPECT_EQ(std::memcmp(&s, &want, 4), 0) << s << " vs " << want;
      EXPECT_EQ(qGot, q);
      EXPECT_EQ(qTGot, qT);
      EXPECT_EQ(qBGot, qT);
      EXPECT_EQ(dbGot, db);
      EXPECT_EQ(qDGot, q);
      EXPECT_EQ(qDTGot, qT);
      EXPECT_EQ(qDBGot, q);
      EXPECT_EQ(qDBTGot, qT);
      EXPECT_EQ(dbDGot, db);
    }
  std::vector<uint8_t> q(n);
  float scale = 0;
  gptrt_state_quantize_fp8(h, x.data(), histories[1].data(), q.data(), &scale,
                           n, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32, 0, 448.0, 0,
                           0, 1e-12, 0);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("history_length 0"));
  ctx.clearError();
  std::vector<uint8_t> qT(n);
  gptrt_state_quantize_fp8_dual(
      h, x.data(), histories[1].data(), q.data(), qT.data(), &scale, rows, cols,
      GPTRT_FP8_E4M3, -1, -1, GPTRT_DTYPE_F32, -2, 448.0, 0, 0, 1e-12, 0);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("gptrt_state_quantize_fp8_dual"));
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("history_length -2"));
  ctx.clearError();
}

TEST_F(AbiFp8Test, GemmRejectsUnknownOperandDtype) {
  uint8_t a = 0, b = 0;
  float s = 1, c = 0;
  gptrt_gemm_desc d = fp8Gemm(1, 1, 1, 1, 0, 0, 0, 0, 0, GPTRT_FP8_E4M3,
                              GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  d.a_dtype = 7;
  gptrt_gemm(h, &a, &b, &s, &s, nullptr, nullptr, nullptr, &c, nullptr, nullptr,
             nullptr, nullptr, &d, nullptr);
  ASSERT_TRUE(ctx.failed());
  EXPECT_NE(ctx.error().find("a_dtype 7, b_dtype 4: expected both f32 (1), "
                             "both bf16 (2), or FP8 codes for both (4 E4M3, 5 "
                             "E5M2)"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
}

} // namespace
} // namespace gptrt::test
