// The extern "C" gptrt_* functions: each against the gptrt::cpu kernel it
// wraps on random inputs (bit for bit, since the wrappers must add no
// arithmetic of their own), with NaN-poisoned outputs to show that "writes"
// overwrite; the step scalars; the sticky error; and that every function of
// gptrt.h is defined and exported for dlopen'ed artifacts.
#include "runtime/core/Abi.h"
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Backend.h"
#include "test/unit/runtime/Epilogue.h"
#include "test/unit/runtime/Gemm.h"
#include "test/unit/runtime/TempDir.h"
#include "test/unit/runtime/TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

namespace gptrt::test {
namespace {

namespace cpu = gptrt::cpu;

using F = std::vector<float>;

F randomF(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return convert<float>(randomVec(n, seed, lo, hi));
}

F nanF(size_t n) { return poisoned<float>(n); }

// Bitwise equality, NaN payloads included.
void expectSameBits(const F &got, const F &want, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
      << what << " differs from the kernel's result";
}

class AbiTest : public ::testing::Test {
protected:
  Context ctx{Device::Cpu, {}};
  gptrt_context *h = ctx.handle();

  void TearDown() override {
    EXPECT_FALSE(ctx.failed()) << "unexpected kernel error: " << ctx.error();
  }
};

TEST_F(AbiTest, FillWrites) {
  F out = nanF(37);
  gptrt_fill(h, out.data(), 37, 0.3);
  for (float x : out)
    EXPECT_EQ(x, 0.3f);
}

TEST_F(AbiTest, AccumulateAdds) {
  F src = randomF(50, 1), dst = randomF(50, 2), want = dst;
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = dst[i] + src[i];
  gptrt_accumulate(h, src.data(), dst.data(), 50, GPTRT_DTYPE_F32);
  expectSameBits(dst, want, "dst");
}

// bf16 storage operands (gpt-bf16-kernels): a kernel with a dtype per
// operand equals the f32 kernel between gptrt_convert calls, bit for bit.
namespace {
std::vector<uint16_t> toBf16(const std::vector<float> &x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = cpu::floatToBf16(x[i]);
  return out;
}
std::vector<float> widened(const std::vector<uint16_t> &x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = cpu::bf16ToFloat(x[i]);
  return out;
}
} // namespace

TEST_F(AbiTest, AccumulateWidensBf16Source) {
  std::vector<uint16_t> src = toBf16(randomF(50, 3));
  F dst = randomF(50, 4), want = dst;
  F wide = widened(src);
  gptrt_accumulate(h, wide.data(), want.data(), 50, GPTRT_DTYPE_F32);
  gptrt_accumulate(h, src.data(), dst.data(), 50, GPTRT_DTYPE_BF16);
  expectSameBits(dst, want, "dst");
  gptrt_accumulate(h, src.data(), dst.data(), 50, 3);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("src_dtype 3, expected f32 (1) or bf16 (2)"));
  ctx.clearError();
}

TEST_F(AbiTest, AddOfEveryStorageCombination) {
  const int64_t outer = 4, inner = 6, n = outer * inner;
  std::vector<uint16_t> a16 = toBf16(randomF(n, 30)),
                        b16 = toBf16(randomF(n, 31));
  F a32 = widened(a16), b32 = widened(b16);
  for (int broadcast = 0; broadcast < 2; ++broadcast)
    for (int mask = 0; mask < 8; ++mask) {
      const bool aBf16 = mask & 1, bBf16 = mask & 2, outBf16 = mask & 4;
      F want(n);
      gptrt_add(h, a32.data(), b32.data(), nullptr, want.data(), nullptr,
                nullptr, outer, inner, broadcast, GPTRT_DTYPE_F32,
                GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, nullptr);
      F out32 = nanF(n);
      std::vector<uint16_t> out16(n, 0xBEEF);
      auto dtype = [](bool bf16) {
        return bf16 ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32;
      };
      gptrt_add(h, aBf16 ? static_cast<const void *>(a16.data()) : a32.data(),
                bBf16 ? static_cast<const void *>(b16.data()) : b32.data(),
                nullptr,
                outBf16 ? static_cast<void *>(out16.data()) : out32.data(),
                nullptr, nullptr, outer, inner, broadcast, dtype(aBf16),
                dtype(bBf16), dtype(outBf16), nullptr);
      ASSERT_EQ(ctx.error(), "") << "mask " << mask;
      if (outBf16)
        EXPECT_EQ(out16, toBf16(want)) << "mask " << mask;
      else
        expectSameBits(out32, want, "out");
    }
  // In place on bf16 storage (out = a), as an accumulation into an
  // activation would be.
  std::vector<uint16_t> inPlace = a16;
  F want(n);
  gptrt_add(h, a32.data(), b32.data(), nullptr, want.data(), nullptr, nullptr,
            outer, inner, 0, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
            nullptr);
  gptrt_add(h, inPlace.data(), b16.data(), nullptr, inPlace.data(), nullptr,
            nullptr, outer, inner, 0, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
            GPTRT_DTYPE_BF16, nullptr);
  EXPECT_EQ(inPlace, toBf16(want));
  gptrt_add(h, a32.data(), b32.data(), nullptr, want.data(), nullptr, nullptr,
            outer, inner, 0, GPTRT_DTYPE_F32, 0, GPTRT_DTYPE_F32, nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("b_dtype 0, expected f32 (1) or bf16 (2)"));
  ctx.clearError();
}

TEST_F(AbiTest, ReduceRowsOfBf16StorageIntoBf16) {
  std::vector<uint16_t> x16 = toBf16(randomF(7 * 5, 32));
  F x32 = widened(x16), want(5);
  cpu::sumRows(want.data(), x32.data(), 7, 5, false);
  std::vector<uint16_t> got(5, 0xBEEF);
  gptrt_reduce_rows(h, x16.data(), got.data(), 7, 5, GPTRT_DTYPE_BF16,
                    GPTRT_DTYPE_BF16);
  EXPECT_EQ(got, toBf16(want));
  F got32 = nanF(5);
  gptrt_reduce_rows(h, x16.data(), got32.data(), 7, 5, GPTRT_DTYPE_BF16,
                    GPTRT_DTYPE_F32);
  expectSameBits(got32, want, "out");
}

TEST_F(AbiTest, ArangeWrites) {
  std::vector<int32_t> out(9, -7);
  gptrt_arange(h, out.data(), 9);
  for (int32_t i = 0; i < 9; ++i)
    EXPECT_EQ(out[i], i);
}

TEST_F(AbiTest, EmbeddingForwardMatchesKernel) {
  const int64_t rows = 7, width = 5, tableRows = 10;
  F table = randomF(tableRows * width, 3);
  auto ids = randomIds(rows, tableRows, 4);
  F got = nanF(rows * width), want(rows * width);
  gptrt_embedding_fwd(h, table.data(), ids.data(), got.data(), rows, width,
                      GPTRT_DTYPE_F32);
  cpu::embeddingForward(want.data(), table.data(), ids.data(), rows, width);
  expectSameBits(got, want, "out");
  // A bf16 table gathers into bf16 rows, as widen, gather, narrow would.
  std::vector<uint16_t> table16 = toBf16(table), got16(rows * width, 0xBEEF);
  gptrt_embedding_fwd(h, table16.data(), ids.data(), got16.data(), rows,
                      width, GPTRT_DTYPE_BF16);
  F wide = widened(table16), wantWide(rows * width);
  cpu::embeddingForward(wantWide.data(), wide.data(), ids.data(), rows, width);
  EXPECT_EQ(got16, toBf16(wantWide));
}

TEST_F(AbiTest, EmbeddingBackwardWritesAndAddsRepeatedIds) {
  const int64_t rows = 9, width = 4, tableRows = 6;
  F dout = randomF(rows * width, 5);
  std::vector<int32_t> ids = {1, 3, 1, 5, 0, 1, 3, 2, 5};
  F got = nanF(tableRows * width), want(tableRows * width, 0.0f);
  gptrt_embedding_bwd(h, dout.data(), ids.data(), got.data(), rows, tableRows,
                      width, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32);
  cpu::embeddingBackward(want.data(), dout.data(), ids.data(), rows, width);
  expectSameBits(got, want, "dtable");
  // Row 4 is never looked up: written as zero, not left poisoned.
  for (int64_t j = 0; j < width; ++j)
    EXPECT_EQ(got[4 * width + j], 0.0f);
  // A bf16 gradient summed in f32 into a bf16 table gradient: one rounding.
  std::vector<uint16_t> dout16 = toBf16(dout), got16(tableRows * width, 0xBEEF);
  F wide = widened(dout16), wantWide(tableRows * width, 0.0f);
  cpu::embeddingBackward(wantWide.data(), wide.data(), ids.data(), rows, width);
  gptrt_embedding_bwd(h, dout16.data(), ids.data(), got16.data(), rows,
                      tableRows, width, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16);
  EXPECT_EQ(got16, toBf16(wantWide));
}

// rt-fuse-grad-accumulation's embedding backward: each row added into the
// f32 gradient in order, the rows no id names untouched; ids are checked.
TEST_F(AbiTest, EmbeddingBackwardAccumulatesIntoTheGradient) {
  const int64_t rows = 7, tableRows = 5, width = 3;
  const std::vector<int32_t> ids = {4, 1, 4, 0, 4, 1, 0};
  const F dout = randomF(rows * width, 91);
  const F grad = randomF(tableRows * width, 93);
  F want = grad;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j)
      want[ids[i] * width + j] += dout[i * width + j];
  F got = grad;
  gptrt_embedding_bwd_accumulate(h, dout.data(), ids.data(), got.data(), rows,
                                 tableRows, width, GPTRT_DTYPE_F32);
  expectSameBits(got, want, "embedding_bwd_accumulate");
  EXPECT_EQ(got[2 * width], grad[2 * width]) << "row 2 has no id";
  // bf16 storage of dout: widened as read.
  std::vector<uint16_t> dout16(dout.size());
  F widened(dout.size());
  for (size_t i = 0; i < dout.size(); ++i) {
    dout16[i] = cpu::floatToBf16(dout[i]);
    widened[i] = cpu::bf16ToFloat(dout16[i]);
  }
  F got16 = grad, want16 = grad;
  gptrt_embedding_bwd_accumulate(h, dout16.data(), ids.data(), got16.data(),
                                 rows, tableRows, width, GPTRT_DTYPE_BF16);
  gptrt_embedding_bwd_accumulate(h, widened.data(), ids.data(), want16.data(),
                                 rows, tableRows, width, GPTRT_DTYPE_F32);
  expectSameBits(got16, want16, "embedding_bwd_accumulate of bf16 dout");
  const std::vector<int32_t> bad = {0, 5, 1, 1, 1, 1, 1};
  gptrt_embedding_bwd_accumulate(h, dout.data(), bad.data(), got.data(), rows,
                                 tableRows, width, GPTRT_DTYPE_F32);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("id 5 of row 1 is outside"));
  ctx.clearError();
}

// GPTRT_DTYPE_F32_ACCUMULATE on the small gradient outputs
// (rt-fuse-grad-accumulation): each adds, bit for bit, the f32 values the
// kernel writes with dtype f32; other outputs refuse it.
TEST_F(AbiTest, GradientOutputsAccumulateWithDtype257) {
  const int64_t rows = 40, cols = 6;
  const F x = randomF(rows * cols, 101, -2, 2), grad = randomF(cols, 103);
  auto expectAdds = [&](const F &got, const F &written, const char *what) {
    F want = grad;
    for (int64_t j = 0; j < cols; ++j)
      want[j] += written[j];
    expectSameBits(got, want, what);
  };
  F sums = nanF(cols), got = grad;
  gptrt_reduce_rows(h, x.data(), sums.data(), rows, cols, GPTRT_DTYPE_F32,
                    GPTRT_DTYPE_F32);
  gptrt_reduce_rows(h, x.data(), got.data(), rows, cols, GPTRT_DTYPE_F32,
                    GPTRT_DTYPE_F32_ACCUMULATE);
  expectAdds(got, sums, "reduce_rows");

  // The layernorm's dw and db (dx stays a storage dtype).
  const F w = randomF(cols, 105), b = randomF(cols, 106),
          dout = randomF(rows * cols, 107);
  F out(rows * cols), mean(rows), rstd(rows);
  cpu::layerNormForward(out.data(), mean.data(), rstd.data(), x.data(),
                        w.data(), b.data(), rows, cols, 1e-5f);
  F dx(rows * cols), dw = nanF(cols), db = nanF(cols);
  gptrt_layernorm_bwd(h, dout.data(), x.data(), w.data(), mean.data(),
                      rstd.data(), dx.data(), dw.data(), db.data(), nullptr,
                      rows, cols, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      nullptr);
  F gotDw = grad, gotDb = grad, gotDx(rows * cols);
  gptrt_layernorm_bwd(h, dout.data(), x.data(), w.data(), mean.data(),
                      rstd.data(), gotDx.data(), gotDw.data(), gotDb.data(),
                      nullptr, rows, cols, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32_ACCUMULATE,
                      GPTRT_DTYPE_F32_ACCUMULATE, nullptr);
  expectSameBits(gotDx, dx, "layernorm dx");
  expectAdds(gotDw, dw, "layernorm dw");
  expectAdds(gotDb, db, "layernorm db");

  // Not a storage dtype: refused where the output is not a gradient's.
  gptrt_layernorm_bwd(h, dout.data(), x.data(), w.data(), mean.data(),
                      rstd.data(), gotDx.data(), gotDw.data(), gotDb.data(),
                      nullptr, rows, cols, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      GPTRT_DTYPE_F32_ACCUMULATE, GPTRT_DTYPE_F32,
                      GPTRT_DTYPE_F32, nullptr);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("dx_dtype 257, expected f32 (1) or bf16"));
  ctx.clearError();
  F gelu(rows * cols);
  gptrt_gelu_fwd(h, x.data(), nullptr, gelu.data(), nullptr, nullptr, nullptr,
                 rows * cols, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32_ACCUMULATE,
                 nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("out_dtype 257"));
  ctx.clearError();
  gptrt_reduce_rows(h, x.data(), got.data(), rows, cols, GPTRT_DTYPE_F32, 7);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("out_dtype 7, expected f32 (1), bf16 (2) "
                                   "or f32 accumulate (257)"));
  ctx.clearError();
}

TEST_F(AbiTest, EmbeddingBackwardRejectsIdOutsideTable) {
  std::vector<int32_t> ids = {0, 6};
  F dout(2 * 3, 1.0f), dtable(6 * 3);
  gptrt_embedding_bwd(h, dout.data(), ids.data(), dtable.data(), 2, 6, 3,
                      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("gptrt_embedding_bwd: id 6 of row 1 is "
                                   "outside [0, 6)"));
  ctx.clearError();
}

TEST_F(AbiTest, LayerNormForwardMatchesKernel) {
  const int64_t rows = 5, width = 16;
  F x = randomF(rows * width, 6, -3, 3), w = randomF(width, 7),
    b = randomF(width, 8);
  F out = nanF(rows * width), mean = nanF(rows), rstd = nanF(rows);
  F wOut(rows * width), wMean(rows), wRstd(rows);
  gptrt_layernorm_fwd(h, x.data(), w.data(), b.data(), nullptr, out.data(),
                      mean.data(), rstd.data(), nullptr, nullptr, nullptr, rows,
                      width, 1e-5, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, nullptr);
  cpu::layerNormForward(wOut.data(), wMean.data(), wRstd.data(), x.data(),
                        w.data(), b.data(), rows, width, 1e-5f);
  expectSameBits(out, wOut, "out");
  expectSameBits(mean, wMean, "mean");
  expectSameBits(rstd, wRstd, "rstd");
}

// bf16 activations and gradients: the f32 kernels between conversions,
// bit for bit (statistics stay f32).
TEST_F(AbiTest, LayerNormOnBf16Storage) {
  const int64_t rows = 5, width = 16;
  std::vector<uint16_t> x16 = toBf16(randomF(rows * width, 13, -3, 3)),
                        dout16 = toBf16(randomF(rows * width, 14));
  F x = widened(x16), dout = widened(dout16), w = randomF(width, 15),
    b = randomF(width, 16);
  F wOut(rows * width), wMean(rows), wRstd(rows);
  cpu::layerNormForward(wOut.data(), wMean.data(), wRstd.data(), x.data(),
                        w.data(), b.data(), rows, width, 1e-5f);
  std::vector<uint16_t> out16(rows * width, 0xBEEF);
  F mean = nanF(rows), rstd = nanF(rows);
  gptrt_layernorm_fwd(h, x16.data(), w.data(), b.data(), nullptr, out16.data(),
                      mean.data(), rstd.data(), nullptr, nullptr, nullptr, rows,
                      width, 1e-5, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  EXPECT_EQ(out16, toBf16(wOut));
  expectSameBits(mean, wMean, "mean");
  expectSameBits(rstd, wRstd, "rstd");

  F wDx(rows * width), wDw(width, 0.0f), wDb(width, 0.0f);
  cpu::layerNormBackward(wDx.data(), wDw.data(), wDb.data(), dout.data(),
                         x.data(), wMean.data(), wRstd.data(), w.data(), rows,
                         width);
  std::vector<uint16_t> dx16(rows * width, 0xBEEF), dw16(width, 0xBEEF);
  F db = nanF(width);
  gptrt_layernorm_bwd(h, dout16.data(), x16.data(), w.data(), mean.data(),
                      rstd.data(), dx16.data(), dw16.data(), db.data(), nullptr,
                      rows, width, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                      GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32,
                      nullptr);
  EXPECT_EQ(dx16, toBf16(wDx));
  EXPECT_EQ(dw16, toBf16(wDw));
  expectSameBits(db, wDb, "db");
}

TEST_F(AbiTest, LayerNormBackwardWritesWeightAndBiasGrads) {
  const int64_t rows = 6, width = 8;
  F x = randomF(rows * width, 9, -2, 2), w = randomF(width, 10),
    b = randomF(width, 11), dout = randomF(rows * width, 12);
  F out(rows * width), mean(rows), rstd(rows);
  cpu::layerNormForward(out.data(), mean.data(), rstd.data(), x.data(),
                        w.data(), b.data(), rows, width, 1e-5f);
  F dx = nanF(rows * width), dw = nanF(width), db = nanF(width);
  F wDx(rows * width), wDw(width, 0.0f), wDb(width, 0.0f);
  gptrt_layernorm_bwd(h, dout.data(), x.data(), w.data(), mean.data(),
                      rstd.data(), dx.data(), dw.data(), db.data(), nullptr,
                      rows, width, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                      nullptr);
  cpu::layerNormBackward(wDx.data(), wDw.data(), wDb.data(), dout.data(),
                         x.data(), mean.data(), rstd.data(), w.data(), rows,
                         width);
  expectSameBits(dx, wDx, "dx");
  expectSameBits(dw, wDw, "dw");
  expectSameBits(db, wDb, "db");
  // _amax (rt-fuse-amax): the same outputs and gptrt_amax of dx.
  F aDx = nanF(rows * width), aDw = nanF(width), aDb = nanF(width),
    amax = nanF(1), want = nanF(1);
  gptrt_layernorm_bwd(
      h, dout.data(), x.data(), w.data(), mean.data(), rstd.data(), aDx.data(),
      aDw.data(), aDb.data(), amax.data(), rows, width, GPTRT_DTYPE_F32,
      GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
      epilogue(rows, width, GPTRT_DTYPE_F32, 0, 0, -1, -1, GPTRT_DTYPE_F32));
  gptrt_amax(h, dx.data(), want.data(), rows * width, GPTRT_DTYPE_F32);
  expectSameBits(aDx, dx, "dx (_amax)");
  expectSameBits(aDw, dw, "dw (_amax)");
  expectSameBits(aDb, db, "db (_amax)");
  expectSameBits(amax, want, "amax of dx");
  EXPECT_GT(amax[0], 0.0f);
}

// rt-fuse-add-layernorm's backward kernel: bit for bit gptrt_layernorm_bwd
// and then gptrt_add of its stored dx into the residual gradient, with
// bf16 dx and sum, an f32 residual, and dw and db added into their
// gradients (dtype 257); its _amax and _cast forms take the sum's epilogue.
TEST_F(AbiTest, LayerNormBackwardAddIsTheTwoKernels) {
  const int64_t rows = 6, width = 16, n = rows * width;
  F x = randomF(n, 21, -2, 2), w = randomF(width, 22), b = randomF(width, 23),
    dout = randomF(n, 24), resid = randomF(n, 25, -4, 4);
  F out(n), mean(rows), rstd(rows);
  cpu::layerNormForward(out.data(), mean.data(), rstd.data(), x.data(),
                        w.data(), b.data(), rows, width, 1e-5f);
  const std::vector<uint16_t> dout16 = toBf16(dout), x16 = toBf16(x);
  const F dwBefore = randomF(width, 26), dbBefore = randomF(width, 27);
  auto backward = [&](auto &&call) {
    F dw = dwBefore, db = dbBefore;
    std::vector<uint16_t> sum(n, 0xBEEF);
    call(sum.data(), dw.data(), db.data());
    return std::tuple(sum, dw, db);
  };
  auto [want, wantDw,
        wantDb] = backward([&](uint16_t *sum, float *dw, float *db) {
    std::vector<uint16_t> dx(n, 0xBEEF);
    gptrt_layernorm_bwd(h, dout16.data(), x16.data(), w.data(), mean.data(),
                        rstd.data(), dx.data(), dw, db, nullptr, rows, width,
                        GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
                        GPTRT_DTYPE_F32_ACCUMULATE, GPTRT_DTYPE_F32_ACCUMULATE,
                        nullptr);
    gptrt_add(h, dx.data(), resid.data(), nullptr, sum, nullptr, nullptr, 1, n,
              0, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, nullptr);
  });
  auto [got, gotDw, gotDb] = backward([&](uint16_t *sum, float *dw, float *db) {
    gptrt_layernorm_bwd_add(
        h, dout16.data(), x16.data(), w.data(), mean.data(), rstd.data(),
        resid.data(), nullptr, sum, dw, db, nullptr, nullptr, rows, width,
        GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
        GPTRT_DTYPE_F32_ACCUMULATE, GPTRT_DTYPE_F32_ACCUMULATE, GPTRT_DTYPE_F32,
        GPTRT_DTYPE_BF16, nullptr);
  });
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(got, want);
  expectSameBits(gotDw, wantDw, "dw");
  expectSameBits(gotDb, wantDb, "db");
  EXPECT_NE(gotDw, dwBefore) << "dw was added into";

  // _amax: the amax of the stored sum.
  F amax = nanF(1), wantAmax = nanF(1);
  gptrt_amax(h, want.data(), wantAmax.data(), n, GPTRT_DTYPE_BF16);
  auto [amaxSum, amaxDw, amaxDb] =
      backward([&](uint16_t *sum, float *dw, float *db) {
        gptrt_layernorm_bwd_add(
            h, dout16.data(), x16.data(), w.data(), mean.data(), rstd.data(),
            resid.data(), nullptr, sum, dw, db, amax.data(), nullptr, rows,
            width, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
            GPTRT_DTYPE_F32_ACCUMULATE, GPTRT_DTYPE_F32_ACCUMULATE,
            GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
            epilogue(rows, width, GPTRT_DTYPE_BF16, 0, 0, -1, -1,
                     GPTRT_DTYPE_F32_ACCUMULATE));
      });
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(amaxSum, want);
  expectSameBits(amaxDw, wantDw, "dw (_amax)");
  expectSameBits(amax, wantAmax, "amax of the sum");

  // _cast, row-major and transposed: the codes gptrt_quantize_fp8 (and its
  // transposed form) give the stored sum.
  const F scale{64.0f};
  for (int64_t transpose : {0, 1}) {
    SCOPED_TRACE("transpose " + std::to_string(transpose));
    std::vector<uint8_t> q(n, 0xAA), wantQ(n, 0xBB);
    if (transpose)
      gptrt_quantize_fp8_transposed(h, want.data(), scale.data(), wantQ.data(),
                                    rows, width, GPTRT_FP8_E5M2, -1,
                                    GPTRT_DTYPE_BF16);
    else
      gptrt_quantize_fp8(h, want.data(), scale.data(), wantQ.data(), n,
                         GPTRT_FP8_E5M2, -1, GPTRT_DTYPE_BF16);
    F castAmax = nanF(1);
    auto [castSum, castDw, castDb] =
        backward([&](uint16_t *sum, float *dw, float *db) {
          gptrt_layernorm_bwd_add(
              h, dout16.data(), x16.data(), w.data(), mean.data(), rstd.data(),
              resid.data(), scale.data(), sum, dw, db, castAmax.data(),
              q.data(), rows, width, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16,
              GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE,
              GPTRT_DTYPE_F32_ACCUMULATE, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
              epilogue(rows, width, GPTRT_DTYPE_BF16, GPTRT_FP8_E5M2, transpose,
                       -1, -1, GPTRT_DTYPE_F32_ACCUMULATE));
        });
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    EXPECT_EQ(castSum, want);
    expectSameBits(castDb, wantDb, "db (_cast)");
    expectSameBits(castAmax, wantAmax, "amax (_cast)");
    EXPECT_EQ(q, wantQ);
  }

  // A null residual is an error naming it, not a crash.
  backward([&](uint16_t *sum, float *dw, float *db) {
    gptrt_layernorm_bwd_add(
        h, dout16.data(), x16.data(), w.data(), mean.data(), rstd.data(),
        nullptr, nullptr, sum, dw, db, nullptr, nullptr, rows, width,
        GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32,
        GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, nullptr);
  });
  EXPECT_NE(ctx.error().find("resid is null"), std::string::npos)
      << ctx.error();
  ctx.clearError();
}

// Calls body(trans_a, trans_b, stride_b) for every transpose and for a
// broadcast b (stride 0) as well as a batched one (stride k * n).
template <typename Body> void forEachGemmLayout(int64_t k, int64_t n, Body body) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int64_t strideB : {int64_t(0), k * n}) {
        SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " +
                     std::to_string(tb) + " stride_b " +
                     std::to_string(strideB));
        body(ta, tb, strideB);
      }
}

TEST_F(AbiTest, GemmF32MatchesKernelForEveryTransposeAndBroadcast) {
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  forEachGemmLayout(k, n, [&](int ta, int tb, int64_t strideB) {
    F a = randomF(batch * m * k, 13 + ta), b = randomF(batch * k * n, 15 + tb);
    F got = nanF(batch * m * n), want(batch * m * n, 0.0f);
    const gptrt_gemm_desc d =
        gemmDesc(batch, m, n, k, ta, tb, m * k, strideB, m * n);
    gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, got.data(), nullptr, nullptr, nullptr, nullptr, &d,
               nullptr);
    cpu::gemmBatched(want.data(), a.data(), b.data(), batch, m, n, k,
                     ta != 0, tb != 0, 0.0f, m * k, strideB, m * n);
    expectSameBits(got, want, "c");
  });
}

// The bf16 GEMM is the f32 GEMM of the widened operands, bit for bit: the
// compiler swaps one for the other (gpt-bf16-gemm) promising exactly that.
TEST_F(AbiTest, GemmBf16IsTheF32GemmOfTheWidenedOperands) {
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  forEachGemmLayout(k, n, [&](int ta, int tb, int64_t strideB) {
    F a = randomF(batch * m * k, 23 + ta), b = randomF(batch * k * n, 25 + tb);
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      a16[i] = cpu::floatToBf16(a[i]);
      a[i] = cpu::bf16ToFloat(a16[i]);
    }
    for (size_t i = 0; i < b.size(); ++i) {
      b16[i] = cpu::floatToBf16(b[i]);
      b[i] = cpu::bf16ToFloat(b16[i]);
    }
    F got = nanF(batch * m * n), want(batch * m * n, 0.0f);
    const gptrt_gemm_desc toF32 = bf16Gemm(batch, m, n, k, ta, tb, m * k,
                                           strideB, m * n, GPTRT_DTYPE_F32);
    gptrt_gemm(h, a16.data(), b16.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, got.data(), nullptr, nullptr, nullptr, nullptr, &toF32,
               nullptr);
    const gptrt_gemm_desc f32 =
        gemmDesc(batch, m, n, k, ta, tb, m * k, strideB, m * n);
    gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, want.data(), nullptr, nullptr, nullptr, nullptr, &f32,
               nullptr);
    expectSameBits(got, want, "c");
    // A bf16 result is that f32 result rounded once; the gap between
    // strided batches (stride_c > m * n) is left alone.
    const int64_t strideC = m * n + 3;
    std::vector<uint16_t> narrow(batch * strideC, 0xBEEF);
    const gptrt_gemm_desc toBf16 = bf16Gemm(batch, m, n, k, ta, tb, m * k,
                                            strideB, strideC, GPTRT_DTYPE_BF16);
    gptrt_gemm(h, a16.data(), b16.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, narrow.data(), nullptr, nullptr, nullptr, nullptr,
               &toBf16, nullptr);
    for (int64_t p = 0; p < batch; ++p) {
      for (int64_t i = 0; i < m * n; ++i)
        ASSERT_EQ(narrow[p * strideC + i], cpu::floatToBf16(want[p * m * n + i]))
            << "batch " << p << " element " << i;
      for (int64_t i = m * n; i < strideC && p + 1 < batch; ++i)
        ASSERT_EQ(narrow[p * strideC + i], 0xBEEF) << "gap written";
    }
    // With a bias: the f32 GEMM, then bias_add, then (for bf16) one
    // rounding -- the sequence it replaces.
    F bias = randomF(n, 27 + ta + tb);
    F withBias = want;
    for (int64_t p = 0; p < batch; ++p)
      gptrt_bias_add(h, bias.data(), withBias.data() + p * m * n, m, n);
    F got32 = nanF(batch * m * n);
    gptrt_gemm(h, a16.data(), b16.data(), nullptr, nullptr, bias.data(),
               nullptr, nullptr, got32.data(), nullptr, nullptr, nullptr,
               nullptr, &toF32, nullptr);
    expectSameBits(got32, withBias, "c with bias");
    std::vector<uint16_t> got16(batch * strideC, 0xBEEF);
    gptrt_gemm(h, a16.data(), b16.data(), nullptr, nullptr, bias.data(),
               nullptr, nullptr, got16.data(), nullptr, nullptr, nullptr,
               nullptr, &toBf16, nullptr);
    for (int64_t p = 0; p < batch; ++p) {
      for (int64_t i = 0; i < m * n; ++i)
        ASSERT_EQ(got16[p * strideC + i],
                  cpu::floatToBf16(withBias[p * m * n + i]))
            << "bias, batch " << p << " element " << i;
      for (int64_t i = m * n; i < strideC && p + 1 < batch; ++i)
        ASSERT_EQ(got16[p * strideC + i], 0xBEEF) << "gap written";
    }
  });
  // The GELU epilogue without the bias it adds is refused.
  std::vector<uint16_t> one(1);
  F out(1), pre(1);
  gptrt_gemm_desc gelu = bf16Gemm(1, 1, 1, 1, 0, 0, 0, 0, 0, GPTRT_DTYPE_F32);
  gelu.gelu_pre_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, one.data(), one.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, out.data(), pre.data(), nullptr, nullptr, nullptr, &gelu,
             nullptr);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("gptrt_gemm: gelu_pre (the GELU epilogue) "
                                   "needs bf16 operands and a bias"));
  ctx.clearError();
  // A negative stride would read before the operand: refused; so is an
  // output type the kernel does not write.
  F c(4);
  std::vector<uint16_t> x(4);
  const gptrt_gemm_desc negative =
      bf16Gemm(2, 1, 1, 1, 0, 0, -1, 0, 1, GPTRT_DTYPE_F32);
  gptrt_gemm(h, x.data(), x.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &negative, nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("stride_a = -1, expected >= 0"));
  ctx.clearError();
  const gptrt_gemm_desc unknownDtype = bf16Gemm(1, 1, 1, 1, 0, 0, 1, 1, 1, 7);
  gptrt_gemm(h, x.data(), x.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &unknownDtype,
             nullptr);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("c_dtype 7, expected f32 (1) or bf16 (2)"));
  ctx.clearError();
}

// gptrt_gemm's descriptor and buffers are checked together: a form it does
// not offer is refused with an error naming it, before anything is written.
TEST_F(AbiTest, GemmRefusesFormsItDoesNotOffer) {
  std::vector<uint16_t> x16(4, 0x3F80); // bf16 1.0
  std::vector<uint8_t> x8(4, 0x38);     // E4M3 1.0
  F c(4, 7.0f), pre(4), bias(2, 1.0f), db(2);
  const float one = 1.0f;
  float amax = 0;
  auto expectRefused = [&](const char *what) {
    EXPECT_THAT(ctx.error(), ::testing::HasSubstr(what));
    ctx.clearError();
    EXPECT_EQ(c, F(4, 7.0f)) << "c written by a refused call";
  };
  gptrt_gemm(h, x16.data(), x16.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, c.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             nullptr);
  expectRefused("gptrt_gemm: the gemm descriptor is null");
  gptrt_gemm_desc mixed = bf16Gemm(1, 2, 2, 1, 0, 0, 0, 0, 0, GPTRT_DTYPE_F32);
  mixed.b_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, x16.data(), c.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, c.data(), nullptr, nullptr, nullptr, nullptr, &mixed,
             nullptr);
  expectRefused("a_dtype 2, b_dtype 1: expected both f32");
  gptrt_gemm_desc f32ToBf16 = gemmDesc(1, 2, 2, 1, 0, 0, 0, 0, 0);
  f32ToBf16.c_dtype = GPTRT_DTYPE_BF16;
  F a32(4, 1.0f);
  gptrt_gemm(h, a32.data(), a32.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, c.data(), nullptr, nullptr, nullptr, nullptr, &f32ToBf16,
             nullptr);
  expectRefused("an f32 GEMM (a_dtype 1) writes an f32 c (c_dtype 1)");
  const gptrt_gemm_desc fp8 = fp8Gemm(1, 2, 2, 1, 0, 0, 0, 0, 0, GPTRT_FP8_E4M3,
                                      GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, x8.data(), x8.data(), &one, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &fp8, nullptr);
  expectRefused("scale_b is null: FP8 operands need both scales");
  const gptrt_gemm_desc bf16 =
      bf16Gemm(1, 2, 2, 1, 0, 0, 0, 0, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, x16.data(), x16.data(), &one, &one, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &bf16, nullptr);
  expectRefused("scale_a is given, but the operands are not FP8");
  gptrt_gemm_desc biasAndDbias =
      bf16Gemm(1, 2, 2, 1, 1, 0, 0, 0, 0, GPTRT_DTYPE_F32);
  biasAndDbias.dbias_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, x16.data(), x16.data(), nullptr, nullptr, bias.data(), nullptr,
             nullptr, c.data(), nullptr, db.data(), nullptr, nullptr,
             &biasAndDbias, nullptr);
  expectRefused("dbias (the bias-gradient epilogue) needs bf16 operands and "
                "no other epilogue");
  const gptrt_gemm_desc accumulate =
      bf16Gemm(1, 2, 2, 1, 0, 0, 0, 0, 0, GPTRT_DTYPE_F32_ACCUMULATE);
  gptrt_gemm(h, x16.data(), x16.data(), nullptr, nullptr, bias.data(), nullptr,
             nullptr, c.data(), nullptr, nullptr, nullptr, nullptr, &accumulate,
             nullptr);
  expectRefused("c_dtype 257 (accumulate into c) takes no bias or GELU "
                "epilogue");
  // The output epilogue reads a plain stored c: the error is the call's,
  // named by its form.
  gptrt_gemm(h, x16.data(), x16.data(), nullptr, nullptr, bias.data(), nullptr,
             nullptr, c.data(), nullptr, nullptr, &amax, nullptr, &bf16,
             epilogue(2, 2, GPTRT_DTYPE_F32));
  expectRefused("gptrt_gemm.bf16+bias+amax: the output epilogue (amax, scale, "
                "q) works on a stored c");
}

// add_layernorm_fwd (rt-fuse-add-layernorm) is, on the CPU, the add and
// the layernorm it fuses: the same bits for every storage combination.
TEST_F(AbiTest, AddLayerNormIsTheAddThenTheLayerNorm) {
  const int64_t rows = 6, width = 40, n = rows * width;
  F a32 = randomF(n, 51, -3, 3), b32 = randomF(n, 53, -3, 3),
    w = randomF(width, 57, 0.5, 1.5), bias = randomF(width, 59);
  auto stored = [](const F &v, int64_t dtype) {
    std::vector<unsigned char> bytes(v.size() *
                                     (dtype == GPTRT_DTYPE_F32 ? 4 : 2));
    for (size_t i = 0; i < v.size(); ++i) {
      if (dtype == GPTRT_DTYPE_F32) {
        std::memcpy(bytes.data() + 4 * i, &v[i], 4);
      } else {
        uint16_t code = cpu::floatToBf16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &code, 2);
      }
    }
    return bytes;
  };
  for (int64_t aDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16})
    for (int64_t xDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      SCOPED_TRACE("a " + std::to_string(aDtype) + " x " +
                   std::to_string(xDtype));
      const int64_t bDtype = GPTRT_DTYPE_BF16, outDtype = xDtype;
      auto a = stored(a32, aDtype), b = stored(b32, bDtype);
      const size_t bytes = size_t(n) * (xDtype == GPTRT_DTYPE_F32 ? 4 : 2);
      std::vector<unsigned char> x(bytes, 0xFF), out(bytes, 0xFF),
          wantX(bytes, 0xFF), wantOut(bytes, 0xFF);
      F mean = nanF(rows), rstd = nanF(rows), wantMean = nanF(rows),
        wantRstd = nanF(rows);
      gptrt_add_layernorm_fwd(
          h, a.data(), b.data(), w.data(), bias.data(), nullptr, x.data(),
          out.data(), mean.data(), rstd.data(), nullptr, nullptr, nullptr, rows,
          width, 1e-5, aDtype, bDtype, xDtype, outDtype, nullptr);
      gptrt_add(h, a.data(), b.data(), nullptr, wantX.data(), nullptr, nullptr,
                rows, width, 0, aDtype, bDtype, xDtype, nullptr);
      gptrt_layernorm_fwd(h, wantX.data(), w.data(), bias.data(), nullptr,
                          wantOut.data(), wantMean.data(), wantRstd.data(),
                          nullptr, nullptr, nullptr, rows, width, 1e-5, xDtype,
                          outDtype, nullptr);
      EXPECT_EQ(x, wantX);
      EXPECT_EQ(out, wantOut);
      expectSameBits(mean, wantMean, "mean");
      expectSameBits(rstd, wantRstd, "rstd");
    }
}

// The GELU epilogues (rt-fuse-gemm-epilogue) are, on the CPU, the two
// kernels they fold: the same bits for every storage combination the
// compiler emits, and their arguments refused alike.
TEST_F(AbiTest, GeluEpiloguesAreTheKernelsTheyFold) {
  const int64_t batch = 2, m = 3, n = 8, k = 5, count = batch * m * n;
  auto bf16Of = [](const F &x) {
    std::vector<uint16_t> codes(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      codes[i] = cpu::floatToBf16(x[i]);
    return codes;
  };
  std::vector<uint16_t> a = bf16Of(randomF(batch * m * k, 41, -2, 2)),
                        b = bf16Of(randomF(k * n, 43, -2, 2));
  F bias = randomF(n, 47);
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    SCOPED_TRACE("dtype " + std::to_string(dtype));
    const size_t bytes = size_t(count) * (dtype == GPTRT_DTYPE_F32 ? 4 : 2);
    auto buffer = [&] { return std::vector<unsigned char>(bytes, 0xFF); };
    // Forward: pre = a b + bias, out = gelu(pre).
    auto pre = buffer(), out = buffer(), wantPre = buffer(), wantOut = buffer();
    const gptrt_gemm_desc plain =
        bf16Gemm(batch, m, n, k, 0, 0, m * k, 0, m * n, dtype);
    gptrt_gemm_desc gelu = plain;
    gelu.gelu_pre_dtype = dtype;
    gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, bias.data(), nullptr,
               nullptr, out.data(), pre.data(), nullptr, nullptr, nullptr,
               &gelu, nullptr);
    gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, bias.data(), nullptr,
               nullptr, wantPre.data(), nullptr, nullptr, nullptr, nullptr,
               &plain, nullptr);
    gptrt_gelu_fwd(h, wantPre.data(), nullptr, wantOut.data(), nullptr, nullptr,
                   nullptr, count, dtype, dtype, nullptr);
    EXPECT_EQ(pre, wantPre);
    EXPECT_EQ(out, wantOut);
    // Backward: dx = gelu'(pre) * (a b), the product stored as dg_dtype.
    for (int64_t dgDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      auto dx = buffer(), wantDx = buffer();
      std::vector<unsigned char> dg(size_t(count) *
                                    (dgDtype == GPTRT_DTYPE_F32 ? 4 : 2));
      gptrt_gemm_desc dgelu = plain; // dx as dtype
      dgelu.product_dtype = dgDtype;
      dgelu.dgelu_pre_dtype = dtype;
      gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr,
                 wantPre.data(), nullptr, dx.data(), nullptr, nullptr, nullptr,
                 nullptr, &dgelu, nullptr);
      const gptrt_gemm_desc product =
          bf16Gemm(batch, m, n, k, 0, 0, m * k, 0, m * n, dgDtype);
      gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr,
                 nullptr, dg.data(), nullptr, nullptr, nullptr, nullptr,
                 &product, nullptr);
      gptrt_gelu_bwd(h, dg.data(), wantPre.data(), nullptr, wantDx.data(),
                     nullptr, nullptr, nullptr, nullptr, count, dgDtype, dtype,
                     dtype, nullptr);
      EXPECT_EQ(dx, wantDx) << "dg_dtype " << dgDtype;
    }
  }
  // The weight gradient with the bias gradient: the plain bf16 GEMM and
  // gptrt_reduce_rows of its a (stored [k, m]), bit for bit.
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    const size_t size = dtype == GPTRT_DTYPE_F32 ? 4 : 2;
    std::vector<uint16_t> dy = bf16Of(randomF(k * m, 61, -2, 2)),
                          x = bf16Of(randomF(k * n, 67, -2, 2));
    std::vector<unsigned char> dw(m * n * size, 0xFF), db(m * size, 0xFF),
        wantDw(dw.size(), 0xFF), wantDb(db.size(), 0xFF);
    const gptrt_gemm_desc weightGrad =
        bf16Gemm(1, m, n, k, 1, 0, 0, 0, 0, dtype);
    gptrt_gemm_desc bgrad = weightGrad;
    bgrad.dbias_dtype = dtype;
    gptrt_gemm(h, dy.data(), x.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, dw.data(), nullptr, db.data(), nullptr, nullptr, &bgrad,
               nullptr);
    gptrt_gemm(h, dy.data(), x.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, wantDw.data(), nullptr, nullptr, nullptr, nullptr,
               &weightGrad, nullptr);
    gptrt_reduce_rows(h, dy.data(), wantDb.data(), k, m, GPTRT_DTYPE_BF16,
                      dtype);
    EXPECT_EQ(dw, wantDw) << "dtype " << dtype;
    EXPECT_EQ(db, wantDb) << "dtype " << dtype;
  }
  {
    F dw(m * n), db(m);
    gptrt_gemm_desc untransposed =
        bf16Gemm(1, m, n, k, 0, 0, 0, 0, 0, GPTRT_DTYPE_F32);
    untransposed.dbias_dtype = GPTRT_DTYPE_F32;
    gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, dw.data(), nullptr, db.data(), nullptr, nullptr,
               &untransposed, nullptr);
    EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                                 "batch 1, trans_a 0: dbias needs 1 and 1"));
    ctx.clearError();
  }
  // Only contiguous results: the GELU runs over batch * m * n elements.
  F pre(2 * count), out(2 * count);
  gptrt_gemm_desc strided =
      bf16Gemm(batch, m, n, k, 0, 0, m * k, 0, 2 * m * n, GPTRT_DTYPE_F32);
  strided.gelu_pre_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, bias.data(), nullptr,
             nullptr, out.data(), pre.data(), nullptr, nullptr, nullptr,
             &strided, nullptr);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("stride_c 48, expected m * n = 24"));
  ctx.clearError();
  gptrt_gemm_desc badProduct =
      bf16Gemm(batch, m, n, k, 0, 0, m * k, 0, m * n, GPTRT_DTYPE_F32);
  badProduct.product_dtype = 7;
  badProduct.dgelu_pre_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, pre.data(),
             nullptr, out.data(), nullptr, nullptr, nullptr, nullptr,
             &badProduct, nullptr);
  EXPECT_THAT(
      ctx.error(),
      ::testing::HasSubstr("product_dtype 7, expected f32 (1) or bf16 (2)"));
  ctx.clearError();
}

// rt-fuse-grad-accumulation's GEMMs: c += the f32 result of the GEMM
// without the suffix, one f32 addition per element, bit for bit -- not the
// bf16-rounded product that the pair they replace (a bf16-result GEMM,
// then gptrt_accumulate) adds.
TEST_F(AbiTest, AccumulatingGemmsAddTheF32ProductIntoTheGradient) {
  const int64_t batch = 2, m = 6, n = 8, k = 40, count = batch * m * n;
  auto bf16Of = [](const F &x) {
    std::vector<uint16_t> codes(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      codes[i] = cpu::floatToBf16(x[i]);
    return codes;
  };
  std::vector<uint16_t> a = bf16Of(randomF(batch * m * k, 71, -2, 2)),
                        b = bf16Of(randomF(k * n, 73, -2, 2));
  const F grad = randomF(count, 79, -3, 3);
  F product(count);
  const gptrt_gemm_desc toF32 =
      bf16Gemm(batch, m, n, k, 0, 0, m * k, 0, m * n, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             product.data(), nullptr, nullptr, nullptr, nullptr, &toF32,
             nullptr);
  F want = grad;
  for (int64_t i = 0; i < count; ++i)
    want[i] += product[i];
  F c = grad;
  const gptrt_gemm_desc accumulate = bf16Gemm(
      batch, m, n, k, 0, 0, m * k, 0, m * n, GPTRT_DTYPE_F32_ACCUMULATE);
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &accumulate,
             nullptr);
  expectSameBits(c, want, "bf16 gemm, c_dtype accumulate");
  std::vector<uint16_t> rounded(count);
  const gptrt_gemm_desc toBf16 =
      bf16Gemm(batch, m, n, k, 0, 0, m * k, 0, m * n, GPTRT_DTYPE_BF16);
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             rounded.data(), nullptr, nullptr, nullptr, nullptr, &toBf16,
             nullptr);
  F unfused = grad;
  gptrt_accumulate(h, rounded.data(), unfused.data(), count, GPTRT_DTYPE_BF16);
  EXPECT_NE(c, unfused) << "the product was rounded to bf16 on its way in";
  // Again: it adds to whatever the gradient holds.
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, nullptr, nullptr, &accumulate,
             nullptr);
  for (int64_t i = 0; i < count; ++i)
    want[i] += product[i];
  expectSameBits(c, want, "bf16 gemm, c_dtype accumulate, twice");

  // With the bias gradient (a stored [k, m]): db as the GEMM with dbias
  // and an f32 c writes it, in either dtype.
  std::vector<uint16_t> dy = bf16Of(randomF(k * m, 83, -2, 2));
  for (int64_t dbDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    SCOPED_TRACE("db_dtype " + std::to_string(dbDtype));
    const size_t dbBytes = size_t(m) * (dbDtype == GPTRT_DTYPE_F32 ? 4 : 2);
    std::vector<unsigned char> db(dbBytes, 0xFF), wantDb(dbBytes, 0xFF);
    F dw(m * n), wantDw(grad.begin(), grad.begin() + m * n);
    gptrt_gemm_desc bgrad =
        bf16Gemm(1, m, n, k, 1, 0, 0, 0, 0, GPTRT_DTYPE_F32);
    bgrad.dbias_dtype = dbDtype;
    gptrt_gemm(h, dy.data(), b.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, dw.data(), nullptr, wantDb.data(), nullptr, nullptr,
               &bgrad, nullptr);
    for (int64_t i = 0; i < m * n; ++i)
      wantDw[i] += dw[i];
    F got(grad.begin(), grad.begin() + m * n);
    gptrt_gemm_desc bgradAccumulate = bgrad;
    bgradAccumulate.c_dtype = GPTRT_DTYPE_F32_ACCUMULATE;
    gptrt_gemm(h, dy.data(), b.data(), nullptr, nullptr, nullptr, nullptr,
               nullptr, got.data(), nullptr, db.data(), nullptr, nullptr,
               &bgradAccumulate, nullptr);
    expectSameBits(got, wantDw, "bf16 gemm with dbias, c_dtype accumulate");
    EXPECT_EQ(db, wantDb);
  }

  // Strided batches are refused (the gradient is one contiguous buffer).
  F wide(2 * count);
  const gptrt_gemm_desc strided = bf16Gemm(
      batch, m, n, k, 0, 0, m * k, 0, 2 * m * n, GPTRT_DTYPE_F32_ACCUMULATE);
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             wide.data(), nullptr, nullptr, nullptr, nullptr, &strided,
             nullptr);
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("stride_c 96, expected m * n = 48"));
  ctx.clearError();
}

TEST_F(AbiTest, BiasAddIsInPlace) {
  F c = randomF(4 * 7, 17), bias = randomF(7, 18), want = c;
  cpu::addBias(want.data(), bias.data(), 4, 7);
  gptrt_bias_add(h, bias.data(), c.data(), 4, 7);
  expectSameBits(c, want, "c");
}

TEST_F(AbiTest, ReduceRowsWrites) {
  F x = randomF(5 * 3, 19), got = nanF(3), want(3);
  gptrt_reduce_rows(h, x.data(), got.data(), 5, 3, GPTRT_DTYPE_F32,
                    GPTRT_DTYPE_F32);
  cpu::sumRows(want.data(), x.data(), 5, 3, false);
  expectSameBits(got, want, "out");
}

TEST_F(AbiTest, AddWithAndWithoutBroadcast) {
  const int64_t outer = 4, inner = 6;
  F a = randomF(outer * inner, 20), b = randomF(outer * inner, 21),
    bRow = randomF(inner, 22);
  F got = nanF(outer * inner), want(outer * inner);
  gptrt_add(h, a.data(), b.data(), nullptr, got.data(), nullptr, nullptr, outer,
            inner, 0, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
            nullptr);
  cpu::add(want.data(), a.data(), b.data(), outer, inner, false);
  expectSameBits(got, want, "full");
  got = nanF(outer * inner);
  gptrt_add(h, a.data(), bRow.data(), nullptr, got.data(), nullptr, nullptr,
            outer, inner, 1, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
            nullptr);
  cpu::add(want.data(), a.data(), bRow.data(), outer, inner, true);
  expectSameBits(got, want, "broadcast");
}

TEST_F(AbiTest, ScaleWrites) {
  F x = randomF(11, 23), got = nanF(11), want(11);
  gptrt_scale(h, x.data(), got.data(), 11, 0.37);
  cpu::scale(want.data(), x.data(), 0.37f, 11);
  expectSameBits(got, want, "out");
}

TEST_F(AbiTest, GeluForwardAndBackward) {
  F x = randomF(33, 24, -4, 4), dout = randomF(33, 25);
  F y = nanF(33), wantY(33), dx = nanF(33), wantDx(33);
  gptrt_gelu_fwd(h, x.data(), nullptr, y.data(), nullptr, nullptr, nullptr, 33,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32, nullptr);
  cpu::geluForward(wantY.data(), x.data(), 33);
  expectSameBits(y, wantY, "gelu");
  gptrt_gelu_bwd(h, dout.data(), x.data(), nullptr, dx.data(), nullptr, nullptr,
                 nullptr, nullptr, 33, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_F32, nullptr);
  cpu::geluBackward(wantDx.data(), x.data(), dout.data(), 33);
  expectSameBits(dx, wantDx, "dx");
}

TEST_F(AbiTest, GeluOnBf16StorageIsTheF32KernelBetweenConversions) {
  std::vector<uint16_t> x16 = toBf16(randomF(33, 28, -4, 4)),
                        dout16 = toBf16(randomF(33, 29));
  F x = widened(x16), dout = widened(dout16), wantY(33), wantDx(33);
  cpu::geluForward(wantY.data(), x.data(), 33);
  cpu::geluBackward(wantDx.data(), x.data(), dout.data(), 33);
  std::vector<uint16_t> y16(33, 0xBEEF), dx16(33, 0xBEEF);
  gptrt_gelu_fwd(h, x16.data(), nullptr, y16.data(), nullptr, nullptr, nullptr,
                 33, GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  EXPECT_EQ(y16, toBf16(wantY));
  gptrt_gelu_bwd(h, dout16.data(), x16.data(), nullptr, dx16.data(), nullptr,
                 nullptr, nullptr, nullptr, 33, GPTRT_DTYPE_BF16,
                 GPTRT_DTYPE_BF16, GPTRT_DTYPE_BF16, nullptr);
  EXPECT_EQ(dx16, toBf16(wantDx));
  // Mixed: an f32 gradient against a bf16 input, into f32.
  F dx = nanF(33), dout32 = randomF(33, 30), wantMixed(33);
  cpu::geluBackward(wantMixed.data(), x.data(), dout32.data(), 33);
  gptrt_gelu_bwd(h, dout32.data(), x16.data(), nullptr, dx.data(), nullptr,
                 nullptr, nullptr, nullptr, 33, GPTRT_DTYPE_F32,
                 GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32, nullptr);
  expectSameBits(dx, wantMixed, "dx");
}

TEST_F(AbiTest, CopyBlocksTouchesOnlyItsColumns) {
  // Concat-style: copy a [3, 2] block into columns 4..5 of a [3, 7] tensor.
  F src = randomF(3 * 5, 26), got = randomF(3 * 7, 27), want = got;
  gptrt_copy_blocks(h, src.data(), got.data(), 3, 2, 7, 5, 4, 1,
                    GPTRT_DTYPE_F32);
  cpu::copyBlocks(want.data(), src.data(), 3, 2, 7, 5, 4, 1);
  expectSameBits(got, want, "dst");
  // bf16 storage moves as 16-bit codes, its neighbours untouched.
  std::vector<uint16_t> src16 = toBf16(src), got16 = toBf16(randomF(3 * 7, 28));
  std::vector<uint16_t> want16 = got16;
  for (int o = 0; o < 3; ++o)
    for (int j = 0; j < 2; ++j)
      want16[o * 7 + 4 + j] = src16[o * 5 + 1 + j];
  gptrt_copy_blocks(h, src16.data(), got16.data(), 3, 2, 7, 5, 4, 1,
                    GPTRT_DTYPE_BF16);
  EXPECT_EQ(got16, want16);
}

TEST_F(AbiTest, PermuteMatchesKernel) {
  // [2, 3, 4, 5] -> perm (0, 2, 1, 3): the attention head split.
  const int64_t shape[4] = {2, 3, 4, 5};
  const int64_t perm[4] = {0, 2, 1, 3};
  F src = randomF(120, 28), got = nanF(120), want(120);
  gptrt_permute(h, src.data(), got.data(), 4, 2, 3, 4, 5, 1, 1, 0, 2, 1, 3, 4,
                5);
  cpu::permute(want.data(), src.data(), shape, perm, 4);
  expectSameBits(got, want, "dst");
}

TEST_F(AbiTest, AttentionForwardAndBackward) {
  const int64_t B = 2, T = 5, C = 8, H = 2, n = B * T * C;
  F q = randomF(n, 29), k = randomF(n, 30), v = randomF(n, 31),
    dout = randomF(n, 32);
  for (int causal = 0; causal < 2; ++causal) {
    SCOPED_TRACE(causal ? "causal" : "full");
    F out = nanF(n), lse = nanF(B * H * T), wOut(n), wLse(B * H * T);
    gptrt_attention_fwd(h, q.data(), k.data(), v.data(), out.data(),
                        lse.data(), B, T, C, H, causal, GPTRT_DTYPE_F32);
    cpu::attentionForward(wOut.data(), wLse.data(), q.data(), k.data(),
                          v.data(), B, T, C, H, causal != 0);
    expectSameBits(out, wOut, "out");
    expectSameBits(lse, wLse, "lse");
    F dq = nanF(n), dk = nanF(n), dv = nanF(n), wDq(n), wDk(n), wDv(n);
    gptrt_attention_bwd(h, dout.data(), q.data(), k.data(), v.data(),
                        out.data(), lse.data(), dq.data(), dk.data(),
                        dv.data(), B, T, C, H, causal, GPTRT_DTYPE_F32);
    cpu::attentionBackward(wDq.data(), wDk.data(), wDv.data(), dout.data(),
                           q.data(), k.data(), v.data(), out.data(),
                           lse.data(), B, T, C, H, causal != 0);
    expectSameBits(dq, wDq, "dq");
    expectSameBits(dk, wDk, "dk");
    expectSameBits(dv, wDv, "dv");
  }
}

// All activations in bf16 storage: the f32 kernels between conversions,
// bit for bit; the log-sum-exp stays f32.
TEST_F(AbiTest, AttentionOnBf16Storage) {
  const int64_t B = 2, T = 5, C = 8, H = 2, n = B * T * C;
  std::vector<uint16_t> q16 = toBf16(randomF(n, 33)),
                        k16 = toBf16(randomF(n, 34)),
                        v16 = toBf16(randomF(n, 35)),
                        dout16 = toBf16(randomF(n, 36));
  F q = widened(q16), k = widened(k16), v = widened(v16),
    dout = widened(dout16);
  F wOut(n), wLse(B * H * T), wDq(n), wDk(n), wDv(n);
  cpu::attentionForward(wOut.data(), wLse.data(), q.data(), k.data(),
                        v.data(), B, T, C, H, true);
  // The backward reads the stored (rounded) output, as the graph does.
  std::vector<uint16_t> wOut16 = toBf16(wOut);
  F outRounded = widened(wOut16);
  cpu::attentionBackward(wDq.data(), wDk.data(), wDv.data(), dout.data(),
                         q.data(), k.data(), v.data(), outRounded.data(),
                         wLse.data(), B, T, C, H, true);
  std::vector<uint16_t> out16(n, 0xBEEF), dq16(n, 0xBEEF), dk16(n, 0xBEEF),
      dv16(n, 0xBEEF);
  F lse = nanF(B * H * T);
  gptrt_attention_fwd(h, q16.data(), k16.data(), v16.data(), out16.data(),
                      lse.data(), B, T, C, H, 1, GPTRT_DTYPE_BF16);
  EXPECT_EQ(out16, wOut16);
  expectSameBits(lse, wLse, "lse");
  gptrt_attention_bwd(h, dout16.data(), q16.data(), k16.data(), v16.data(),
                      out16.data(), lse.data(), dq16.data(), dk16.data(),
                      dv16.data(), B, T, C, H, 1, GPTRT_DTYPE_BF16);
  EXPECT_EQ(dq16, toBf16(wDq));
  EXPECT_EQ(dk16, toBf16(wDk));
  EXPECT_EQ(dv16, toBf16(wDv));
}

TEST_F(AbiTest, PackedAttentionIsTheAttentionOfTheParts) {
  // rt-fuse-qkv-attention's kernels: q, k, v read from (and dq, dk, dv
  // written into) one [B, T, 3C] buffer, bit for bit the unpacked kernels
  // on the parts, in f32 and bf16.
  const int64_t B = 2, T = 5, C = 8, H = 2, n = B * T * C;
  F qkv = randomF(3 * n, 71, -2, 2), dout = randomF(n, 72, -1, 1);
  F part[3] = {F(n), F(n), F(n)};
  for (int64_t r = 0; r < B * T; ++r)
    for (int i = 0; i < 3; ++i)
      for (int64_t c = 0; c < C; ++c)
        part[i][r * C + c] = qkv[(r * 3 + i) * C + c];
  F out = nanF(n), lse = nanF(B * H * T), wantOut = nanF(n),
    wantLse = nanF(B * H * T);
  gptrt_attention_fwd_packed(h, qkv.data(), nullptr, out.data(), lse.data(),
                             nullptr, nullptr, B, T, C, H, 1, GPTRT_DTYPE_F32,
                             nullptr);
  gptrt_attention_fwd(h, part[0].data(), part[1].data(), part[2].data(),
                      wantOut.data(), wantLse.data(), B, T, C, H, 1,
                      GPTRT_DTYPE_F32);
  expectSameBits(out, wantOut, "out");
  expectSameBits(lse, wantLse, "lse");
  // _amax: the same outputs and gptrt_amax of out.
  F amaxOut = nanF(n), amaxLse = nanF(B * H * T), amax = nanF(1),
    wantAmax = nanF(1);
  gptrt_attention_fwd_packed(h, qkv.data(), nullptr, amaxOut.data(),
                             amaxLse.data(), amax.data(), nullptr, B, T, C, H,
                             1, GPTRT_DTYPE_F32,
                             epilogue((B) * (T), C, GPTRT_DTYPE_F32));
  gptrt_amax(h, out.data(), wantAmax.data(), n, GPTRT_DTYPE_F32);
  expectSameBits(amaxOut, out, "out (_amax)");
  expectSameBits(amaxLse, lse, "lse (_amax)");
  expectSameBits(amax, wantAmax, "amax");
  EXPECT_GT(amax[0], 0.0f);
  // _cast (rt-fuse-producer-cast): the same outputs, amax, and the codes
  // gptrt_quantize_fp8 makes of out at the scale, in both formats.
  for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
    const float scale = 37.0f;
    F castOut = nanF(n), castLse = nanF(B * H * T), castAmax = nanF(1);
    std::vector<uint8_t> q(n, 0xDD), wantQ(n, 0xEE);
    gptrt_attention_fwd_packed(
        h, qkv.data(), &scale, castOut.data(), castLse.data(), castAmax.data(),
        q.data(), B, T, C, H, 1, GPTRT_DTYPE_F32,
        epilogue(B * T, C, GPTRT_DTYPE_F32, format, 0, -1));
    gptrt_quantize_fp8(h, out.data(), &scale, wantQ.data(), n, format, -1,
                       GPTRT_DTYPE_F32);
    expectSameBits(castOut, out, "out (_cast)");
    expectSameBits(castLse, lse, "lse (_cast)");
    expectSameBits(castAmax, wantAmax, "amax (_cast)");
    EXPECT_EQ(q, wantQ) << "format " << format;
  }
  F dqkv = nanF(3 * n), grad[3] = {nanF(n), nanF(n), nanF(n)};
  gptrt_attention_bwd_packed(h, dout.data(), qkv.data(), out.data(), lse.data(),
                             dqkv.data(), nullptr, B, T, C, H, 1,
                             GPTRT_DTYPE_F32, nullptr);
  gptrt_attention_bwd(h, dout.data(), part[0].data(), part[1].data(),
                      part[2].data(), out.data(), lse.data(), grad[0].data(),
                      grad[1].data(), grad[2].data(), B, T, C, H, 1,
                      GPTRT_DTYPE_F32);
  F packedGrad(3 * n);
  for (int64_t r = 0; r < B * T; ++r)
    for (int i = 0; i < 3; ++i)
      for (int64_t c = 0; c < C; ++c)
        packedGrad[(r * 3 + i) * C + c] = grad[i][r * C + c];
  expectSameBits(dqkv, packedGrad, "dqkv");
  // The backward's _amax: the same gradient and gptrt_amax of it.
  F amaxDqkv = nanF(3 * n), gradAmax = nanF(1), wantGradAmax = nanF(1);
  gptrt_attention_bwd_packed(h, dout.data(), qkv.data(), out.data(), lse.data(),
                             amaxDqkv.data(), gradAmax.data(), B, T, C, H, 1,
                             GPTRT_DTYPE_F32,
                             epilogue((B) * (T), 3 * (C), GPTRT_DTYPE_F32));
  gptrt_amax(h, dqkv.data(), wantGradAmax.data(), 3 * n, GPTRT_DTYPE_F32);
  expectSameBits(amaxDqkv, dqkv, "dqkv (_amax)");
  expectSameBits(gradAmax, wantGradAmax, "amax of dqkv");
  EXPECT_GT(gradAmax[0], 0.0f);
  // bf16 storage: the same through the bf16 kernels.
  std::vector<uint16_t> qkv16 = toBf16(qkv), out16(n, 0xBEEF),
                        dqkv16(3 * n, 0xBEEF), dout16 = toBf16(dout);
  F lse16 = nanF(B * H * T);
  gptrt_attention_fwd_packed(h, qkv16.data(), nullptr, out16.data(),
                             lse16.data(), nullptr, nullptr, B, T, C, H, 1,
                             GPTRT_DTYPE_BF16, nullptr);
  gptrt_attention_bwd_packed(h, dout16.data(), qkv16.data(), out16.data(),
                             lse16.data(), dqkv16.data(), nullptr, B, T, C, H,
                             1, GPTRT_DTYPE_BF16, nullptr);
  std::vector<uint16_t> parts16[3], grads16[3];
  for (int i = 0; i < 3; ++i) {
    parts16[i] = toBf16(part[i]);
    grads16[i].assign(n, 0);
  }
  std::vector<uint16_t> wantOut16(n);
  F wantLse16 = nanF(B * H * T);
  gptrt_attention_fwd(h, parts16[0].data(), parts16[1].data(),
                      parts16[2].data(), wantOut16.data(), wantLse16.data(), B,
                      T, C, H, 1, GPTRT_DTYPE_BF16);
  gptrt_attention_bwd(h, dout16.data(), parts16[0].data(), parts16[1].data(),
                      parts16[2].data(), wantOut16.data(), wantLse16.data(),
                      grads16[0].data(), grads16[1].data(), grads16[2].data(),
                      B, T, C, H, 1, GPTRT_DTYPE_BF16);
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_EQ(out16, wantOut16);
  expectSameBits(lse16, wantLse16, "lse (bf16)");
  for (int64_t r = 0; r < B * T; ++r)
    for (int i = 0; i < 3; ++i)
      for (int64_t c = 0; c < C; ++c)
        ASSERT_EQ(dqkv16[(r * 3 + i) * C + c], grads16[i][r * C + c])
            << "row " << r << " part " << i << " column " << c;
}

TEST_F(AbiTest, CrossEntropyForwardAndBackward) {
  const int64_t rows = 5, vocab = 7, padded = 8;
  F logits = randomF(rows * padded, 33, -3, 3);
  std::vector<int32_t> targets = {3, -1, 0, 6, 2}; // row 1 ignored
  F loss = nanF(1), lse = nanF(rows), wLse(rows);
  gptrt_cross_entropy_fwd(h, logits.data(), targets.data(), loss.data(),
                          lse.data(), rows, vocab, padded, -1, GPTRT_DTYPE_F32);
  const float wLoss = cpu::crossEntropyForward(
      wLse.data(), logits.data(), targets.data(), rows, vocab, padded, -1);
  expectSameBits(loss, F{wLoss}, "loss");
  expectSameBits(lse, wLse, "lse");
  F dloss = {0.25f}, dlogits = nanF(rows * padded), want(rows * padded);
  gptrt_cross_entropy_bwd(h, dloss.data(), logits.data(), targets.data(),
                          lse.data(), dlogits.data(), rows, vocab, padded, -1,
                          GPTRT_DTYPE_F32);
  cpu::crossEntropyBackward(want.data(), logits.data(), lse.data(),
                            targets.data(), 0.25f, rows, vocab, padded, -1);
  expectSameBits(dlogits, want, "dlogits");
  // bf16 logits (and gradient): the f32 kernels between conversions.
  std::vector<uint16_t> logits16 = toBf16(logits);
  F wide = widened(logits16), wLse16(rows), lse16 = nanF(rows), loss16 = nanF(1);
  const float wLoss16 = cpu::crossEntropyForward(
      wLse16.data(), wide.data(), targets.data(), rows, vocab, padded, -1);
  gptrt_cross_entropy_fwd(h, logits16.data(), targets.data(), loss16.data(),
                          lse16.data(), rows, vocab, padded, -1,
                          GPTRT_DTYPE_BF16);
  expectSameBits(loss16, F{wLoss16}, "loss");
  expectSameBits(lse16, wLse16, "lse");
  F want16(rows * padded);
  cpu::crossEntropyBackward(want16.data(), wide.data(), wLse16.data(),
                            targets.data(), 0.25f, rows, vocab, padded, -1);
  std::vector<uint16_t> dlogits16(rows * padded, 0xBEEF);
  gptrt_cross_entropy_bwd(h, dloss.data(), logits16.data(), targets.data(),
                          lse16.data(), dlogits16.data(), rows, vocab, padded,
                          -1, GPTRT_DTYPE_BF16);
  EXPECT_EQ(dlogits16, toBf16(want16));
}

TEST_F(AbiTest, FusedClassifierIsTheForwardThenTheBackward) {
  // rt-fuse-classifier's kernel: loss, lse and dlogits bit for bit as the
  // two kernels it replaces, for f32 and bf16 logits, an ignored row and a
  // target in the last real column.
  const int64_t rows = 6, vocab = 13, padded = 16;
  F logits = randomF(rows * padded, 35, -4, 4);
  std::vector<int32_t> targets = {3, -1, 0, 12, 2, 7};
  F dloss = {0.5f};
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
    std::vector<uint16_t> logits16 = toBf16(logits);
    const void *in = dtype == GPTRT_DTYPE_F32
                         ? static_cast<const void *>(logits.data())
                         : static_cast<const void *>(logits16.data());
    const size_t bytes = dtype == GPTRT_DTYPE_F32 ? 4 : 2;
    F loss = nanF(1), lse = nanF(rows);
    std::vector<unsigned char> grad(rows * padded * bytes, 0xEE);
    gptrt_cross_entropy_fwd(h, in, targets.data(), loss.data(), lse.data(),
                            rows, vocab, padded, -1, dtype);
    gptrt_cross_entropy_bwd(h, dloss.data(), in, targets.data(), lse.data(),
                            grad.data(), rows, vocab, padded, -1, dtype);
    F fusedLoss = nanF(1), fusedLse = nanF(rows);
    std::vector<unsigned char> fusedGrad(grad.size(), 0xDD);
    gptrt_cross_entropy_fwd_bwd(
        h, dloss.data(), in, targets.data(), fusedLoss.data(), fusedLse.data(),
        fusedGrad.data(), nullptr, rows, vocab, padded, -1, dtype, nullptr);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    expectSameBits(fusedLoss, loss, "loss");
    expectSameBits(fusedLse, lse, "lse");
    EXPECT_EQ(fusedGrad, grad) << "dlogits, dtype " << dtype;
    EXPECT_TRUE(std::isfinite(loss[0]));

    // _amax: the same outputs and gptrt_amax of the stored gradient.
    F amax = nanF(1), amaxLoss = nanF(1), amaxLse = nanF(rows), want = nanF(1);
    std::vector<unsigned char> amaxGrad(grad.size(), 0xCC);
    gptrt_cross_entropy_fwd_bwd(
        h, dloss.data(), in, targets.data(), amaxLoss.data(), amaxLse.data(),
        amaxGrad.data(), amax.data(), rows, vocab, padded, -1, dtype,
        epilogue(rows, padded, dtype));
    gptrt_amax(h, grad.data(), want.data(), rows * padded, dtype);
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    expectSameBits(amaxLoss, loss, "loss (_amax)");
    expectSameBits(amaxLse, lse, "lse (_amax)");
    EXPECT_EQ(amaxGrad, grad) << "dlogits (_amax), dtype " << dtype;
    expectSameBits(amax, want, "amax");
    EXPECT_GT(amax[0], 0.0f);
  }
}

TEST_F(AbiTest, GlobalNormIsSqrtOfSumOfSquares) {
  F x = randomF(1001, 34), out = nanF(1);
  gptrt_global_norm(h, x.data(), out.data(), 1001);
  EXPECT_EQ(out[0],
            static_cast<float>(std::sqrt(cpu::sumSquares(x.data(), 1001))));
}

TEST_F(AbiTest, ClipScaleFollowsPyTorch) {
  F out = nanF(1);
  F norm = {10.0f};
  gptrt_clip_scale(h, norm.data(), out.data(), 0.0);
  EXPECT_EQ(out[0], 1.0f) << "max_norm <= 0 disables clipping";
  gptrt_clip_scale(h, norm.data(), out.data(), 20.0);
  EXPECT_EQ(out[0], 1.0f) << "never scales up";
  gptrt_clip_scale(h, norm.data(), out.data(), 1.0);
  EXPECT_EQ(out[0], (1.0f / (10.0f + 1e-6f)) * 1.0f);
  EXPECT_NEAR(out[0], 0.1f, 1e-7);
  norm = {std::nanf("")};
  gptrt_clip_scale(h, norm.data(), out.data(), 1.0);
  EXPECT_TRUE(std::isnan(out[0])) << "a NaN norm must stay visible";
}

TEST_F(AbiTest, AdamWScalesTheGradientAndMatchesKernel) {
  const int64_t n = 257;
  F param = randomF(n, 35), m(n, 0.0f), v(n, 0.0f);
  F wParam = param, wM = m, wV = v;
  for (int step = 1; step <= 3; ++step) {
    F grad = randomF(n, 36 + step);
    const float scale = 0.5f, lr = 1e-2f, stepF = static_cast<float>(step);
    gptrt_adamw(h, grad.data(), &scale, &lr, &stepF, param.data(), m.data(),
                v.data(), n, 0.9, 0.95, 1e-8, 0.1);
    F scaled(n);
    cpu::scale(scaled.data(), grad.data(), scale, n);
    cpu::adamw(wParam.data(), scaled.data(), wM.data(), wV.data(), n,
               static_cast<double>(lr), 0.9, 0.95, 1e-8, 0.1, step);
  }
  expectSameBits(param, wParam, "param");
  expectSameBits(m, wM, "m");
  expectSameBits(v, wV, "v");
  // Scale 1 takes the copy-free path; same numbers.
  F grad = randomF(n, 40);
  const float one = 1.0f, lr = 1e-3f, step = 4.0f;
  gptrt_adamw(h, grad.data(), &one, &lr, &step, param.data(), m.data(),
              v.data(), n, 0.9, 0.95, 1e-8, 0.0);
  cpu::adamw(wParam.data(), grad.data(), wM.data(), wV.data(), n,
             static_cast<double>(lr), 0.9, 0.95, 1e-8, 0.0, 4);
  expectSameBits(param, wParam, "param after an unscaled step");
}

// rt-batch-adamw's kernel: consecutive parameters in one call, weight
// decay on the elements of its ranges only -- the bits of one gptrt_adamw
// per stretch of equal weight decay.
TEST_F(AbiTest, AdamWMultiIsOneAdamWPerParameter) {
  const int64_t n = 301;
  const std::vector<int64_t> ranges = {0, 40, 41, 41, 97, 250}; // one empty
  F param = randomF(n, 50), m = randomF(n, 51), v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = m[i] * m[i];
  F wParam = param, wM = m, wV = v;
  const float scale = 0.5f, lr = 1e-2f, step = 3.0f;
  F grad = randomF(n, 52);
  gptrt_adamw_multi(h, grad.data(), &scale, &lr, &step, param.data(), m.data(),
                    v.data(), n, 0.9, 0.95, 1e-8, 0.1, 3, ranges.data());
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  // Decayed: [0, 40), [97, 250); the rest not.
  const std::vector<std::pair<int64_t, double>> stretches = {
      {0, 0.1}, {40, 0.0}, {97, 0.1}, {250, 0.0}, {n, 0.0}};
  for (size_t j = 0; j + 1 < stretches.size(); ++j) {
    const int64_t at = stretches[j].first, count = stretches[j + 1].first - at;
    gptrt_adamw(h, grad.data() + at, &scale, &lr, &step, wParam.data() + at,
                wM.data() + at, wV.data() + at, count, 0.9, 0.95, 1e-8,
                stretches[j].second);
  }
  expectSameBits(param, wParam, "param");
  expectSameBits(m, wM, "m");
  expectSameBits(v, wV, "v");

  const std::vector<int64_t> backwards = {0, 40, 30, 50};
  gptrt_adamw_multi(h, grad.data(), &scale, &lr, &step, param.data(), m.data(),
                    v.data(), n, 0.9, 0.95, 1e-8, 0.1, 2, backwards.data());
  EXPECT_THAT(ctx.error(),
              ::testing::HasSubstr("decay_ranges[2] is 30, expected 40 to n"));
  ctx.clearError();
  const std::vector<int64_t> past = {0, n + 1};
  gptrt_adamw_multi(h, grad.data(), &scale, &lr, &step, param.data(), m.data(),
                    v.data(), n, 0.9, 0.95, 1e-8, 0.1, 1, past.data());
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("decay_ranges[1] is 302"));
  ctx.clearError();
  gptrt_adamw_multi(h, grad.data(), &scale, &lr, &step, param.data(), m.data(),
                    v.data(), n, 0.9, 0.95, 1e-8, 0.1, 65, ranges.data());
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("decay_count 65, expected 0 "
                                                "to 64"));
  ctx.clearError();
  gptrt_adamw_multi(h, grad.data(), &scale, &lr, &step, param.data(), m.data(),
                    v.data(), n, 0.9, 0.95, 1e-8, 0.1, 1, nullptr);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr("decay_ranges is null"));
  ctx.clearError();
}

TEST_F(AbiTest, AdamWReportsAStepThatWasNeverSet) {
  F p(4), g(4), m(4), v(4);
  float scale = 1.0f, lr = 0.1f, step = 0.0f;
  gptrt_step_scalar(h, &step, 2);
  EXPECT_EQ(step, 0.0f);
  gptrt_adamw(h, g.data(), &scale, &lr, &step, p.data(), m.data(), v.data(), 4,
              0.9, 0.95, 1e-8, 0.0);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                               "gptrt_adamw: step scalar is 0.000000, expected "
                               "an integer >= 1: set it with Context::setStep"));
  ctx.clearError();
}

TEST_F(AbiTest, StepScalars) {
  float out = -1;
  gptrt_step_scalar(h, &out, 0);
  EXPECT_EQ(out, 1.0f) << "default loss scale";
  gptrt_step_scalar(h, &out, 1);
  EXPECT_EQ(out, 0.0f) << "default learning rate";
  ctx.setLossScale(0.25f);
  ctx.setLearningRate(6e-4f);
  ctx.setStep(12345);
  gptrt_step_scalar(h, &out, 0);
  EXPECT_EQ(out, 0.25f);
  gptrt_step_scalar(h, &out, 1);
  EXPECT_EQ(out, 6e-4f);
  gptrt_step_scalar(h, &out, 2);
  EXPECT_EQ(out, 12345.0f);
  ctx.setStep(1 << 24);
  gptrt_step_scalar(h, &out, 2);
  EXPECT_EQ(out, 16777216.0f);

  gptrt_step_scalar(h, &out, 3);
  EXPECT_TRUE(std::isnan(out));
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                               "gptrt_step_scalar: step scalar 3 is unknown, "
                               "expected 0 (loss scale), 1 (learning rate) or "
                               "2 (step)"));
  ctx.clearError();
}

TEST_F(AbiTest, SetStepRejectsValuesF32CannotCarry) {
  EXPECT_ERROR(ctx.setStep(0), "optimizer step 0 is out of range, expected "
                               "1..16777216");
  EXPECT_ERROR(ctx.setStep((1 << 24) + 1), "optimizer step 16777217");
}

TEST_F(AbiTest, FirstErrorIsKeptAndLaterCallsAreSkipped) {
  F src(6, 1.0f), dst(6, 0.0f);
  // (0, 0, ...) is not a permutation.
  gptrt_permute(h, src.data(), dst.data(), 2, 2, 3, 1, 1, 1, 1, 0, 0, 2, 3, 4,
                5);
  ASSERT_TRUE(ctx.failed());
  const std::string first = ctx.error();
  EXPECT_THAT(first, ::testing::HasSubstr("gptrt_permute: permute: perm"));
  F out(3, 5.0f);
  gptrt_fill(h, out.data(), 3, 1.0);
  EXPECT_EQ(out[0], 5.0f) << "kernels after an error must not run";
  gptrt_permute(h, src.data(), dst.data(), 9, 1, 1, 1, 1, 1, 1, 0, 1, 2, 3, 4,
                5);
  EXPECT_EQ(ctx.error(), first) << "the first error wins";
  EXPECT_ERROR(ctx.throwIfFailed("train_step of tiny.so"),
               "train_step of tiny.so: gptrt_permute: permute: perm");
  EXPECT_FALSE(ctx.failed()) << "throwIfFailed clears the error";
  gptrt_fill(h, out.data(), 3, 1.0);
  EXPECT_EQ(out[0], 1.0f);
}

TEST_F(AbiTest, PermuteRejectsRankAboveSix) {
  F x(1);
  gptrt_permute(h, x.data(), x.data(), 7, 1, 1, 1, 1, 1, 1, 0, 1, 2, 3, 4, 5);
  EXPECT_THAT(ctx.error(), ::testing::HasSubstr(
                               "gptrt_permute: rank 7 is out of range, "
                               "expected 0..6"));
  ctx.clearError();
}

TEST(AbiContextTest, ArenaBaseGivesAlignedZeroedArenas) {
  Context ctx(Device::Cpu, {{"a", 100, 0}, {"b", 0, 0}, {"c", 4096, 256}});
  ASSERT_EQ(ctx.numArenas(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    void *base = gptrt_arena_base(ctx.handle(), i);
    EXPECT_EQ(base, ctx.arenaBase(static_cast<size_t>(i)));
    EXPECT_NE(base, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 64, 0u);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ctx.arenaBase(2)) % 256, 0u);
  const auto *c = static_cast<const unsigned char *>(ctx.arenaBase(2));
  for (int i = 0; i < 4096; ++i)
    ASSERT_EQ(c[i], 0) << "arenas start zero-filled";
  EXPECT_NE(ctx.arenaBase(0), ctx.arenaBase(1));
}

TEST(AbiContextTest, ContextRejectsBadArenasAndCuda) {
  EXPECT_ERROR(Context(Device::Cpu, {{"params", 64, 48}}),
               "arena 'params' has alignment 48, expected a power of two");
  // Without the backend the reason is the build; with it and no GPU, the
  // one line gptrun prints.
  std::string cudaError;
  try {
    Context gpu(Device::Cuda, {});
  } catch (const std::exception &e) {
    cudaError = e.what();
  }
  if (!gptrt::cuda::built())
    EXPECT_THAT(cudaError, ::testing::HasSubstr(
                               "device 'cuda' is not built into this runtime"));
  else if (!cudaError.empty())  // with a GPU the context simply opens
    EXPECT_THAT(cudaError, ::testing::StartsWith(
                               "no CUDA device found (cudaGetDeviceCount: "));
  EXPECT_ERROR(parseDevice("tpu"),
               "device 'tpu' is unknown, expected 'cpu' or 'cuda'");
  EXPECT_EQ(parseDevice("cpu"), Device::Cpu);
  EXPECT_EQ(parseDevice("cuda"), Device::Cuda);
  Context ctx(Device::Cpu, {{"a", 8, 0}});
  EXPECT_ERROR(ctx.arenaBase(1),
               "arena index 1 is out of range, expected < 1");
}

TEST(AbiDeathTest, ArenaIndexOutOfRangeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Context ctx(Device::Cpu, {{"a", 8, 0}, {"b", 8, 0}});
  EXPECT_DEATH(gptrt_arena_base(ctx.handle(), 2),
               "gptrt_arena_base: arena index 2 is out of range, expected "
               "0..1");
}

TEST(AbiDeathTest, NullContextAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float x = 0;
  EXPECT_DEATH(gptrt_fill(nullptr, &x, 1, 0.0),
               "gptrt_fill called with a null context");
}

// Every row of the kernel table is in abiSymbols() (so the loader checks
// it is exported) and resolves through the dynamic linker to this binary.
TEST(AbiExportTest, EveryTableRowIsDefinedAndExported) {
  std::ifstream table(GPTRT_SOURCE_DIR "/runtime/abi/gptrt_kernels.def");
  ASSERT_TRUE(table.good());
  std::stringstream text;
  text << table.rdbuf();
  const std::string s = text.str();
  std::set<std::string> declared;
  const std::regex row(
      R"((?:^|\n)GPTRT_(?:KERNEL\(|ENTRY\([^,]+, )(\w+),)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), row);
       it != std::sregex_iterator(); ++it)
    declared.insert("gptrt_" + (*it)[1].str());
  std::set<std::string> listed;
  for (const AbiSymbol &sym : abiSymbols()) {
    listed.insert(sym.name);
    void *found = dlsym(RTLD_DEFAULT, sym.name);
    EXPECT_EQ(found, sym.address) << sym.name << " is not exported";
  }
  EXPECT_GE(declared.size(), 25u);
  EXPECT_EQ(declared, listed);
  EXPECT_NO_THROW(checkAbiExported());
}

} // namespace
} // namespace gptrt::test
