// Reference CPU kernels of the gptc runtime: the numerics every other backend
// is checked against, and what `gptrun --device cpu` trains with.
//
// Conventions shared by every kernel:
// - Buffers are row-major and contiguous; sizes are int64_t, token ids int32_t.
// - Templates over the scalar T, instantiated for float (training) and double
//   (gradient checks by finite differences) in Kernels.cpp only.
// - "written" outputs are fully overwritten (their old contents, even NaN,
//   never matter); "accumulates" outputs get += and must be initialised.
// - Reductions along a row (layernorm statistics, softmax sums, attention dot
//   products, the loss) use a double accumulator even for float: one scalar
//   per row, so it is cheap, and it keeps float results close to the double
//   reference. Sums across rows (bias/weight/embedding gradients, dk, dv)
//   accumulate in T directly into the output, row by row in index order, so
//   results are deterministic and the inner loops vectorise.
// - Single-threaded except the GEMMs, which OpenBLAS may thread.
#ifndef GPTRT_CPU_KERNELS_H
#define GPTRT_CPU_KERNELS_H

#include <cstdint>

namespace gptrt::cpu {

// out[i,:] = table[ids[i],:]. ids must index rows of table (not checked: the
// table's row count is not passed).
template <typename T>
void embeddingForward(T *out, const T *table, const int32_t *ids, int64_t n,
                      int64_t width);
// dtable[ids[i],:] += dout[i,:], in increasing i; accumulates.
template <typename T>
void embeddingBackward(T *dtable, const T *dout, const int32_t *ids, int64_t n,
                       int64_t width);

// out[i] = i (positions); n must fit in int32_t.
void arange(int32_t *out, int64_t n);

// Per row: mean, biased variance, rstd = 1/sqrt(var + eps),
// out = (x - mean) * rstd * weight + bias. out, mean[rows], rstd[rows] written.
template <typename T>
void layerNormForward(T *out, T *mean, T *rstd, const T *x, const T *weight,
                      const T *bias, int64_t rows, int64_t width, T eps);
// dx written; dweight and dbias accumulate. Uses the saved mean and rstd.
template <typename T>
void layerNormBackward(T *dx, T *dweight, T *dbias, const T *dout, const T *x,
                       const T *mean, const T *rstd, const T *weight,
                       int64_t rows, int64_t width);

// C[m,n] = op(A) op(B) + beta * C through OpenBLAS. A is stored [m,k], or
// [k,m] when transA; B is stored [k,n], or [n,k] when transB. With beta == 0
// C is written (its old contents are ignored, even NaN).
template <typename T>
void gemm(T *c, const T *a, const T *b, int64_t m, int64_t n, int64_t k,
          bool transA, bool transB, T beta);
// gemm on batch matrices at c + i*strideC, a + i*strideA, b + i*strideB;
// strideB == 0 shares one B (a weight) across the batch.
template <typename T>
void gemmBatched(T *c, const T *a, const T *b, int64_t batch, int64_t m,
                 int64_t n, int64_t k, bool transA, bool transB, T beta,
                 int64_t strideA, int64_t strideB, int64_t strideC);
// c[i,j] += bias[j].
template <typename T>
void addBias(T *c, const T *bias, int64_t rows, int64_t cols);
// out[j] = sum_i x[i,j], or out[j] += ... when accumulate. The gradient of a
// bias and of the broadcast operand of add.
template <typename T>
void sumRows(T *out, const T *x, int64_t rows, int64_t cols, bool accumulate);
// out[j] = sum_i x[i,j] in f32 in the fixed order a GPU can sum in
// parallel (gptrt_reduce_rows): rows in chunks of kSumRowsChunk, each
// summed from 0 in row order, then the chunk sums the same way, until at
// most kSumRowsChunk rows remain, summed from 0 in row order. Up to
// kSumRowsChunk rows that is sumRows.
constexpr int64_t kSumRowsChunk = 32;
void sumRowsTree(float *out, const float *x, int64_t rows, int64_t cols);

// out[o,i] = a[o,i] + b[o,i], or + b[i] when broadcastB. out written; it may
// alias a or (when not broadcasting) b.
template <typename T>
void add(T *out, const T *a, const T *b, int64_t outer, int64_t inner,
         bool broadcastB);
// out[i] = x[i] * s; out may alias x.
template <typename T> void scale(T *out, const T *x, T s, int64_t n);

// GPT-2's GELU, tanh approximation:
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). out may alias x.
template <typename T> void geluForward(T *out, const T *x, int64_t n);
// dx = dout * dy/dx (analytic); dx written, it may alias dout.
template <typename T>
void geluBackward(T *dx, const T *x, const T *dout, int64_t n);

// for o < outer, j < len:
//   dst[o*dstStride + dstOffset + j] = src[o*srcStride + srcOffset + j].
// Split and concat along an axis are made of these; nothing else in dst is
// touched.
template <typename T>
void copyBlocks(T *dst, const T *src, int64_t outer, int64_t len,
                int64_t dstStride, int64_t srcStride, int64_t dstOffset,
                int64_t srcOffset);

// Transpose of a rank <= 6 tensor: shape is src's shape, and dst dimension i
// is src dimension perm[i] (dst shape[i] = shape[perm[i]]), as torch.permute.
// Throws std::invalid_argument for a bad rank or a perm that is not a
// permutation.
template <typename T>
void permute(T *dst, const T *src, const int64_t *shape, const int64_t *perm,
             int rank);

// Scaled dot-product attention, q/k/v/out [B, Tlen, C] with H heads: head h
// is columns [h*D, (h+1)*D), D = C/H, scores scaled by 1/sqrt(D), query i
// sees keys j <= i when causal. out and lse [B, H, Tlen] (log-sum-exp of each
// query's scaled scores, for the backward) written. Throws
// std::invalid_argument unless H divides C.
template <typename T>
void attentionForward(T *out, T *lse, const T *q, const T *k, const T *v,
                      int64_t B, int64_t Tlen, int64_t C, int64_t H,
                      bool causal);
// Flash-attention style backward: probabilities recomputed from lse,
// dP = dO V^T, D_i = sum(dO_i * O_i), dS = P (dP - D). dq, dk, dv written.
template <typename T>
void attentionBackward(T *dq, T *dk, T *dv, const T *dout, const T *q,
                       const T *k, const T *v, const T *out, const T *lse,
                       int64_t B, int64_t Tlen, int64_t C, int64_t H,
                       bool causal);

// Mean cross-entropy over rows whose target != ignoreIndex (0 when none).
// logits [n, paddedVocab]; only the first vocab columns take part, the rest
// is padding. lse[n] written for every row, ignored ones included. Throws
// std::out_of_range if a counted target is outside [0, vocab), and
// std::invalid_argument unless 0 < vocab <= paddedVocab.
template <typename T>
T crossEntropyForward(T *lse, const T *logits, const int32_t *targets,
                      int64_t n, int64_t vocab, int64_t paddedVocab,
                      int64_t ignoreIndex);
// dlogits written: (softmax - onehot) * dloss / count on counted rows and
// columns < vocab, exactly 0 on padding columns and ignored rows.
template <typename T>
void crossEntropyBackward(T *dlogits, const T *logits, const T *lse,
                          const int32_t *targets, T dloss, int64_t n,
                          int64_t vocab, int64_t paddedVocab,
                          int64_t ignoreIndex);

// One torch.optim.AdamW step (amsgrad=False, maximize=False), step >= 1,
// in PyTorch's operation order:
//   param *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
//   param -= (lr / (1 - b1^step)) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
// The m and v updates are fused multiply-adds, as in PyTorch's vectorised
// CPU kernels, so float results equal PyTorch 1.13's (AVX2) bit for bit.
// Hyperparameters are double because PyTorch computes these per-step
// scalars in Python floats (double) and rounds each once to T; taking them
// as T would round 0.9 and 0.999 before the subtractions and drift by ulps.
template <typename T>
void adamw(T *param, const T *grad, T *m, T *v, int64_t n, double lr,
           double beta1, double beta2, double eps, double weightDecay,
           int64_t step);

// sum x[i]^2 in double, for the global gradient norm.
template <typename T> double sumSquares(const T *x, int64_t n);
template <typename T> void fill(T *x, T value, int64_t n);

} // namespace gptrt::cpu

#endif // GPTRT_CPU_KERNELS_H
