// CUDA elementwise kernels against the CPU reference: convert (bit-exact
// with runtime/cpu/Bf16.h), fill, accumulate, add, scale, GELU forward and
// backward (float64 reference through the double CPU kernels).
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Kernels.h"
#include "test/gpu/GpuTestUtil.h"

namespace gptrt::gputest {
namespace {

// Odd sizes take the scalar path, multiples of 4 the 16-byte one.
const int64_t kSizes[] = {1, 7, 4096, 100003};

TEST_F(GpuTest, ConvertF32ToBf16IsBitExact) {
  for (int64_t n : kSizes) {
    std::vector<float> x = randn(n, 3.0f);
    // Specials: NaN (any payload -> 0x7FFF), infinities, ties, subnormals.
    const uint32_t specials[] = {0x7FC00001u, 0xFF800000u, 0x7F800000u,
                                 0x3F808000u, 0x3F818000u, 0x00000001u,
                                 0x80000000u, 0x7F7FFFFFu};
    for (size_t i = 0; i < std::size(specials) && i < x.size(); ++i)
      x[i] = cpu::floatFromBits(specials[i]);
    const float *dx = upload(x);
    uint16_t *dy = alloc<uint16_t>(n);
    gptrt_convert(g(), dx, nullptr, dy, nullptr, nullptr, n, GPTRT_DTYPE_F32,
                  GPTRT_DTYPE_BF16, nullptr);
    expectOk();
    std::vector<uint16_t> y = download(dy, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], cpu::floatToBf16(x[i])) << "element " << i;
    // And back: exact widening.
    float *dz = alloc<float>(n);
    gptrt_convert(g(), dy, nullptr, dz, nullptr, nullptr, n, GPTRT_DTYPE_BF16,
                  GPTRT_DTYPE_F32, nullptr);
    expectOk();
    std::vector<float> z = download(dz, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(cpu::floatBits(z[i]), cpu::floatBits(cpu::bf16ToFloat(y[i])))
          << "element " << i;
  }
}

TEST_F(GpuTest, FillAccumulateScale) {
  for (int64_t n : kSizes) {
    float *d = alloc<float>(n);
    gptrt_fill(g(), d, n, 0.25);
    expectOk();
    for (float v : download(d, n))
      ASSERT_EQ(v, 0.25f);

    std::vector<float> a = randn(n), b = randn(n);
    float *da = upload(a);
    gptrt_accumulate(g(), upload(b), da, n, GPTRT_DTYPE_F32);
    expectOk();
    std::vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i)
      ref[i] = double(a[i]) + b[i];
    EXPECT_LT(relErr(download(da, n), ref), kF32Tol) << "accumulate n=" << n;

    float *ds = alloc<float>(n);
    gptrt_scale(g(), upload(a), ds, n, -1.5);
    expectOk();
    for (int64_t i = 0; i < n; ++i)
      ref[i] = double(a[i]) * -1.5;
    EXPECT_LT(relErr(download(ds, n), ref), kF32Tol) << "scale n=" << n;
  }
}

TEST_F(GpuTest, AddWithAndWithoutBroadcast) {
  for (auto [outer, inner] : {std::pair<int64_t, int64_t>{3, 5},
                              {64, 768}, {1, 100003}}) {
    for (int64_t bcast : {0, 1}) {
      std::vector<float> a = randn(outer * inner);
      std::vector<float> b = randn(bcast ? inner : outer * inner);
      float *dout = alloc<float>(outer * inner);
      gptrt_add(g(), upload(a), upload(b), nullptr, dout, nullptr, nullptr,
                outer, inner, bcast, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                GPTRT_DTYPE_F32, nullptr);
      expectOk();
      std::vector<double> ref(outer * inner);
      for (int64_t i = 0; i < outer * inner; ++i)
        ref[i] = double(a[i]) + b[bcast ? i % inner : i];
      EXPECT_LT(relErr(download(dout, outer * inner), ref), kF32Tol)
          << outer << "x" << inner << " broadcast " << bcast;
    }
  }
}

TEST_F(GpuTest, GeluForwardBackward) {
  for (int64_t n : kSizes) {
    std::vector<float> x = randn(n, 2.0f), dy = randn(n);
    float *dout = alloc<float>(n), *ddx = alloc<float>(n);
    const float *dx = upload(x);
    gptrt_gelu_fwd(g(), dx, nullptr, dout, nullptr, nullptr, nullptr, n,
                   GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, nullptr);
    gptrt_gelu_bwd(g(), upload(dy), dx, nullptr, ddx, nullptr, nullptr, nullptr,
                   nullptr, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                   GPTRT_DTYPE_F32, nullptr);
    expectOk();
    std::vector<double> xd = toDouble(x), dyd = toDouble(dy), y(n), gx(n);
    cpu::geluForward<double>(y.data(), xd.data(), n);
    cpu::geluBackward<double>(gx.data(), xd.data(), dyd.data(), n);
    // Below x = -2.7, 1 + tanh(u) cancels in f32: a lone such element is
    // off by more than 1e-5 of itself, but not of x (or of dy).
    EXPECT_LT(relErrAbove(download(dout, n), y, normOf(x)), kF32Tol)
        << "gelu fwd n=" << n;
    EXPECT_LT(relErrAbove(download(ddx, n), gx, normOf(dy)), kF32Tol)
        << "gelu bwd n=" << n;
  }
}

} // namespace
} // namespace gptrt::gputest

namespace gptrt::gputest {
namespace {

TEST_F(GpuTest, LayoutKernelsMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  // arange
  int32_t *pos = alloc<int32_t>(1000);
  gptrt_arange(g(), pos, 1000);
  expectOk();
  std::vector<int32_t> p = download(pos, 1000);
  for (int32_t i = 0; i < 1000; ++i)
    ASSERT_EQ(p[i], i);
  // copy_blocks: the middle third of each row of a [5, 48] into a [5, 16].
  std::vector<float> src = randn(5 * 48);
  float *dst = alloc<float>(5 * 16);
  gptrt_copy_blocks(g(), upload(src), dst, 5, 16, 16, 48, 0, 16,
                    GPTRT_DTYPE_F32);
  expectOk();
  std::vector<float> got = download(dst, 5 * 16);
  for (int o = 0; o < 5; ++o)
    for (int j = 0; j < 16; ++j)
      ASSERT_EQ(got[o * 16 + j], src[o * 48 + 16 + j]);
  // The same of bf16 codes (split/concat on bf16 storage).
  std::vector<uint16_t> src16(5 * 48);
  for (size_t i = 0; i < src16.size(); ++i)
    src16[i] = uint16_t(0x3F00 + i);
  uint16_t *dst16 = upload(std::vector<uint16_t>(5 * 16, 0xFFFF));
  gptrt_copy_blocks(g(), upload(src16), dst16, 5, 16, 16, 48, 0, 16,
                    GPTRT_DTYPE_BF16);
  expectOk();
  std::vector<uint16_t> got16 = download(dst16, 5 * 16);
  for (int o = 0; o < 5; ++o)
    for (int j = 0; j < 16; ++j)
      ASSERT_EQ(got16[o * 16 + j], src16[o * 48 + 16 + j]);
  // permute [2, 3, 4, 5] -> perm (0, 2, 1, 3), the attention head split.
  std::vector<float> x = randn(2 * 3 * 4 * 5);
  float *y = alloc<float>(x.size());
  gptrt_permute(g(), upload(x), y, 4, 2, 3, 4, 5, 1, 1, 0, 2, 1, 3, 4, 5);
  expectOk();
  std::vector<float> ref(x.size());
  gptrt_permute(cpuCtx.handle(), x.data(), ref.data(), 4, 2, 3, 4, 5, 1, 1, 0,
                2, 1, 3, 4, 5);
  EXPECT_EQ(download(y, x.size()), ref);
  // bias_add and reduce_rows.
  const int64_t rows = 300, cols = 77;
  std::vector<float> c = randn(rows * cols), bias = randn(cols);
  float *dc = upload(c);
  gptrt_bias_add(g(), upload(bias), dc, rows, cols);
  float *sum = alloc<float>(cols);
  gptrt_reduce_rows(g(), dc, sum, rows, cols, GPTRT_DTYPE_F32,
                    GPTRT_DTYPE_F32);
  expectOk();
  std::vector<double> rc(rows * cols), rs(cols, 0.0);
  for (int64_t i = 0; i < rows * cols; ++i) {
    rc[i] = double(c[i]) + bias[i % cols];
    rs[i % cols] += rc[i];
  }
  EXPECT_LT(relErr(download(dc, rows * cols), rc), kF32Tol);
  EXPECT_LT(relErr(download(sum, cols), rs), kF32Tol);
}

// Kernels with a dtype per operand (gpt-bf16-kernels) against the CPU's,
// which are the f32 kernels between conversions: the same f32 arithmetic
// in the same order, so bf16 results must agree bit for bit and f32 ones
// within f32 rounding. Outputs are poisoned first (0xFFFF is a bf16 NaN).
TEST_F(GpuTest, Bf16StorageKernelsMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t outer = 64, inner = 768, n = outer * inner;
  std::vector<uint16_t> a = toBf16(randn(n)), b = toBf16(randn(n));
  for (int64_t bcast : {0, 1}) {
    std::vector<uint16_t> want(n), got(n, 0xFFFF);
    gptrt_add(cpuCtx.handle(), a.data(), b.data(), nullptr, want.data(),
              nullptr, nullptr, outer, inner, bcast, GPTRT_DTYPE_BF16,
              GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
    uint16_t *dout = upload(got);
    gptrt_add(g(), upload(a), upload(b), nullptr, dout, nullptr, nullptr, outer,
              inner, bcast, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
              GPTRT_DTYPE_BF16, nullptr);
    expectOk();
    EXPECT_EQ(download(dout, n), want) << "add bf16, broadcast " << bcast;
  }
  // A bf16 residual into an f32 stream and back: mixed storage.
  std::vector<float> x = randn(n), want32(n);
  gptrt_add(cpuCtx.handle(), x.data(), a.data(), nullptr, want32.data(),
            nullptr, nullptr, outer, inner, 0, GPTRT_DTYPE_F32,
            GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, nullptr);
  float *d32 = alloc<float>(n);
  gptrt_add(g(), upload(x), upload(a), nullptr, d32, nullptr, nullptr, outer,
            inner, 0, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32,
            nullptr);
  expectOk();
  EXPECT_EQ(download(d32, n), want32) << "add f32 + bf16";
  // Gradient accumulation of a bf16 gradient into f32.
  std::vector<float> acc = randn(n), wantAcc = acc;
  gptrt_accumulate(cpuCtx.handle(), a.data(), wantAcc.data(), n,
                   GPTRT_DTYPE_BF16);
  float *dacc = upload(acc);
  gptrt_accumulate(g(), upload(a), dacc, n, GPTRT_DTYPE_BF16);
  expectOk();
  EXPECT_EQ(download(dacc, n), wantAcc) << "accumulate bf16";
  // Bias gradients: bf16 rows summed in gptrt_reduce_rows's order into bf16.
  std::vector<uint16_t> wantSum(inner), gotSum(inner, 0xFFFF);
  gptrt_reduce_rows(cpuCtx.handle(), a.data(), wantSum.data(), outer, inner,
                    GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16);
  uint16_t *dsum = upload(gotSum);
  gptrt_reduce_rows(g(), upload(a), dsum, outer, inner, GPTRT_DTYPE_BF16,
                    GPTRT_DTYPE_BF16);
  expectOk();
  EXPECT_EQ(download(dsum, inner), wantSum) << "reduce_rows bf16";
  // A tall gradient, tokens x features (three levels of chunk sums): the
  // CPU's bits too, into f32 (poisoned output).
  const int64_t tall = 40000, wide = 300;
  std::vector<uint16_t> t16 = toBf16(randn(tall * wide));
  std::vector<float> wantTall(wide);
  gptrt_reduce_rows(cpuCtx.handle(), t16.data(), wantTall.data(), tall, wide,
                    GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32);
  float *dTall = upload(std::vector<float>(wide, NAN));
  gptrt_reduce_rows(g(), upload(t16), dTall, tall, wide, GPTRT_DTYPE_BF16,
                    GPTRT_DTYPE_F32);
  expectOk();
  EXPECT_EQ(download(dTall, wide), wantTall) << "reduce_rows of 40000 rows";
  // GELU forward and backward on bf16 storage. tanhf may differ from the
  // host's in the last f32 bit, which can move a bf16 rounding by one code:
  // compared norm-wise at bf16 precision instead of bit for bit.
  std::vector<uint16_t> wantY(n), gotY(n, 0xFFFF), wantDx(n), gotDx(n, 0xFFFF);
  gptrt_gelu_fwd(cpuCtx.handle(), a.data(), nullptr, wantY.data(), nullptr,
                 nullptr, nullptr, n, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                 nullptr);
  gptrt_gelu_bwd(cpuCtx.handle(), b.data(), a.data(), nullptr, wantDx.data(),
                 nullptr, nullptr, nullptr, nullptr, n, GPTRT_DTYPE_BF16,
                 GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  uint16_t *dy = upload(gotY), *ddx = upload(gotDx);
  const uint16_t *da = upload(a);
  gptrt_gelu_fwd(g(), da, nullptr, dy, nullptr, nullptr, nullptr, n,
                 GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  gptrt_gelu_bwd(g(), upload(b), da, nullptr, ddx, nullptr, nullptr, nullptr,
                 nullptr, n, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                 GPTRT_DTYPE_BF16, nullptr);
  expectOk();
  EXPECT_LT(relErr(bf16Values(download(dy, n)), bf16Values(wantY)), kBf16Tol)
      << "gelu fwd bf16";
  EXPECT_LT(relErr(bf16Values(download(ddx, n)), bf16Values(wantDx)), kBf16Tol)
      << "gelu bwd bf16";
}

// GPTRT_DTYPE_F32_ACCUMULATE (rt-fuse-grad-accumulation): reduce_rows,
// the layernorm's dw and db and the dual cast's db add into an f32
// gradient through Storage's add mode; against the same kernels' f32
// outputs on the device (the same sums, so exactly what they add), and the
// layernorm's dx unchanged.
TEST_F(GpuTest, GradientOutputsAccumulateWithDtype257) {
  const int64_t rows = 3000, cols = 768;
  const std::vector<uint16_t> x = toBf16(randn(rows * cols));
  const std::vector<float> grad = randn(cols);
  const uint16_t *gx = upload(x);
  auto expectAdded = [&](const float *got, const float *sums,
                         const char *what) {
    std::vector<float> g = download(got, cols), s = download(sums, cols);
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(g[j], grad[j] + s[j]) << what << ", column " << j;
  };
  float *sums = alloc<float>(cols), *acc = upload(grad);
  gptrt_reduce_rows(g(), gx, sums, rows, cols, GPTRT_DTYPE_BF16,
                    GPTRT_DTYPE_F32);
  gptrt_reduce_rows(g(), gx, acc, rows, cols, GPTRT_DTYPE_BF16,
                    GPTRT_DTYPE_F32_ACCUMULATE);
  expectOk();
  expectAdded(acc, sums, "reduce_rows");

  const std::vector<float> w = randn(cols), b = randn(cols);
  const uint16_t *gdy = upload(toBf16(randn(rows * cols)));
  float *mean = alloc<float>(rows), *rstd = alloc<float>(rows);
  uint16_t *out = alloc<uint16_t>(rows * cols);
  const float *gw = upload(w);
  gptrt_layernorm_fwd(g(), gx, gw, upload(b), nullptr, out, mean, rstd, nullptr,
                      nullptr, nullptr, rows, cols, 1e-5, GPTRT_DTYPE_BF16,
                      GPTRT_DTYPE_BF16, nullptr);
  uint16_t *dx = alloc<uint16_t>(rows * cols),
           *dx2 = alloc<uint16_t>(rows * cols);
  float *dw = alloc<float>(cols), *db = alloc<float>(cols);
  float *accDw = upload(grad), *accDb = upload(grad);
  gptrt_layernorm_bwd(g(), gdy, gx, gw, mean, rstd, dx, dw, db, nullptr, rows,
                      cols, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                      GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      nullptr);
  gptrt_layernorm_bwd(g(), gdy, gx, gw, mean, rstd, dx2, accDw, accDb, nullptr,
                      rows, cols, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                      GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE,
                      GPTRT_DTYPE_F32_ACCUMULATE, nullptr);
  expectOk();
  EXPECT_EQ(download(dx2, rows * cols), download(dx, rows * cols));
  expectAdded(accDw, dw, "layernorm dw");
  expectAdded(accDb, db, "layernorm db");

  const float *scale = upload(std::vector<float>{8.0f});
  float *dualSums = alloc<float>(cols), *accDual = upload(grad);
  uint8_t *q = alloc<uint8_t>(rows * cols), *qT = alloc<uint8_t>(rows * cols);
  gptrt_quantize_fp8_dual_bgrad(g(), gx, scale, q, qT, dualSums, rows, cols,
                                GPTRT_FP8_E5M2, -1, -1, GPTRT_DTYPE_BF16,
                                GPTRT_DTYPE_F32);
  gptrt_quantize_fp8_dual_bgrad(g(), gx, scale, q, qT, accDual, rows, cols,
                                GPTRT_FP8_E5M2, -1, -1, GPTRT_DTYPE_BF16,
                                GPTRT_DTYPE_F32_ACCUMULATE);
  expectOk();
  expectAdded(accDual, dualSums, "quantize_fp8_dual_bgrad db");
}

} // namespace
} // namespace gptrt::gputest
