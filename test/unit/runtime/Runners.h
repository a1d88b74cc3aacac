// Calls each CPU kernel in scalar type T on double test data: converts the
// inputs to T, poisons every "written" output with NaN, runs the kernel,
// checks every element got written and hands the results back as double.
// The forward, float-vs-double and gradient tests all go through these.
#ifndef GPTRT_TEST_UNIT_RUNTIME_RUNNERS_H
#define GPTRT_TEST_UNIT_RUNTIME_RUNNERS_H

#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime/TestUtil.h"

namespace gptrt::test {

namespace rt = gptrt::cpu;

template <typename T>
Vec runEmbedding(const Vec &table, const std::vector<int32_t> &ids,
                 int64_t width) {
  auto t = convert<T>(table);
  auto out = poisoned<T>(ids.size() * width);
  rt::embeddingForward(out.data(), t.data(), ids.data(),
                       static_cast<int64_t>(ids.size()), width);
  EXPECT_ALL_WRITTEN(out);
  return convert<double>(out);
}

// dtable starts from dtable0 (the kernel accumulates).
template <typename T>
Vec runEmbeddingBackward(const Vec &dtable0, const Vec &dout,
                         const std::vector<int32_t> &ids, int64_t width) {
  auto dt = convert<T>(dtable0);
  auto d = convert<T>(dout);
  rt::embeddingBackward(dt.data(), d.data(), ids.data(),
                        static_cast<int64_t>(ids.size()), width);
  return convert<double>(dt);
}

struct LayerNormResult {
  Vec out, mean, rstd;
};

template <typename T>
LayerNormResult runLayerNorm(const Vec &x, const Vec &w, const Vec &b,
                             int64_t rows, int64_t width, double eps = 1e-5) {
  auto xt = convert<T>(x), wt = convert<T>(w), bt = convert<T>(b);
  auto out = poisoned<T>(rows * width);
  auto mean = poisoned<T>(rows), rstd = poisoned<T>(rows);
  rt::layerNormForward(out.data(), mean.data(), rstd.data(), xt.data(),
                       wt.data(), bt.data(), rows, width, static_cast<T>(eps));
  EXPECT_ALL_WRITTEN(out);
  EXPECT_ALL_WRITTEN(mean);
  EXPECT_ALL_WRITTEN(rstd);
  return {convert<double>(out), convert<double>(mean), convert<double>(rstd)};
}

struct LayerNormGrads {
  Vec dx, dw, db;
};

// dw and db start from dw0 and db0 (the kernel accumulates into them).
template <typename T>
LayerNormGrads runLayerNormBackward(const Vec &dout, const Vec &x,
                                    const Vec &w, const Vec &dw0,
                                    const Vec &db0, int64_t rows,
                                    int64_t width, double eps = 1e-5) {
  auto xt = convert<T>(x), wt = convert<T>(w), dt = convert<T>(dout);
  std::vector<T> bias(width, T(0)), out(rows * width), mean(rows), rstd(rows);
  rt::layerNormForward(out.data(), mean.data(), rstd.data(), xt.data(),
                       wt.data(), bias.data(), rows, width,
                       static_cast<T>(eps));
  auto dx = poisoned<T>(rows * width);
  auto dw = convert<T>(dw0), db = convert<T>(db0);
  rt::layerNormBackward(dx.data(), dw.data(), db.data(), dt.data(), xt.data(),
                        mean.data(), rstd.data(), wt.data(), rows, width);
  EXPECT_ALL_WRITTEN(dx);
  return {convert<double>(dx), convert<double>(dw), convert<double>(db)};
}

// c0 is C's old contents; with beta == 0 C is poisoned instead.
template <typename T>
Vec runGemm(const Vec &a, const Vec &b, const Vec &c0, int64_t m, int64_t n,
            int64_t k, bool ta, bool tb, double beta) {
  auto at = convert<T>(a), bt = convert<T>(b);
  auto c = beta == 0 ? poisoned<T>(m * n) : convert<T>(c0);
  rt::gemm(c.data(), at.data(), bt.data(), m, n, k, ta, tb,
           static_cast<T>(beta));
  EXPECT_ALL_WRITTEN(c);
  return convert<double>(c);
}

template <typename T>
Vec runGemmBatched(const Vec &a, const Vec &b, const Vec &c0, int64_t batch,
                   int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                   double beta, int64_t sa, int64_t sb, int64_t sc) {
  auto at = convert<T>(a), bt = convert<T>(b);
  auto c = beta == 0 ? poisoned<T>((batch - 1) * sc + m * n) : convert<T>(c0);
  rt::gemmBatched(c.data(), at.data(), bt.data(), batch, m, n, k, ta, tb,
                  static_cast<T>(beta), sa, sb, sc);
  EXPECT_ALL_WRITTEN(c);
  return convert<double>(c);
}

template <typename T>
Vec runAddBias(const Vec &c0, const Vec &bias, int64_t rows, int64_t cols) {
  auto c = convert<T>(c0), bt = convert<T>(bias);
  rt::addBias(c.data(), bt.data(), rows, cols);
  return convert<double>(c);
}

// out starts from out0 when accumulating, poisoned otherwise.
template <typename T>
Vec runSumRows(const Vec &x, const Vec &out0, int64_t rows, int64_t cols,
               bool accumulate) {
  auto xt = convert<T>(x);
  auto out = accumulate ? convert<T>(out0) : poisoned<T>(cols);
  rt::sumRows(out.data(), xt.data(), rows, cols, accumulate);
  EXPECT_ALL_WRITTEN(out);
  return convert<double>(out);
}

template <typename T>
Vec runAdd(const Vec &a, const Vec &b, int64_t outer, int64_t inner,
           bool broadcastB) {
  auto at = convert<T>(a), bt = convert<T>(b);
  auto out = poisoned<T>(outer * inner);
  rt::add(out.data(), at.data(), bt.data(), outer, inner, broadcastB);
  EXPECT_ALL_WRITTEN(out);
  return convert<double>(out);
}

template <typename T> Vec runScale(const Vec &x, double s) {
  auto xt = convert<T>(x);
  auto out = poisoned<T>(x.size());
  rt::scale(out.data(), xt.data(), static_cast<T>(s),
            static_cast<int64_t>(x.size()));
  EXPECT_ALL_WRITTEN(out);
  return convert<double>(out);
}

template <typename T> Vec runGelu(const Vec &x) {
  auto xt = convert<T>(x);
  auto out = poisoned<T>(x.size());
  rt::geluForward(out.data(), xt.data(), static_cast<int64_t>(x.size()));
  EXPECT_ALL_WRITTEN(out);
  return convert<double>(out);
}

template <typename T> Vec runGeluBackward(const Vec &x, const Vec &dout) {
  auto xt = convert<T>(x), dt = convert<T>(dout);
  auto dx = poisoned<T>(x.size());
  rt::geluBackward(dx.data(), xt.data(), dt.data(),
                   static_cast<int64_t>(x.size()));
  EXPECT_ALL_WRITTEN(dx);
  return convert<double>(dx);
}

// dst starts from dst0: copyBlocks must leave everything else alone.
template <typename T>
Vec runCopyBlocks(const Vec &dst0, const Vec &src, int64_t outer, int64_t len,
                  int64_t dstStride, int64_t srcStride, int64_t dstOffset,
                  int64_t srcOffset) {
  auto dst = convert<T>(dst0), st = convert<T>(src);
  rt::copyBlocks(dst.data(), st.data(), outer, len, dstStride, srcStride,
                 dstOffset, srcOffset);
  return convert<double>(dst);
}

template <typename T>
Vec runPermute(const Vec &src, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &perm) {
  auto st = convert<T>(src);
  auto dst = poisoned<T>(src.size());
  rt::permute(dst.data(), st.data(), shape.data(), perm.data(),
              static_cast<int>(shape.size()));
  EXPECT_ALL_WRITTEN(dst);
  return convert<double>(dst);
}

struct AttnShape {
  int64_t B, T, C, H;
  bool causal;
  int64_t size() const { return B * T * C; }
};

struct AttentionResult {
  Vec out, lse;
};

template <typename T>
AttentionResult runAttention(const Vec &q, const Vec &k, const Vec &v,
                             const AttnShape &s) {
  auto qt = convert<T>(q), kt = convert<T>(k), vt = convert<T>(v);
  auto out = poisoned<T>(s.size());
  auto lse = poisoned<T>(s.B * s.H * s.T);
  rt::attentionForward(out.data(), lse.data(), qt.data(), kt.data(), vt.data(),
                       s.B, s.T, s.C, s.H, s.causal);
  EXPECT_ALL_WRITTEN(out);
  EXPECT_ALL_WRITTEN(lse);
  return {convert<double>(out), convert<double>(lse)};
}

struct AttentionGrads {
  Vec dq, dk, dv;
};

template <typename T>
AttentionGrads runAttentionBackward(const Vec &dout, const Vec &q,
                                    const Vec &k, const Vec &v,
                                    const AttnShape &s) {
  auto qt = convert<T>(q), kt = convert<T>(k), vt = convert<T>(v);
  auto dt = convert<T>(dout);
  std::vector<T> out(s.size()), lse(s.B * s.H * s.T);
  rt::attentionForward(out.data(), lse.data(), qt.data(), kt.data(), vt.data(),
                       s.B, s.T, s.C, s.H, s.causal);
  auto dq = poisoned<T>(s.size()), dk = poisoned<T>(s.size()),
       dv = poisoned<T>(s.size());
  rt::attentionBackward(dq.data(), dk.data(), dv.data(), dt.data(), qt.data(),
                        kt.data(), vt.data(), out.data(), lse.data(), s.B, s.T,
                        s.C, s.H, s.causal);
  EXPECT_ALL_WRITTEN(dq);
  EXPECT_ALL_WRITTEN(dk);
  EXPECT_ALL_WRITTEN(dv);
  return {convert<double>(dq), convert<double>(dk), convert<double>(dv)};
}

struct CeShape {
  int64_t n, vocab, padded, ignoreIndex;
};

struct CrossEntropyResult {
  double loss;
  Vec lse;
};

template <typename T>
CrossEntropyResult runCrossEntropy(const Vec &logits,
                                   const std::vector<int32_t> &targets,
                                   const CeShape &s) {
  auto lt = convert<T>(logits);
  auto lse = poisoned<T>(s.n);
  T loss = rt::crossEntropyForward(lse.data(), lt.data(), targets.data(), s.n,
                                   s.vocab, s.padded, s.ignoreIndex);
  EXPECT_ALL_WRITTEN(lse);
  return {static_cast<double>(loss), convert<double>(lse)};
}

template <typename T>
Vec runCrossEntropyBackward(const Vec &logits,
                            const std::vector<int32_t> &targets, double dloss,
                            const CeShape &s) {
  auto lt = convert<T>(logits);
  std::vector<T> lse(s.n);
  rt::crossEntropyForward(lse.data(), lt.data(), targets.data(), s.n, s.vocab,
                          s.padded, s.ignoreIndex);
  auto d = poisoned<T>(s.n * s.padded);
  rt::crossEntropyBackward(d.data(), lt.data(), lse.data(), targets.data(),
                           static_cast<T>(dloss), s.n, s.vocab, s.padded,
                           s.ignoreIndex);
  EXPECT_ALL_WRITTEN(d);
  return convert<double>(d);
}

} // namespace gptrt::test

#endif // GPTRT_TEST_UNIT_RUNTIME_RUNNERS_H
