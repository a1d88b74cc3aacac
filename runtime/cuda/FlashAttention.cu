// Flash attention on tensor cores: bf16 q, k, v (and gradients), f32
// softmax and sums, never materialising the T x T probabilities in global
// memory. The algorithm is FlashAttention-2's (Dao, 2023): the forward
// walks the key tiles of one query tile with an online softmax and saves
// each row's log-sum-exp; the backward walks the query tiles of one key
// tile, recomputes the probabilities from that log-sum-exp, keeps dK and
// dV of its keys in shared memory and adds each query tile's dQ into an
// f32 buffer with atomics. GEMMs of 16x16x16 bf16 tiles with f32
// accumulation go through WMMA (nvcuda::wmma); accumulators that the
// softmax rescales live in shared memory between tiles.
//
// Selected with Device::setFlashAttention (gptrun --attention flash) for
// bf16 activations with a head dimension that is a multiple of 16, at most
// 128; anything else runs the baseline kernels of Attention.cu. Not yet
// run on a GPU: gpu test AttentionOnBf16StorageMatchesCpu checks it
// against the CPU kernels.
#include "runtime/abi/gptrt.h"
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Reduce.cuh"

#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>

namespace gptrt::cuda {

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

// Queries per forward block and keys per backward block (FA2's Br = Bc).
constexpr int kTile = 64;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kFrag = 16;  // WMMA tile edge
constexpr int kMaxHeadDim = 128;

using AccFrag = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;
template <typename Layout>
using AFrag = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, bf16, Layout>;
template <typename Layout>
using BFrag = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, bf16, Layout>;

struct FlashDims {
  int64_t B, T, C, H;
  int D;
  bool causal;
  float scale;
};

// Element (t, c) of head h of batch b in a [B, T, C] tensor.
__device__ int64_t at(const FlashDims &d, int64_t b, int64_t h, int64_t t,
                      int c) {
  return (b * d.T + t) * d.C + h * d.D + c;
}

// rows [t0, t0 + kTile) x D of head (b, h) into shared memory (row-major,
// leading dimension D); rows past the sequence are zeros.
__device__ void loadTile(bf16 *dst, const bf16 *src, const FlashDims &d,
                         int64_t b, int64_t h, int64_t t0) {
  const bf16 zero = __float2bfloat16(0.0f);
  for (int i = threadIdx.x; i < kTile * d.D; i += blockDim.x) {
    const int r = i / d.D, c = i % d.D;
    const int64_t t = t0 + r;
    dst[i] = t < d.T ? src[at(d, b, h, t, c)] : zero;
  }
}

// c[kTile x kTile] (f32, ld kTile) = a[kTile x D] b[kTile x D]^T, both
// row-major with ld D: the scores Q K^T (or dO V^T). Each warp takes
// every kWarps-th 16x16 output tile.
__device__ void gemmABt(float *c, const bf16 *a, const bf16 *b, int D) {
  constexpr int tiles = kTile / kFrag;
  for (int t = threadIdx.x / 32; t < tiles * tiles; t += kWarps) {
    const int ti = t / tiles, tj = t % tiles;
    AccFrag acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < D; kk += kFrag) {
      AFrag<wmma::row_major> fa;
      // b^T read column-major: element (kk + x, tj*16 + y) of b^T is
      // b[tj*16 + y][kk + x], at b + (tj*16 + y) * D + kk + x.
      BFrag<wmma::col_major> fb;
      wmma::load_matrix_sync(fa, a + ti * kFrag * D + kk, D);
      wmma::load_matrix_sync(fb, b + tj * kFrag * D + kk, D);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + ti * kFrag * kTile + tj * kFrag, acc, kTile,
                            wmma::mem_row_major);
  }
}

// c[kTile x D] (f32, ld D) += p[kTile x kTile] v[kTile x D]: p row-major
// (ld kTile), or read transposed (p^T, for dV = P^T dO and dK = dS^T Q);
// v row-major (ld D). `accumulate` false starts from zero instead of c.
template <bool TransposeP>
__device__ void gemmPV(float *c, const bf16 *p, const bf16 *v, int D,
                       bool accumulate) {
  const int tilesD = D / kFrag;
  for (int t = threadIdx.x / 32; t < (kTile / kFrag) * tilesD; t += kWarps) {
    const int ti = t / tilesD, td = t % tilesD;
    AccFrag acc;
    float *out = c + ti * kFrag * D + td * kFrag;
    if (accumulate)
      wmma::load_matrix_sync(acc, out, D, wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < kTile; kk += kFrag) {
      BFrag<wmma::row_major> fb;
      wmma::load_matrix_sync(fb, v + kk * D + td * kFrag, D);
      if constexpr (TransposeP) {
        // p^T (row ti*16 + x, column kk + y) is p[kk + y][ti*16 + x]:
        // column-major from p + kk * kTile + ti * 16.
        AFrag<wmma::col_major> fa;
        wmma::load_matrix_sync(fa, p + kk * kTile + ti * kFrag, kTile);
        wmma::mma_sync(acc, fa, fb, acc);
      } else {
        AFrag<wmma::row_major> fa;
        wmma::load_matrix_sync(fa, p + ti * kFrag * kTile + kk, kTile);
        wmma::mma_sync(acc, fa, fb, acc);
      }
    }
    wmma::store_matrix_sync(out, acc, D, wmma::mem_row_major);
  }
}

// May query row qi see key kj?
__device__ bool visible(const FlashDims &d, int64_t qi, int64_t kj) {
  return qi < d.T && kj < d.T && (!d.causal || kj <= qi);
}

// Shared memory carved in order; every piece's size is a multiple of 128
// bytes for the shapes allowed (D a multiple of 16), which keeps WMMA's
// 32-byte alignment.
struct Carver {
  unsigned char *next;
  template <typename T> __device__ T *take(size_t count) {
    T *p = reinterpret_cast<T *>(next);
    next += count * sizeof(T);
    return p;
  }
};

size_t forwardSharedBytes(int D) {
  return 3 * size_t(kTile) * D * sizeof(bf16) +       // Q, K, V
         size_t(kTile) * kTile * (sizeof(float) + sizeof(bf16)) +  // S, P
         size_t(kTile) * D * sizeof(float) +          // O
         2 * size_t(kTile) * sizeof(float);           // row max, row sum
}

size_t backwardSharedBytes(int D) {
  return 4 * size_t(kTile) * D * sizeof(bf16) +       // K, V, Q, dO
         2 * size_t(kTile) * kTile * sizeof(float) +  // P (f32), dP
         2 * size_t(kTile) * kTile * sizeof(bf16) +   // P, dS (bf16)
         3 * size_t(kTile) * D * sizeof(float) +      // dK, dV, dQ part
         2 * size_t(kTile) * sizeof(float);           // lse, delta rows
}

__global__ void __launch_bounds__(kThreads)
    flashForwardKernel(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *out,
                       float *lse, FlashDims d) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carver carve{smem};
  const int D = d.D;
  bf16 *Qs = carve.take<bf16>(kTile * D), *Ks = carve.take<bf16>(kTile * D),
       *Vs = carve.take<bf16>(kTile * D);
  float *S = carve.take<float>(kTile * kTile);
  bf16 *P = carve.take<bf16>(kTile * kTile);
  float *O = carve.take<float>(kTile * D), *rowMax = carve.take<float>(kTile),
        *rowSum = carve.take<float>(kTile);

  const int64_t b = blockIdx.y / d.H, h = blockIdx.y % d.H;
  const int64_t q0 = int64_t(blockIdx.x) * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  loadTile(Qs, q, d, b, h, q0);
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x)
    O[i] = 0.0f;
  for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
    rowMax[r] = -INFINITY;
    rowSum[r] = 0.0f;
  }
  const int64_t kEnd = d.causal ? min(d.T, q0 + kTile) : d.T;
  for (int64_t k0 = 0; k0 < kEnd; k0 += kTile) {
    loadTile(Ks, k, d, b, h, k0);
    loadTile(Vs, v, d, b, h, k0);
    __syncthreads();
    gemmABt(S, Qs, Ks, D);
    __syncthreads();
    // Online softmax, one warp per row: rescale what O holds by
    // exp(old max - new max) and add this tile's probabilities.
    for (int r = warp; r < kTile; r += kWarps) {
      float *s = S + r * kTile;
      float tileMax = -INFINITY;
      for (int c = lane; c < kTile; c += 32) {
        s[c] = visible(d, q0 + r, k0 + c) ? s[c] * d.scale : -INFINITY;
        tileMax = fmaxf(tileMax, s[c]);
      }
      tileMax = warpMax(tileMax);
      const float oldMax = rowMax[r], newMax = fmaxf(oldMax, tileMax);
      // A row that has seen no visible key yet keeps max -inf: nothing to
      // rescale and nothing to add.
      const bool none = newMax == -INFINITY;
      const float corr = none ? 1.0f : expf(oldMax - newMax);
      float sum = 0.0f;
      for (int c = lane; c < kTile; c += 32) {
        const float p = none || s[c] == -INFINITY ? 0.0f : expf(s[c] - newMax);
        sum += p;
        P[r * kTile + c] = __float2bfloat16(p);
      }
      sum = warpSum(sum);
      for (int c = lane; c < D; c += 32)
        O[r * D + c] *= corr;
      if (lane == 0) {
        rowMax[r] = newMax;
        rowSum[r] = rowSum[r] * corr + sum;
      }
    }
    __syncthreads();
    gemmPV<false>(O, P, Vs, D, /*accumulate=*/true);
    __syncthreads();
  }
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
    const int r = i / D, c = i % D;
    if (q0 + r < d.T)
      out[at(d, b, h, q0 + r, c)] = __float2bfloat16(O[i] / rowSum[r]);
  }
  for (int r = threadIdx.x; r < kTile; r += blockDim.x)
    if (q0 + r < d.T)
      lse[(b * d.H + h) * d.T + q0 + r] = rowMax[r] + logf(rowSum[r]);
}

// delta[b, h, t] = sum_c dout[t, c] * out[t, c] over the head's columns:
// the row term of the softmax gradient, one warp per row.
__global__ void flashDeltaKernel(const bf16 *dout, const bf16 *out,
                                 float *delta, FlashDims d) {
  const int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  if (w >= d.B * d.H * d.T)
    return;
  const int lane = threadIdx.x % 32;
  const int64_t t = w % d.T, h = (w / d.T) % d.H, b = w / (d.T * d.H);
  float part = 0.0f;
  for (int c = lane; c < d.D; c += 32)
    part += __bfloat162float(dout[at(d, b, h, t, c)]) *
            __bfloat162float(out[at(d, b, h, t, c)]);
  part = warpSum(part);
  if (lane == 0)
    delta[w] = part;  // w = (b * H + h) * T + t
}

__global__ void __launch_bounds__(kThreads)
    flashBackwardKernel(const bf16 *dout, const bf16 *q, const bf16 *k,
                        const bf16 *v, const float *lse, const float *delta,
                        float *dqSum, bf16 *dk, bf16 *dv, FlashDims d) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carver carve{smem};
  const int D = d.D;
  bf16 *Ks = carve.take<bf16>(kTile * D), *Vs = carve.take<bf16>(kTile * D),
       *Qs = carve.take<bf16>(kTile * D), *dOs = carve.take<bf16>(kTile * D);
  float *P = carve.take<float>(kTile * kTile),
        *dP = carve.take<float>(kTile * kTile);
  bf16 *Pb = carve.take<bf16>(kTile * kTile),
       *dSb = carve.take<bf16>(kTile * kTile);
  float *dK = carve.take<float>(kTile * D), *dV = carve.take<float>(kTile * D),
        *dQ = carve.take<float>(kTile * D);
  float *lseRow = carve.take<float>(kTile), *deltaRow = carve.take<float>(kTile);

  const int64_t b = blockIdx.y / d.H, h = blockIdx.y % d.H;
  const int64_t k0 = int64_t(blockIdx.x) * kTile;
  const int64_t stats = (b * d.H + h) * d.T;
  loadTile(Ks, k, d, b, h, k0);
  loadTile(Vs, v, d, b, h, k0);
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x)
    dK[i] = dV[i] = 0.0f;
  // Under the causal mask, queries before k0 see none of these keys.
  for (int64_t q0 = d.causal ? k0 : 0; q0 < d.T; q0 += kTile) {
    loadTile(Qs, q, d, b, h, q0);
    loadTile(dOs, dout, d, b, h, q0);
    for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
      const bool in = q0 + r < d.T;
      lseRow[r] = in ? lse[stats + q0 + r] : 0.0f;
      deltaRow[r] = in ? delta[stats + q0 + r] : 0.0f;
    }
    __syncthreads();
    gemmABt(P, Qs, Ks, D);    // scores
    gemmABt(dP, dOs, Vs, D);  // dO V^T
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) {
      const int r = i / kTile, c = i % kTile;
      const float p = visible(d, q0 + r, k0 + c)
                          ? expf(P[i] * d.scale - lseRow[r])
                          : 0.0f;
      Pb[i] = __float2bfloat16(p);
      // dS = P (dP - delta), with the score scale folded in once.
      dSb[i] = __float2bfloat16(p * (dP[i] - deltaRow[r]) * d.scale);
    }
    __syncthreads();
    gemmPV<true>(dV, Pb, dOs, D, /*accumulate=*/true);   // dV += P^T dO
    gemmPV<true>(dK, dSb, Qs, D, /*accumulate=*/true);   // dK += dS^T Q
    gemmPV<false>(dQ, dSb, Ks, D, /*accumulate=*/false); // dQ part = dS K
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
      const int r = i / D, c = i % D;
      if (q0 + r < d.T)
        atomicAdd(&dqSum[at(d, b, h, q0 + r, c)], dQ[i]);
    }
    __syncthreads();  // before the next query tile overwrites the buffers
  }
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
    const int r = i / D, c = i % D;
    if (k0 + r < d.T) {
      dk[at(d, b, h, k0 + r, c)] = __float2bfloat16(dK[i]);
      dv[at(d, b, h, k0 + r, c)] = __float2bfloat16(dV[i]);
    }
  }
}

FlashDims flashDims(int64_t batch, int64_t seq, int64_t width, int64_t heads,
                     bool causal) {
  const int D = int(width / heads);
  return {batch, seq, width, heads, D, causal,
          float(1.0 / std::sqrt(double(D)))};
}

// One block per tile of kTile rows of one (batch, head).
dim3 tileGrid(const FlashDims &d) {
  return dim3(unsigned((d.T + kTile - 1) / kTile), unsigned(d.B * d.H));
}

// Dynamic shared memory beyond 48 KiB needs the kernel's opt-in.
template <typename Kernel>
void allowSharedBytes(Kernel kernel, size_t bytes, const char *what) {
  check(cudaFuncSetAttribute(kernel,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(bytes)),
        what);
}

} // namespace

bool DeviceImpl::flashAttentionApplies(int64_t batch, int64_t seq,
                                       int64_t width, int64_t heads,
                                       int64_t dtype) const {
  // Empty calls (no batch, no sequence, no width) are the baseline's: it
  // returns at once, where a flash grid would have no blocks.
  if (!flashAttention_ || dtype != GPTRT_DTYPE_BF16 || heads <= 0 ||
      width <= 0 || width % heads != 0 || batch <= 0 || batch * heads > 65535 ||
      seq <= 0)
    return false;
  const int64_t D = width / heads;
  return D % kFrag == 0 && D <= kMaxHeadDim &&
         backwardSharedBytes(int(D)) <= maxSharedBytesPerBlock_;
}

void DeviceImpl::flashAttentionForward(const void *q, const void *k,
                                       const void *v, void *out, float *lse,
                                       int64_t batch, int64_t seq,
                                       int64_t width, int64_t heads,
                                       bool causal) {
  const FlashDims d = flashDims(batch, seq, width, heads, causal);
  const size_t shared = forwardSharedBytes(d.D);
  allowSharedBytes(flashForwardKernel, shared,
                   "cudaFuncSetAttribute (flash attention forward)");
  flashForwardKernel<<<tileGrid(d), kThreads, shared, stream_>>>(
      static_cast<const bf16 *>(q), static_cast<const bf16 *>(k),
      static_cast<const bf16 *>(v), static_cast<bf16 *>(out), lse, d);
  checkLaunch("gptrt_attention_fwd (flash)");
}

void DeviceImpl::flashAttentionBackward(const void *dout, const void *q,
                                        const void *k, const void *v,
                                        const void *out, const float *lse,
                                        void *dq, void *dk, void *dv,
                                        int64_t batch, int64_t seq,
                                        int64_t width, int64_t heads,
                                        bool causal) {
  const FlashDims d = flashDims(batch, seq, width, heads, causal);
  const int64_t n = batch * seq * width, rows = batch * heads * seq;
  // f32 scratch: dQ's sums over key tiles, then each row's delta.
  float *dqSum = static_cast<float *>(
      scratch((size_t(n) + size_t(rows)) * sizeof(float)));
  float *delta = dqSum + n;
  zero(dqSum, size_t(n) * sizeof(float));
  flashDeltaKernel<<<unsigned((rows * 32 + 255) / 256), 256, 0, stream_>>>(
      static_cast<const bf16 *>(dout), static_cast<const bf16 *>(out), delta,
      d);
  checkLaunch("gptrt_attention_bwd (flash delta)");
  const size_t shared = backwardSharedBytes(d.D);
  allowSharedBytes(flashBackwardKernel, shared,
                   "cudaFuncSetAttribute (flash attention backward)");
  flashBackwardKernel<<<tileGrid(d), kThreads, shared, stream_>>>(
      static_cast<const bf16 *>(dout), static_cast<const bf16 *>(q),
      static_cast<const bf16 *>(k), static_cast<const bf16 *>(v), lse, delta,
      dqSum, static_cast<bf16 *>(dk), static_cast<bf16 *>(dv), d);
  checkLaunch("gptrt_attention_bwd (flash)");
  convert(dqSum, dq, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16);
}

} // namespace gptrt::cuda
