// CUDA layernorm, embedding, cross-entropy and optimizer kernels against
// the CPU reference kernels run in float64.
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Kernels.h"
#include "test/gpu/GpuTestUtil.h"
#include "test/unit/runtime/Epilogue.h"

namespace gptrt::gputest {
namespace {

using gptrt::test::epilogue;

TEST_F(GpuTest, LayerNormForwardBackward) {
  // Widths for both kernels: the scalar ones (3: not whole 16-byte
  // vectors; 2056: wider than the vector kernels hold) and the vector ones
  // (768; 1000, whose 125 vectors leave lanes idle; 1600).
  for (auto [rows, width] : {std::pair<int64_t, int64_t>{1, 3},
                             {37, 768},
                             {64, 1000},
                             {1024, 1600},
                             {5, 2056}}) {
    std::vector<float> x = randn(rows * width, 2.0f), w = randn(width),
                       b = randn(width), dy = randn(rows * width);
    for (float &v : x)
      v += 3.0f;  // a mean far from 0, where one-pass variance fails
    const float *dx = upload(x), *dw = upload(w), *db = upload(b);
    float *out = alloc<float>(rows * width), *mean = alloc<float>(rows),
          *rstd = alloc<float>(rows);
    gptrt_layernorm_fwd(g(), dx, dw, db, nullptr, out, mean, rstd, nullptr,
                        nullptr, nullptr, rows, width, 1e-5, GPTRT_DTYPE_F32,
                        GPTRT_DTYPE_F32, nullptr);
    float *gx = alloc<float>(rows * width), *gw = alloc<float>(width),
          *gb = alloc<float>(width);
    gptrt_layernorm_bwd(g(), upload(dy), dx, dw, mean, rstd, gx, gw, gb,
                        nullptr, rows, width, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                        GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                        nullptr);
    expectOk();

    std::vector<double> xd = toDouble(x), wd = toDouble(w), bd = toDouble(b),
                        dyd = toDouble(dy), o(rows * width), m(rows), s(rows),
                        rx(rows * width), rw(width, 0.0), rb(width, 0.0);
    cpu::layerNormForward<double>(o.data(), m.data(), s.data(), xd.data(),
                                  wd.data(), bd.data(), rows, width, 1e-5);
    cpu::layerNormBackward<double>(rx.data(), rw.data(), rb.data(), dyd.data(),
                                   xd.data(), m.data(), s.data(), wd.data(),
                                   rows, width);
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(width));
    EXPECT_LT(relErr(download(out, rows * width), o), kF32Tol);
    EXPECT_LT(relErr(download(mean, rows), m), kF32Tol);
    EXPECT_LT(relErr(download(rstd, rows), s), kF32Tol);
    // dx is rstd (w dy - means): with 3 columns the difference may cancel,
    // so its error is measured against the size of rstd w dy.
    std::vector<double> dxTerms(rows * width);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j)
        dxTerms[r * width + j] = s[r] * wd[j] * dyd[r * width + j];
    EXPECT_LT(relErrAbove(download(gx, rows * width), rx, normOf(dxTerms)),
              kF32Tol);
    EXPECT_LT(relErr(download(gw, width), rw), kF32Tol);
    EXPECT_LT(relErr(download(gb, width), rb), kF32Tol);
  }
}

// bf16 activations and gradients (gpt-bf16-kernels) against the CPU's
// bf16-storage kernels: the same f32 arithmetic up to reduction order and
// rsqrtf, so within bf16 precision norm-wise; outputs poisoned (0xFFFF is
// a bf16 NaN) to catch unwritten elements.
TEST_F(GpuTest, LayerNormOnBf16StorageMatchesCpu) {
  // 768 and 1600 take the vector kernels, 100 (not whole 16-byte vectors)
  // the scalar ones.
  for (const int64_t width : {768, 1600, 100}) {
    SCOPED_TRACE("width " + std::to_string(width));
    Context cpuCtx(Device::Cpu, {});
    const int64_t rows = 37;
    std::vector<uint16_t> x = toBf16(randn(rows * width, 2.0f)),
                          dy = toBf16(randn(rows * width));
    std::vector<float> w = randn(width), b = randn(width);
    std::vector<uint16_t> out(rows * width), dx(rows * width), dw(width),
        db(width);
    std::vector<float> mean(rows), rstd(rows);
    gptrt_layernorm_fwd(cpuCtx.handle(), x.data(), w.data(), b.data(), nullptr,
                        out.data(), mean.data(), rstd.data(), nullptr, nullptr,
                        nullptr, rows, width, 1e-5, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, nullptr);
    gptrt_layernorm_bwd(cpuCtx.handle(), dy.data(), x.data(), w.data(),
                        mean.data(), rstd.data(), dx.data(), dw.data(),
                        db.data(), nullptr, rows, width, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, nullptr);
    const uint16_t *gxIn = upload(x);
    const float *gw = upload(w), *gb = upload(b);
    uint16_t *gOut = upload(std::vector<uint16_t>(rows * width, 0xFFFF));
    float *gMean = alloc<float>(rows), *gRstd = alloc<float>(rows);
    gptrt_layernorm_fwd(g(), gxIn, gw, gb, nullptr, gOut, gMean, gRstd, nullptr,
                        nullptr, nullptr, rows, width, 1e-5, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, nullptr);
    uint16_t *gDx = upload(std::vector<uint16_t>(rows * width, 0xFFFF));
    uint16_t *gDw = upload(std::vector<uint16_t>(width, 0xFFFF));
    uint16_t *gDb = upload(std::vector<uint16_t>(width, 0xFFFF));
    gptrt_layernorm_bwd(g(), upload(dy), gxIn, gw, gMean, gRstd, gDx, gDw, gDb,
                        nullptr, rows, width, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, nullptr);
    expectOk();
    EXPECT_LT(relErr(bf16Values(download(gOut, rows * width)), bf16Values(out)),
              kBf16Tol);
    EXPECT_LT(relErr(download(gMean, rows), toDouble(mean)), kF32Tol);
    EXPECT_LT(relErr(download(gRstd, rows), toDouble(rstd)), kF32Tol);
    EXPECT_LT(relErr(bf16Values(download(gDx, rows * width)), bf16Values(dx)),
              kBf16Tol);
    EXPECT_LT(relErr(bf16Values(download(gDw, width)), bf16Values(dw)),
              kBf16Tol);
    EXPECT_LT(relErr(bf16Values(download(gDb, width)), bf16Values(db)),
              kBf16Tol);
    // _amax (rt-fuse-amax): the same gradients bit for bit (the same kernel,
    // in the same order), and the amax of dx as stored, taken by the kernel.
    uint16_t *aDx = upload(std::vector<uint16_t>(rows * width, 0xFFFF));
    uint16_t *aDw = upload(std::vector<uint16_t>(width, 0xFFFF));
    uint16_t *aDb = upload(std::vector<uint16_t>(width, 0xFFFF));
    float *amax = upload(std::vector<float>{std::nanf("")});
    float *want = alloc<float>(1);
    gptrt_layernorm_bwd(g(), upload(dy), gxIn, gw, gMean, gRstd, aDx, aDw, aDb,
                        amax, rows, width, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                        epilogue(rows, width, GPTRT_DTYPE_BF16, 0, 0, -1, -1,
                                 GPTRT_DTYPE_BF16));
    gptrt_amax(g(), gDx, want, rows * width, GPTRT_DTYPE_BF16);
    expectOk();
    EXPECT_EQ(download(aDx, rows * width), download(gDx, rows * width));
    EXPECT_EQ(download(aDw, width), download(gDw, width));
    EXPECT_EQ(download(aDb, width), download(gDb, width));
    EXPECT_EQ(download(amax, 1), download(want, 1));
    EXPECT_GT(download(amax, 1)[0], 0.0f);
  }
}

// The residual add fused into the layernorm (rt-fuse-add-layernorm): the
// stored sum equals the add kernel's bit for bit (one rounding of the same
// f32 sum), and the layernorm over it the unfused GPU kernels' bit for bit
// (same arithmetic in the same order); against the CPU within tolerance.
TEST_F(GpuTest, AddLayerNormMatchesTheUnfusedKernels) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 29, width = 768, n = rows * width;
  std::vector<uint16_t> a = toBf16(randn(n, 2.0f)), b = toBf16(randn(n));
  std::vector<float> w = randn(width), bias = randn(width);
  const uint16_t *ga = upload(a), *gb = upload(b);
  const float *gw = upload(w), *gbias = upload(bias);
  auto poisoned = [&] { return upload(std::vector<uint16_t>(n, 0xFFFF)); };
  uint16_t *x = poisoned(), *out = poisoned(), *x2 = poisoned(),
           *out2 = poisoned();
  float *mean = alloc<float>(rows), *rstd = alloc<float>(rows),
        *mean2 = alloc<float>(rows), *rstd2 = alloc<float>(rows);
  gptrt_add_layernorm_fwd(g(), ga, gb, gw, gbias, nullptr, x, out, mean, rstd,
                          nullptr, nullptr, nullptr, rows, width, 1e-5,
                          GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                          GPTRT_DTYPE_BF16, nullptr);
  gptrt_add(g(), ga, gb, nullptr, x2, nullptr, nullptr, rows, width, 0,
            GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  gptrt_layernorm_fwd(g(), x2, gw, gbias, nullptr, out2, mean2, rstd2, nullptr,
                      nullptr, nullptr, rows, width, 1e-5, GPTRT_DTYPE_BF16,
                      GPTRT_DTYPE_BF16, nullptr);
  expectOk();
  EXPECT_EQ(download(x, n), download(x2, n));
  EXPECT_EQ(download(out, n), download(out2, n));
  EXPECT_EQ(download(mean, rows), download(mean2, rows));
  EXPECT_EQ(download(rstd, rows), download(rstd2, rows));
  // With the layernorm's FP8 epilogue: the output, amax and codes of
  // layernorm_fwd_cast over the stored sum, bit for bit.
  const float *scale = upload(std::vector<float>{16.0f});
  uint16_t *x3 = poisoned(), *out3 = poisoned();
  float *amax2 = alloc<float>(1), *amax3 = alloc<float>(1);
  uint8_t *q2 = alloc<uint8_t>(n), *q3 = alloc<uint8_t>(n);
  gptrt_add_layernorm_fwd(
      g(), ga, gb, gw, gbias, scale, x3, out3, mean, rstd, amax3, q3, nullptr,
      rows, width, 1e-5, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
      GPTRT_DTYPE_BF16,
      epilogue(rows, width, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, -1));
  gptrt_layernorm_fwd(
      g(), x2, gw, gbias, scale, out2, mean2, rstd2, amax2, q2, nullptr, rows,
      width, 1e-5, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
      epilogue(rows, width, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, -1));
  expectOk();
  EXPECT_EQ(download(x3, n), download(x2, n));
  EXPECT_EQ(download(out3, n), download(out2, n));
  EXPECT_EQ(download(amax3, 1), download(amax2, 1));
  EXPECT_EQ(download(q3, n), download(q2, n));
  std::vector<uint16_t> cx(n), cout(n);
  std::vector<float> cmean(rows), crstd(rows);
  gptrt_add_layernorm_fwd(cpuCtx.handle(), a.data(), b.data(), w.data(),
                          bias.data(), nullptr, cx.data(), cout.data(),
                          cmean.data(), crstd.data(), nullptr, nullptr, nullptr,
                          rows, width, 1e-5, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                          GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  EXPECT_EQ(download(x, n), cx);
  EXPECT_LT(relErr(bf16Values(download(out, n)), bf16Values(cout)), kBf16Tol);
  EXPECT_LT(relErr(download(mean, rows), toDouble(cmean)), kF32Tol);
  EXPECT_LT(relErr(download(rstd, rows), toDouble(crstd)), kF32Tol);
}

// The layernorm backward fused with the add of its dx into the residual
// gradient (rt-fuse-add-layernorm): the sum, dw and db (added into, 257)
// equal the unfused GPU kernels' bit for bit -- the same arithmetic, dx
// rounded to bf16 before the add as it was stored -- and so do the _amax
// and _cast forms' amax and codes; the sum against the CPU within
// tolerance.
TEST_F(GpuTest, LayerNormBackwardAddMatchesTheUnfusedKernels) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 37, width = 768, n = rows * width;
  const std::vector<uint16_t> x = toBf16(randn(n, 2.0f)), dy = toBf16(randn(n));
  const std::vector<float> w = randn(width), bias = randn(width),
                           resid = randn(n), dwBefore = randn(width),
                           dbBefore = randn(width);
  std::vector<uint16_t> y(n);
  std::vector<float> mean(rows), rstd(rows);
  gptrt_layernorm_fwd(cpuCtx.handle(), x.data(), w.data(), bias.data(), nullptr,
                      y.data(), mean.data(), rstd.data(), nullptr, nullptr,
                      nullptr, rows, width, 1e-5, GPTRT_DTYPE_BF16,
                      GPTRT_DTYPE_BF16, nullptr);
  const uint16_t *gx = upload(x), *gdy = upload(dy);
  const float *gw = upload(w), *gmean = upload(mean), *grstd = upload(rstd),
              *gresid = upload(resid), *scale = upload(std::vector<float>{8});
  constexpr int64_t kAdd = GPTRT_DTYPE_F32_ACCUMULATE, kBf16 = GPTRT_DTYPE_BF16,
                    kF32 = GPTRT_DTYPE_F32;
  struct Outputs {
    uint16_t *sum;
    float *dw, *db, *amax;
    uint8_t *q;
  };
  auto outputs = [&] {
    return Outputs{upload(std::vector<uint16_t>(n, 0xFFFF)), upload(dwBefore),
                   upload(dbBefore), upload(std::vector<float>{std::nanf("")}),
                   upload(std::vector<uint8_t>(n, 0xFF))};
  };
  auto expectSame = [&](const Outputs &got, const Outputs &want, bool epilogue,
                        bool codes) {
    EXPECT_EQ(download(got.sum, n), download(want.sum, n));
    EXPECT_EQ(download(got.dw, width), download(want.dw, width));
    EXPECT_EQ(download(got.db, width), download(want.db, width));
    if (epilogue)
      EXPECT_EQ(download(got.amax, 1), download(want.amax, 1));
    if (codes)
      EXPECT_EQ(download(got.q, n), download(want.q, n));
  };
  // The unfused kernels; dx added as the add's a, the residual as its b.
  auto unfused = [&](const char *add) {
    Outputs o = outputs();
    uint16_t *dx = upload(std::vector<uint16_t>(n, 0xFFFF));
    gptrt_layernorm_bwd(g(), gdy, gx, gw, gmean, grstd, dx, o.dw, o.db, nullptr,
                        rows, width, kBf16, kBf16, kBf16, kAdd, kAdd, nullptr);
    if (std::string(add) == "add")
      gptrt_add(g(), dx, gresid, nullptr, o.sum, nullptr, nullptr, 1, n, 0,
                kBf16, kF32, kBf16, nullptr);
    else if (std::string(add) == "add_amax")
      gptrt_add(g(), dx, gresid, nullptr, o.sum, o.amax, nullptr, 1, n, 0,
                kBf16, kF32, kBf16, epilogue(rows, width, kBf16));
    else
      gptrt_add(g(), dx, gresid, scale, o.sum, o.amax, o.q, 1, n, 0, kBf16,
                kF32, kBf16,
                epilogue(rows, width, kBf16, GPTRT_FP8_E5M2, 0, -1));
    return o;
  };
  Outputs plain = outputs(), withAmax = outputs(), withCast = outputs();
  gptrt_layernorm_bwd_add(g(), gdy, gx, gw, gmean, grstd, gresid, nullptr,
                          plain.sum, plain.dw, plain.db, nullptr, nullptr, rows,
                          width, kBf16, kBf16, kBf16, kAdd, kAdd, kF32, kBf16,
                          nullptr);
  gptrt_layernorm_bwd_add(g(), gdy, gx, gw, gmean, grstd, gresid, nullptr,
                          withAmax.sum, withAmax.dw, withAmax.db, withAmax.amax,
                          nullptr, rows, width, kBf16, kBf16, kBf16, kAdd, kAdd,
                          kF32, kBf16,
                          epilogue(rows, width, kBf16, 0, 0, -1, -1, kAdd));
  gptrt_layernorm_bwd_add(
      g(), gdy, gx, gw, gmean, grstd, gresid, scale, withCast.sum, withCast.dw,
      withCast.db, withCast.amax, withCast.q, rows, width, kBf16, kBf16, kBf16,
      kAdd, kAdd, kF32, kBf16,
      epilogue(rows, width, kBf16, GPTRT_FP8_E5M2, 0, -1, -1, kAdd));
  const Outputs wantPlain = unfused("add"), wantAmax = unfused("add_amax"),
                wantCast = unfused("add_cast");
  expectOk();
  expectSame(plain, wantPlain, false, false);
  expectSame(withAmax, wantAmax, true, false);
  expectSame(withCast, wantCast, true, true);
  EXPECT_GT(download(withAmax.amax, 1)[0], 0.0f);

  std::vector<uint16_t> cpuSum(n);
  std::vector<float> cpuDw = dwBefore, cpuDb = dbBefore;
  gptrt_layernorm_bwd_add(cpuCtx.handle(), dy.data(), x.data(), w.data(),
                          mean.data(), rstd.data(), resid.data(), nullptr,
                          cpuSum.data(), cpuDw.data(), cpuDb.data(), nullptr,
                          nullptr, rows, width, kBf16, kBf16, kBf16, kAdd, kAdd,
                          kF32, kBf16, nullptr);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  EXPECT_LT(relErr(bf16Values(download(plain.sum, n)), bf16Values(cpuSum)),
            kBf16Tol);
  EXPECT_LT(relErr(download(plain.dw, width), toDouble(cpuDw)), kF32Tol);
  EXPECT_LT(relErr(download(plain.db, width), toDouble(cpuDb)), kF32Tol);
}

TEST_F(GpuTest, EmbeddingForwardBackward) {
  const int64_t tableRows = 50, width = 96, rows = 512;
  std::vector<float> table = randn(tableRows * width), dy = randn(rows * width);
  std::vector<int32_t> ids = randint(rows, 0, tableRows);  // many repeats
  const int32_t *did = upload(ids);
  float *out = alloc<float>(rows * width), *dt = alloc<float>(tableRows * width);
  gptrt_embedding_fwd(g(), upload(table), did, out, rows, width,
                      GPTRT_DTYPE_F32);
  gptrt_embedding_bwd(g(), upload(dy), did, dt, rows, tableRows, width,
                      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32);
  expectOk();
  std::vector<float> o = download(out, rows * width);
  for (int64_t i = 0; i < rows * width; ++i)
    ASSERT_EQ(o[i], table[ids[i / width] * width + i % width]) << i;
  std::vector<double> dyd = toDouble(dy), ref(tableRows * width, 0.0);
  cpu::embeddingBackward<double>(ref.data(), dyd.data(), ids.data(), rows,
                                 width);
  EXPECT_LT(relErr(download(dt, tableRows * width), ref), kF32Tol);
}

TEST_F(GpuTest, CrossEntropyForwardBackward) {
  const int64_t rows = 300, vocab = 1000, padded = 1024, ignore = -1;
  std::vector<float> logits = randn(rows * padded, 4.0f);
  std::vector<int32_t> targets = randint(rows, 0, vocab);
  for (int64_t r = 0; r < rows; r += 7)
    targets[r] = ignore;
  const float *dl = upload(logits);
  const int32_t *dt = upload(targets);
  float *loss = alloc<float>(1), *lse = alloc<float>(rows),
        *grad = alloc<float>(rows * padded);
  const float *dloss = upload(std::vector<float>{0.75f});
  gptrt_cross_entropy_fwd(g(), dl, dt, loss, lse, rows, vocab, padded, ignore,
                          GPTRT_DTYPE_F32);
  gptrt_cross_entropy_bwd(g(), dloss, dl, dt, lse, grad, rows, vocab, padded,
                          ignore, GPTRT_DTYPE_F32);
  expectOk();
  std::vector<double> ld = toDouble(logits), rl(rows), rg(rows * padded);
  double refLoss = cpu::crossEntropyForward<double>(
      rl.data(), ld.data(), targets.data(), rows, vocab, padded, ignore);
  cpu::crossEntropyBackward<double>(rg.data(), ld.data(), rl.data(),
                                    targets.data(), 0.75, rows, vocab, padded,
                                    ignore);
  EXPECT_LT(relErr(download(loss, 1), {refLoss}), kF32Tol);
  EXPECT_LT(relErr(download(lse, rows), rl), kF32Tol);
  std::vector<float> got = download(grad, rows * padded);
  EXPECT_LT(relErr(got, rg), kF32Tol);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < padded; ++j)
      if (j >= vocab || targets[r] == ignore)
        ASSERT_EQ(got[r * padded + j], 0.0f) << "row " << r << " col " << j;
}

// The fused classifier (rt-fuse-classifier). With f32 logits it walks the
// rows as the two unfused kernels do: the same bits. With bf16 logits and
// a padded width that is a multiple of 8 it takes the 16-byte vector path:
// against the CPU within bf16 precision, every padding column and ignored
// row exactly 0, every element written (outputs poisoned).
TEST_F(GpuTest, FusedClassifierMatchesTheTwoKernels) {
  const int64_t rows = 300, vocab = 1001, padded = 1024, ignore = -1;
  std::vector<float> logits = randn(rows * padded, 4.0f);
  std::vector<int32_t> targets = randint(rows, 0, vocab);
  for (int64_t r = 0; r < rows; r += 7)
    targets[r] = ignore;
  targets[3] = vocab - 1; // the last real column, inside the scalar tail
  const float *dl = upload(logits);
  const int32_t *dt = upload(targets);
  const float *dloss = upload(std::vector<float>{0.75f});
  float *loss = alloc<float>(1), *lse = alloc<float>(rows),
        *grad = alloc<float>(rows * padded);
  gptrt_cross_entropy_fwd(g(), dl, dt, loss, lse, rows, vocab, padded, ignore,
                          GPTRT_DTYPE_F32);
  gptrt_cross_entropy_bwd(g(), dloss, dl, dt, lse, grad, rows, vocab, padded,
                          ignore, GPTRT_DTYPE_F32);
  float *fLoss = alloc<float>(1), *fLse = alloc<float>(rows),
        *fGrad = alloc<float>(rows * padded);
  gptrt_cross_entropy_fwd_bwd(g(), dloss, dl, dt, fLoss, fLse, fGrad, nullptr,
                              rows, vocab, padded, ignore, GPTRT_DTYPE_F32,
                              nullptr);
  expectOk();
  EXPECT_EQ(download(fLoss, 1), download(loss, 1));
  EXPECT_EQ(download(fLse, rows), download(lse, rows));
  EXPECT_EQ(download(fGrad, rows * padded), download(grad, rows * padded));

  Context cpuCtx(Device::Cpu, {});
  std::vector<uint16_t> logits16 = toBf16(logits);
  float cpuLoss = 0, dlossHost = 0.75f;
  std::vector<float> cpuLse(rows);
  std::vector<uint16_t> cpuGrad(rows * padded);
  gptrt_cross_entropy_fwd_bwd(cpuCtx.handle(), &dlossHost, logits16.data(),
                              targets.data(), &cpuLoss, cpuLse.data(),
                              cpuGrad.data(), nullptr, rows, vocab, padded,
                              ignore, GPTRT_DTYPE_BF16, nullptr);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  float *gLoss = alloc<float>(1), *gLse = alloc<float>(rows);
  uint16_t *gGrad = upload(std::vector<uint16_t>(rows * padded, 0xFFFF));
  gptrt_cross_entropy_fwd_bwd(g(), dloss, upload(logits16), dt, gLoss, gLse,
                              gGrad, nullptr, rows, vocab, padded, ignore,
                              GPTRT_DTYPE_BF16, nullptr);
  expectOk();
  EXPECT_LT(relErr(download(gLoss, 1), std::vector<double>{cpuLoss}), kF32Tol);
  EXPECT_LT(relErr(download(gLse, rows), toDouble(cpuLse)), kF32Tol);
  std::vector<uint16_t> got = download(gGrad, rows * padded);
  EXPECT_LT(relErr(bf16Values(got), bf16Values(cpuGrad)), kBf16Tol);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < padded; ++j)
      if (j >= vocab || targets[r] == ignore)
        ASSERT_EQ(got[r * padded + j], 0) << "row " << r << " col " << j;

  // _amax: the gradient bit for bit as without, and its amax taken in the
  // kernel equal to gptrt_amax of it, on both paths (poisoned amax).
  for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32}) {
    const bool bf16 = dtype == GPTRT_DTYPE_BF16;
    const void *in = bf16 ? static_cast<const void *>(upload(logits16)) : dl;
    const size_t bytes = bf16 ? 2 : 4;
    char *plain = alloc<char>(rows * padded * bytes);
    char *withAmax = alloc<char>(rows * padded * bytes);
    float *amax = upload(std::vector<float>{NAN});
    float *want = alloc<float>(1);
    gptrt_cross_entropy_fwd_bwd(g(), dloss, in, dt, alloc<float>(1),
                                alloc<float>(rows), plain, nullptr, rows, vocab,
                                padded, ignore, dtype, nullptr);
    gptrt_cross_entropy_fwd_bwd(
        g(), dloss, in, dt, alloc<float>(1), alloc<float>(rows), withAmax, amax,
        rows, vocab, padded, ignore, dtype, epilogue(rows, padded, dtype));
    gptrt_amax(g(), plain, want, rows * padded, dtype);
    expectOk();
    EXPECT_EQ(download(withAmax, rows * padded * bytes),
              download(plain, rows * padded * bytes))
        << "dtype " << dtype;
    EXPECT_EQ(download(amax, 1), download(want, 1)) << "dtype " << dtype;
    EXPECT_GT(download(amax, 1)[0], 0.0f);
  }

  // A NaN among -inf logits in one 8-value vector still makes lse NaN.
  std::vector<uint16_t> row(padded, toBf16(std::vector<float>{0.5f})[0]);
  for (int j = 16; j < 24; ++j)
    row[j] = 0xFF80; // -inf
  row[21] = 0x7FC0;  // NaN
  float *nanLse = alloc<float>(1), *nanLoss = alloc<float>(1);
  gptrt_cross_entropy_fwd_bwd(g(), dloss, upload(row), dt, nanLoss, nanLse,
                              alloc<uint16_t>(padded), nullptr, 1, vocab,
                              padded, ignore, GPTRT_DTYPE_BF16, nullptr);
  expectOk();
  EXPECT_TRUE(std::isnan(download(nanLse, 1)[0]));
}

TEST_F(GpuTest, GlobalNormAndClipScale) {
  const int64_t n = 1000003;
  std::vector<float> x = randn(n, 0.01f);
  float *norm = alloc<float>(1), *coef = alloc<float>(1);
  gptrt_global_norm(g(), upload(x), norm, n);
  gptrt_clip_scale(g(), norm, coef, 0.5);
  expectOk();
  std::vector<double> xd = toDouble(x);
  const double ref = std::sqrt(cpu::sumSquares<double>(xd.data(), n));
  const float gotNorm = download(norm, 1)[0];
  EXPECT_LT(relErr(std::vector<float>{gotNorm}, {ref}), kF32Tol);
  // clip_scale: the same f32 operations as the CPU ABI, bit for bit.
  Context cpuCtx(Device::Cpu, {});
  float cpuCoef = 0;
  gptrt_clip_scale(cpuCtx.handle(), &gotNorm, &cpuCoef, 0.5);
  EXPECT_EQ(download(coef, 1)[0], cpuCoef);
}

TEST_F(GpuTest, AdamWMatchesCpu) {
  const int64_t n = 100003;
  std::vector<float> grad = randn(n), param = randn(n), m = randn(n, 0.1f),
                     v = randn(n, 0.1f);
  for (float &x : v)
    x = x * x;
  const float gradScale = 0.5f, lr = 3e-4f;
  const int64_t step = 7;
  float *dp = upload(param), *dm = upload(m), *dv = upload(v);
  gpu().setStep(step);
  gptrt_adamw(g(), upload(grad), upload(std::vector<float>{gradScale}),
              upload(std::vector<float>{lr}),
              upload(std::vector<float>{float(step)}), dp, dm, dv, n, 0.9,
              0.95, 1e-8, 0.1);
  expectOk();
  // Reference: the CPU ABI in f32 (PyTorch's operation order).
  Context cpuCtx(Device::Cpu, {});
  cpuCtx.setStep(step);
  std::vector<float> cp = param, cm = m, cv = v;
  const float stepF = float(step);
  gptrt_adamw(cpuCtx.handle(), grad.data(), &gradScale, &lr, &stepF,
              cp.data(), cm.data(), cv.data(), n, 0.9, 0.95, 1e-8, 0.1);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  EXPECT_LT(relErr(download(dp, n), toDouble(cp)), kF32Tol);
  EXPECT_LT(relErr(download(dm, n), toDouble(cm)), kF32Tol);
  EXPECT_LT(relErr(download(dv, n), toDouble(cv)), kF32Tol);
  // The 16-byte kernel (aligned buffers, above) and the scalar one (the
  // same buffers one element in, unaligned) give the same bits.
  float *sp = upload(param), *sm = upload(m), *sv = upload(v);
  gptrt_adamw(g(), upload(grad) + 1, upload(std::vector<float>{gradScale}),
              upload(std::vector<float>{lr}),
              upload(std::vector<float>{float(step)}), sp + 1, sm + 1, sv + 1,
              n - 1, 0.9, 0.95, 1e-8, 0.1);
  expectOk();
  const std::vector<float> vp = download(dp, n), vm = download(dm, n),
                           vv = download(dv, n), pp = download(sp, n),
                           pm = download(sm, n), pv = download(sv, n);
  EXPECT_EQ(std::vector<float>(vp.begin() + 1, vp.end()),
            std::vector<float>(pp.begin() + 1, pp.end()));
  EXPECT_EQ(std::vector<float>(vm.begin() + 1, vm.end()),
            std::vector<float>(pm.begin() + 1, pm.end()));
  EXPECT_EQ(std::vector<float>(vv.begin() + 1, vv.end()),
            std::vector<float>(pv.begin() + 1, pv.end()));
}

// gptrt_adamw_multi on the GPU: the bits of one gptrt_adamw per
// stretch of equal weight decay, with ranges that split the 16-byte
// kernel's groups of four and a scalar tail.
TEST_F(GpuTest, AdamWMultiIsOneAdamWPerParameter) {
  const int64_t n = 100003;
  const std::vector<int64_t> ranges = {0,    1001,  1003,  1003,
                                       5000, 77777, 99999, n};
  std::vector<float> grad = randn(n), param = randn(n), m = randn(n, 0.1f),
                     v = randn(n, 0.1f);
  for (float &x : v)
    x = x * x;
  const int64_t step = 5;
  gpu().setStep(step);
  const float *dGrad = upload(grad);
  const float *dScale = upload(std::vector<float>{0.5f});
  const float *dLr = upload(std::vector<float>{3e-4f});
  const float *dStep = upload(std::vector<float>{float(step)});
  float *mp = upload(param), *mm = upload(m), *mv = upload(v);
  gptrt_adamw_multi(g(), dGrad, dScale, dLr, dStep, mp, mm, mv, n, 0.9, 0.95,
                    1e-8, 0.1, 4, ranges.data());
  expectOk();
  float *sp = upload(param), *sm = upload(m), *sv = upload(v);
  const std::vector<std::pair<int64_t, double>> stretches = {
      {0, 0.1}, {1001, 0.0}, {5000, 0.1}, {77777, 0.0}, {99999, 0.1}, {n, 0.0}};
  for (size_t j = 0; j + 1 < stretches.size(); ++j) {
    const int64_t at = stretches[j].first, count = stretches[j + 1].first - at;
    gptrt_adamw(g(), dGrad + at, dScale, dLr, dStep, sp + at, sm + at, sv + at,
                count, 0.9, 0.95, 1e-8, stretches[j].second);
  }
  expectOk();
  EXPECT_EQ(download(mp, n), download(sp, n));
  EXPECT_EQ(download(mm, n), download(sm, n));
  EXPECT_EQ(download(mv, n), download(sv, n));
}

} // namespace
} // namespace gptrt::gputest

namespace gptrt::gputest {
namespace {

TEST_F(GpuTest, AttentionForwardBackward) {
  struct Case {
    int64_t B, T, C, H;
    bool causal;
  };
  for (Case s : {Case{1, 1, 32, 1, true}, Case{2, 64, 96, 3, true},
                 Case{2, 50, 128, 2, false}, Case{1, 256, 768, 12, true}}) {
    const int64_t n = s.B * s.T * s.C, nl = s.B * s.H * s.T;
    std::vector<float> q = randn(n), k = randn(n), v = randn(n),
                       dy = randn(n);
    const float *dq_in = upload(q), *dk_in = upload(k), *dv_in = upload(v);
    float *out = alloc<float>(n), *lse = alloc<float>(nl);
    float *gq = alloc<float>(n), *gk = alloc<float>(n), *gv = alloc<float>(n);
    gptrt_attention_fwd(g(), dq_in, dk_in, dv_in, out, lse, s.B, s.T, s.C,
                        s.H, s.causal, GPTRT_DTYPE_F32);
    gptrt_attention_bwd(g(), upload(dy), dq_in, dk_in, dv_in, out, lse, gq,
                        gk, gv, s.B, s.T, s.C, s.H, s.causal,
                        GPTRT_DTYPE_F32);
    expectOk();
    std::vector<double> qd = toDouble(q), kd = toDouble(k), vd = toDouble(v),
                        dyd = toDouble(dy), o(n), l(nl), rq(n), rk(n), rv(n);
    cpu::attentionForward<double>(o.data(), l.data(), qd.data(), kd.data(),
                                  vd.data(), s.B, s.T, s.C, s.H, s.causal);
    cpu::attentionBackward<double>(rq.data(), rk.data(), rv.data(), dyd.data(),
                                   qd.data(), kd.data(), vd.data(), o.data(),
                                   l.data(), s.B, s.T, s.C, s.H, s.causal);
    SCOPED_TRACE("B " + std::to_string(s.B) + " T " + std::to_string(s.T) +
                 " C " + std::to_string(s.C) + " H " + std::to_string(s.H));
    EXPECT_LT(relErr(download(out, n), o), kF32Tol);
    // An error of e in a log-sum-exp is a relative error of e in every
    // probability: bounded absolutely (one score near 0 with T = 1).
    EXPECT_LT(
        relErrAbove(download(lse, nl), l, normOf(std::vector<double>(nl, 1.0))),
        kF32Tol);
    EXPECT_LT(relErr(download(gq, n), rq), kF32Tol);
    EXPECT_LT(relErr(download(gk, n), rk), kF32Tol);
    EXPECT_LT(relErr(download(gv, n), rv), kF32Tol);
    // The baseline backward has no atomics: the same gradients bit for bit
    // when run again.
    float *again = alloc<float>(3 * n);
    gptrt_attention_bwd(g(), upload(dy), dq_in, dk_in, dv_in, out, lse, again,
                        again + n, again + 2 * n, s.B, s.T, s.C, s.H, s.causal,
                        GPTRT_DTYPE_F32);
    expectOk();
    EXPECT_EQ(download(again, n), download(gq, n));
    EXPECT_EQ(download(again + n, n), download(gk, n));
    EXPECT_EQ(download(again + 2 * n, n), download(gv, n));
  }
}

// Attention on bf16 storage (gpt-bf16-kernels), by the baseline kernels
// and by FlashAttention.cu, against the CPU's bf16-storage kernels: bf16
// precision norm-wise (sums in another order; the flash kernels also round
// probabilities to bf16 before the PV product, as FlashAttention does), on
// sequences that fill whole tiles and ones that do not, causal and full,
// head dims 32, 64 and 128. Outputs are poisoned (0xFFFF, a bf16 NaN).
TEST_F(GpuTest, AttentionOnBf16StorageMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  struct Case {
    int64_t B, T, C, H;
    int64_t causal;
  };
  for (bool flash : {false, true})
    for (Case s : {Case{2, 64, 128, 2, 1}, Case{2, 100, 96, 3, 1},
                   Case{1, 200, 256, 2, 0}, Case{2, 256, 768, 12, 1}}) {
      dev().setFlashAttention(flash);
      SCOPED_TRACE(std::string(flash ? "flash" : "baseline") + " B " +
                   std::to_string(s.B) + " T " + std::to_string(s.T) + " C " +
                   std::to_string(s.C) + " H " + std::to_string(s.H) +
                   (s.causal ? " causal" : " full"));
      const int64_t n = s.B * s.T * s.C, nl = s.B * s.H * s.T;
      std::vector<uint16_t> q = toBf16(randn(n)), k = toBf16(randn(n)),
                            v = toBf16(randn(n)), dy = toBf16(randn(n));
      std::vector<uint16_t> out(n), dq(n), dk(n), dv(n);
      std::vector<float> lse(nl);
      gptrt_attention_fwd(cpuCtx.handle(), q.data(), k.data(), v.data(),
                          out.data(), lse.data(), s.B, s.T, s.C, s.H, s.causal,
                          GPTRT_DTYPE_BF16);
      gptrt_attention_bwd(cpuCtx.handle(), dy.data(), q.data(), k.data(),
                          v.data(), out.data(), lse.data(), dq.data(),
                          dk.data(), dv.data(), s.B, s.T, s.C, s.H, s.causal,
                          GPTRT_DTYPE_BF16);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      const uint16_t *gq = upload(q), *gk = upload(k), *gv = upload(v);
      uint16_t *gOut = upload(std::vector<uint16_t>(n, 0xFFFF));
      float *gLse = upload(std::vector<float>(nl, std::nanf("")));
      gptrt_attention_fwd(g(), gq, gk, gv, gOut, gLse, s.B, s.T, s.C, s.H,
                          s.causal, GPTRT_DTYPE_BF16);
      // The backward reads the CPU's stored output, so dq, dk, dv compare
      // the same inputs.
      uint16_t *gDq = upload(std::vector<uint16_t>(n, 0xFFFF));
      uint16_t *gDk = upload(std::vector<uint16_t>(n, 0xFFFF));
      uint16_t *gDv = upload(std::vector<uint16_t>(n, 0xFFFF));
      gptrt_attention_bwd(g(), upload(dy), gq, gk, gv, upload(out), upload(lse),
                          gDq, gDk, gDv, s.B, s.T, s.C, s.H, s.causal,
                          GPTRT_DTYPE_BF16);
      expectOk();
      EXPECT_LT(relErr(bf16Values(download(gOut, n)), bf16Values(out)),
                kBf16Tol);
      EXPECT_LT(relErr(download(gLse, nl), toDouble(lse)), kF32Tol);
      EXPECT_LT(relErr(bf16Values(download(gDq, n)), bf16Values(dq)), kBf16Tol);
      EXPECT_LT(relErr(bf16Values(download(gDk, n)), bf16Values(dk)), kBf16Tol);
      EXPECT_LT(relErr(bf16Values(download(gDv, n)), bf16Values(dv)), kBf16Tol);
    }
  dev().setFlashAttention(false);
}

// Attention on q, k, v packed in the qkv buffer (rt-fuse-qkv-attention),
// on the baseline kernels (which copy the parts out) and the flash ones
// (which read them in place with a row stride of 3 C): against the CPU's
// packed kernels, every element of out and of the packed gradient written
// (poisoned first).
TEST_F(GpuTest, PackedAttentionMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t B = 2, T = 100, C = 128, H = 2;
  const int64_t n = B * T * C, nl = B * H * T;
  std::vector<uint16_t> qkv = toBf16(randn(3 * n)), dy = toBf16(randn(n));
  std::vector<uint16_t> out(n), dqkv(3 * n);
  std::vector<float> lse(nl);
  gptrt_attention_fwd_packed(cpuCtx.handle(), qkv.data(), nullptr, out.data(),
                             lse.data(), nullptr, nullptr, B, T, C, H, 1,
                             GPTRT_DTYPE_BF16, nullptr);
  gptrt_attention_bwd_packed(cpuCtx.handle(), dy.data(), qkv.data(), out.data(),
                             lse.data(), dqkv.data(), nullptr, B, T, C, H, 1,
                             GPTRT_DTYPE_BF16, nullptr);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  for (bool flash : {false, true}) {
    dev().setFlashAttention(flash);
    SCOPED_TRACE(flash ? "flash" : "baseline");
    const uint16_t *gQkv = upload(qkv);
    uint16_t *gOut = upload(std::vector<uint16_t>(n, 0xFFFF));
    float *gLse = upload(std::vector<float>(nl, std::nanf("")));
    gptrt_attention_fwd_packed(g(), gQkv, nullptr, gOut, gLse, nullptr, nullptr,
                               B, T, C, H, 1, GPTRT_DTYPE_BF16, nullptr);
    uint16_t *gDqkv = upload(std::vector<uint16_t>(3 * n, 0xFFFF));
    gptrt_attention_bwd_packed(g(), upload(dy), gQkv, upload(out), upload(lse),
                               gDqkv, nullptr, B, T, C, H, 1, GPTRT_DTYPE_BF16,
                               nullptr);
    expectOk();
    EXPECT_LT(relErr(bf16Values(download(gOut, n)), bf16Values(out)), kBf16Tol);
    EXPECT_LT(relErr(download(gLse, nl), toDouble(lse)), kF32Tol);
    EXPECT_LT(relErr(bf16Values(download(gDqkv, 3 * n)), bf16Values(dqkv)),
              kBf16Tol);
    // _amax: the same output bits, and the amax of the output as stored
    // (in the flash kernel, or a second pass after the baseline's).
    uint16_t *aOut = upload(std::vector<uint16_t>(n, 0xFFFF));
    float *amax = upload(std::vector<float>{std::nanf("")});
    float *want = alloc<float>(1);
    gptrt_attention_fwd_packed(g(), gQkv, nullptr, aOut, alloc<float>(nl), amax,
                               nullptr, B, T, C, H, 1, GPTRT_DTYPE_BF16,
                               epilogue((B) * (T), C, GPTRT_DTYPE_BF16));
    gptrt_amax(g(), gOut, want, n, GPTRT_DTYPE_BF16);
    expectOk();
    EXPECT_EQ(download(aOut, n), download(gOut, n));
    EXPECT_EQ(download(amax, 1), download(want, 1));
    EXPECT_GT(download(amax, 1)[0], 0.0f);
    // _cast (rt-fuse-producer-cast): the same output bits and amax, and
    // the codes the GPU's quantize_fp8 makes of that output (coded by the
    // flash kernel as it writes out, a second pass after the baseline's);
    // every code written (poisoned).
    const float *scale = upload(std::vector<float>{29.0f});
    uint16_t *cOut = upload(std::vector<uint16_t>(n, 0xFFFF));
    float *cAmax = upload(std::vector<float>{std::nanf("")});
    uint8_t *q = alloc<uint8_t>(n), *wantQ = alloc<uint8_t>(n);
    gptrt_attention_fwd_packed(
        g(), gQkv, scale, cOut, alloc<float>(nl), cAmax, q, B, T, C, H, 1,
        GPTRT_DTYPE_BF16,
        epilogue(B * T, C, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, -1));
    gptrt_quantize_fp8(g(), gOut, scale, wantQ, n, GPTRT_FP8_E4M3, -1,
                       GPTRT_DTYPE_BF16);
    expectOk();
    EXPECT_EQ(download(cOut, n), download(gOut, n));
    EXPECT_EQ(download(cAmax, 1), download(want, 1));
    EXPECT_EQ(download(q, n), download(wantQ, n));
    // The backward's _amax: that of the packed gradient it stored (dq's
    // atomic sums may round differently from run to run, so against this
    // call's own gradient), taken by the flash kernels as they store dk,
    // dv and dq.
    uint16_t *aDqkv = upload(std::vector<uint16_t>(3 * n, 0xFFFF));
    float *gradAmax = upload(std::vector<float>{std::nanf("")});
    float *wantGrad = alloc<float>(1);
    gptrt_attention_bwd_packed(g(), upload(dy), gQkv, upload(out), upload(lse),
                               aDqkv, gradAmax, B, T, C, H, 1, GPTRT_DTYPE_BF16,
                               epilogue((B) * (T), 3 * (C), GPTRT_DTYPE_BF16));
    gptrt_amax(g(), aDqkv, wantGrad, 3 * n, GPTRT_DTYPE_BF16);
    expectOk();
    EXPECT_LT(relErr(bf16Values(download(aDqkv, 3 * n)), bf16Values(dqkv)),
              kBf16Tol);
    EXPECT_EQ(download(gradAmax, 1), download(wantGrad, 1));
    EXPECT_GT(download(gradAmax, 1)[0], 0.0f);
  }
  dev().setFlashAttention(false);
}

// bf16 logits and embeddings (gpt-bf16-kernels) against the CPU's
// bf16-storage kernels: bf16 precision norm-wise, every element written.
TEST_F(GpuTest, LossAndEmbeddingOnBf16StorageMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 300, vocab = 1000, padded = 1024;
  std::vector<uint16_t> logits = toBf16(randn(rows * padded, 4.0f));
  std::vector<int32_t> targets = randint(rows, 0, vocab);
  targets[5] = -1;
  float loss = 0, dloss = 0.75f;
  std::vector<float> lse(rows);
  std::vector<uint16_t> dlogits(rows * padded);
  gptrt_cross_entropy_fwd(cpuCtx.handle(), logits.data(), targets.data(),
                          &loss, lse.data(), rows, vocab, padded, -1,
                          GPTRT_DTYPE_BF16);
  gptrt_cross_entropy_bwd(cpuCtx.handle(), &dloss, logits.data(),
                          targets.data(), lse.data(), dlogits.data(), rows,
                          vocab, padded, -1, GPTRT_DTYPE_BF16);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  const uint16_t *gl = upload(logits);
  const int32_t *gt = upload(targets);
  float *gLoss = alloc<float>(1), *gLse = alloc<float>(rows);
  uint16_t *gGrad = upload(std::vector<uint16_t>(rows * padded, 0xFFFF));
  gptrt_cross_entropy_fwd(g(), gl, gt, gLoss, gLse, rows, vocab, padded, -1,
                          GPTRT_DTYPE_BF16);
  gptrt_cross_entropy_bwd(g(), upload(std::vector<float>{dloss}), gl, gt, gLse,
                          gGrad, rows, vocab, padded, -1, GPTRT_DTYPE_BF16);
  expectOk();
  EXPECT_LT(relErr(download(gLoss, 1), std::vector<double>{loss}), kF32Tol);
  EXPECT_LT(relErr(download(gLse, rows), toDouble(lse)), kF32Tol);
  EXPECT_LT(
      relErr(bf16Values(download(gGrad, rows * padded)), bf16Values(dlogits)),
      kBf16Tol);

  const int64_t tableRows = 50, width = 96, n = 512;
  std::vector<uint16_t> table = toBf16(randn(tableRows * width)),
                        dy = toBf16(randn(n * width));
  std::vector<int32_t> ids = randint(n, 0, tableRows);
  std::vector<uint16_t> out(n * width), dtable(tableRows * width);
  gptrt_embedding_fwd(cpuCtx.handle(), table.data(), ids.data(), out.data(),
                      n, width, GPTRT_DTYPE_BF16);
  gptrt_embedding_bwd(cpuCtx.handle(), dy.data(), ids.data(), dtable.data(),
                      n, tableRows, width, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16);
  const int32_t *gi = upload(ids);
  uint16_t *gOut = upload(std::vector<uint16_t>(n * width, 0xFFFF));
  uint16_t *gTable = upload(std::vector<uint16_t>(tableRows * width, 0xFFFF));
  gptrt_embedding_fwd(g(), upload(table), gi, gOut, n, width,
                      GPTRT_DTYPE_BF16);
  gptrt_embedding_bwd(g(), upload(dy), gi, gTable, n, tableRows, width,
                      GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16);
  expectOk();
  EXPECT_EQ(download(gOut, n * width), out);  // a gather: exact
  EXPECT_LT(relErr(bf16Values(download(gTable, tableRows * width)),
                   bf16Values(dtable)),
            kBf16Tol);

  // Added into an f32 gradient (rt-fuse-grad-accumulation): the rows no id
  // names keep their values exactly; the rest agree up to the order of the
  // atomic additions.
  std::vector<float> grad = randn(tableRows * width);
  std::vector<int32_t> someIds = randint(n, 0, tableRows / 2);
  std::vector<float> want = grad;
  gptrt_embedding_bwd_accumulate(cpuCtx.handle(), dy.data(), someIds.data(),
                                 want.data(), n, tableRows, width,
                                 GPTRT_DTYPE_BF16);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  float *gGradTable = upload(grad);
  gptrt_embedding_bwd_accumulate(g(), upload(dy), upload(someIds), gGradTable,
                                 n, tableRows, width, GPTRT_DTYPE_BF16);
  expectOk();
  std::vector<float> got = download(gGradTable, tableRows * width);
  EXPECT_LT(relErr(got, toDouble(want)), kF32Tol);
  for (int64_t i = tableRows / 2 * width; i < tableRows * width; ++i)
    ASSERT_EQ(got[i], grad[i]) << "element " << i << " of a row no id names";
}

} // namespace
} // namespace gptrt::gputest
