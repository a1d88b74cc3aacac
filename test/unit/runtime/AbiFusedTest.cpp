// The producers' FP8 output epilogue (the epilogue descriptor: amax, cast,
// dual cast): each call must write exactly what the producer without it
// followed by a separate gptrt_amax and gptrt_quantize_fp8 writes -- bit
// for bit, transposed copies included -- since fp8-fuse-amax/fp8-fuse-cast
// promise unchanged numerics.
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Fp8.h"
#include "test/unit/runtime/Epilogue.h"
#include "test/unit/runtime/Gemm.h"
#include "test/unit/runtime/TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace gptrt::test {
namespace {

class AbiFusedTest : public ::testing::Test {
protected:
  Context ctx{Device::Cpu, {}};
  gptrt_context *h = ctx.handle();
  void TearDown() override {
    EXPECT_FALSE(ctx.failed()) << "unexpected kernel error: " << ctx.error();
  }

  /// The unfused reference over an f32 output of rows x cols: amax, and the
  /// FP8 copy (transposed on request).
  void reference(const std::vector<float> &out, int64_t rows, int64_t cols,
                 float scale, int64_t format, bool transpose, float *amax,
                 std::vector<uint8_t> &q) {
    gptrt_amax(h, out.data(), amax, rows * cols, GPTRT_DTYPE_F32);
    std::vector<uint8_t> plain(out.size());
    gptrt_quantize_fp8(h, out.data(), &scale, plain.data(), rows * cols, format,
                       -1, GPTRT_DTYPE_F32);
    q.resize(out.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        q[transpose ? c * rows + r : r * cols + c] = plain[r * cols + c];
  }
};

std::vector<float> randomF(size_t n, uint64_t seed, double lo, double hi) {
  return convert<float>(randomVec(n, seed, lo, hi));
}

// A dual cast's statistics (slots 0 and 1, n values each) against those
// of the two separate casts (slots 2 and 3).
void expectStatsOfTheSeparateCasts(const std::vector<Fp8CastStats> &stats,
                                   int64_t n) {
  for (int slot : {0, 1}) {
    const Fp8CastStats &got = stats[slot], &want = stats[slot + 2];
    EXPECT_EQ(got.elements, n);
    EXPECT_EQ(got.amax, want.amax);
    EXPECT_EQ(got.scale, want.scale);
    EXPECT_EQ(got.underflow, want.underflow);
    EXPECT_EQ(got.saturated, want.saturated);
  }
}

TEST_F(AbiFusedTest, ConvertToBf16WithAmaxAndTransposedCast) {
  const int64_t rows = 6, cols = 10;
  std::vector<float> x = randomF(rows * cols, 3, -50.0, 50.0);
  x[7] = 1e-30f;  // underflows in E4M3 at this scale
  std::vector<uint16_t> stored(x.size()), storedRef(x.size());
  float amax = -1, amaxRef = -2, scale = 4.0f;
  std::vector<uint8_t> q(x.size()), qRef;
  gptrt_convert(h, x.data(), &scale, stored.data(), &amax, q.data(), x.size(),
                GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
                epilogue(rows, cols, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 1, -1));
  gptrt_convert(h, x.data(), nullptr, storedRef.data(), nullptr, nullptr,
                x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, nullptr);
  std::vector<float> wide(x.size());
  gptrt_convert(h, storedRef.data(), nullptr, wide.data(), nullptr, nullptr,
                x.size(), GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, nullptr);
  reference(wide, rows, cols, scale, GPTRT_FP8_E4M3, true, &amaxRef, qRef);
  EXPECT_EQ(stored, storedRef);
  EXPECT_EQ(amax, amaxRef);
  EXPECT_EQ(q, qRef);

  float amaxOnly = -1;
  gptrt_convert(h, x.data(), nullptr, stored.data(), &amaxOnly, nullptr,
                x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
                epilogue(rows, cols, GPTRT_DTYPE_BF16));
  EXPECT_EQ(amaxOnly, amaxRef);
}

TEST_F(AbiFusedTest, LayernormGeluAddGeluGradMatchTheirBaseKernels) {
  const int64_t rows = 8, cols = 16;
  std::vector<float> x = randomF(rows * cols, 5, -3.0, 3.0),
                     w = randomF(cols, 6, 0.5, 1.5), b = randomF(cols, 7, -1, 1);
  float scale = 30.0f;
  std::vector<float> out(x.size()), mean(rows), rstd(rows);
  std::vector<float> ref(x.size()), meanRef(rows), rstdRef(rows);
  std::vector<uint8_t> q(x.size()), qRef;
  float amax = -1, amaxRef = -2;

  gptrt_layernorm_fwd(
      h, x.data(), w.data(), b.data(), &scale, out.data(), mean.data(),
      rstd.data(), &amax, q.data(), nullptr, rows, cols, 1e-5, GPTRT_DTYPE_F32,
      GPTRT_DTYPE_F32,
      epilogue(rows, cols, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3, 0, -1));
  gptrt_layernorm_fwd(h, x.data(), w.data(), b.data(), nullptr, ref.data(),
                      meanRef.data(), rstdRef.data(), nullptr, nullptr, nullptr,
                      rows, cols, 1e-5, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      nullptr);
  reference(ref, rows, cols, scale, GPTRT_FP8_E4M3, false, &amaxRef, qRef);
  EXPECT_EQ(out, ref);
  EXPECT_EQ(mean, meanRef);
  EXPECT_EQ(amax, amaxRef);
  EXPECT_EQ(q, qRef);

  gptrt_gelu_fwd(h, x.data(), &scale, out.data(), &amax, q.data(), nullptr,
                 x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 epilogue(rows, cols, GPTRT_DTYPE_F32, GPTRT_FP8_E5M2, 1, -1));
  gptrt_gelu_fwd(h, x.data(), nullptr, ref.data(), nullptr, nullptr, nullptr,
                 x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, nullptr);
  reference(ref, rows, cols, scale, GPTRT_FP8_E5M2, true, &amaxRef, qRef);
  EXPECT_EQ(out, ref);
  EXPECT_EQ(amax, amaxRef);
  EXPECT_EQ(q, qRef);

  // Broadcast add of a bias row, amax only.
  gptrt_add(h, x.data(), b.data(), nullptr, out.data(), &amax, nullptr, rows,
            cols, 1, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
            epilogue(rows, cols, GPTRT_DTYPE_F32));
  gptrt_add(h, x.data(), b.data(), nullptr, ref.data(), nullptr, nullptr, rows,
            cols, 1, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
            nullptr);
  gptrt_amax(h, ref.data(), &amaxRef, ref.size(), GPTRT_DTYPE_F32);
  EXPECT_EQ(out, ref);
  EXPECT_EQ(amax, amaxRef);

  // The GELU gradient (the output gradient of mlp.fc), with its cast.
  std::vector<float> dy = randomF(x.size(), 8, -2.0, 2.0);
  gptrt_gelu_bwd(h, dy.data(), x.data(), &scale, out.data(), &amax, q.data(),
                 nullptr, nullptr, x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_F32,
                 epilogue(rows, cols, GPTRT_DTYPE_F32, GPTRT_FP8_E5M2, 0, -1));
  gptrt_gelu_bwd(h, dy.data(), x.data(), nullptr, ref.data(), nullptr, nullptr,
                 nullptr, nullptr, x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_F32, nullptr);
  reference(ref, rows, cols, scale, GPTRT_FP8_E5M2, false, &amaxRef, qRef);
  EXPECT_EQ(out, ref);
  EXPECT_EQ(amax, amaxRef);
  EXPECT_EQ(q, qRef);
  gptrt_gelu_bwd(h, dy.data(), x.data(), nullptr, out.data(), &amax, nullptr,
                 nullptr, nullptr, x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_F32, epilogue(rows, cols, GPTRT_DTYPE_F32));
  EXPECT_EQ(amax, amaxRef);
}

// rt-fuse-add-layernorm with the layernorm's FP8 epilogue: the residual
// sum (bf16, stored), then the layernorm of it with its amax and codes.
TEST_F(AbiFusedTest, AddLayernormTakesTheLayernormsEpilogue) {
  const int64_t rows = 8, cols = 16, n = rows * cols;
  std::vector<float> a = randomF(n, 11, -3.0, 3.0), b = randomF(n, 12, -1, 1),
                     w = randomF(cols, 13, 0.5, 1.5),
                     bias = randomF(cols, 14, -1, 1);
  float scale = 24.0f;
  std::vector<uint16_t> x(n), xRef(n);
  std::vector<float> y(n), yRef(n), mean(rows), meanRef(rows), rstd(rows),
      rstdRef(rows);
  gptrt_add_layernorm_fwd(h, a.data(), b.data(), w.data(), bias.data(), nullptr,
                          xRef.data(), yRef.data(), meanRef.data(),
                          rstdRef.data(), nullptr, nullptr, nullptr, rows, cols,
                          1e-5, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                          GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, nullptr);
  for (int64_t transpose : {0, 1}) {
    SCOPED_TRACE("transpose " + std::to_string(transpose));
    float amax = -1, amaxRef = -2;
    std::vector<uint8_t> q(n), qRef;
    gptrt_add_layernorm_fwd(
        h, a.data(), b.data(), w.data(), bias.data(), &scale, x.data(),
        y.data(), mean.data(), rstd.data(), &amax, q.data(), nullptr, rows,
        cols, 1e-5, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
        GPTRT_DTYPE_F32,
        epilogue(rows, cols, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3, transpose, -1));
    reference(yRef, rows, cols, scale, GPTRT_FP8_E4M3, transpose != 0, &amaxRef,
              qRef);
    EXPECT_EQ(x, xRef);
    EXPECT_EQ(y, yRef);
    EXPECT_EQ(mean, meanRef);
    EXPECT_EQ(rstd, rstdRef);
    EXPECT_EQ(amax, amaxRef);
    EXPECT_EQ(q, qRef);
  }
  float amax = -1, amaxRef = -2;
  gptrt_add_layernorm_fwd(h, a.data(), b.data(), w.data(), bias.data(), nullptr,
                          x.data(), y.data(), mean.data(), rstd.data(), &amax,
                          nullptr, nullptr, rows, cols, 1e-5, GPTRT_DTYPE_F32,
                          GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32,
                          epilogue(rows, cols, GPTRT_DTYPE_F32));
  gptrt_amax(h, yRef.data(), &amaxRef, n, GPTRT_DTYPE_F32);
  EXPECT_EQ(y, yRef);
  EXPECT_EQ(amax, amaxRef);
  EXPECT_GT(amax, 0.0f);
}

TEST_F(AbiFusedTest, GemmOutputsWithAmaxAndCast) {
  const int64_t m = 6, n = 5, k = 7;
  std::vector<float> a = randomF(m * k, 8, -1, 1), b = randomF(n * k, 9, -1, 1);
  std::vector<float> c(m * n), cRef(m * n);
  float amax = -1, amaxRef = -2, scale = 64.0f;
  std::vector<uint8_t> q(m * n), qRef;
  const gptrt_gemm_desc f32 = gemmDesc(1, m, n, k, 0, 1, 0, 0, 0);
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, &scale,
             c.data(), nullptr, nullptr, &amax, q.data(), &f32,
             epilogue(m, n, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3, 1, -1));
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             cRef.data(), nullptr, nullptr, nullptr, nullptr, &f32, nullptr);
  reference(cRef, m, n, scale, GPTRT_FP8_E4M3, true, &amaxRef, qRef);
  EXPECT_EQ(c, cRef);
  EXPECT_EQ(amax, amaxRef);
  EXPECT_EQ(q, qRef);

  std::vector<uint8_t> qa(m * k), qb(n * k);
  for (size_t i = 0; i < qa.size(); ++i)
    qa[i] = cpu::floatToE4M3(a[i] * 100.0f);
  for (size_t i = 0; i < qb.size(); ++i)
    qb[i] = cpu::floatToE4M3(b[i] * 100.0f);
  float sa = 100.0f, sb = 100.0f;
  const gptrt_gemm_desc fp8 = fp8Gemm(1, m, n, k, 0, 1, 0, 0, 0, GPTRT_FP8_E4M3,
                                      GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, qa.data(), qb.data(), &sa, &sb, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, &amax, nullptr, &fp8,
             epilogue(m, n, GPTRT_DTYPE_F32));
  gptrt_gemm(h, qa.data(), qb.data(), &sa, &sb, nullptr, nullptr, nullptr,
             cRef.data(), nullptr, nullptr, nullptr, nullptr, &fp8, nullptr);
  gptrt_amax(h, cRef.data(), &amaxRef, cRef.size(), GPTRT_DTYPE_F32);
  EXPECT_EQ(c, cRef);
  EXPECT_EQ(amax, amaxRef);
}

TEST_F(AbiFusedTest, FusedCastRecordsStatisticsLikeQuantize) {
  const int64_t rows = 4, cols = 8;
  std::vector<float> x = randomF(rows * cols, 11, -1.0, 1.0);
  x[3] = 1e-12f;  // underflows
  x[9] = 1e9f;    // saturates
  float scale = 100.0f, amax;
  std::vector<float> out(x.size());
  std::vector<uint8_t> q(x.size()), plain(x.size());
  ctx.beginFp8Stats(2);
  gptrt_gelu_fwd(h, x.data(), &scale, out.data(), &amax, q.data(), nullptr,
                 x.size(), GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 epilogue(rows, cols, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3, 1, 1));
  gptrt_quantize_fp8(h, out.data(), &scale, plain.data(), out.size(),
                     GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  ctx.endFp8Stats();
  const Fp8CastStats &fused = ctx.fp8Stats()[1], &separate = ctx.fp8Stats()[0];
  EXPECT_EQ(fused.elements, rows * cols);
  EXPECT_GE(fused.underflow, 1);
  EXPECT_EQ(fused.saturated, 1);
  EXPECT_EQ(fused.underflow, separate.underflow);
  EXPECT_EQ(fused.saturated, separate.saturated);
  EXPECT_EQ(fused.amax, separate.amax);
}

// rt-fuse-producer-dual-cast's kernels: GELU's output (forward) or its
// gradient (backward, with the bias gradient) cast both ways without the
// output ever being an argument -- amax, row-major codes, transposed codes
// and bias gradient bit for bit those of the producer cast followed by
// the transposed cast of its stored output (bf16 and f32 storage, an
// accumulating bias gradient), each cast's statistics in its own slot;
// sizes that do not cover the output and disagreeing dtypes are errors.
TEST_F(AbiFusedTest, GeluCastDualIsTheProducerCastThenTheTransposedCast) {
  const int64_t rows = 40, cols = 24, n = rows * cols;
  const std::vector<float> x = randomF(n, 21, -4.0, 4.0),
                           dy = randomF(n, 22, -2.0, 2.0);
  std::vector<uint16_t> x16(n), dy16(n);
  for (int64_t i = 0; i < n; ++i) {
    x16[i] = cpu::floatToBf16(x[i]);
    dy16[i] = cpu::floatToBf16(dy[i]);
  }
  const float scale = 60.0f;
  for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32}) {
    SCOPED_TRACE("dtype " + std::to_string(dtype));
    const bool bf16 = dtype == GPTRT_DTYPE_BF16;
    const void *in = bf16 ? static_cast<const void *>(x16.data()) : x.data();
    const void *grad =
        bf16 ? static_cast<const void *>(dy16.data()) : dy.data();
    std::vector<float> y(n); // room for either dtype
    std::vector<uint8_t> q(n), qT(n), qGot(n, 0xDD), qTGot(n, 0xDD);
    float amax = -1, amaxGot = -2;
    // Forward, E4M3.
    gptrt_gelu_fwd(h, in, &scale, y.data(), &amax, q.data(), nullptr, n, dtype,
                   dtype, epilogue(rows, cols, dtype, GPTRT_FP8_E4M3, 0, -1));
    gptrt_quantize_fp8_transposed(h, y.data(), &scale, qT.data(), rows, cols,
                                  GPTRT_FP8_E4M3, -1, dtype);
    gptrt_gelu_fwd(h, in, &scale, nullptr, &amaxGot, qGot.data(), qTGot.data(),
                   n, dtype, dtype,
                   epilogue(rows, cols, dtype, GPTRT_FP8_E4M3, 0, -1, -1));
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(amaxGot, amax);
    EXPECT_EQ(qGot, q);
    EXPECT_EQ(qTGot, qT);
    // Backward, E5M2, the bias gradient added into an f32 one.
    std::vector<float> db(cols, 0.5f), dbGot(cols, 0.5f);
    gptrt_gelu_bwd(h, grad, in, &scale, y.data(), &amax, q.data(), nullptr,
                   nullptr, n, dtype, dtype, dtype,
                   epilogue(rows, cols, dtype, GPTRT_FP8_E5M2, 0, -1));
    gptrt_quantize_fp8_transposed_bgrad(h, y.data(), &scale, qT.data(),
                                        db.data(), rows, cols, GPTRT_FP8_E5M2,
                                        -1, dtype, GPTRT_DTYPE_F32_ACCUMULATE);
    gptrt_gelu_bwd(h, grad, in, &scale, nullptr, &amaxGot, qGot.data(),
                   qTGot.data(), dbGot.data(), n, dtype, dtype, dtype,
                   epilogue(rows, cols, dtype, GPTRT_FP8_E5M2, 0, -1, -1,
                            GPTRT_DTYPE_F32_ACCUMULATE));
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(amaxGot, amax);
    EXPECT_EQ(qGot, q);
    EXPECT_EQ(qTGot, qT);
    EXPECT_EQ(dbGot, db);
    EXPECT_NE(db[0], 0.5f);
  }
  // The statistics: one slot per cast, as the two kernels record them.
  std::vector<float> y(n);
  std::vector<uint8_t> q(n), qT(n);
  float amax;
  ctx.beginFp8Stats(4);
  gptrt_gelu_fwd(
      h, x.data(), &scale, nullptr, &amax, q.data(), qT.data(), n,
      GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
      epilogue(rows, cols, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, 0, 1));
  gptrt_gelu_fwd(h, x.data(), &scale, y.data(), &amax, q.data(), nullptr, n,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
                 epilogue(rows, cols, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, 2));
  gptrt_quantize_fp8_transposed(h, y.data(), &scale, qT.data(), rows, cols,
                                GPTRT_FP8_E4M3, 3, GPTRT_DTYPE_BF16);
  ctx.endFp8Stats();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  expectStatsOfTheSeparateCasts(ctx.fp8Stats(), n);
  gptrt_gelu_fwd(
      h, x.data(), &scale, nullptr, &amax, q.data(), qT.data(), n,
      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
      epilogue(rows, cols - 1, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3, 0, -1, -1));
  EXPECT_NE(ctx.error().find("gptrt_gelu_fwd+dual_cast: rows * cols = 920, "
                             "expected n = 960"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
  gptrt_gelu_bwd(h, dy.data(), x.data(), &scale, nullptr, &amax, q.data(),
                 qT.data(), y.data(), n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_F32,
                 epilogue(rows, cols, GPTRT_DTYPE_BF16, GPTRT_FP8_E5M2, 0, -1,
                          -1, GPTRT_DTYPE_F32));
  EXPECT_NE(ctx.error().find("gptrt_gelu_bwd+dual_cast: out_dtype 2 "
                             "differs from the output's dtype 1"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
}

// rt-fuse-producer-dual-cast's layernorm kernels: the layernorm (and the
// residual add in front of it) cast both ways without its output being an
// argument -- statistics, amax, both layouts of codes and the stored sum
// bit for bit those of the producer cast followed by the transposed cast
// of its stored output (bf16 and f32 storage, both formats), each cast's
// statistics in its own slot; a bad dtype is an error naming it.
TEST_F(AbiFusedTest, LayerNormCastDualIsTheProducerCastThenTheTransposedCast) {
  const int64_t rows = 37, width = 24, n = rows * width;
  const std::vector<float> a = randomF(n, 31, -3.0, 3.0),
                           r = randomF(n, 32, -1.0, 1.0),
                           w = randomF(width, 33, 0.5, 1.5),
                           b = randomF(width, 34, -0.5, 0.5);
  std::vector<uint16_t> a16(n), r16(n);
  for (int64_t i = 0; i < n; ++i) {
    a16[i] = cpu::floatToBf16(a[i]);
    r16[i] = cpu::floatToBf16(r[i]);
  }
  const float scale = 90.0f;
  for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32})
    for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + ", format " +
                   std::to_string(format));
      const bool bf16 = dtype == GPTRT_DTYPE_BF16;
      const void *in = bf16 ? static_cast<const void *>(a16.data()) : a.data();
      const void *res = bf16 ? static_cast<const void *>(r16.data()) : r.data();
      std::vector<float> y(n), x(n), xGot(n, -7.0f); // room for either dtype
      std::vector<float> mean(rows), rstd(rows), meanGot(rows, -1),
          rstdGot(rows, -1);
      std::vector<uint8_t> q(n), qT(n), qGot(n, 0xDD), qTGot(n, 0xDD);
      float amax = -1, amaxGot = -2;
      gptrt_layernorm_fwd(h, in, w.data(), b.data(), &scale, y.data(),
                          mean.data(), rstd.data(), &amax, q.data(), nullptr,
                          rows, width, 1e-5, dtype, dtype,
                          epilogue(rows, width, dtype, format, 0, -1));
      gptrt_quantize_fp8_transposed(h, y.data(), &scale, qT.data(), rows, width,
                                    format, -1, dtype);
      gptrt_layernorm_fwd(h, in, w.data(), b.data(), &scale, nullptr,
                          meanGot.data(), rstdGot.data(), &amaxGot, qGot.data(),
                          qTGot.data(), rows, width, 1e-5, dtype, dtype,
                          epilogue(rows, width, dtype, format, 0, -1, -1));
      ASSERT_FALSE(ctx.failed()) << ctx.error();
      EXPECT_EQ(meanGot, mean);
      EXPECT_EQ(rstdGot, rstd);
      EXPECT_EQ(amaxGot, amax);
      EXPECT_GT(amax, 0.0f);
      EXPECT_EQ(qGot, q);
      EXPECT_EQ(qTGot, qT);
      EXPECT_NE(qT, q); // a transposition that shows
      // The residual add in front: x = a + r stored, then its layernorm.
      gptrt_add_layernorm_fwd(h, in, res, w.data(), b.data(), &scale, x.data(),
                              y.data(), mean.data(), rstd.data(), &amax,
                              q.data(), nullptr, rows, width, 1e-5, dtype,
                              dtype, dtype, dtype,
                              epilogue(rows, width, dtype, format, 0, -1));
      gptrt_quantize_fp8_transposed(h, y.data(), &scale, qT.data(), rows, width,
                                    format, -1, dtype);
      gptrt_add_layernorm_fwd(
          h, in, res, w.data(), b.data(), &scale, xGot.data(), nullptr,
          meanGot.data(), rstdGot.data(), &amaxGot, qGot.data(), qTGot.data(),
          rows, width, 1e-5, dtype, dtype, dtype, dtype,
          epilogue(rows, width, dtype, format, 0, -1, -1));
      ASSERT_FALSE(ctx.failed()) << ctx.error();
      EXPECT_EQ(std::memcmp(xGot.data(), x.data(), size_t(n) * (bf16 ? 2 : 4)),
                0);
      EXPECT_EQ(meanGot, mean);
      EXPECT_EQ(rstdGot, rstd);
      EXPECT_EQ(amaxGot, amax);
      EXPECT_EQ(qGot, q);
      EXPECT_EQ(qTGot, qT);
    }
  // The statistics: one slot per cast, as the two kernels record them.
  std::vector<float> y(n), mean(rows), rstd(rows);
  std::vector<uint8_t> q(n), qT(n);
  float amax;
  ctx.beginFp8Stats(4);
  gptrt_layernorm_fwd(
      h, a.data(), w.data(), b.data(), &scale, nullptr, mean.data(),
      rstd.data(), &amax, q.data(), qT.data(), rows, width, 1e-5,
      GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
      epilogue(rows, width, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, 0, 1));
  gptrt_layernorm_fwd(
      h, a.data(), w.data(), b.data(), &scale, y.data(), mean.data(),
      rstd.data(), &amax, q.data(), nullptr, rows, width, 1e-5, GPTRT_DTYPE_F32,
      GPTRT_DTYPE_BF16,
      epilogue(rows, width, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, 2));
  gptrt_quantize_fp8_transposed(h, y.data(), &scale, qT.data(), rows, width,
                                GPTRT_FP8_E4M3, 3, GPTRT_DTYPE_BF16);
  ctx.endFp8Stats();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  expectStatsOfTheSeparateCasts(ctx.fp8Stats(), n);
  gptrt_add_layernorm_fwd(
      h, a.data(), r.data(), w.data(), b.data(), &scale, y.data(), nullptr,
      mean.data(), rstd.data(), &amax, q.data(), qT.data(), rows, width, 1e-5,
      GPTRT_DTYPE_F32, 9, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
      epilogue(rows, width, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3, 0, -1, -1));
  EXPECT_NE(ctx.error().find("gptrt_add_layernorm_fwd+dual_cast: b_dtype 9"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
}

TEST_F(AbiFusedTest, BadEpilogueArgumentsAreErrors) {
  float x = 1, out = 0, amax = 0;
  gptrt_gelu_fwd(h, &x, nullptr, &out, &amax, nullptr, nullptr, 1,
                 GPTRT_DTYPE_F32, 7, epilogue(1, 1, 7));
  ASSERT_TRUE(ctx.failed());
  EXPECT_NE(ctx.error().find("gptrt_gelu_fwd: out_dtype 7, expected f32 "
                             "(1) or bf16 (2)"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
  // The epilogue's out_dtype repeats the kernel's own: they must agree.
  gptrt_gelu_fwd(h, &x, nullptr, &out, &amax, nullptr, nullptr, 1,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 epilogue(1, 1, GPTRT_DTYPE_BF16));
  ASSERT_TRUE(ctx.failed());
  EXPECT_NE(ctx.error().find("gptrt_gelu_fwd+amax: out_dtype 2 differs from "
                             "the kernel's output dtype 1"),
            std::string::npos)
      << ctx.error();
  ctx.clearError();
}

// The buffers a call passes say what its epilogue does; combinations the
// descriptor does not describe are refused with one line naming them
// (the rt.kernel verifier refuses the same in IR), and nothing is written.
TEST_F(AbiFusedTest, EpilogueBuffersMustAgreeWithTheDescriptor) {
  const int64_t rows = 4, cols = 8, n = rows * cols;
  std::vector<float> x = randomF(n, 21, -1.0, 1.0), dy = randomF(n, 22, -1, 1);
  std::vector<float> out(n, -7.0f), db(cols, -7.0f);
  std::vector<uint8_t> q(n, 0xAB), qT(n, 0xAB);
  float amax = -7.0f, scale = 2.0f;
  const gptrt_epilogue *e = epilogue(rows, cols, GPTRT_DTYPE_F32);
  auto refused = [&](const std::string &what) {
    ASSERT_TRUE(ctx.failed()) << what;
    EXPECT_NE(ctx.error().find(what), std::string::npos) << ctx.error();
    EXPECT_NE(ctx.error().find("gptrt_kernels.def"), std::string::npos);
    ctx.clearError();
    EXPECT_EQ(amax, -7.0f) << "nothing written";
    EXPECT_EQ(out[0], -7.0f) << "nothing written";
  };
  gptrt_gelu_fwd(h, x.data(), nullptr, out.data(), &amax, nullptr, nullptr, n,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, nullptr);
  refused("gptrt_gelu_fwd: epilogue buffers (scale, amax, q, q_t or db) "
          "without an epilogue descriptor");
  gptrt_gelu_fwd(h, x.data(), &scale, out.data(), &amax, nullptr, nullptr, n,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, e);
  refused("the epilogue's cast needs both scale and q");
  gptrt_gelu_fwd(h, x.data(), nullptr, nullptr, &amax, nullptr, qT.data(), n,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, e);
  refused("q_t without q");
  gptrt_gelu_bwd(h, dy.data(), x.data(), &scale, out.data(), &amax, q.data(),
                 nullptr, db.data(), n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_F32, e);
  refused("db without q_t");
  gptrt_gelu_fwd(h, x.data(), &scale, nullptr, &amax, q.data(), nullptr, n,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, e);
  refused("no output buffer: only the dual cast (q_t) leaves it out");
  gptrt_gelu_fwd(h, x.data(), &scale, out.data(), &amax, q.data(), qT.data(),
                 n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, e);
  refused("an output buffer with q_t: the dual cast does not store the "
          "output, pass null");
  // A producer takes the epilogue work its row lists, no more.
  std::vector<float> b = randomF(n, 23, -1, 1);
  gptrt_add(h, x.data(), b.data(), &scale, out.data(), &amax, q.data(), rows,
            cols, 0, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, e);
  EXPECT_FALSE(ctx.failed()) << ctx.error();
  amax = -7.0f;
  out.assign(n, -7.0f);
  // Producers that take the amax their own way check the descriptor covers
  // their whole output.
  std::vector<int32_t> targets(rows, 1);
  std::vector<float> lse(rows);
  float loss = 0, one = 1;
  gptrt_cross_entropy_fwd_bwd(h, &one, x.data(), targets.data(), &loss,
                              lse.data(), out.data(), &amax, rows, cols, cols,
                              -1, GPTRT_DTYPE_F32,
                              epilogue(rows, cols - 1, GPTRT_DTYPE_F32));
  refused("gptrt_cross_entropy_fwd_bwd+amax: the epilogue is rows 4 x cols 7 "
          "of out_dtype 1, expected the whole output: 32 values of dtype 1");
}

} // namespace
} // namespace gptrt::test
