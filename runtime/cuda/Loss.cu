// Cross-entropy forward and backward over padded logits. The softmax is
// never materialised: the forward keeps one log-sum-exp per row (an online
// max/sum in one pass over the row), and the backward recomputes each
// probability from it while it writes the gradient. Logits and their
// gradient are f32 or bf16 storage (Storage.cuh); the arithmetic is f32.
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Fp8Sink.cuh"
#include "runtime/cuda/Reduce.cuh"
#include "runtime/cuda/Storage.cuh"

#include <cfloat>

namespace gptrt::cuda {

namespace {

constexpr int kThreads = 512;

// Running (max, sum of exp(x - max)) pairs, merged as in online softmax.
struct MaxSum {
  float m, s;
};

__device__ MaxSum merge(MaxSum a, MaxSum b) {
  if (a.m == -INFINITY)
    return b;
  if (b.m == -INFINITY)
    return a;
  float m = fmaxf(a.m, b.m);
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// One block per row: lse[r], and rowLoss[r] = lse - logit[target] (NaN for
// a counted target outside the vocabulary, so a bad id poisons the loss
// instead of reading out of bounds) or 0 with counted[r] = 0 when ignored.
__global__ void crossEntropyRowKernel(Storage logits,
                                      const int32_t *targets, float *lse,
                                      float *rowLoss, int *counted,
                                      int64_t vocab, int64_t paddedVocab,
                                      int64_t ignoreIndex) {
  const int64_t r = blockIdx.x, row = r * paddedVocab;
  MaxSum acc{-INFINITY, 0.0f};
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    acc = merge(acc, MaxSum{logits.load(row + j), 1.0f});
  // Block-wide merge: max first, then the sums rescaled to it.
  const float m = blockMax(acc.m, -INFINITY);
  const float mine = acc.m == -INFINITY ? 0.0f : acc.s * expf(acc.m - m);
  const float s = blockSum(mine);
  if (threadIdx.x != 0)
    return;
  const float l = m + logf(s);
  lse[r] = l;
  const int32_t t = targets[r];
  const bool isCounted = int64_t(t) != ignoreIndex;
  counted[r] = isCounted;
  rowLoss[r] = !isCounted ? 0.0f
               : (t < 0 || t >= vocab) ? NAN
                                       : l - logits.load(row + t);
}

// One block: loss = mean of rowLoss over counted rows (0 when none), summed
// in double as the CPU reference does.
__global__ void crossEntropyMeanKernel(const float *rowLoss,
                                       const int *counted, float *loss,
                                       int64_t rows) {
  double total = 0;
  long long count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += rowLoss[r];
    count += counted[r];
  }
  total = blockSum(total);
  count = blockSum(count);
  if (threadIdx.x == 0)
    *loss = count == 0 ? 0.0f : float(total / double(count));
}

// One block: count of counted rows, for the backward's 1 / count.
__global__ void countKernel(const int32_t *targets, int64_t rows,
                            int64_t ignoreIndex, long long *count) {
  long long c = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    c += int64_t(targets[r]) != ignoreIndex;
  c = blockSum(c);
  if (threadIdx.x == 0)
    *count = c;
}

// One block per row: dlogits = (softmax - onehot) * dloss / count on
// counted rows and real columns, exactly 0 elsewhere.
__global__ void crossEntropyBackwardKernel(
    const float *dloss, Storage logits, const int32_t *targets,
    const float *lse, const long long *count, Storage dlogits, int64_t vocab,
    int64_t paddedVocab, int64_t ignoreIndex) {
  const int64_t r = blockIdx.x, row = r * paddedVocab;
  const int32_t t = targets[r];
  const long long c = *count;
  if (int64_t(t) == ignoreIndex || c == 0) {
    for (int64_t j = threadIdx.x; j < paddedVocab; j += blockDim.x)
      dlogits.store(row + j, 0.0f);
    return;
  }
  const float factor = float(double(*dloss) / double(c));
  const float l = lse[r];
  for (int64_t j = threadIdx.x; j < paddedVocab; j += blockDim.x) {
    float g = j < vocab ? expf(logits.load(row + j) - l) * factor : 0.0f;
    if (j == t)
      g -= factor;
    dlogits.store(row + j, g);
  }
}

// The fused classifier: one block per row does crossEntropyRowKernel's
// work, then crossEntropyBackwardKernel's with the lse it just computed
// (the count of counted rows comes first, from countKernel). The second
// read of the row finds it in L2 -- a GPT-2 row is 100 KB of bf16 -- so
// the logits cross the memory bus once. With Vec (bf16 logits and
// gradient, 16-byte aligned, padded width a multiple of 8) rows move in
// 16-byte vectors of 8; the (max, sum) pairs then merge per 8 values, so
// lse can differ from the unfused kernels' in its last bits. Without Vec
// every thread walks the same elements in the same order as there: the
// same numbers bit for bit.
template <bool Vec>
__global__ void
crossEntropyFusedKernel(const float *dloss, Storage logits,
                        const int32_t *targets, const long long *count,
                        float *lse, float *rowLoss, int *counted,
                        Storage dlogits, int64_t vocab, int64_t paddedVocab,
                        int64_t ignoreIndex, Fp8Sink sink) {
  const int64_t r = blockIdx.x, row = r * paddedVocab;
  MaxSum acc{-INFINITY, 0.0f};
  int64_t scalarFrom = 0;
  if constexpr (Vec) {
    const Bf16x8 *x8 = reinterpret_cast<const Bf16x8 *>(
        static_cast<const __nv_bfloat16 *>(logits.data) + row);
    const int64_t chunks = vocab / 8;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[8];
      x8[c].unpack(v);
      float m8 = v[0];
      bool nan = isnan(v[0]);
#pragma unroll
      for (int i = 1; i < 8; ++i) {
        m8 = fmaxf(m8, v[i]); // fmaxf drops a NaN: kept apart below
        nan = nan || isnan(v[i]);
      }
      if (nan)
        m8 = NAN; // the row's lse becomes NaN, as in the unfused kernels
      else if (m8 == -INFINITY)
        continue; // eight zero probabilities
      float s8 = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i)
        s8 += expf(v[i] - m8);
      acc = merge(acc, MaxSum{m8, s8});
    }
    scalarFrom = chunks * 8;
  }
  for (int64_t j = scalarFrom + threadIdx.x; j < vocab; j += blockDim.x)
    acc = merge(acc, MaxSum{logits.load(row + j), 1.0f});
  const float m = blockMax(acc.m, -INFINITY);
  const float mine = acc.m == -INFINITY ? 0.0f : acc.s * expf(acc.m - m);
  const float l = m + logf(blockSum(mine));
  const int32_t t = targets[r];
  const bool isCounted = int64_t(t) != ignoreIndex;
  if (threadIdx.x == 0) {
    lse[r] = l;
    counted[r] = isCounted;
    rowLoss[r] = !isCounted              ? 0.0f
                 : (t < 0 || t >= vocab) ? NAN
                                         : l - logits.load(row + t);
  }

  const long long c = *count;
  const bool zeroRow = !isCounted || c == 0;
  const float factor = zeroRow ? 0.0f : float(double(*dloss) / double(c));
  // The amax of the stored gradient (the amax epilogue): no codes, so no
  // index.
  unsigned mx = 0;
  if constexpr (Vec) {
    const Bf16x8 *x8 = reinterpret_cast<const Bf16x8 *>(
        static_cast<const __nv_bfloat16 *>(logits.data) + row);
    Bf16x8 *g8 = reinterpret_cast<Bf16x8 *>(
        static_cast<__nv_bfloat16 *>(dlogits.data) + row);
    for (int64_t chunk = threadIdx.x; chunk < paddedVocab / 8;
         chunk += blockDim.x) {
      float g[8];
      if (zeroRow) {
#pragma unroll
        for (int i = 0; i < 8; ++i)
          g[i] = 0.0f;
      } else {
        float v[8];
        x8[chunk].unpack(v);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int64_t j = chunk * 8 + i;
          g[i] = j < vocab ? expf(v[i] - l) * factor : 0.0f;
          if (j == t)
            g[i] -= factor;
        }
      }
      const Bf16x8 stored = Bf16x8::pack(g);
      g8[chunk] = stored;
      if (sink.active()) {
        stored.unpack(g);
#pragma unroll
        for (int i = 0; i < 8; ++i)
          sink.put(mx, 0, g[i], 0.0f);
      }
    }
  } else {
    for (int64_t j = threadIdx.x; j < paddedVocab; j += blockDim.x) {
      float g = 0.0f;
      if (!zeroRow) {
        g = j < vocab ? expf(logits.load(row + j) - l) * factor : 0.0f;
        if (j == t)
          g -= factor;
      }
      const float stored = dlogits.rounded(g);
      dlogits.store(row + j, stored);
      sink.put(mx, 0, stored, 0.0f);
    }
  }
  sink.finish(mx);
}

void checkVocab(int64_t vocab, int64_t paddedVocab, int64_t rows) {
  if (vocab <= 0 || vocab > paddedVocab)
    throw std::invalid_argument(
        "vocab = " + std::to_string(vocab) + ", padded_vocab = " +
        std::to_string(paddedVocab) + ", expected 0 < vocab <= padded_vocab");
  if (rows < 0 || rows > 2147483647)
    throw std::invalid_argument("rows = " + std::to_string(rows) +
                                ", expected 0..2^31-1 (one block per row)");
}

} // namespace

void DeviceImpl::crossEntropyForward(const void *logits, int64_t logitsDtype,
                                     const int32_t *targets, float *loss,
                                     float *lse, int64_t rows, int64_t vocab,
                                     int64_t paddedVocab,
                                     int64_t ignoreIndex) {
  checkVocab(vocab, paddedVocab, rows);
  char *tmp = static_cast<char *>(
      scratch(size_t(rows) * (sizeof(float) + sizeof(int)) + 16));
  float *rowLoss = reinterpret_cast<float *>(tmp);
  int *counted = reinterpret_cast<int *>(tmp + size_t(rows) * sizeof(float));
  if (rows > 0) {
    crossEntropyRowKernel<<<unsigned(rows), kThreads, 0, stream_>>>(
        Storage(logits, logitsDtype), targets, lse, rowLoss, counted, vocab,
        paddedVocab, ignoreIndex);
    checkLaunch("gptrt_cross_entropy_fwd");
  }
  crossEntropyMeanKernel<<<1, 1024, 0, stream_>>>(rowLoss, counted, loss,
                                                  rows);
  checkLaunch("gptrt_cross_entropy_fwd (mean)");
}

void DeviceImpl::crossEntropyBackward(const float *dloss, const void *logits,
                                      const int32_t *targets,
                                      const float *lse, void *dlogits,
                                      int64_t dtype, int64_t rows,
                                      int64_t vocab, int64_t paddedVocab,
                                      int64_t ignoreIndex) {
  checkVocab(vocab, paddedVocab, rows);
  if (rows == 0)
    return;
  long long *count = static_cast<long long *>(scratch(sizeof(long long)));
  countKernel<<<1, 1024, 0, stream_>>>(targets, rows, ignoreIndex, count);
  checkLaunch("gptrt_cross_entropy_bwd (count)");
  crossEntropyBackwardKernel<<<unsigned(rows), kThreads, 0, stream_>>>(
      dloss, Storage(logits, dtype), targets, lse, count,
      Storage(dlogits, dtype), vocab, paddedVocab, ignoreIndex);
  checkLaunch("gptrt_cross_entropy_bwd");
}

void DeviceImpl::crossEntropyFused(const float *dloss, const void *logits,
                                   const int32_t *targets, float *loss,
                                   float *lse, void *dlogits, float *amax,
                                   int64_t dtype, int64_t rows, int64_t vocab,
                                   int64_t paddedVocab, int64_t ignoreIndex) {
  checkVocab(vocab, paddedVocab, rows);
  Fp8Epilogue fp8;
  fp8.amax = amax;
  // Zeroes the amax (rows == 0 leaves it 0, as gptrt_amax does).
  const Fp8Sink sink = sinkFor(fp8);
  // scratch: the count (8-byte aligned first), then per-row loss terms and
  // counted flags for the mean.
  char *tmp = static_cast<char *>(
      scratch(16 + size_t(rows) * (sizeof(float) + sizeof(int))));
  long long *count = reinterpret_cast<long long *>(tmp);
  float *rowLoss = reinterpret_cast<float *>(tmp + 16);
  int *counted =
      reinterpret_cast<int *>(tmp + 16 + size_t(rows) * sizeof(float));
  if (rows > 0) {
    countKernel<<<1, 1024, 0, stream_>>>(targets, rows, ignoreIndex, count);
    checkLaunch("gptrt_cross_entropy_fwd_bwd (count)");
    const bool vec = dtype == GPTRT_DTYPE_BF16 && paddedVocab % 8 == 0 &&
                     (reinterpret_cast<uintptr_t>(logits) & 15) == 0 &&
                     (reinterpret_cast<uintptr_t>(dlogits) & 15) == 0;
    if (vec)
      crossEntropyFusedKernel<true><<<unsigned(rows), kThreads, 0, stream_>>>(
          dloss, Storage(logits, dtype), targets, count, lse, rowLoss, counted,
          Storage(dlogits, dtype), vocab, paddedVocab, ignoreIndex, sink);
    else
      crossEntropyFusedKernel<false><<<unsigned(rows), kThreads, 0, stream_>>>(
          dloss, Storage(logits, dtype), targets, count, lse, rowLoss, counted,
          Storage(dlogits, dtype), vocab, paddedVocab, ignoreIndex, sink);
    checkLaunch("gptrt_cross_entropy_fwd_bwd");
  }
  crossEntropyMeanKernel<<<1, 1024, 0, stream_>>>(rowLoss, counted, loss, rows);
  checkLaunch("gptrt_cross_entropy_fwd_bwd (mean)");
}

} // namespace gptrt::cuda
