// Backward kernels (and the forward kernels that serve as backwards: gemm,
// sumRows, permute, copyBlocks) against central finite differences of the
// forward, in double. Each test differentiates a random linear functional
// f = sum(r * out), so one analytic call with dout = r covers every output.
//
// Tolerance kGradTol = 1e-6 norm-wise relative: with h = 1e-6 the central
// difference has truncation error ~h^2 |f'''| ~ 1e-12 and rounding error
// ~1e-16 |f| / h ~ 1e-10, so 1e-6 is loose for a correct gradient and far
// tighter than any missing term would give.
#include "test/unit/runtime/Runners.h"

#include <numeric>

namespace {

using namespace gptrt::test;
namespace rt = gptrt::cpu;

Vec minus(const Vec &a, const Vec &b) {
  Vec r(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    r[i] = a[i] - b[i];
  return r;
}

TEST(CpuKernelGrads, LayerNorm) {
  const int64_t rows = 4, width = 13;
  Vec x = randomVec(rows * width, 300, -1, 3);
  Vec w = randomVec(width, 301), b = randomVec(width, 302);
  Vec r = randomVec(rows * width, 303);
  Vec dw0 = randomVec(width, 304), db0 = randomVec(width, 305);
  auto f = [&] { return dot(r, runLayerNorm<double>(x, w, b, rows, width).out); };
  LayerNormGrads g =
      runLayerNormBackward<double>(r, x, w, dw0, db0, rows, width);
  EXPECT_REL_NEAR(g.dx, finiteDiff(x, f), kGradTol);
  // dweight and dbias accumulate on top of dw0 and db0.
  EXPECT_REL_NEAR(minus(g.dw, dw0), finiteDiff(w, f), kGradTol);
  EXPECT_REL_NEAR(minus(g.db, db0), finiteDiff(b, f), kGradTol);
}

TEST(CpuKernelGrads, Gelu) {
  Vec x = randomVec(257, 310, -5, 5);
  Vec r = randomVec(257, 311);
  auto f = [&] { return dot(r, runGelu<double>(x)); };
  EXPECT_REL_NEAR(runGeluBackward<double>(x, r), finiteDiff(x, f), kGradTol);
}

TEST(CpuKernelGrads, Scale) {
  Vec x = randomVec(13, 315), r = randomVec(13, 316);
  auto f = [&] { return dot(r, runScale<double>(x, -1.25)); };
  EXPECT_REL_NEAR(runScale<double>(r, -1.25), finiteDiff(x, f), kGradTol);
}

TEST(CpuKernelGrads, Attention) {
  for (AttnShape s : {AttnShape{2, 5, 8, 2, true}, AttnShape{2, 5, 8, 2, false},
                      AttnShape{1, 7, 9, 3, true}, AttnShape{1, 4, 6, 1, false}}) {
    Vec q = randomVec(s.size(), 320 + s.T, -1.5, 1.5);
    Vec k = randomVec(s.size(), 330 + s.T, -1.5, 1.5);
    Vec v = randomVec(s.size(), 340 + s.T);
    Vec r = randomVec(s.size(), 350 + s.T);
    auto f = [&] { return dot(r, runAttention<double>(q, k, v, s).out); };
    AttentionGrads g = runAttentionBackward<double>(r, q, k, v, s);
    EXPECT_REL_NEAR(g.dq, finiteDiff(q, f), kGradTol)
        << "T " << s.T << " H " << s.H << " causal " << s.causal;
    EXPECT_REL_NEAR(g.dk, finiteDiff(k, f), kGradTol);
    EXPECT_REL_NEAR(g.dv, finiteDiff(v, f), kGradTol);
  }
}

TEST(CpuKernelGrads, CrossEntropyWithPaddingAndIgnoredRows) {
  CeShape s{6, 7, 9, -100};
  Vec logits = randomVec(s.n * s.padded, 360, -3, 3);
  std::vector<int32_t> targets = {6, -100, 0, 3, -100, 3};
  const double dloss = 0.7;
  auto f = [&] { return dloss * runCrossEntropy<double>(logits, targets, s).loss; };
  Vec d = runCrossEntropyBackward<double>(logits, targets, dloss, s);
  EXPECT_REL_NEAR(d, finiteDiff(logits, f), kGradTol);
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t j = 0; j < s.padded; ++j)
      if (targets[i] == s.ignoreIndex || j >= s.vocab) {
        EXPECT_EQ(d[i * s.padded + j], 0.0) << i << "," << j;
      }
  // Each counted row of (softmax - onehot) sums to zero.
  for (int64_t i : {0, 2, 3, 5})
    EXPECT_NEAR(std::accumulate(d.begin() + i * s.padded,
                                d.begin() + (i + 1) * s.padded, 0.0),
                0.0, 1e-15);
}

TEST(CpuKernelGrads, EmbeddingWithRepeatedIds) {
  const int64_t vocab = 6, width = 5;
  std::vector<int32_t> ids = {1, 4, 1, 0, 1, 4, 5};
  Vec table = randomVec(vocab * width, 370);
  Vec r = randomVec(ids.size() * width, 371);
  auto f = [&] { return dot(r, runEmbedding<double>(table, ids, width)); };
  Vec g = runEmbeddingBackward<double>(Vec(vocab * width, 0.0), r, ids, width);
  EXPECT_REL_NEAR(g, finiteDiff(table, f), kGradTol);
}

// dA and dB of C = op(A) op(B) + beta C0, computed by gemm itself the way the
// compiler's autodiff will: dA = R op(B)^T (transposed back when transA),
// dB = op(A)^T R (likewise), dC0 = beta R.
TEST(CpuKernelGrads, GemmViaGemm) {
  const int64_t m = 4, n = 7, k = 3;
  const double beta = 0.5;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Vec a = randomVec(m * k, 380), b = randomVec(k * n, 381);
      Vec c0 = randomVec(m * n, 382), r = randomVec(m * n, 383);
      auto f = [&] {
        return dot(r, runGemm<double>(a, b, c0, m, n, k, ta, tb, beta));
      };
      Vec da = ta ? runGemm<double>(b, r, {}, k, m, n, tb, true, 0.0)
                  : runGemm<double>(r, b, {}, m, k, n, false, !tb, 0.0);
      Vec db = tb ? runGemm<double>(r, a, {}, n, k, m, true, ta, 0.0)
                  : runGemm<double>(a, r, {}, k, n, m, !ta, false, 0.0);
      EXPECT_REL_NEAR(da, finiteDiff(a, f), kGradTol)
          << "transA " << ta << " transB " << tb;
      EXPECT_REL_NEAR(db, finiteDiff(b, f), kGradTol)
          << "transA " << ta << " transB " << tb;
      EXPECT_REL_NEAR(runScale<double>(r, beta), finiteDiff(c0, f), kGradTol);
    }
}

// A weight shared across the batch (strideB = 0): its gradient is the sum
// of the per-matrix gradients, accumulated with beta = 1.
TEST(CpuKernelGrads, GemmBatchedBroadcastWeight) {
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  Vec a = randomVec(batch * m * k, 390), w = randomVec(n * k, 391);
  Vec r = randomVec(batch * m * n, 392);
  // x @ w^T as in a linear layer with weight [out, in].
  auto f = [&] {
    return dot(r, runGemmBatched<double>(a, w, {}, batch, m, n, k, false, true,
                                         0.0, m * k, 0, m * n));
  };
  Vec dw(n * k, 0.0);
  for (int64_t i = 0; i < batch; ++i)
    rt::gemm(dw.data(), r.data() + i * m * n, a.data() + i * m * k, n, k, m,
             true, false, 1.0);
  Vec da = runGemmBatched<double>(r, w, {}, batch, m, k, n, false, false, 0.0,
                                  m * n, 0, m * k);
  EXPECT_REL_NEAR(dw, finiteDiff(w, f), kGradTol);
  EXPECT_REL_NEAR(da, finiteDiff(a, f), kGradTol);
}

TEST(CpuKernelGrads, AddBroadcastViaSumRows) {
  const int64_t outer = 7, inner = 13;
  Vec a = randomVec(outer * inner, 400), b = randomVec(inner, 401);
  Vec r = randomVec(outer * inner, 402);
  auto f = [&] { return dot(r, runAdd<double>(a, b, outer, inner, true)); };
  EXPECT_REL_NEAR(runSumRows<double>(r, {}, outer, inner, false),
                  finiteDiff(b, f), kGradTol);
  EXPECT_REL_NEAR(r, finiteDiff(a, f), kGradTol);

  Vec bFull = randomVec(outer * inner, 403);
  auto g = [&] { return dot(r, runAdd<double>(a, bFull, outer, inner, false)); };
  EXPECT_REL_NEAR(r, finiteDiff(bFull, g), kGradTol);

  auto h = [&] { return dot(r, runAddBias<double>(a, b, outer, inner)); };
  EXPECT_REL_NEAR(runSumRows<double>(r, {}, outer, inner, false),
                  finiteDiff(b, h), kGradTol);
}

TEST(CpuKernelGrads, SumRows) {
  const int64_t rows = 5, cols = 7;
  Vec x = randomVec(rows * cols, 410), r = randomVec(cols, 411);
  auto f = [&] { return dot(r, runSumRows<double>(x, {}, rows, cols, false)); };
  // d/dx of sum_j r_j sum_i x_ij is r broadcast over the rows.
  EXPECT_REL_NEAR(runAdd<double>(Vec(rows * cols, 0.0), r, rows, cols, true),
                  finiteDiff(x, f), kGradTol);
}

TEST(CpuKernelGrads, PermuteViaInversePermute) {
  std::vector<int64_t> shape = {2, 3, 5, 4}, perm = {2, 0, 3, 1};
  std::vector<int64_t> dstShape(4), inv(4);
  for (int i = 0; i < 4; ++i) {
    dstShape[i] = shape[perm[i]];
    inv[perm[i]] = i;
  }
  Vec x = randomVec(120, 420), r = randomVec(120, 421);
  auto f = [&] { return dot(r, runPermute<double>(x, shape, perm)); };
  EXPECT_REL_NEAR(runPermute<double>(r, dstShape, inv), finiteDiff(x, f),
                  kGradTol);
  // And the inverse undoes it exactly.
  EXPECT_EQ(runPermute<double>(runPermute<double>(x, shape, perm), dstShape,
                               inv),
            x);
}

TEST(CpuKernelGrads, CopyBlocksViaReverseCopy) {
  // dst [5, 11] receives src [5, 13] columns [4, 10) into columns [3, 9).
  const int64_t outer = 5, len = 6, dw = 11, sw = 13, doff = 3, soff = 4;
  Vec src = randomVec(outer * sw, 430), dst0 = randomVec(outer * dw, 431);
  Vec r = randomVec(outer * dw, 432);
  auto f = [&] {
    return dot(r, runCopyBlocks<double>(dst0, src, outer, len, dw, sw, doff,
                                        soff));
  };
  Vec dsrc = runCopyBlocks<double>(Vec(outer * sw, 0.0), r, outer, len, sw, dw,
                                   soff, doff);
  // Overwritten elements of dst0 have no influence.
  Vec ddst0 = runCopyBlocks<double>(r, Vec(outer * sw, 0.0), outer, len, dw,
                                    sw, doff, soff);
  EXPECT_REL_NEAR(dsrc, finiteDiff(src, f), kGradTol);
  EXPECT_REL_NEAR(ddst0, finiteDiff(dst0, f), kGradTol);
}

} // namespace
