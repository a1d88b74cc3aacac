// Forward CPU kernels against naive float64 references written here from the
// formulas, and the float instantiation against the double one.
#include "test/unit/runtime/Runners.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace {

using namespace gptrt::test;
namespace rt = gptrt::cpu;

// ----------------------------------------------------- naive references

Vec refEmbedding(const Vec &table, const std::vector<int32_t> &ids,
                 int64_t width) {
  Vec out;
  for (int32_t id : ids)
    for (int64_t j = 0; j < width; ++j)
      out.push_back(table[id * width + j]);
  return out;
}

LayerNormResult refLayerNorm(const Vec &x, const Vec &w, const Vec &b,
                             int64_t rows, int64_t width, double eps) {
  LayerNormResult r;
  for (int64_t i = 0; i < rows; ++i) {
    double mu = 0;
    for (int64_t j = 0; j < width; ++j)
      mu += x[i * width + j];
    mu /= width;
    double var = 0;
    for (int64_t j = 0; j < width; ++j)
      var += (x[i * width + j] - mu) * (x[i * width + j] - mu);
    var /= width;
    double sd = std::sqrt(var + eps);
    for (int64_t j = 0; j < width; ++j)
      r.out.push_back((x[i * width + j] - mu) / sd * w[j] + b[j]);
    r.mean.push_back(mu);
    r.rstd.push_back(1 / sd);
  }
  return r;
}

// op(A)[i,p] and op(B)[p,j] read straight from the storage layout.
Vec refGemm(const Vec &a, const Vec &b, const Vec &c0, int64_t m, int64_t n,
            int64_t k, bool ta, bool tb, double beta) {
  Vec c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += (ta ? a[p * m + i] : a[i * k + p]) *
             (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s + (beta == 0 ? 0.0 : beta * c0[i * n + j]);
    }
  return c;
}

double refGelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// dst[idx] = src[idx'] with dst index i = src index perm[i], via div/mod.
Vec refPermute(const Vec &src, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &perm) {
  const size_t r = shape.size();
  std::vector<int64_t> dstShape(r);
  for (size_t i = 0; i < r; ++i)
    dstShape[i] = shape[perm[i]];
  Vec dst(src.size());
  for (size_t lin = 0; lin < src.size(); ++lin) {
    std::vector<int64_t> sidx(r);
    size_t rem = lin;
    for (size_t d = r; d-- > 0;) {
      sidx[d] = static_cast<int64_t>(rem % shape[d]);
      rem /= shape[d];
    }
    size_t dlin = 0;
    for (size_t i = 0; i < r; ++i)
      dlin = dlin * dstShape[i] + sidx[perm[i]];
    dst[dlin] = src[lin];
  }
  return dst;
}

// Full score matrix with -inf above the diagonal when causal, then softmax.
AttentionResult refAttention(const Vec &q, const Vec &k, const Vec &v,
                             const AttnShape &s) {
  const int64_t D = s.C / s.H;
  AttentionResult r{Vec(s.size()), Vec(s.B * s.H * s.T)};
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h) {
      auto at = [&](const Vec &x, int64_t t, int64_t d) {
        return x[(b * s.T + t) * s.C + h * D + d];
      };
      for (int64_t i = 0; i < s.T; ++i) {
        Vec sc(s.T);
        for (int64_t j = 0; j < s.T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += at(q, i, d) * at(k, j, d);
          sc[j] = (s.causal && j > i) ? -INFINITY : dot / std::sqrt(double(D));
        }
        double mx = *std::max_element(sc.begin(), sc.end());
        double z = 0;
        for (double x : sc)
          z += std::exp(x - mx);
        r.lse[(b * s.H + h) * s.T + i] = mx + std::log(z);
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = 0; j < s.T; ++j)
            o += std::exp(sc[j] - mx) / z * at(v, j, d);
          r.out[(b * s.T + i) * s.C + h * D + d] = o;
        }
      }
    }
  return r;
}

CrossEntropyResult refCrossEntropy(const Vec &logits,
                                   const std::vector<int32_t> &targets,
                                   const CeShape &s) {
  CrossEntropyResult r{0, Vec(s.n)};
  int count = 0;
  for (int64_t i = 0; i < s.n; ++i) {
    const double *row = logits.data() + i * s.padded;
    double mx = *std::max_element(row, row + s.vocab);
    double z = 0;
    for (int64_t j = 0; j < s.vocab; ++j)
      z += std::exp(row[j] - mx);
    r.lse[i] = mx + std::log(z);
    if (targets[i] == s.ignoreIndex)
      continue;
    r.loss += -std::log(std::exp(row[targets[i]] - mx) / z);
    ++count;
  }
  r.loss = count ? r.loss / count : 0.0;
  return r;
}

// ------------------------------------------------------------ embedding

TEST(CpuKernels, EmbeddingForward) {
  const int64_t vocab = 11, width = 13;
  Vec table = floatExact(randomVec(vocab * width, 1));
  std::vector<int32_t> ids = {3, 0, 10, 3, 7, 3, 1};
  Vec want = refEmbedding(table, ids, width);
  EXPECT_EQ(runEmbedding<double>(table, ids, width), want);
  // A copy: bit-exact in float as well.
  EXPECT_EQ(runEmbedding<float>(table, ids, width), want);
}

TEST(CpuKernels, EmbeddingBackwardAccumulatesRepeatedIds) {
  const int64_t vocab = 5, width = 7;
  std::vector<int32_t> ids = {2, 4, 2, 2, 0};
  Vec dout = floatExact(randomVec(ids.size() * width, 2));
  Vec dtable0 = floatExact(randomVec(vocab * width, 3));
  Vec want = dtable0;
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t j = 0; j < width; ++j)
      want[ids[i] * width + j] += dout[i * width + j];
  EXPECT_REL_NEAR(runEmbeddingBackward<double>(dtable0, dout, ids, width), want,
                  kExactTol);
  EXPECT_REL_NEAR(runEmbeddingBackward<float>(dtable0, dout, ids, width), want,
                  kFloatTol);
}

TEST(CpuKernels, Arange) {
  std::vector<int32_t> out(13, -7);
  rt::arange(out.data(), 13);
  for (int32_t i = 0; i < 13; ++i)
    EXPECT_EQ(out[i], i);
}

// ------------------------------------------------------------ layernorm

TEST(CpuKernels, LayerNormForward) {
  for (int64_t width : {1, 7, 13, 64}) {
    const int64_t rows = 5;
    // An offset mean checks the variance is not taken as E[x^2] - E[x]^2.
    Vec x = floatExact(randomVec(rows * width, 10 + width, 2.0, 4.0));
    Vec w = floatExact(randomVec(width, 20 + width));
    Vec b = floatExact(randomVec(width, 30 + width));
    LayerNormResult want = refLayerNorm(x, w, b, rows, width, 1e-5);
    LayerNormResult got = runLayerNorm<double>(x, w, b, rows, width);
    EXPECT_REL_NEAR(got.out, want.out, kExactTol) << "width " << width;
    EXPECT_REL_NEAR(got.mean, want.mean, kExactTol);
    EXPECT_REL_NEAR(got.rstd, want.rstd, kExactTol);
    LayerNormResult gotF = runLayerNorm<float>(x, w, b, rows, width);
    EXPECT_REL_NEAR(gotF.out, got.out, kFloatTol) << "width " << width;
    EXPECT_REL_NEAR(gotF.mean, got.mean, kFloatTol);
    EXPECT_REL_NEAR(gotF.rstd, got.rstd, kFloatTol);
  }
}

TEST(CpuKernels, LayerNormBackwardFloatMatchesDouble) {
  const int64_t rows = 6, width = 13;
  Vec x = floatExact(randomVec(rows * width, 40));
  Vec w = floatExact(randomVec(width, 41));
  Vec dout = floatExact(randomVec(rows * width, 42));
  Vec dw0 = floatExact(randomVec(width, 43));
  Vec db0 = floatExact(randomVec(width, 44));
  auto d = runLayerNormBackward<double>(dout, x, w, dw0, db0, rows, width);
  auto f = runLayerNormBackward<float>(dout, x, w, dw0, db0, rows, width);
  EXPECT_REL_NEAR(f.dx, d.dx, kFloatTol);
  EXPECT_REL_NEAR(f.dw, d.dw, kFloatTol);
  EXPECT_REL_NEAR(f.db, d.db, kFloatTol);
}

// ----------------------------------------------------------------- gemm

TEST(CpuKernels, GemmAllTransposes) {
  const int64_t m = 7, n = 13, k = 5;
  Vec a = floatExact(randomVec(m * k, 50));
  Vec b = floatExact(randomVec(k * n, 51));
  Vec c0 = floatExact(randomVec(m * n, 52));
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0, 0.5}) {
        Vec want = refGemm(a, b, c0, m, n, k, ta, tb, beta);
        Vec got = runGemm<double>(a, b, c0, m, n, k, ta, tb, beta);
        EXPECT_REL_NEAR(got, want, kExactTol)
            << "transA " << ta << " transB " << tb << " beta " << beta;
        EXPECT_REL_NEAR(runGemm<float>(a, b, c0, m, n, k, ta, tb, beta), got,
                        kFloatTol)
            << "transA " << ta << " transB " << tb << " beta " << beta;
      }
}

TEST(CpuKernels, GemmDegenerateShapes) {
  // k == 0: C = beta * C (0 when beta == 0, even over NaN).
  Vec c0 = randomVec(6, 53);
  Vec half = c0;
  for (double &x : half)
    x *= 0.5;
  EXPECT_EQ(runGemm<double>({}, {}, c0, 2, 3, 0, false, false, 0.0), Vec(6, 0));
  EXPECT_REL_NEAR(runGemm<double>({}, {}, c0, 2, 3, 0, false, true, 0.5), half,
                  kExactTol);
  // Vector shapes (m = 1, n = 1).
  Vec a = randomVec(9, 54), b = randomVec(9, 55);
  EXPECT_REL_NEAR(runGemm<double>(a, b, {}, 1, 1, 9, false, false, 0.0),
                  refGemm(a, b, {}, 1, 1, 9, false, false, 0.0), kExactTol);
}

TEST(CpuKernels, GemmBatchedStridedAndBroadcast) {
  const int64_t batch = 3, m = 4, n = 7, k = 5;
  Vec a = floatExact(randomVec(batch * m * k, 60));
  Vec bAll = floatExact(randomVec(batch * k * n, 61));
  Vec c0 = floatExact(randomVec(batch * m * n, 62));
  for (bool shareB : {false, true})
    for (bool ta : {false, true})
      for (double beta : {0.0, 0.75}) {
        const int64_t sb = shareB ? 0 : k * n;
        Vec want;
        for (int64_t i = 0; i < batch; ++i) {
          Vec ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
          Vec bi(bAll.begin() + i * sb, bAll.begin() + i * sb + k * n);
          Vec ci(c0.begin() + i * m * n, c0.begin() + (i + 1) * m * n);
          Vec r = refGemm(ai, bi, ci, m, n, k, ta, false, beta);
          want.insert(want.end(), r.begin(), r.end());
        }
        Vec got = runGemmBatched<double>(a, bAll, c0, batch, m, n, k, ta, false,
                                         beta, m * k, sb, m * n);
        EXPECT_REL_NEAR(got, want, kExactTol) << "shareB " << shareB;
        EXPECT_REL_NEAR(runGemmBatched<float>(a, bAll, c0, batch, m, n, k, ta,
                                              false, beta, m * k, sb, m * n),
                        got, kFloatTol);
      }
}

TEST(CpuKernels, AddBiasAndSumRows) {
  const int64_t rows = 7, cols = 13;
  Vec c0 = floatExact(randomVec(rows * cols, 70));
  Vec bias = floatExact(randomVec(cols, 71));
  Vec want = c0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      want[i * cols + j] += bias[j];
  EXPECT_REL_NEAR(runAddBias<double>(c0, bias, rows, cols), want, kExactTol);
  EXPECT_REL_NEAR(runAddBias<float>(c0, bias, rows, cols), want, kFloatTol);

  Vec colSums(cols, 0.0), colSumsPlus = bias;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      colSums[j] += c0[i * cols + j];
      colSumsPlus[j] += c0[i * cols + j];
    }
  EXPECT_REL_NEAR(runSumRows<double>(c0, {}, rows, cols, false), colSums,
                  kExactTol);
  EXPECT_REL_NEAR(runSumRows<double>(c0, bias, rows, cols, true), colSumsPlus,
                  kExactTol);
  EXPECT_REL_NEAR(runSumRows<float>(c0, {}, rows, cols, false), colSums,
                  kFloatTol);
  EXPECT_REL_NEAR(runSumRows<float>(c0, bias, rows, cols, true), colSumsPlus,
                  kFloatTol);
}

// gptrt_reduce_rows's order: chunks of 32 rows, then chunks of the chunk
// sums, then row order -- checked against that tree written out here for
// three levels (32 * 32 + 5 rows), against sumRows up to 32 rows, and
// against the float64 sums.
TEST(CpuKernels, SumRowsTreeSumsChunksOf32) {
  const int64_t cols = 5;
  for (int64_t rows : {0, 1, 32, 33, 32 * 32 + 5}) {
    Vec x = randomVec(rows * cols, 72 + rows);
    std::vector<float> xf(x.begin(), x.end()), got(cols, NAN);
    rt::sumRowsTree(got.data(), xf.data(), rows, cols);
    std::vector<float> want(cols, 0.0f);
    if (rows <= 32) {
      rt::sumRows(want.data(), xf.data(), rows, cols, false);
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        std::vector<float> l1((rows + 31) / 32, 0.0f);
        for (int64_t i = 0; i < rows; ++i)
          l1[i / 32] += xf[i * cols + j];
        std::vector<float> l2((l1.size() + 31) / 32, 0.0f);
        if (l1.size() > 32) {
          for (size_t i = 0; i < l1.size(); ++i)
            l2[i / 32] += l1[i];
        } else {
          l2 = l1;
        }
        float s = 0.0f;
        for (float v : l2)
          s += v;
        want[j] = s;
      }
    }
    for (int64_t j = 0; j < cols; ++j)
      EXPECT_EQ(got[j], want[j]) << rows << " rows, column " << j;
    Vec exact(cols, 0.0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        exact[j] += xf[i * cols + j];
    EXPECT_REL_NEAR(Vec(got.begin(), got.end()), exact, kFloatTol);
  }
}

// ---------------------------------------------------------- elementwise

TEST(CpuKernels, AddFullAndBroadcast) {
  const int64_t outer = 7, inner = 13;
  Vec a = floatExact(randomVec(outer * inner, 80));
  Vec bFull = floatExact(randomVec(outer * inner, 81));
  Vec bRow = floatExact(randomVec(inner, 82));
  Vec wantFull(outer * inner), wantRow(outer * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      wantFull[o * inner + i] = a[o * inner + i] + bFull[o * inner + i];
      wantRow[o * inner + i] = a[o * inner + i] + bRow[i];
    }
  EXPECT_REL_NEAR(runAdd<double>(a, bFull, outer, inner, false), wantFull,
                  kExactTol);
  EXPECT_REL_NEAR(runAdd<double>(a, bRow, outer, inner, true), wantRow,
                  kExactTol);
  EXPECT_REL_NEAR(runAdd<float>(a, bFull, outer, inner, false), wantFull,
                  kFloatTol);
  EXPECT_REL_NEAR(runAdd<float>(a, bRow, outer, inner, true), wantRow,
                  kFloatTol);

  // In place over a (the residual stream does this).
  std::vector<double> inPlace = a;
  rt::add(inPlace.data(), inPlace.data(), bRow.data(), outer, inner, true);
  EXPECT_EQ(inPlace, wantRow);
}

TEST(CpuKernels, ScaleAndInPlace) {
  Vec x = floatExact(randomVec(13, 90));
  Vec want = x;
  for (double &v : want)
    v *= -0.25;
  EXPECT_EQ(runScale<double>(x, -0.25), want);
  // A power of two scales exactly in float too.
  EXPECT_EQ(runScale<float>(x, -0.25), want);
  EXPECT_REL_NEAR(runScale<float>(x, 0.3), runScale<double>(x, 0.3), kFloatTol);
  Vec y = x;
  rt::scale(y.data(), y.data(), 3.0, static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], x[i] * 3.0);
}

TEST(CpuKernels, GeluForward) {
  Vec x = floatExact(randomVec(1001, 100, -6.0, 6.0));
  x.push_back(0.0);
  Vec want;
  for (double v : x)
    want.push_back(refGelu(v));
  Vec got = runGelu<double>(x);
  EXPECT_REL_NEAR(got, want, kExactTol);
  EXPECT_REL_NEAR(runGelu<float>(x), got, kFloatTol);
  // Known values of the tanh form: gelu(1) = 0.841191990..., gelu(-1) =
  // -0.158808009... (from the closed form with tanh(0.7978845608 * 1.044715)).
  EXPECT_NEAR(runGelu<double>({1.0})[0], 0.8411919906082768, 1e-15);
  EXPECT_NEAR(runGelu<double>({-1.0})[0], -0.15880800939172324, 1e-15);
  // Saturation: no inf/NaN at large |x|.
  Vec big = runGelu<float>({100.0, -100.0});
  EXPECT_EQ(big[0], 100.0);
  EXPECT_EQ(big[1], 0.0);
}

TEST(CpuKernels, GeluBackwardFloatMatchesDouble) {
  Vec x = floatExact(randomVec(257, 101, -5.0, 5.0));
  Vec dout = floatExact(randomVec(257, 102));
  EXPECT_REL_NEAR(runGeluBackward<float>(x, dout),
                  runGeluBackward<double>(x, dout), kFloatTol);
}

// -------------------------------------------------------- data movement

TEST(CpuKernels, CopyBlocksSplitConcat) {
  // Concat of a [7,3] and a [7,5] block into the columns [2,5) and [5,10) of
  // a [7,13] tensor; the other columns must keep their sentinel.
  const int64_t outer = 7, wide = 13;
  Vec dst0(outer * wide, -99.0);
  Vec a = randomVec(outer * 3, 110), b = randomVec(outer * 5, 111);
  Vec got = runCopyBlocks<double>(dst0, a, outer, 3, wide, 3, 2, 0);
  got = runCopyBlocks<double>(got, b, outer, 5, wide, 5, 5, 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < wide; ++j) {
      double want = j < 2 || j >= 10 ? -99.0
                    : j < 5          ? a[o * 3 + j - 2]
                                     : b[o * 5 + j - 5];
      EXPECT_EQ(got[o * wide + j], want) << o << "," << j;
    }
  // And split back out: the inverse copy.
  Vec back = runCopyBlocks<float>(Vec(outer * 5, -1.0), got, outer, 5, 5, wide,
                                  0, 5);
  EXPECT_REL_NEAR(back, b, kFloatTol);
}

TEST(CpuKernels, PermuteMatchesReference) {
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  std::vector<Case> cases = {
      {{13}, {0}},
      {{7, 13}, {1, 0}},
      {{2, 7, 3, 4}, {0, 2, 1, 3}}, // [B,T,H,D] -> [B,H,T,D]
      {{2, 3, 5, 7}, {3, 1, 0, 2}},
      {{2, 3, 1, 2, 3, 2}, {5, 3, 1, 4, 0, 2}},
  };
  uint64_t seed = 120;
  for (const Case &c : cases) {
    int64_t total = 1;
    for (int64_t d : c.shape)
      total *= d;
    Vec src = floatExact(randomVec(total, seed++));
    Vec want = refPermute(src, c.shape, c.perm);
    EXPECT_EQ(runPermute<double>(src, c.shape, c.perm), want)
        << "rank " << c.shape.size();
    EXPECT_EQ(runPermute<float>(src, c.shape, c.perm), want);
  }
  double scalar = 4.5, out = 0;
  rt::permute(&out, &scalar, nullptr, nullptr, 0);
  EXPECT_EQ(out, 4.5);
}

TEST(CpuKernels, PermuteRejectsBadArguments) {
  double x[4] = {}, y[4] = {};
  int64_t shape[7] = {1, 1, 1, 1, 1, 1, 1};
  int64_t dup[2] = {0, 0}, id7[7] = {0, 1, 2, 3, 4, 5, 6};
  EXPECT_THROW(rt::permute(y, x, shape, dup, 2), std::invalid_argument);
  EXPECT_THROW(rt::permute(y, x, shape, id7, 7), std::invalid_argument);
}

// ------------------------------------------------------------ attention

TEST(CpuKernels, AttentionForward) {
  for (AttnShape s : {AttnShape{2, 7, 12, 3, true}, AttnShape{2, 7, 12, 3, false},
                      AttnShape{1, 13, 8, 1, true}, AttnShape{3, 5, 16, 4, false},
                      AttnShape{1, 1, 4, 2, true}}) {
    Vec q = floatExact(randomVec(s.size(), 130 + s.T, -2, 2));
    Vec k = floatExact(randomVec(s.size(), 140 + s.T, -2, 2));
    Vec v = floatExact(randomVec(s.size(), 150 + s.T));
    AttentionResult want = refAttention(q, k, v, s);
    AttentionResult got = runAttention<double>(q, k, v, s);
    EXPECT_REL_NEAR(got.out, want.out, kExactTol)
        << "T " << s.T << " H " << s.H << " causal " << s.causal;
    EXPECT_REL_NEAR(got.lse, want.lse, kExactTol);
    AttentionResult gotF = runAttention<float>(q, k, v, s);
    EXPECT_REL_NEAR(gotF.out, got.out, kFloatTol);
    EXPECT_REL_NEAR(gotF.lse, got.lse, kFloatTol);
  }
}

TEST(CpuKernels, AttentionForwardIsStableForLargeScores) {
  // Scores around 1e3 overflow a naive exp(); the max-shift must hold them.
  AttnShape s{1, 6, 4, 1, false};
  Vec q = randomVec(s.size(), 160, 20, 30), k = randomVec(s.size(), 161, 20, 30);
  Vec v = randomVec(s.size(), 162);
  AttentionResult want = refAttention(q, k, v, s);
  AttentionResult gotF = runAttention<float>(q, k, v, s);
  EXPECT_REL_NEAR(gotF.out, want.out, kFloatTol);
  EXPECT_REL_NEAR(gotF.lse, want.lse, kFloatTol);
}

TEST(CpuKernels, AttentionBackwardFloatMatchesDouble) {
  for (bool causal : {true, false}) {
    AttnShape s{2, 7, 12, 3, causal};
    Vec q = floatExact(randomVec(s.size(), 170)),
        k = floatExact(randomVec(s.size(), 171)),
        v = floatExact(randomVec(s.size(), 172)),
        dout = floatExact(randomVec(s.size(), 173));
    AttentionGrads d = runAttentionBackward<double>(dout, q, k, v, s);
    AttentionGrads f = runAttentionBackward<float>(dout, q, k, v, s);
    EXPECT_REL_NEAR(f.dq, d.dq, kFloatTol) << "causal " << causal;
    EXPECT_REL_NEAR(f.dk, d.dk, kFloatTol);
    EXPECT_REL_NEAR(f.dv, d.dv, kFloatTol);
  }
}

TEST(CpuKernels, AttentionRejectsHeadsNotDividingWidth) {
  std::vector<double> x(10, 0.1), out(10), lse(2);
  EXPECT_THROW(rt::attentionForward(out.data(), lse.data(), x.data(), x.data(),
                                    x.data(), 1, 2, 5, 2, true),
               std::invalid_argument);
}

// -------------------------------------------------------- cross-entropy

TEST(CpuKernels, CrossEntropyForwardPaddingAndIgnore) {
  CeShape s{7, 13, 16, -100};
  Vec logits = floatExact(randomVec(s.n * s.padded, 180, -4, 4));
  // Padding holds garbage; it must not take part.
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t j = s.vocab; j < s.padded; ++j)
      logits[i * s.padded + j] = j % 2 ? NAN : 1e4;
  std::vector<int32_t> targets = {3, -100, 12, 0, -100, 7, 12};
  CrossEntropyResult want = refCrossEntropy(logits, targets, s);
  CrossEntropyResult got = runCrossEntropy<double>(logits, targets, s);
  EXPECT_NEAR(got.loss, want.loss, kExactTol * want.loss);
  EXPECT_REL_NEAR(got.lse, want.lse, kExactTol);
  CrossEntropyResult gotF = runCrossEntropy<float>(logits, targets, s);
  EXPECT_NEAR(gotF.loss, got.loss, kFloatTol * got.loss);
  EXPECT_REL_NEAR(gotF.lse, got.lse, kFloatTol);

  Vec d = runCrossEntropyBackward<double>(logits, targets, 1.0, s);
  Vec dF = runCrossEntropyBackward<float>(logits, targets, 1.0, s);
  EXPECT_REL_NEAR(dF, d, kFloatTol);
}

TEST(CpuKernels, CrossEntropyAllIgnoredIsZero) {
  CeShape s{3, 5, 8, 7};
  Vec logits = randomVec(s.n * s.padded, 190);
  std::vector<int32_t> targets = {7, 7, 7};
  EXPECT_EQ(runCrossEntropy<double>(logits, targets, s).loss, 0.0);
  EXPECT_EQ(runCrossEntropyBackward<float>(logits, targets, 2.0, s),
            Vec(s.n * s.padded, 0.0));
}

TEST(CpuKernels, CrossEntropyRejectsBadTargets) {
  CeShape s{2, 5, 8, -1};
  std::vector<double> logits(s.n * s.padded, 0.5), lse(s.n), d(s.n * s.padded);
  std::vector<int32_t> padTarget = {1, 5}, negative = {-2, 0};
  EXPECT_THROW(rt::crossEntropyForward(lse.data(), logits.data(),
                                       padTarget.data(), s.n, s.vocab,
                                       s.padded, s.ignoreIndex),
               std::out_of_range);
  EXPECT_THROW(rt::crossEntropyBackward(d.data(), logits.data(), lse.data(),
                                        negative.data(), 1.0, s.n, s.vocab,
                                        s.padded, s.ignoreIndex),
               std::out_of_range);
  EXPECT_THROW(rt::crossEntropyForward(lse.data(), logits.data(),
                                       padTarget.data(), s.n, 9, 8, -1),
               std::invalid_argument);
}

// ------------------------------------------------------------ reductions

TEST(CpuKernels, SumSquaresAndFill) {
  Vec x = floatExact(randomVec(1013, 200));
  double want = 0;
  for (double v : x)
    want += v * v;
  EXPECT_NEAR(rt::sumSquares(x.data(), 1013), want, 1e-13 * want);
  auto xf = convert<float>(x);
  // Each float square is exact in double, so only the summation order differs.
  EXPECT_NEAR(rt::sumSquares(xf.data(), 1013), want, 1e-13 * want);

  auto y = poisoned<float>(13);
  rt::fill(y.data(), 2.5f, 13);
  EXPECT_EQ(y, std::vector<float>(13, 2.5f));
}

} // namespace
