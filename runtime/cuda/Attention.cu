// Causal (or full) scaled dot-product attention, forward and backward:
// one warp per (batch, head, query), an online softmax over the keys in
// the forward; the backward recomputes probabilities from the saved
// log-sum-exp in two passes, a warp per query (dQ) then a warp per key
// (dK, dV), with no atomics. O(T^2 D) work with no tiling or tensor
// cores: the correct baseline that FlashAttention.cu's kernels must
// match, not the fast path. q, k, v and their gradients are f32 or bf16
// storage (Storage.cuh); all arithmetic is f32, each gradient rounded
// once when stored.
#include "runtime/abi/gptrt.h"
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Reduce.cuh"
#include "runtime/cuda/Storage.cuh"

#include <cmath>

namespace gptrt::cuda {

namespace {

// Head dimension up to 32 * kPerLane; each lane keeps its slice in registers
// (constant indices only, so the arrays stay out of local memory).
constexpr int kPerLane = 8;

struct Dims {
  int64_t B, T, C, H, D;
  bool causal;
  float scale;
};

__device__ bool warpRow(const Dims &d, int64_t &b, int64_t &h, int64_t &i) {
  const int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  if (w >= d.B * d.H * d.T)
    return false;
  i = w % d.T;
  h = (w / d.T) % d.H;
  b = w / (d.T * d.H);
  return true;
}

// Where head h's slice of position t of sequence b starts in q, k, v, out
// and their gradients ([B, T, C] rows, heads side by side).
__device__ int64_t headOffset(const Dims &d, int64_t b, int64_t h, int64_t t) {
  return (b * d.T + t) * d.C + h * d.D;
}

__global__ void attentionForwardKernel(Storage q, Storage k, Storage v,
                                       Storage out, float *lse, Dims d) {
  int64_t b, h, i;
  if (!warpRow(d, b, h, i))
    return;  // whole warps leave together: rows are warp-aligned
  const int lane = threadIdx.x % 32;
  const int64_t rowI = headOffset(d, b, h, i);
  float qr[kPerLane], acc[kPerLane];
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    qr[e] = c < d.D ? q.load(rowI + c) : 0.0f;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int64_t jEnd = d.causal ? i + 1 : d.T;
  for (int64_t j = 0; j < jEnd; ++j) {
    const int64_t rowJ = headOffset(d, b, h, j);
    float part = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      if (c < d.D)
        part += qr[e] * k.load(rowJ + c);
    }
    const float s = warpSum(part) * d.scale;
    const float mNew = fmaxf(m, s);
    const float corr = expf(m - mNew);  // 0 on the first key (m = -inf)
    const float p = expf(s - mNew);
    l = l * corr + p;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      if (c < d.D)
        acc[e] = acc[e] * corr + p * v.load(rowJ + c);
    }
    m = mNew;
  }
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.D)
      out.store(rowI + c, acc[e] / l);
  }
  if (lane == 0)
    lse[(b * d.H + h) * d.T + i] = m + logf(l);
}

// The backward in two passes without atomics. This one: a warp per query
// stores dq and delta_i = dO_i . O_i, which the pass over the keys needs.
__global__ void attentionBackwardQueryKernel(Storage dout, Storage q, Storage k,
                                             Storage v, Storage out,
                                             const float *lse, Storage dq,
                                             float *delta, Dims d) {
  int64_t b, h, i;
  if (!warpRow(d, b, h, i))
    return;
  const int lane = threadIdx.x % 32;
  const int64_t rowI = headOffset(d, b, h, i);
  float qr[kPerLane], dor[kPerLane], dqr[kPerLane];
  float diPart = 0.0f;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    const bool in = c < d.D;
    qr[e] = in ? q.load(rowI + c) : 0.0f;
    dor[e] = in ? dout.load(rowI + c) : 0.0f;
    diPart += in ? dor[e] * out.load(rowI + c) : 0.0f;
    dqr[e] = 0.0f;
  }
  const float Di = warpSum(diPart);
  const int64_t headRow = (b * d.H + h) * d.T + i;
  const float lseI = lse[headRow];
  const int64_t jEnd = d.causal ? i + 1 : d.T;
  for (int64_t j = 0; j < jEnd; ++j) {
    const int64_t rowJ = headOffset(d, b, h, j);
    float kj[kPerLane];
    float sPart = 0.0f, dpPart = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      kj[e] = c < d.D ? k.load(rowJ + c) : 0.0f;
      if (c < d.D) {
        sPart += qr[e] * kj[e];
        dpPart += dor[e] * v.load(rowJ + c);
      }
    }
    const float s = warpSum(sPart), dp = warpSum(dpPart);
    const float p = expf(s * d.scale - lseI);
    const float ds = p * (dp - Di) * d.scale;  // the scale folded in once
#pragma unroll
    for (int e = 0; e < kPerLane; ++e)
      dqr[e] += ds * kj[e];
  }
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.D)
      dq.store(rowI + c, dqr[e]);
  }
  if (lane == 0)
    delta[headRow] = Di;
}

// The pass over the keys: a warp per key sums its dk and dv over the
// queries that see it, in query order as the CPU does, in registers, and
// stores each once (was an f32 atomic per (query, key, column): ~1.3e10 a
// layer at GPT-2 124M's micro-batch 16, and sums in no fixed order).
__global__ void attentionBackwardKeyKernel(Storage dout, Storage q, Storage k,
                                           Storage v, const float *lse,
                                           const float *delta, Storage dk,
                                           Storage dv, Dims d) {
  int64_t b, h, j;
  if (!warpRow(d, b, h, j))
    return;
  const int lane = threadIdx.x % 32;
  const int64_t rowJ = headOffset(d, b, h, j);
  float kr[kPerLane], vr[kPerLane], dkr[kPerLane], dvr[kPerLane];
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    const bool in = c < d.D;
    kr[e] = in ? k.load(rowJ + c) : 0.0f;
    vr[e] = in ? v.load(rowJ + c) : 0.0f;
    dkr[e] = 0.0f;
    dvr[e] = 0.0f;
  }
  const int64_t head = (b * d.H + h) * d.T;
  for (int64_t i = d.causal ? j : 0; i < d.T; ++i) {
    const int64_t rowI = headOffset(d, b, h, i);
    float qi[kPerLane], doi[kPerLane];
    float sPart = 0.0f, dpPart = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      const bool in = c < d.D;
      qi[e] = in ? q.load(rowI + c) : 0.0f;
      doi[e] = in ? dout.load(rowI + c) : 0.0f;
      sPart += qi[e] * kr[e];
      dpPart += doi[e] * vr[e];
    }
    const float s = warpSum(sPart), dp = warpSum(dpPart);
    const float p = expf(s * d.scale - lse[head + i]);
    const float ds = p * (dp - delta[head + i]) * d.scale;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      dkr[e] += ds * qi[e];
      dvr[e] += p * doi[e];
    }
  }
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.D) {
      dk.store(rowJ + c, dkr[e]);
      dv.store(rowJ + c, dvr[e]);
    }
  }
}

Dims dimsOf(int64_t B, int64_t T, int64_t C, int64_t H, bool causal) {
  if (B < 0 || T < 0 || C < 0 || H <= 0 || C % H != 0)
    throw std::invalid_argument(
        "batch " + std::to_string(B) + ", seq " + std::to_string(T) +
        ", width " + std::to_string(C) + ", heads " + std::to_string(H) +
        ": expected non-negative sizes and heads dividing width");
  const int64_t D = C / H;
  if (D > 32 * kPerLane)
    throw std::invalid_argument("head dimension " + std::to_string(D) +
                                ", expected at most " +
                                std::to_string(32 * kPerLane) +
                                " for this CUDA attention kernel");
  return {B, T, C, H, D, causal, float(1.0 / std::sqrt(double(D)))};
}

unsigned blocksFor(const Dims &d) {
  const int64_t warps = d.B * d.H * d.T;
  return unsigned((warps * 32 + 255) / 256);
}

} // namespace

void DeviceImpl::attentionForward(const void *q, const void *k,
                                  const void *v, void *out, float *lse,
                                  int64_t batch, int64_t seq, int64_t width,
                                  int64_t heads, bool causal, int64_t dtype) {
  if (flashAttentionApplies(batch, seq, width, heads, dtype))
    return flashAttentionForward(q, k, v, out, lse, batch, seq, width, heads,
                                 causal, width);
  const Dims d = dimsOf(batch, seq, width, heads, causal);
  if (d.B * d.H * d.T == 0)
    return;
  attentionForwardKernel<<<blocksFor(d), 256, 0, stream_>>>(
      Storage(q, dtype), Storage(k, dtype), Storage(v, dtype),
      Storage(out, dtype), lse, d);
  checkLaunch("gptrt_attention_fwd");
}

void DeviceImpl::attentionBackward(const void *dout, const void *q,
                                   const void *k, const void *v,
                                   const void *out, const float *lse,
                                   void *dq, void *dk, void *dv,
                                   int64_t batch, int64_t seq, int64_t width,
                                   int64_t heads, bool causal,
                                   int64_t dtype) {
  if (flashAttentionApplies(batch, seq, width, heads, dtype))
    return flashAttentionBackward(dout, q, k, v, out, lse, dq, dk, dv, batch,
                                  seq, width, heads, causal, width);
  const Dims d = dimsOf(batch, seq, width, heads, causal);
  const int64_t rows = d.B * d.H * d.T;
  if (rows == 0)
    return;
  float *delta = static_cast<float *>(scratch(size_t(rows) * sizeof(float)));
  attentionBackwardQueryKernel<<<blocksFor(d), 256, 0, stream_>>>(
      Storage(dout, dtype), Storage(q, dtype), Storage(k, dtype),
      Storage(v, dtype), Storage(out, dtype), lse, Storage(dq, dtype), delta,
      d);
  checkLaunch("gptrt_attention_bwd (queries)");
  attentionBackwardKeyKernel<<<blocksFor(d), 256, 0, stream_>>>(
      Storage(dout, dtype), Storage(q, dtype), Storage(k, dtype),
      Storage(v, dtype), lse, delta, Storage(dk, dtype), Storage(dv, dtype), d);
  checkLaunch("gptrt_attention_bwd (keys)");
}

// Packed q, k, v: the flash kernels read (and write) them in place with a
// row stride of 3 width; the baseline kernels get copies, the same copies
// the unpacked graph made (copy_blocks), so the fallback costs what it
// did.
void DeviceImpl::attentionForwardPacked(const void *qkv, void *out, float *lse,
                                        const Fp8Epilogue &fp8, int64_t batch,
                                        int64_t seq, int64_t width,
                                        int64_t heads, bool causal,
                                        int64_t dtype) {
  const int bytes = dtype == GPTRT_DTYPE_BF16 ? 2 : 4;
  const char *base = static_cast<const char *>(qkv);
  if (flashAttentionApplies(batch, seq, width, heads, dtype) && width % 8 == 0)
    return flashAttentionForward(base, base + width * bytes,
                                 base + 2 * width * bytes, out, lse, batch, seq,
                                 width, heads, causal, 3 * width, fp8);
  const int64_t rows = batch * seq, n = rows * width;
  char *parts = static_cast<char *>(
      grow(attentionStaging_, 3 * size_t(n) * bytes, 0, "attention staging"));
  for (int i = 0; i < 3; ++i)
    copyBlocks(qkv, parts + i * n * bytes, rows, width, width, 3 * width, 0,
               i * width, bytes);
  attentionForward(parts, parts + n * bytes, parts + 2 * n * bytes, out, lse,
                   batch, seq, width, heads, causal, dtype);
  // The baseline kernel's warps leave early: its epilogue is a second pass.
  if (fp8.q != nullptr)
    castEpilogue(out, dtype, rows, width, fp8.amax, fp8.scale, fp8.q,
                 fp8.format, /*transpose=*/false);
  else if (fp8.amax != nullptr)
    amax(out, dtype, fp8.amax, n);
}

void DeviceImpl::attentionBackwardPacked(const void *dout, const void *qkv,
                                         const void *out, const float *lse,
                                         void *dqkv, float *amax, int64_t batch,
                                         int64_t seq, int64_t width,
                                         int64_t heads, bool causal,
                                         int64_t dtype) {
  const int bytes = dtype == GPTRT_DTYPE_BF16 ? 2 : 4;
  const char *base = static_cast<const char *>(qkv);
  char *grad = static_cast<char *>(dqkv);
  if (flashAttentionApplies(batch, seq, width, heads, dtype) && width % 8 == 0)
    return flashAttentionBackward(
        dout, base, base + width * bytes, base + 2 * width * bytes, out, lse,
        grad, grad + width * bytes, grad + 2 * width * bytes, batch, seq, width,
        heads, causal, 3 * width, amax);
  const int64_t rows = batch * seq, n = rows * width;
  char *parts = static_cast<char *>(
      grow(attentionStaging_, 6 * size_t(n) * bytes, 0, "attention staging"));
  char *grads = parts + 3 * n * bytes;
  for (int i = 0; i < 3; ++i)
    copyBlocks(qkv, parts + i * n * bytes, rows, width, width, 3 * width, 0,
               i * width, bytes);
  attentionBackward(dout, parts, parts + n * bytes, parts + 2 * n * bytes, out,
                    lse, grads, grads + n * bytes, grads + 2 * n * bytes, batch,
                    seq, width, heads, causal, dtype);
  for (int i = 0; i < 3; ++i)
    copyBlocks(grads + i * n * bytes, dqkv, rows, width, 3 * width, width,
               i * width, 0, bytes);
  if (amax != nullptr)
    this->amax(dqkv, dtype, amax, 3 * n);
}

} // namespace gptrt::cuda
