// CUDA FP8 scaling kernels against the CPU ABI, bit for bit: amax (NaN
// included), scale_from_amax, quantize (E4M3/E5M2, CUDA's SATFINITE
// conversion, which runtime/cpu/Fp8.h emulates), and the delayed-scaling
// history.
#include "runtime/cpu/Fp8.h"
#include "test/gpu/GpuTestUtil.h"
#include "test/unit/runtime/Epilogue.h"

#include <algorithm>
#include <cstring>

namespace gptrt::gputest {
namespace {

using gptrt::test::epilogue;

// A dual cast's statistics (slots 0 and 1, n values each) against those
// of the two separate casts (slots 2 and 3).
void expectStatsOfTheSeparateCasts(const std::vector<Fp8CastStats> &stats,
                                   int64_t n) {
  for (int slot : {0, 1}) {
    const Fp8CastStats &got = stats[slot], &want = stats[slot + 2];
    EXPECT_EQ(got.amax, want.amax) << "slot " << slot;
    EXPECT_EQ(got.scale, want.scale) << "slot " << slot;
    EXPECT_EQ(got.underflow, want.underflow) << "slot " << slot;
    EXPECT_EQ(got.saturated, want.saturated) << "slot " << slot;
    EXPECT_EQ(got.elements, n) << "slot " << slot;
  }
}

TEST_F(GpuTest, AmaxMatchesCpuAndKeepsNaN) {
  Context cpuCtx(Device::Cpu, {});
  for (int64_t n : {1, 1000, 3000017}) {
    std::vector<float> x = randn(n, 5.0f);
    float *out = alloc<float>(1);
    gptrt_amax(g(), upload(x), out, n, GPTRT_DTYPE_F32);
    expectOk();
    float ref = -1;
    gptrt_amax(cpuCtx.handle(), x.data(), &ref, n, GPTRT_DTYPE_F32);
    EXPECT_EQ(download(out, 1)[0], ref) << "n=" << n;
  }
  std::vector<float> x = randn(5000);
  x[4321] = std::nanf("");
  float *out = alloc<float>(1);
  gptrt_amax(g(), upload(x), out, 5000, GPTRT_DTYPE_F32);
  expectOk();
  EXPECT_TRUE(std::isnan(download(out, 1)[0]));
}

TEST_F(GpuTest, ScaleFromAmaxAndStateMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  for (float amax : {0.0f, 1e-30f, 0.37f, 448.0f, 1e6f}) {
    for (int64_t margin : {0, 2}) {
      for (int64_t pow2 : {0, 1}) {
        float *out = alloc<float>(1);
        gptrt_scale_from_amax(g(), upload(std::vector<float>{amax}), out,
                              448.0, margin, pow2, 1e-12);
        expectOk();
        float ref = 0;
        gptrt_scale_from_amax(cpuCtx.handle(), &amax, &ref, 448.0, margin,
                              pow2, 1e-12);
        EXPECT_EQ(download(out, 1)[0], ref)
            << "amax " << amax << " margin " << margin << " pow2 " << pow2;
      }
    }
  }
  // History: update with finite and non-finite amaxes, then both scales.
  const int64_t len = 16;
  std::vector<float> hist(len, 0.0f);
  float *dh = upload(hist);
  for (float a : {2.0f, std::nanf(""), 7.5f, INFINITY, 0.25f}) {
    gptrt_fp8_state_update(g(), upload(std::vector<float>{a}), dh, len);
    gptrt_fp8_state_update(cpuCtx.handle(), &a, hist.data(), len);
  }
  expectOk();
  std::vector<float> got = download(dh, len);
  for (int64_t i = 0; i < len; ++i)
    EXPECT_EQ(got[i], hist[i]) << "history[" << i << "]";
  for (int64_t recent : {0, 1}) {
    float *out = alloc<float>(1);
    gptrt_fp8_state_scale(g(), dh, out, len, 57344.0, 0, 1, 1e-12, recent);
    expectOk();
    float ref = 0;
    gptrt_fp8_state_scale(cpuCtx.handle(), hist.data(), &ref, len, 57344.0, 0,
                          1, 1e-12, recent);
    EXPECT_EQ(download(out, 1)[0], ref) << "most_recent " << recent;
  }
  // An empty history gives 1.
  float *out = alloc<float>(1);
  gptrt_fp8_state_scale(g(), upload(std::vector<float>(len, 0.0f)), out, len,
                        448.0, 0, 0, 1e-12, 0);
  expectOk();
  EXPECT_EQ(download(out, 1)[0], 1.0f);
}

TEST_F(GpuTest, QuantizeIsBitExact) {
  Context cpuCtx(Device::Cpu, {});
  for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
    for (int64_t n : {3, 4096, 1000001}) {
      // Wide range: saturation, subnormals, ties and NaN.
      std::vector<float> x = randn(n, 100.0f);
      for (int64_t i = 0; i < n; i += 97)
        x[i] *= 1e-4f;
      if (n > 10) {
        x[1] = std::nanf("");
        x[2] = INFINITY;
        x[3] = -1e9f;
      }
      const float scale = 3.0f;
      uint8_t *q = alloc<uint8_t>(n);
      gptrt_quantize_fp8(g(), upload(x), upload(std::vector<float>{scale}), q,
                         n, format, -1, GPTRT_DTYPE_F32);
      expectOk();
      std::vector<uint8_t> ref(n);
      gptrt_quantize_fp8(cpuCtx.handle(), x.data(), &scale, ref.data(), n,
                         format, -1, GPTRT_DTYPE_F32);
      std::vector<uint8_t> got = download(q, n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], ref[i])
            << "format " << format << " n " << n << " x " << x[i];
      // bf16 storage in (gpt-bf16-kernels): the cast and the amax of the
      // exact widening, bit for bit with the CPU too.
      std::vector<uint16_t> x16(n);
      for (int64_t i = 0; i < n; ++i)
        x16[i] = cpu::floatToBf16(x[i]);
      uint8_t *q16 = alloc<uint8_t>(n);
      float *amax16 = alloc<float>(1);
      const uint16_t *dx16 = upload(x16);
      gptrt_quantize_fp8(g(), dx16, upload(std::vector<float>{scale}), q16, n,
                         format, -1, GPTRT_DTYPE_BF16);
      gptrt_amax(g(), dx16, amax16, n, GPTRT_DTYPE_BF16);
      expectOk();
      std::vector<uint8_t> ref16(n);
      float refAmax16 = 0;
      gptrt_quantize_fp8(cpuCtx.handle(), x16.data(), &scale, ref16.data(), n,
                         format, -1, GPTRT_DTYPE_BF16);
      gptrt_amax(cpuCtx.handle(), x16.data(), &refAmax16, n,
                 GPTRT_DTYPE_BF16);
      EXPECT_EQ(download(q16, n), ref16) << "bf16 input, n " << n;
      std::vector<float> gotAmax = download(amax16, 1);
      if (std::isnan(refAmax16))
        EXPECT_TRUE(std::isnan(gotAmax[0]));
      else
        EXPECT_EQ(gotAmax[0], refAmax16) << "bf16 amax, n " << n;
    }
  }
}

TEST_F(GpuTest, TransposedQuantizeIsBitExact) {
  // fp8-transpose-casts' kernel: sizes around the 32 x 32 tile (partial
  // tiles on both edges), more tile rows than grid.y's 65535 would allow
  // in one pass, f32 and bf16 storage, NaN and saturation.
  Context cpuCtx(Device::Cpu, {});
  const int64_t shapes[][2] = {{1, 1}, {33, 31}, {256, 768}, {2100001, 2}};
  for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
    for (const auto &shape : shapes) {
      const int64_t rows = shape[0], cols = shape[1], n = rows * cols;
      std::vector<float> x = randn(n, 100.0f);
      if (n > 10) {
        x[1] = std::nanf("");
        x[3] = -1e9f;
      }
      std::vector<uint16_t> x16(n);
      for (int64_t i = 0; i < n; ++i)
        x16[i] = cpu::floatToBf16(x[i]);
      const float scale = 3.0f;
      const float *dScale = upload(std::vector<float>{scale});
      for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
        const void *host = dtype == GPTRT_DTYPE_F32
                               ? static_cast<const void *>(x.data())
                               : static_cast<const void *>(x16.data());
        const void *dev = dtype == GPTRT_DTYPE_F32
                              ? static_cast<const void *>(upload(x))
                              : static_cast<const void *>(upload(x16));
        uint8_t *q = alloc<uint8_t>(n); // poisoned: 0xFF, which no cast writes
        gptrt_quantize_fp8_transposed(g(), dev, dScale, q, rows, cols, format,
                                      -1, dtype);
        expectOk();
        std::vector<uint8_t> ref(n);
        gptrt_quantize_fp8_transposed(cpuCtx.handle(), host, &scale, ref.data(),
                                      rows, cols, format, -1, dtype);
        std::vector<uint8_t> got = download(q, n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(got[i], ref[i])
              << "format " << format << " dtype " << dtype << " shape " << rows
              << " x " << cols << " at " << i;
      }
    }
  }
}

} // namespace
} // namespace gptrt::gputest

namespace gptrt::gputest {
namespace {

// The fused-kernel epilogues (a separate pass on CUDA today): amax and the
// (transposed) cast of the base kernel's output, bit for bit with the CPU.
TEST_F(GpuTest, FusedEpiloguesMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 48, cols = 80, n = rows * cols;
  for (int64_t transpose : {0, 1}) {
    for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
      std::vector<float> x = randn(n, 3.0f);
      const float scale = 20.0f;
      // convert_cast: f32 -> bf16, epilogue over the bf16 output.
      uint16_t *dst = alloc<uint16_t>(n);
      float *amax = alloc<float>(1);
      uint8_t *q = alloc<uint8_t>(n);
      gptrt_convert(
          g(), upload(x), upload(std::vector<float>{scale}), dst, amax, q, n,
          GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
          epilogue(rows, cols, GPTRT_DTYPE_BF16, format, transpose, -1));
      // gelu_fwd_cast: epilogue over an f32 output.
      float *y = alloc<float>(n), *amax2 = alloc<float>(1);
      uint8_t *q2 = alloc<uint8_t>(n);
      gptrt_gelu_fwd(
          g(), upload(x), upload(std::vector<float>{scale}), y, amax2, q2,
          nullptr, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
          epilogue(rows, cols, GPTRT_DTYPE_F32, format, transpose, -1));
      expectOk();
      std::vector<uint16_t> rdst(n);
      std::vector<float> ry(n);
      std::vector<uint8_t> rq(n), rq2(n);
      float ramax = 0, ramax2 = 0;
      gptrt_convert(
          cpuCtx.handle(), x.data(), &scale, rdst.data(), &ramax, rq.data(), n,
          GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
          epilogue(rows, cols, GPTRT_DTYPE_BF16, format, transpose, -1));
      gptrt_gelu_fwd(
          cpuCtx.handle(), x.data(), &scale, ry.data(), &ramax2, rq2.data(),
          nullptr, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
          epilogue(rows, cols, GPTRT_DTYPE_F32, format, transpose, -1));
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      SCOPED_TRACE("format " + std::to_string(format) + " transpose " +
                   std::to_string(transpose));
      EXPECT_EQ(download(dst, n), rdst);
      EXPECT_EQ(download(amax, 1)[0], ramax);
      EXPECT_EQ(download(q, n), rq);
      // GELU itself differs by rounding (tanhf); its amax and codes are
      // compared on the GPU's own output, so recompute the CPU epilogue
      // from the downloaded values.
      std::vector<float> gy = download(y, n);
      float gAmax = 0;
      std::vector<uint8_t> gq(n);
      for (int64_t i = 0; i < n; ++i) {
        gAmax = std::max(gAmax, std::fabs(gy[i]));
        const int64_t at = transpose ? (i % cols) * rows + i / cols : i;
        gq[at] = format == GPTRT_FP8_E4M3 ? cpu::floatToE4M3(gy[i] * scale)
                                          : cpu::floatToE5M2(gy[i] * scale);
      }
      EXPECT_EQ(download(amax2, 1)[0], gAmax);
      EXPECT_EQ(download(q2, n), gq);
    }
  }
}

// fp8-transpose-casts on rowwise casts: the tiled transposed kernel with a
// scale per row or per column of x, bit for bit the CPU's.
TEST_F(GpuTest, TransposedRowwiseCastIsBitExact) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 70, cols = 45, n = rows * cols;
  std::vector<uint16_t> x16 = toBf16(randn(n, 50.0f));
  for (int64_t along : {0, 1}) {
    std::vector<float> scales = randn(along ? cols : rows, 4.0f);
    for (float &s : scales)
      s = std::fabs(s) + 0.5f;
    uint8_t *q = alloc<uint8_t>(n);
    gptrt_quantize_rows_transposed(g(), upload(x16), upload(scales), q, rows,
                                   cols, along, GPTRT_FP8_E4M3, -1,
                                   GPTRT_DTYPE_BF16);
    expectOk();
    std::vector<uint8_t> want(n);
    gptrt_quantize_rows_transposed(cpuCtx.handle(), x16.data(), scales.data(),
                                   want.data(), rows, cols, along,
                                   GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    EXPECT_EQ(download(q, n), want) << "along " << along;
  }
}

// rt-fuse-cast-scale's rowwise form: the transposed cast's tile kernel
// makes each column's (or row's) scale from its amax, bit for bit the
// CPU's row_scales and cast -- many tile rows and partial tiles, a NaN and
// a zero amax, f32 and bf16 storage, both formats, power-of-two scales;
// every scale and code written (poisoned), also with no rows to cast.
TEST_F(GpuTest, ScaleQuantizeRowsTransposedMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 3000, cols = 77, n = rows * cols;
  const std::vector<float> x = randn(n, 30.0f);
  const std::vector<uint16_t> x16 = toBf16(x);
  const float *dx = upload(x);
  const uint16_t *dx16 = upload(x16);
  for (int64_t along : {1, 0})
    for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16})
      for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
        SCOPED_TRACE("along_cols " + std::to_string(along) + ", dtype " +
                     std::to_string(dtype) + ", format " +
                     std::to_string(format));
        const bool f32 = dtype == GPTRT_DTYPE_F32;
        const void *hx = f32 ? static_cast<const void *>(x.data()) : x16.data();
        const int64_t count = along ? cols : rows;
        std::vector<float> amax(count);
        gptrt_amax_rows(cpuCtx.handle(), hx, amax.data(), rows, cols, along,
                        dtype);
        amax[1] = std::nanf("");
        amax[3] = 0.0f;
        const double fp8Max = format == GPTRT_FP8_E4M3 ? 448.0 : 57344.0;
        std::vector<float> wantScales(count);
        std::vector<uint8_t> wantQ(n);
        gptrt_row_scales(cpuCtx.handle(), amax.data(), wantScales.data(), count,
                         fp8Max, 0, 1, 1e-12);
        gptrt_quantize_rows_transposed(cpuCtx.handle(), hx, wantScales.data(),
                                       wantQ.data(), rows, cols, along, format,
                                       -1, dtype);
        ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
        float *scales = alloc<float>(count);
        uint8_t *q = alloc<uint8_t>(n);
        gptrt_scale_quantize_rows_transposed(
            g(), f32 ? static_cast<const void *>(dx) : dx16, upload(amax), q,
            scales, rows, cols, along, format, -1, dtype, fp8Max, 0, 1, 1e-12);
        expectOk();
        const std::vector<float> gotScales = download(scales, count);
        EXPECT_TRUE(sameBitsOrBothNan(gotScales, wantScales));
        EXPECT_EQ(download(q, n), wantQ);
      }
  // No rows: the column scales are still made.
  std::vector<float> amax(cols, 2.0f);
  float *scales = alloc<float>(cols);
  gptrt_scale_quantize_rows_transposed(
      g(), dx16, upload(amax), alloc<uint8_t>(1), scales, 0, cols, 1,
      GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16, 448.0, 0, 0, 1e-12);
  expectOk();
  EXPECT_EQ(download(scales, cols), std::vector<float>(cols, 224.0f));
}

// The rowwise transposed casts with the bias gradient (fp8-rowwise's
// grad_weight cast of an output gradient, rt-fuse-dual-cast): the codes
// and scales of the CPU's, and the bias gradient from the cast's tiles
// equal to the CPU's gptrt_reduce_rows bit for bit -- one tile of rows or
// fewer (reduce_rows itself), a ragged last tile, three levels of the
// tree; f32 (poisoned), bf16 (poisoned) and accumulated db.
TEST_F(GpuTest, RowwiseTransposedCastsWithBiasGradientMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  for (int64_t rows : {int64_t(20), int64_t(1000), int64_t(40000)}) {
    const int64_t cols = 96, n = rows * cols;
    const std::vector<uint16_t> x16 = toBf16(randn(n, 4.0f));
    const uint16_t *dx = upload(x16);
    std::vector<float> amax(cols);
    gptrt_amax_rows(cpuCtx.handle(), x16.data(), amax.data(), rows, cols, 1,
                    GPTRT_DTYPE_BF16);
    const float *dAmax = upload(amax);
    const std::vector<float> dbStart = randn(cols);
    for (int64_t dbDtype :
         {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE})
      for (bool makesScales : {true, false}) {
        SCOPED_TRACE(std::to_string(rows) + " rows, db_dtype " +
                     std::to_string(dbDtype) +
                     (makesScales ? ", scale_" : ", scales given"));
        std::vector<float> wantScales(cols);
        gptrt_row_scales(cpuCtx.handle(), amax.data(), wantScales.data(), cols,
                         57344.0, 0, 1, 1e-12);
        std::vector<uint8_t> wantQ(n);
        std::vector<float> wantDb = dbStart;
        gptrt_quantize_rows_transposed_bgrad(
            cpuCtx.handle(), x16.data(), wantScales.data(), wantQ.data(),
            wantDb.data(), rows, cols, 1, GPTRT_FP8_E5M2, -1, GPTRT_DTYPE_BF16,
            dbDtype);
        ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
        std::vector<float> dbInitial =
            dbDtype == GPTRT_DTYPE_F32_ACCUMULATE
                ? dbStart
                : std::vector<float>(cols, std::nanf(""));
        float *db = upload(dbInitial);
        uint8_t *q = alloc<uint8_t>(n);
        float *scales = makesScales ? alloc<float>(cols) : upload(wantScales);
        if (makesScales)
          gptrt_scale_quantize_rows_transposed_bgrad(
              g(), dx, dAmax, q, db, scales, rows, cols, 1, GPTRT_FP8_E5M2, -1,
              GPTRT_DTYPE_BF16, dbDtype, 57344.0, 0, 1, 1e-12);
        else
          gptrt_quantize_rows_transposed_bgrad(g(), dx, scales, q, db, rows,
                                               cols, 1, GPTRT_FP8_E5M2, -1,
                                               GPTRT_DTYPE_BF16, dbDtype);
        expectOk();
        EXPECT_EQ(download(q, n), wantQ);
        const std::vector<float> gotScales = download(scales, cols);
        EXPECT_TRUE(sameBitsOrBothNan(gotScales, wantScales));
        // bf16: cols codes in the first half of the floats' bytes.
        const size_t dbBytes =
            dbDtype == GPTRT_DTYPE_BF16 ? 2 * cols : 4 * cols;
        const std::vector<float> gotDb = download(db, cols);
        EXPECT_EQ(std::memcmp(gotDb.data(), wantDb.data(), dbBytes), 0);
      }
  }
}

// rt-fuse-producer-dual-cast's kernels: the GELU output (or gradient)
// worked out inside the transposed cast's tile kernel, never stored, bit
// for bit the GPU's producer cast followed by its transposed cast (amax,
// both layouts, the bias gradient -- summed from tiles, one tile of rows
// or many -- and each cast's statistics), on partial tiles, bf16 (the
// producer's 8-wide path) and f32 storage; every output written
// (poisoned); and the codes those of the CPU's kernels, but for the rare
// value whose f32 GELU differs in its last bit (tanhf) at a rounding edge.
TEST_F(GpuTest, GeluCastDualMatchesTheProducerAndTransposedCasts) {
  Context cpuCtx(Device::Cpu, {});
  for (int64_t rows : {1000, 20}) {
    const int64_t cols = 200, n = rows * cols;
    const std::vector<float> x = randn(n, 2.0f), dy = randn(n, 0.5f);
    const std::vector<uint16_t> x16 = toBf16(x), dy16 = toBf16(dy);
    const float scale = 60.0f;
    const float *dScale = upload(std::vector<float>{scale});
    for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + ", dtype " +
                   std::to_string(dtype));
      const bool bf16 = dtype == GPTRT_DTYPE_BF16;
      const void *dx = bf16 ? static_cast<const void *>(upload(x16))
                            : static_cast<const void *>(upload(x));
      const void *ddy = bf16 ? static_cast<const void *>(upload(dy16))
                             : static_cast<const void *>(upload(dy));
      const void *hx = bf16 ? static_cast<const void *>(x16.data()) : x.data();
      const void *hdy =
          bf16 ? static_cast<const void *>(dy16.data()) : dy.data();
      for (bool backward : {false, true}) {
        SCOPED_TRACE(backward ? "backward" : "forward");
        const int64_t format = backward ? GPTRT_FP8_E5M2 : GPTRT_FP8_E4M3;
        gpu().beginFp8Stats(4);
        // The two kernels on the GPU, statistics in slots 2 and 3.
        void *y = alloc<float>(n);
        float *amax = alloc<float>(1), *amaxGot = alloc<float>(1);
        uint8_t *q = alloc<uint8_t>(n), *qT = alloc<uint8_t>(n),
                *qGot = alloc<uint8_t>(n), *qTGot = alloc<uint8_t>(n);
        const std::vector<float> dbStart = randn(cols);
        float *db = upload(dbStart), *dbGot = upload(dbStart);
        if (backward) {
          gptrt_gelu_bwd(g(), ddy, dx, dScale, y, amax, q, nullptr, nullptr, n,
                         dtype, dtype, dtype,
                         epilogue(rows, cols, dtype, format, 0, 2));
          gptrt_quantize_fp8_transposed_bgrad(g(), y, dScale, qT, db, rows,
                                              cols, format, 3, dtype,
                                              GPTRT_DTYPE_F32_ACCUMULATE);
          gptrt_gelu_bwd(g(), ddy, dx, dScale, nullptr, amaxGot, qGot, qTGot,
                         dbGot, n, dtype, dtype, dtype,
                         epilogue(rows, cols, dtype, format, 0, 0, 1,
                                  GPTRT_DTYPE_F32_ACCUMULATE));
        } else {
          gptrt_gelu_fwd(g(), dx, dScale, y, amax, q, nullptr, n, dtype, dtype,
                         epilogue(rows, cols, dtype, format, 0, 2));
          gptrt_quantize_fp8_transposed(g(), y, dScale, qT, rows, cols, format,
                                        3, dtype);
          gptrt_gelu_fwd(g(), dx, dScale, nullptr, amaxGot, qGot, qTGot, n,
                         dtype, dtype,
                         epilogue(rows, cols, dtype, format, 0, 0, 1));
        }
        expectOk();
        // The CPU's: the same fused entry point (producer, then cast).
        std::vector<uint8_t> cq(n), cqT(n);
        std::vector<float> cdb = dbStart;
        float camax = 0;
        if (backward)
          gptrt_gelu_bwd(cpuCtx.handle(), hdy, hx, &scale, nullptr, &camax,
                         cq.data(), cqT.data(), cdb.data(), n, dtype, dtype,
                         dtype,
                         epilogue(rows, cols, dtype, format, 0, -1, -1,
                                  GPTRT_DTYPE_F32_ACCUMULATE));
        else
          gptrt_gelu_fwd(cpuCtx.handle(), hx, &scale, nullptr, &camax,
                         cq.data(), cqT.data(), n, dtype, dtype,
                         epilogue(rows, cols, dtype, format, 0, -1, -1));
        ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
        gpu().endFp8Stats();
        EXPECT_EQ(download(amaxGot, 1), download(amax, 1));
        const std::vector<uint8_t> gotQ = download(qGot, n),
                                   gotQT = download(qTGot, n);
        EXPECT_EQ(gotQ, download(q, n));
        EXPECT_EQ(gotQT, download(qT, n));
        EXPECT_EQ(download(dbGot, cols), download(db, cols));
        expectStatsOfTheSeparateCasts(gpu().fp8Stats(), n);
        int64_t differ = 0;
        for (int64_t i = 0; i < n; ++i)
          differ += (gotQ[i] != cq[i]) + (gotQT[i] != cqT[i]);
        EXPECT_LE(differ, n / 1000) << "codes unlike the CPU's";
        EXPECT_NEAR(download(amaxGot, 1)[0], camax, 1e-2 * camax);
        EXPECT_LT(relErr(download(dbGot, cols), toDouble(cdb)), 1e-2);
      }
    }
  }
}

// rt-fuse-producer-dual-cast's layernorm forms: the layernorm (and the
// residual add in front) without its output stored, its codes transposed
// for the second layout -- bit for bit the GPU's producer cast followed
// by the transposed cast of its stored output (mean, rstd, the stored sum,
// amax, both layouts, each cast's statistics), on the vector path (width
// 768) and the scalar one (100, and 50, whose codes the byte transpose
// moves instead of the 4-byte one), rows that leave partial tiles,
// bf16 and f32 storage, both formats; every output written (poisoned);
// and the CPU's fused entry point within a code's rounding.
TEST_F(GpuTest, LayerNormCastDualMatchesTheProducerAndTransposedCasts) {
  Context cpuCtx(Device::Cpu, {});
  for (int64_t width : {768, 100, 50}) {
    const int64_t rows = 1000, n = rows * width;
    const std::vector<float> a = randn(n, 2.0f), r = randn(n, 0.5f),
                             w = randn(width, 0.3f), b = randn(width, 0.1f);
    const std::vector<uint16_t> a16 = toBf16(a), r16 = toBf16(r);
    const float scale = 40.0f;
    const float *dScale = upload(std::vector<float>{scale});
    const float *dw = upload(w), *db = upload(b);
    for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32})
      for (bool add : {false, true}) {
        SCOPED_TRACE("width " + std::to_string(width) + ", dtype " +
                     std::to_string(dtype) + (add ? ", add" : ""));
        const bool bf16 = dtype == GPTRT_DTYPE_BF16;
        const int64_t format = add ? GPTRT_FP8_E5M2 : GPTRT_FP8_E4M3;
        const size_t elem = bf16 ? 2 : 4;
        const void *da = bf16 ? static_cast<const void *>(upload(a16))
                              : static_cast<const void *>(upload(a));
        const void *dr = bf16 ? static_cast<const void *>(upload(r16))
                              : static_cast<const void *>(upload(r));
        gpu().beginFp8Stats(4);
        // The two kernels on the GPU (statistics in slots 2 and 3), then
        // the fused one (0 and 1).
        void *y = alloc<float>(n), *x = alloc<float>(n),
             *xGot = alloc<float>(n);
        float *mean = alloc<float>(rows), *rstd = alloc<float>(rows),
              *meanGot = alloc<float>(rows), *rstdGot = alloc<float>(rows),
              *amax = alloc<float>(1), *amaxGot = alloc<float>(1);
        uint8_t *q = alloc<uint8_t>(n), *qT = alloc<uint8_t>(n),
                *qGot = alloc<uint8_t>(n), *qTGot = alloc<uint8_t>(n);
        if (add) {
          gptrt_add_layernorm_fwd(g(), da, dr, dw, db, dScale, x, y, mean, rstd,
                                  amax, q, nullptr, rows, width, 1e-5, dtype,
                                  dtype, dtype, dtype,
                                  epilogue(rows, width, dtype, format, 0, 2));
          gptrt_add_layernorm_fwd(
              g(), da, dr, dw, db, dScale, xGot, nullptr, meanGot, rstdGot,
              amaxGot, qGot, qTGot, rows, width, 1e-5, dtype, dtype, dtype,
              dtype, epilogue(rows, width, dtype, format, 0, 0, 1));
        } else {
          gptrt_layernorm_fwd(g(), da, dw, db, dScale, y, mean, rstd, amax, q,
                              nullptr, rows, width, 1e-5, dtype, dtype,
                              epilogue(rows, width, dtype, format, 0, 2));
          gptrt_layernorm_fwd(g(), da, dw, db, dScale, nullptr, meanGot,
                              rstdGot, amaxGot, qGot, qTGot, rows, width, 1e-5,
                              dtype, dtype,
                              epilogue(rows, width, dtype, format, 0, 0, 1));
        }
        gptrt_quantize_fp8_transposed(g(), y, dScale, qT, rows, width, format,
                                      3, dtype);
        expectOk();
        gpu().endFp8Stats();
        const std::vector<uint8_t> gotQ = download(qGot, n),
                                   gotQT = download(qTGot, n);
        EXPECT_EQ(gotQ, download(q, n));
        EXPECT_EQ(gotQT, download(qT, n));
        EXPECT_EQ(download(amaxGot, 1), download(amax, 1));
        EXPECT_EQ(download(meanGot, rows), download(mean, rows));
        EXPECT_EQ(download(rstdGot, rows), download(rstd, rows));
        if (add) {
          const std::vector<uint8_t> gotX =
                                         download(static_cast<uint8_t *>(xGot),
                                                  n * elem),
                                     wantX = download(static_cast<uint8_t *>(x),
                                                      n * elem);
          EXPECT_EQ(gotX, wantX);
        }
        expectStatsOfTheSeparateCasts(gpu().fp8Stats(), n);
        // The CPU's fused entry point: codes equal but where the GPU's
        // rsqrtf and summation order move a value across a rounding edge.
        std::vector<uint8_t> cq(n), cqT(n);
        std::vector<float> cx(n), cmean(rows), crstd(rows);
        float camax = 0;
        const void *ha =
            bf16 ? static_cast<const void *>(a16.data()) : a.data();
        const void *hr =
            bf16 ? static_cast<const void *>(r16.data()) : r.data();
        if (add)
          gptrt_add_layernorm_fwd(
              cpuCtx.handle(), ha, hr, w.data(), b.data(), &scale, cx.data(),
              nullptr, cmean.data(), crstd.data(), &camax, cq.data(),
              cqT.data(), rows, width, 1e-5, dtype, dtype, dtype, dtype,
              epilogue(rows, width, dtype, format, 0, -1, -1));
        else
          gptrt_layernorm_fwd(cpuCtx.handle(), ha, w.data(), b.data(), &scale,
                              nullptr, cmean.data(), crstd.data(), &camax,
                              cq.data(), cqT.data(), rows, width, 1e-5, dtype,
                              dtype,
                              epilogue(rows, width, dtype, format, 0, -1, -1));
        ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
        int64_t differ = 0;
        for (int64_t i = 0; i < n; ++i)
          differ += (gotQ[i] != cq[i]) + (gotQT[i] != cqT[i]);
        EXPECT_LE(differ, n / 100) << "codes unlike the CPU's";
        for (int64_t row = 0; row < rows; ++row)
          for (int64_t col = 0; col < width; ++col)
            ASSERT_EQ(gotQT[col * rows + row], gotQ[row * width + col])
                << "row " << row << ", col " << col;
        EXPECT_NEAR(download(amaxGot, 1)[0], camax, 1e-2 * camax);
      }
  }
}

// rt-fuse-rowwise-cast's kernel: a warp per row makes the row's amax, its
// scale and its codes, bit for bit the CPU's three kernels -- 20000 rows of
// a width that is not a multiple of 32, a NaN row and a zero row, f32 and
// bf16 storage, both formats; every output element written (poisoned).
TEST_F(GpuTest, AmaxQuantizeRowsMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 20000, cols = 77, n = rows * cols;
  std::vector<float> x = randn(n, 30.0f);
  x[3 * cols + 70] = std::nanf("");
  for (int64_t c = 0; c < cols; ++c)
    x[5 * cols + c] = 0.0f;
  const std::vector<uint16_t> x16 = toBf16(x);
  const float *dx = upload(x);
  const uint16_t *dx16 = upload(x16);
  for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16})
    for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + ", format " +
                   std::to_string(format));
      const bool f32 = dtype == GPTRT_DTYPE_F32;
      const double fp8Max = format == GPTRT_FP8_E4M3 ? 448.0 : 57344.0;
      float *amax = alloc<float>(rows), *scales = alloc<float>(rows);
      uint8_t *q = alloc<uint8_t>(n);
      gptrt_amax_quantize_rows(g(), f32 ? static_cast<const void *>(dx) : dx16,
                               amax, scales, q, rows, cols, format, -1, dtype,
                               fp8Max, 0, 1, 1e-12);
      expectOk();
      std::vector<float> wantAmax(rows), wantScales(rows);
      std::vector<uint8_t> wantQ(n);
      const void *hx = f32 ? static_cast<const void *>(x.data()) : x16.data();
      gptrt_amax_rows(cpuCtx.handle(), hx, wantAmax.data(), rows, cols, 0,
                      dtype);
      gptrt_row_scales(cpuCtx.handle(), wantAmax.data(), wantScales.data(),
                       rows, fp8Max, 0, 1, 1e-12);
      gptrt_quantize_rows(cpuCtx.handle(), hx, wantScales.data(), wantQ.data(),
                          rows, cols, 0, format, -1, dtype);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      const std::vector<float> gotAmax = download(amax, rows),
                               gotScales = download(scales, rows);
      EXPECT_TRUE(sameBitsOrBothNan(gotAmax, wantAmax));
      EXPECT_TRUE(sameBitsOrBothNan(gotScales, wantScales));
      EXPECT_TRUE(std::isnan(gotAmax[3]));
      EXPECT_EQ(gotAmax[5], 0.0f);
      EXPECT_EQ(download(q, n), wantQ);
    }
}

// rt-fuse-dual-cast's kernel: both layouts from one read, each bit for
// bit the CPU's, on partial tiles and on bf16 storage.
TEST_F(GpuTest, DualQuantizeIsBitExact) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t shapes[][2] = {{33, 31}, {512, 768}};
  for (const auto &shape : shapes) {
    const int64_t rows = shape[0], cols = shape[1], n = rows * cols;
    std::vector<float> x = randn(n, 200.0f);
    x[2] = std::nanf("");
    std::vector<uint16_t> x16 = toBf16(x);
    const float scale = 0.5f;
    uint8_t *q = alloc<uint8_t>(n), *qT = alloc<uint8_t>(n);
    gptrt_quantize_fp8_dual(g(), upload(x16), upload(std::vector<float>{scale}),
                            q, qT, rows, cols, GPTRT_FP8_E5M2, -1, -1,
                            GPTRT_DTYPE_BF16);
    expectOk();
    std::vector<uint8_t> wantQ(n), wantQT(n);
    gptrt_quantize_fp8_dual(cpuCtx.handle(), x16.data(), &scale, wantQ.data(),
                            wantQT.data(), rows, cols, GPTRT_FP8_E5M2, -1, -1,
                            GPTRT_DTYPE_BF16);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    EXPECT_EQ(download(q, n), wantQ) << rows << " x " << cols;
    EXPECT_EQ(download(qT, n), wantQT) << rows << " x " << cols;
  }
  // _bgrad: the codes as above and the bias gradient, its first chunk sums
  // from the cast's tiles, equal to the CPU's gptrt_reduce_rows bit for
  // bit -- one tile of rows or fewer (reduce_rows itself), a ragged last
  // tile, and three levels of the tree; f32 and bf16 db (poisoned).
  const int64_t bgradShapes[][2] = {{20, 40}, {33, 31}, {1100, 200}};
  for (const auto &shape : bgradShapes) {
    const int64_t rows = shape[0], cols = shape[1], n = rows * cols;
    std::vector<uint16_t> x16 = toBf16(randn(n, 3.0f));
    const float scale = 16.0f;
    for (int64_t dbDtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      const size_t dbBytes = dbDtype == GPTRT_DTYPE_F32 ? 4 : 2;
      uint8_t *q = alloc<uint8_t>(n), *qT = alloc<uint8_t>(n);
      uint8_t *db = upload(std::vector<uint8_t>(cols * dbBytes, 0xFF));
      gptrt_quantize_fp8_dual_bgrad(
          g(), upload(x16), upload(std::vector<float>{scale}), q, qT, db, rows,
          cols, GPTRT_FP8_E4M3, -1, -1, GPTRT_DTYPE_BF16, dbDtype);
      expectOk();
      std::vector<uint8_t> wantQ(n), wantQT(n), wantDb(cols * dbBytes);
      gptrt_quantize_fp8_dual_bgrad(cpuCtx.handle(), x16.data(), &scale,
                                    wantQ.data(), wantQT.data(), wantDb.data(),
                                    rows, cols, GPTRT_FP8_E4M3, -1, -1,
                                    GPTRT_DTYPE_BF16, dbDtype);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      EXPECT_EQ(download(q, n), wantQ) << rows << " x " << cols;
      EXPECT_EQ(download(qT, n), wantQT) << rows << " x " << cols;
      EXPECT_EQ(download(db, cols * dbBytes), wantDb)
          << "bias gradient, " << rows << " x " << cols << ", dtype "
          << dbDtype;
      // The transposed cast alone with the bias gradient (delayed scaling).
      uint8_t *tqT = alloc<uint8_t>(n);
      uint8_t *tdb = upload(std::vector<uint8_t>(cols * dbBytes, 0xFF));
      gptrt_quantize_fp8_transposed_bgrad(
          g(), upload(x16), upload(std::vector<float>{scale}), tqT, tdb, rows,
          cols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16, dbDtype);
      expectOk();
      EXPECT_EQ(download(tqT, n), wantQT) << "transposed_bgrad codes";
      EXPECT_EQ(download(tdb, cols * dbBytes), wantDb)
          << "transposed_bgrad bias gradient, " << rows << " x " << cols;
    }
  }
}

// The producers that take the FP8 epilogue in their own pass (layernorm,
// add, GELU and its gradient: _amax, and _cast without transpose): on every
// vector path (bf16 x 8, f32 x 4) and the scalar one, the amax is that of the
// output as stored and the codes are its cast, bit for bit; the residual add's
// output itself is the CPU's bit for bit. A NaN in the output wins the
// amax.
// rt-fuse-cast-scale's casts on the GPU: the scale each thread works out
// of the amax or the amax history (and block 0 stores), the codes and the
// bias gradient equal the CPU's (the scale kernel, then the cast) bit for
// bit -- f32 x in 16-byte vectors and not, bf16 x, the dual casts with and
// without the bias gradient, E4M3 and E5M2 with margin and power-of-two
// scales, the delayed forms -- and with nothing to cast the scale is still
// stored.
TEST_F(GpuTest, ScaleQuantizeMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const float amaxValue = 173.0f;
  const float *amax = upload(std::vector<float>{amaxValue});
  auto poisonedScale = [&] { return upload(std::vector<float>{-1.0f}); };
  for (int64_t n : {int64_t(40000), int64_t(40001)})
    for (int64_t dtype : {GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", dtype " +
                   std::to_string(dtype));
      const std::vector<float> x = randn(n, 100.0f);
      const std::vector<uint16_t> x16 = toBf16(x);
      const void *hostX = dtype == GPTRT_DTYPE_F32
                              ? static_cast<const void *>(x.data())
                              : static_cast<const void *>(x16.data());
      const void *devX = dtype == GPTRT_DTYPE_F32
                             ? static_cast<const void *>(upload(x))
                             : static_cast<const void *>(upload(x16));
      uint8_t *q = alloc<uint8_t>(n);
      float *scale = poisonedScale();
      gptrt_scale_quantize_fp8(g(), devX, amax, q, scale, n, GPTRT_FP8_E4M3, -1,
                               dtype, 448.0, 0, 0, 1e-12);
      expectOk();
      std::vector<uint8_t> wantQ(n);
      float wantScale = 0;
      gptrt_scale_quantize_fp8(cpuCtx.handle(), hostX, &amaxValue, wantQ.data(),
                               &wantScale, n, GPTRT_FP8_E4M3, -1, dtype, 448.0,
                               0, 0, 1e-12);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      EXPECT_EQ(download(scale, 1)[0], wantScale);
      EXPECT_EQ(download(q, n), wantQ);
    }
  const int64_t rows = 1100, cols = 200, n = rows * cols;
  const std::vector<uint16_t> x16 = toBf16(randn(n, 3.0f));
  const uint16_t *devX = upload(x16);
  uint8_t *q = alloc<uint8_t>(n), *qT = alloc<uint8_t>(n);
  float *db = upload(std::vector<float>(cols, 0.25f)), *scale = poisonedScale();
  gptrt_scale_quantize_fp8_dual_bgrad(
      g(), devX, amax, q, qT, db, scale, rows, cols, GPTRT_FP8_E5M2, -1, -1,
      GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE, 57344.0, 1, 1, 1e-12);
  expectOk();
  std::vector<uint8_t> wantQ(n), wantQT(n);
  std::vector<float> wantDb(cols, 0.25f);
  float wantScale = 0;
  gptrt_scale_quantize_fp8_dual_bgrad(
      cpuCtx.handle(), x16.data(), &amaxValue, wantQ.data(), wantQT.data(),
      wantDb.data(), &wantScale, rows, cols, GPTRT_FP8_E5M2, -1, -1,
      GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE, 57344.0, 1, 1, 1e-12);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  EXPECT_EQ(download(scale, 1)[0], wantScale);
  EXPECT_EQ(download(q, n), wantQ);
  EXPECT_EQ(download(qT, n), wantQT);
  EXPECT_EQ(download(db, cols), wantDb);
  uint8_t *q2 = alloc<uint8_t>(n), *qT2 = alloc<uint8_t>(n);
  float *scale2 = poisonedScale();
  gptrt_scale_quantize_fp8_dual(g(), devX, amax, q2, qT2, scale2, rows, cols,
                                GPTRT_FP8_E5M2, -1, -1, GPTRT_DTYPE_BF16,
                                57344.0, 1, 1, 1e-12);
  expectOk();
  EXPECT_EQ(download(scale2, 1)[0], wantScale);
  EXPECT_EQ(download(q2, n), wantQ);
  EXPECT_EQ(download(qT2, n), wantQT);
  // Nothing to cast: no cast kernel runs, the scale is stored all the same.
  float *scale3 = poisonedScale(), *scale4 = poisonedScale();
  gptrt_scale_quantize_fp8(g(), devX, amax, q, scale3, 0, GPTRT_FP8_E4M3, -1,
                           GPTRT_DTYPE_BF16, 448.0, 0, 0, 1e-12);
  gptrt_scale_quantize_fp8_dual(g(), devX, amax, q, qT, scale4, 0, cols,
                                GPTRT_FP8_E4M3, -1, -1, GPTRT_DTYPE_BF16, 448.0,
                                0, 0, 1e-12);
  expectOk();
  float wantE4m3 = 0;
  gptrt_scale_from_amax(cpuCtx.handle(), &amaxValue, &wantE4m3, 448.0, 0, 0,
                        1e-12);
  EXPECT_EQ(download(scale3, 1)[0], wantE4m3);
  EXPECT_EQ(download(scale4, 1)[0], wantE4m3);

  // Delayed scaling's state_ forms: the scale of the amax history's max
  // (most_recent 0) or newest entry (1), and 1 for an empty history.
  const std::vector<std::vector<float>> histories = {{0, 0, 0, 0},
                                                     {3.0f, 120.0f, 7.5f, 0}};
  const int64_t length = 4;
  for (const std::vector<float> &history : histories)
    for (int64_t mostRecent : {0, 1}) {
      SCOPED_TRACE("history[1] " + std::to_string(history[1]) +
                   ", most_recent " + std::to_string(mostRecent));
      const float *devHistory = upload(history);
      uint8_t *sq = alloc<uint8_t>(n), *sqT = alloc<uint8_t>(n),
              *sqB = alloc<uint8_t>(n);
      float *sdb = upload(std::vector<float>(cols, 0.5f));
      float *s1 = poisonedScale(), *s2 = poisonedScale(), *s3 = poisonedScale();
      gptrt_state_quantize_fp8(g(), devX, devHistory, sq, s1, n, GPTRT_FP8_E4M3,
                               -1, GPTRT_DTYPE_BF16, length, 448.0, 0, 0, 1e-12,
                               mostRecent);
      gptrt_state_quantize_fp8_transposed(
          g(), devX, devHistory, sqT, s2, rows, cols, GPTRT_FP8_E4M3, -1,
          GPTRT_DTYPE_BF16, length, 448.0, 0, 0, 1e-12, mostRecent);
      gptrt_state_quantize_fp8_transposed_bgrad(
          g(), devX, devHistory, sqB, sdb, s3, rows, cols, GPTRT_FP8_E4M3, -1,
          GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE, length, 448.0, 0, 0,
          1e-12, mostRecent);
      // Both copies from one history (rt-fuse-delayed-dual-cast).
      uint8_t *dq = alloc<uint8_t>(n), *dqT = alloc<uint8_t>(n),
              *dqB = alloc<uint8_t>(n), *dqBT = alloc<uint8_t>(n);
      float *ddb = upload(std::vector<float>(cols, 0.5f));
      float *s5 = poisonedScale(), *s6 = poisonedScale();
      gptrt_state_quantize_fp8_dual(
          g(), devX, devHistory, dq, dqT, s5, rows, cols, GPTRT_FP8_E4M3, -1,
          -1, GPTRT_DTYPE_BF16, length, 448.0, 0, 0, 1e-12, mostRecent);
      gptrt_state_quantize_fp8_dual_bgrad(
          g(), devX, devHistory, dqB, dqBT, ddb, s6, rows, cols, GPTRT_FP8_E4M3,
          -1, -1, GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32_ACCUMULATE, length, 448.0,
          0, 0, 1e-12, mostRecent);
      expectOk();
      std::vector<uint8_t> cq(n), cqT(n), cqB(n);
      std::vector<float> cdb(cols, 0.5f);
      float c1 = 0, c2 = 0, c3 = 0;
      gptrt_state_quantize_fp8(cpuCtx.handle(), x16.data(), history.data(),
                               cq.data(), &c1, n, GPTRT_FP8_E4M3, -1,
                               GPTRT_DTYPE_BF16, length, 448.0, 0, 0, 1e-12,
                               mostRecent);
      gptrt_state_quantize_fp8_transposed(
          cpuCtx.handle(), x16.data(), history.data(), cqT.data(), &c2, rows,
          cols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16, length, 448.0, 0, 0,
          1e-12, mostRecent);
      gptrt_state_quantize_fp8_transposed_bgrad(
          cpuCtx.handle(), x16.data(), history.data(), cqB.data(), cdb.data(),
          &c3, rows, cols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_BF16,
          GPTRT_DTYPE_F32_ACCUMULATE, length, 448.0, 0, 0, 1e-12, mostRecent);
      ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
      EXPECT_EQ(download(s1, 1)[0], c1);
      EXPECT_EQ(download(s2, 1)[0], c2);
      EXPECT_EQ(download(s3, 1)[0], c3);
      EXPECT_EQ(download(sq, n), cq);
      EXPECT_EQ(download(sqT, n), cqT);
      EXPECT_EQ(download(sqB, n), cqB);
      EXPECT_EQ(download(sdb, cols), cdb);
      EXPECT_EQ(download(s5, 1)[0], c1);
      EXPECT_EQ(download(s6, 1)[0], c1);
      EXPECT_EQ(download(dq, n), cq);
      EXPECT_EQ(download(dqT, n), cqT);
      EXPECT_EQ(download(dqB, n), cq);
      EXPECT_EQ(download(dqBT, n), cqT);
      EXPECT_EQ(download(ddb, cols), cdb);
      // No rows: no cast kernel, the scale stored all the same.
      float *s4 = poisonedScale();
      gptrt_state_quantize_fp8_transposed(
          g(), devX, devHistory, sqT, s4, 0, cols, GPTRT_FP8_E4M3, -1,
          GPTRT_DTYPE_BF16, length, 448.0, 0, 0, 1e-12, mostRecent);
      expectOk();
      EXPECT_EQ(download(s4, 1)[0], c1);
    }
}

// rt-batch-fp8-state-updates' kernel on the GPU: 64 states (every mask
// bit but a few), histories padded apart, equal to the CPU's bit for bit.
TEST_F(GpuTest, StateUpdateBatchMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t count = 64, length = 16, stride = 20;
  std::vector<float> history = randn(count * stride), amax = randn(count);
  for (float &a : amax)
    a = std::fabs(a);
  amax[5] = std::nanf("");
  const int64_t mask = int64_t(~((uint64_t(1) << 9) | (uint64_t(1) << 63)));
  float *devHistory = upload(history);
  gptrt_fp8_state_update_batch(g(), upload(amax), devHistory, count, length,
                               stride, mask);
  expectOk();
  gptrt_fp8_state_update_batch(cpuCtx.handle(), amax.data(), history.data(),
                               count, length, stride, mask);
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  EXPECT_EQ(download(devHistory, count * stride), history);
}

TEST_F(GpuTest, StateScaleBatchMatchesCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t count = 64, length = 16, stride = 20;
  std::vector<float> history = randn(count * stride);
  for (float &a : history)
    a = std::fabs(a);
  std::fill_n(history.begin() + 7 * stride, length, 0.0f); // scale 1
  const int64_t mask = int64_t(~((uint64_t(1) << 9) | (uint64_t(1) << 63)));
  const float *devHistory = upload(history);
  for (int64_t recent : {0, 1}) {
    SCOPED_TRACE(recent ? "most_recent" : "history max");
    std::vector<float> want = randn(count);
    float *out = upload(want); // unmasked scales must keep these
    gptrt_fp8_state_scale_batch(g(), devHistory, out, count, length, stride,
                                mask, 448.0, 0, 1, 1e-12, recent);
    expectOk();
    gptrt_fp8_state_scale_batch(cpuCtx.handle(), history.data(), want.data(),
                                count, length, stride, mask, 448.0, 0, 1, 1e-12,
                                recent);
    ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
    EXPECT_EQ(download(out, count), want);
  }
}

TEST_F(GpuTest, ProducersTakeTheirFp8EpilogueInOnePass) {
  Context cpuCtx(Device::Cpu, {});
  const float scale = 12.0f;
  const float *dScale = upload(std::vector<float>{scale});
  // amax and codes of `out` as the CPU epilogue computes them.
  auto expectEpilogue = [&](const std::vector<float> &out, float *amax,
                            uint8_t *q, int64_t format, const char *what) {
    SCOPED_TRACE(what);
    float want = 0;
    bool nan = false;
    std::vector<uint8_t> codes(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      nan = nan || std::isnan(out[i]);
      want = std::max(want, std::fabs(out[i]));
      codes[i] = format == GPTRT_FP8_E4M3 ? cpu::floatToE4M3(out[i] * scale)
                                          : cpu::floatToE5M2(out[i] * scale);
    }
    const float got = download(amax, 1)[0];
    if (nan)
      EXPECT_TRUE(std::isnan(got));
    else
      EXPECT_EQ(got, want);
    if (q)
      EXPECT_EQ(download(q, out.size()), codes);
  };
  const int64_t rows = 96, width = 768, n = rows * width;
  for (int64_t format : {GPTRT_FP8_E4M3, GPTRT_FP8_E5M2}) {
    for (int64_t dtype : {GPTRT_DTYPE_BF16, GPTRT_DTYPE_F32}) {
      const bool bf16 = dtype == GPTRT_DTYPE_BF16;
      std::vector<float> xf = randn(n, 4.0f), rf = randn(n, 4.0f),
                         bias = randn(width);
      std::vector<uint16_t> x16 = toBf16(xf), r16 = toBf16(rf);
      const void *x = bf16 ? static_cast<const void *>(upload(x16))
                           : static_cast<const void *>(upload(xf));
      const void *r = bf16 ? static_cast<const void *>(upload(r16))
                           : static_cast<const void *>(upload(rf));
      auto output = [&](int64_t count) -> void * {
        return bf16 ? static_cast<void *>(alloc<uint16_t>(count))
                    : static_cast<void *>(alloc<float>(count));
      };
      auto values = [&](void *p, int64_t count) {
        if (!bf16)
          return download(static_cast<float *>(p), count);
        std::vector<double> v =
            bf16Values(download(static_cast<uint16_t *>(p), count));
        return std::vector<float>(v.begin(), v.end());
      };
      // Residual add (x4 / x8 vectors), then the bias add (broadcast: the
      // scalar path for f32).
      for (int64_t broadcast : {0, 1}) {
        void *sum = output(n);
        float *amax = alloc<float>(1);
        uint8_t *q = alloc<uint8_t>(n);
        const void *b = broadcast ? static_cast<const void *>(upload(bias)) : r;
        const int64_t bDtype = broadcast ? GPTRT_DTYPE_F32 : dtype;
        gptrt_add(g(), x, b, dScale, sum, amax, q, rows, width, broadcast,
                  dtype, bDtype, dtype,
                  epilogue(rows, width, dtype, format, 0, -1));
        expectOk();
        std::vector<float> got = values(sum, n);
        expectEpilogue(got, amax, q, format, "add_cast");
        if (!broadcast) {
          // The add is exact arithmetic rounded once: the CPU's bits.
          std::vector<float> ref(n);
          std::vector<uint16_t> ref16(n);
          void *refOut = bf16 ? static_cast<void *>(ref16.data())
                              : static_cast<void *>(ref.data());
          gptrt_add(cpuCtx.handle(),
                    bf16 ? static_cast<const void *>(x16.data())
                         : static_cast<const void *>(xf.data()),
                    bf16 ? static_cast<const void *>(r16.data())
                         : static_cast<const void *>(rf.data()),
                    nullptr, refOut, nullptr, nullptr, rows, width, 0, dtype,
                    dtype, dtype, nullptr);
          if (bf16) {
            std::vector<double> v = bf16Values(ref16);
            ref.assign(v.begin(), v.end());
          }
          EXPECT_EQ(got, ref) << "add, dtype " << dtype;
        }
      }
      // Layernorm (one block per row) and GELU with _amax only.
      float *mean = alloc<float>(rows), *rstd = alloc<float>(rows);
      void *y = output(n);
      float *amax = alloc<float>(1);
      gptrt_layernorm_fwd(g(), x, upload(std::vector<float>(width, 1.5f)),
                          upload(bias), nullptr, y, mean, rstd, amax, nullptr,
                          nullptr, rows, width, 1e-5, dtype, dtype,
                          epilogue(rows, width, dtype));
      expectOk();
      expectEpilogue(values(y, n), amax, nullptr, format, "layernorm_fwd_amax");
      uint8_t *q = alloc<uint8_t>(n);
      gptrt_layernorm_fwd(g(), x, upload(std::vector<float>(width, 1.5f)),
                          upload(bias), dScale, y, mean, rstd, amax, q, nullptr,
                          rows, width, 1e-5, dtype, dtype,
                          epilogue(rows, width, dtype, format, 0, -1));
      expectOk();
      expectEpilogue(values(y, n), amax, q, format, "layernorm_fwd_cast");
      // The residual add in front (rt-fuse-add-layernorm), x = x + r.
      void *sumX = output(n);
      gptrt_add_layernorm_fwd(
          g(), x, r, upload(std::vector<float>(width, 1.5f)), upload(bias),
          dScale, sumX, y, mean, rstd, amax, q, nullptr, rows, width, 1e-5,
          dtype, dtype, dtype, dtype,
          epilogue(rows, width, dtype, format, 0, -1));
      expectOk();
      expectEpilogue(values(y, n), amax, q, format, "add_layernorm_fwd_cast");
      gptrt_add_layernorm_fwd(
          g(), x, r, upload(std::vector<float>(width, 1.5f)), upload(bias),
          nullptr, sumX, y, mean, rstd, amax, nullptr, nullptr, rows, width,
          1e-5, dtype, dtype, dtype, dtype, epilogue(rows, width, dtype));
      expectOk();
      expectEpilogue(values(y, n), amax, nullptr, format,
                     "add_layernorm_fwd_amax");
      gptrt_gelu_fwd(g(), x, nullptr, y, amax, nullptr, nullptr, n, dtype,
                     dtype, epilogue(rows, width, dtype));
      expectOk();
      expectEpilogue(values(y, n), amax, nullptr, format, "gelu_fwd_amax");
      void *dx = output(n);
      gptrt_gelu_bwd(g(), r, x, dScale, dx, amax, q, nullptr, nullptr, n, dtype,
                     dtype, dtype, epilogue(rows, width, dtype, format, 0, -1));
      expectOk();
      expectEpilogue(values(dx, n), amax, q, format, "gelu_bwd_cast");
    }
  }
  // A NaN in the output.
  std::vector<float> x = randn(4096);
  x[77] = std::nanf("");
  float *y = alloc<float>(4096), *amax = alloc<float>(1);
  gptrt_gelu_fwd(g(), upload(x), nullptr, y, amax, nullptr, nullptr, 4096,
                 GPTRT_DTYPE_F32, GPTRT_DTYPE_F32,
                 epilogue(64, 64, GPTRT_DTYPE_F32));
  expectOk();
  EXPECT_TRUE(std::isnan(download(amax, 1)[0]));
}

// FP8 cast statistics counted on the device equal the CPU's counts for the
// same casts: three E4M3 casts into one slot (amax the max, counts summed,
// scale the last, which is neither the first nor the smallest: saturation
// from the first, underflow from the second), an E5M2 cast of small
// values (underflow) into another.
TEST_F(GpuTest, CastStatisticsMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t n = 300001;
  std::vector<float> a = randn(n, 200.0f), b = randn(n, 1e-3f);
  for (int64_t i = 0; i < n; i += 101)
    a[i] = 0.0f;  // zeros are not underflow
  const std::vector<float> scales{2.0f, 0.5f, 1.0f};
  for (Context *c : {&gpu(), &cpuCtx})
    c->beginFp8Stats(2);
  auto cast = [&](gptrt_context *h, const float *x, const float *scale,
                  uint8_t *q, int64_t format, int64_t slot) {
    gptrt_quantize_fp8(h, x, scale, q, n, format, slot, GPTRT_DTYPE_F32);
  };
  std::vector<uint8_t> ref(n);
  uint8_t *q = alloc<uint8_t>(n);
  const float *ga = upload(a), *gb = upload(b);
  const float *s0 = upload(std::vector<float>{scales[0]});
  const float *s1 = upload(std::vector<float>{scales[1]});
  const float *s2 = upload(std::vector<float>{scales[2]});
  cast(g(), ga, s0, q, GPTRT_FP8_E4M3, 0);
  cast(g(), gb, s1, q, GPTRT_FP8_E4M3, 0);
  cast(g(), ga, s2, q, GPTRT_FP8_E4M3, 0);
  cast(cpuCtx.handle(), a.data(), &scales[0], ref.data(), GPTRT_FP8_E4M3, 0);
  cast(cpuCtx.handle(), b.data(), &scales[1], ref.data(), GPTRT_FP8_E4M3, 0);
  cast(cpuCtx.handle(), a.data(), &scales[2], ref.data(), GPTRT_FP8_E4M3, 0);
  cast(g(), gb, s0, q, GPTRT_FP8_E5M2, 1);
  cast(cpuCtx.handle(), b.data(), &scales[0], ref.data(), GPTRT_FP8_E5M2, 1);
  expectOk();
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  for (Context *c : {&gpu(), &cpuCtx})
    c->endFp8Stats();
  for (size_t slot = 0; slot < 2; ++slot) {
    const Fp8CastStats &got = gpu().fp8Stats()[slot];
    const Fp8CastStats &want = cpuCtx.fp8Stats()[slot];
    EXPECT_EQ(got.amax, want.amax) << "slot " << slot;
    EXPECT_EQ(got.scale, want.scale) << "slot " << slot;
    EXPECT_EQ(got.underflow, want.underflow) << "slot " << slot;
    EXPECT_EQ(got.saturated, want.saturated) << "slot " << slot;
    EXPECT_EQ(got.elements, want.elements) << "slot " << slot;
    EXPECT_GT(want.underflow + want.saturated, 0)
        << "slot " << slot << ": the data should exercise the counters";
  }
  EXPECT_EQ(gpu().fp8Stats()[0].scale, scales[2]) << "the last cast's scale";
}

// The rowwise casts' statistics on the device (each value with its row's or
// column's scale, the smallest scale logged), equal to the CPU's: along
// rows, along columns, transposed, and rt-fuse-rowwise-cast's kernel; a
// NaN row makes its scale NaN, which the logged minimum skips.
TEST_F(GpuTest, RowwiseCastStatisticsMatchCpu) {
  Context cpuCtx(Device::Cpu, {});
  const int64_t rows = 3001, cols = 67, n = rows * cols;
  std::vector<float> x = randn(n, 100.0f);
  for (int64_t i = 0; i < n; i += 7)
    x[i] *= 1e-6f; // underflow at the rows' scales
  x[17 * cols + 3] = std::nanf("");
  std::vector<float> rowScales = randn(rows, 4.0f), colScales = randn(cols);
  for (float &v : rowScales)
    v = std::fabs(v) + 1.0f;
  for (float &v : colScales)
    v = std::fabs(v) + 0.25f;
  rowScales[17] = std::nanf("");
  for (Context *c : {&gpu(), &cpuCtx})
    c->beginFp8Stats(4);
  const float *dx = upload(x), *dRows = upload(rowScales),
              *dCols = upload(colScales);
  uint8_t *q = alloc<uint8_t>(n);
  std::vector<uint8_t> ref(n);
  gptrt_quantize_rows(g(), dx, dRows, q, rows, cols, 0, GPTRT_FP8_E4M3, 0,
                      GPTRT_DTYPE_F32);
  gptrt_quantize_rows(cpuCtx.handle(), x.data(), rowScales.data(), ref.data(),
                      rows, cols, 0, GPTRT_FP8_E4M3, 0, GPTRT_DTYPE_F32);
  gptrt_quantize_rows(g(), dx, dCols, q, rows, cols, 1, GPTRT_FP8_E5M2, 1,
                      GPTRT_DTYPE_F32);
  gptrt_quantize_rows(cpuCtx.handle(), x.data(), colScales.data(), ref.data(),
                      rows, cols, 1, GPTRT_FP8_E5M2, 1, GPTRT_DTYPE_F32);
  gptrt_quantize_rows_transposed(g(), dx, dCols, q, rows, cols, 1,
                                 GPTRT_FP8_E4M3, 2, GPTRT_DTYPE_F32);
  gptrt_quantize_rows_transposed(cpuCtx.handle(), x.data(), colScales.data(),
                                 ref.data(), rows, cols, 1, GPTRT_FP8_E4M3, 2,
                                 GPTRT_DTYPE_F32);
  float *amax = alloc<float>(rows), *scales = alloc<float>(rows);
  std::vector<float> cAmax(rows), cScales(rows);
  gptrt_amax_quantize_rows(g(), dx, amax, scales, q, rows, cols, GPTRT_FP8_E4M3,
                           3, GPTRT_DTYPE_F32, 448.0, 0, 1, 1e-12);
  gptrt_amax_quantize_rows(
      cpuCtx.handle(), x.data(), cAmax.data(), cScales.data(), ref.data(), rows,
      cols, GPTRT_FP8_E4M3, 3, GPTRT_DTYPE_F32, 448.0, 0, 1, 1e-12);
  expectOk();
  ASSERT_FALSE(cpuCtx.failed()) << cpuCtx.error();
  for (Context *c : {&gpu(), &cpuCtx})
    c->endFp8Stats();
  for (size_t slot = 0; slot < 4; ++slot) {
    const Fp8CastStats &got = gpu().fp8Stats()[slot];
    const Fp8CastStats &want = cpuCtx.fp8Stats()[slot];
    // The device's amax keeps a NaN (Backend.h); the CPU's skips it.
    EXPECT_TRUE(std::isnan(got.amax)) << "slot " << slot;
    EXPECT_EQ(got.scale, want.scale) << "slot " << slot;
    EXPECT_EQ(got.underflow, want.underflow) << "slot " << slot;
    EXPECT_EQ(got.saturated, want.saturated) << "slot " << slot;
    EXPECT_EQ(got.elements, want.elements) << "slot " << slot;
    EXPECT_GT(want.underflow, 0) << "slot " << slot;
  }
  float smallest = INFINITY;
  for (float v : rowScales)
    if (!std::isnan(v))
      smallest = std::min(smallest, v);
  EXPECT_EQ(gpu().fp8Stats()[0].scale, smallest);
}

} // namespace
} // namespace gptrt::gputest
