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
#include "runtime/cuda/Fp8Sink.cuh"
#include "runtime/cuda/Reduce.cuh"

#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

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

// Shared-memory tiles are row-major with each row padded by 16 bytes (bf16)
// or 32 bytes (f32) past its D (or kTile) columns, so that the rows of a
// 16x16 fragment fall in different banks: with rows of 2D or 4D bytes (D a
// multiple of 16) they would all start in the same bank. The padding keeps
// WMMA's rules: ldm a multiple of 8 elements for bf16 and 4 for f32, and
// every fragment pointer 32-byte aligned (row offsets 16 * ld elements are
// 32 * ld bytes for bf16 and 64 * ld for f32, column offsets multiples of 16
// elements). Pad columns are never read. 8 f32 rather than 4: accumulator
// fragments are stored two floats per lane, 4 rows of 32 bytes per
// half-warp, which a row stride of 32 bytes mod 128 keeps apart and one of
// 16 bytes does not.
constexpr int kPadBf16 = 8;
constexpr int kPadF32 = 8;
__host__ __device__ constexpr int ldBf16(int cols) { return cols + kPadBf16; }
__host__ __device__ constexpr int ldF32(int cols) { return cols + kPadF32; }
constexpr int kLdScoreF32 = ldF32(kTile);   // 64 x 64 f32 score tiles
constexpr int kLdScoreBf16 = ldBf16(kTile); // 64 x 64 bf16 score tiles
static_assert(kPadBf16 % 8 == 0 && kPadF32 % 4 == 0,
              "WMMA ldm: a multiple of 8 bf16 or 4 f32 elements");
static_assert(kTile % kFrag == 0 && kLdScoreBf16 % 8 == 0 &&
                  kLdScoreF32 % 4 == 0,
              "score tiles: WMMA ldm and 32-byte fragment alignment");

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
  // Row stride of q, k, v, dk, dv (and dq's final copy): C, or 3 C when
  // they lie packed in the qkv buffer; out, dout and dQ's sums have rows
  // of C.
  int64_t ldQkv;
};

// Element (t, c) of head h of batch b in a [B, T, *] tensor with rows of
// ld elements.
__device__ int64_t at(const FlashDims &d, int64_t ld, int64_t b, int64_t h,
                      int64_t t, int c) {
  return (b * d.T + t) * ld + h * d.D + c;
}

// rows [t0, t0 + kTile) x D of head (b, h) into shared memory (row-major,
// leading dimension ldBf16(D)); rows past the sequence are zeros. A row of
// the head starts at ((b T + t) rowStride + h D) elements from src,
// 16-byte aligned when src is and D and rowStride are multiples of 8:
// 16-byte vectors then, 2-byte elements otherwise. Shared rows of 2 D + 16
// bytes from a 128-byte-aligned tile keep the vector stores aligned.
__device__ void loadTile(bf16 *dst, const bf16 *src, int64_t rowStride,
                         const FlashDims &d, int64_t b, int64_t h, int64_t t0) {
  const int ld = ldBf16(d.D);
  if (d.D % 8 == 0 && rowStride % 8 == 0 &&
      reinterpret_cast<uintptr_t>(src) % 16 == 0) {
    const int chunks = d.D / 8; // 8 bf16 per 16-byte vector
    for (int i = threadIdx.x; i < kTile * chunks; i += blockDim.x) {
      const int r = i / chunks, c = (i - r * chunks) * 8;
      const int64_t t = t0 + r;
      uint4 x = make_uint4(0, 0, 0, 0); // bf16 zeros
      if (t < d.T)
        x = *reinterpret_cast<const uint4 *>(src +
                                             at(d, rowStride, b, h, t, c));
      *reinterpret_cast<uint4 *>(dst + r * ld + c) = x;
    }
    return;
  }
  const bf16 zero = __float2bfloat16(0.0f);
  for (int i = threadIdx.x; i < kTile * d.D; i += blockDim.x) {
    const int r = i / d.D, c = i % d.D;
    const int64_t t = t0 + r;
    dst[r * ld + c] = t < d.T ? src[at(d, rowStride, b, h, t, c)] : zero;
  }
}

// c[kTile x kTile] (f32, ld kLdScoreF32) = a[kTile x D] b[kTile x D]^T,
// both row-major with ld ldBf16(D): the scores Q K^T (or dO V^T). Each warp
// takes every kWarps-th 16x16 output tile.
__device__ void gemmABt(float *c, const bf16 *a, const bf16 *b, int D) {
  constexpr int tiles = kTile / kFrag;
  const int ld = ldBf16(D);
  for (int t = threadIdx.x / 32; t < tiles * tiles; t += kWarps) {
    const int ti = t / tiles, tj = t % tiles;
    AccFrag acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < D; kk += kFrag) {
      AFrag<wmma::row_major> fa;
      // b^T read column-major: element (kk + x, tj*16 + y) of b^T is
      // b[tj*16 + y][kk + x], at b + (tj*16 + y) * ld + kk + x.
      BFrag<wmma::col_major> fb;
      wmma::load_matrix_sync(fa, a + ti * kFrag * ld + kk, ld);
      wmma::load_matrix_sync(fb, b + tj * kFrag * ld + kk, ld);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + ti * kFrag * kLdScoreF32 + tj * kFrag, acc,
                            kLdScoreF32, wmma::mem_row_major);
  }
}

// c[kTile x D] (f32, ld ldF32(D)) += p[kTile x kTile] v[kTile x D]: p
// row-major (ld kLdScoreBf16), or read transposed (p^T, for dV = P^T dO and
// dK = dS^T Q); v row-major (ld ldBf16(D)). `accumulate` false starts from
// zero instead of c.
template <bool TransposeP>
__device__ void gemmPV(float *c, const bf16 *p, const bf16 *v, int D,
                       bool accumulate) {
  const int tilesD = D / kFrag;
  const int ldc = ldF32(D), ldv = ldBf16(D);
  constexpr int ldp = kLdScoreBf16;
  for (int t = threadIdx.x / 32; t < (kTile / kFrag) * tilesD; t += kWarps) {
    const int ti = t / tilesD, td = t % tilesD;
    AccFrag acc;
    float *out = c + ti * kFrag * ldc + td * kFrag;
    if (accumulate)
      wmma::load_matrix_sync(acc, out, ldc, wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < kTile; kk += kFrag) {
      BFrag<wmma::row_major> fb;
      wmma::load_matrix_sync(fb, v + kk * ldv + td * kFrag, ldv);
      if constexpr (TransposeP) {
        // p^T (row ti*16 + x, column kk + y) is p[kk + y][ti*16 + x]:
        // column-major from p + kk * ldp + ti * 16.
        AFrag<wmma::col_major> fa;
        wmma::load_matrix_sync(fa, p + kk * ldp + ti * kFrag, ldp);
        wmma::mma_sync(acc, fa, fb, acc);
      } else {
        AFrag<wmma::row_major> fa;
        wmma::load_matrix_sync(fa, p + ti * kFrag * ldp + kk, ldp);
        wmma::mma_sync(acc, fa, fb, acc);
      }
    }
    wmma::store_matrix_sync(out, acc, ldc, wmma::mem_row_major);
  }
}

// May query row qi see key kj?
__device__ bool visible(const FlashDims &d, int64_t qi, int64_t kj) {
  return qi < d.T && kj < d.T && (!d.causal || kj <= qi);
}

// Shared memory carved in order; every piece's size is a multiple of 128
// bytes for the shapes allowed (D a multiple of 16; padded tiles of 64 rows
// of 2 D + 16 or 4 D + 32 bytes), which keeps WMMA's 32-byte alignment and
// loadTile's 16-byte stores.
struct Carver {
  unsigned char *next;
  template <typename T> __device__ T *take(size_t count) {
    T *p = reinterpret_cast<T *>(next);
    next += count * sizeof(T);
    return p;
  }
};

// Elements of one padded tile of kTile rows.
__host__ __device__ constexpr size_t tileBf16(int cols) {
  return size_t(kTile) * ldBf16(cols);
}
__host__ __device__ constexpr size_t tileF32(int cols) {
  return size_t(kTile) * ldF32(cols);
}

constexpr size_t forwardSharedBytes(int D) {
  return 3 * tileBf16(D) * sizeof(bf16) +   // Q, K, V
         tileF32(kTile) * sizeof(float) +   // S
         tileBf16(kTile) * sizeof(bf16) +   // P
         tileF32(D) * sizeof(float) +       // O
         2 * size_t(kTile) * sizeof(float); // row max, row sum
}

constexpr size_t backwardSharedBytes(int D) {
  return 4 * tileBf16(D) * sizeof(bf16) +     // K, V, Q, dO
         2 * tileF32(kTile) * sizeof(float) + // P (f32), dP
         2 * tileBf16(kTile) * sizeof(bf16) + // P, dS (bf16)
         3 * tileF32(D) * sizeof(float) +     // dK, dV, dQ part
         2 * size_t(kTile) * sizeof(float);   // lse, delta rows
}

// The static shared memory of the Fp8Sink's block reduction (blockMax's
// 32 partial maxima), beside the dynamic tiles.
constexpr size_t kSinkSharedBytes = 32 * sizeof(unsigned);

// flashAttentionApplies compares with the device's opt-in limit at run
// time; with the padding, D = 128 still fits sm_90's 232448 bytes
// (229888 for the backward, and the sink's 128).
static_assert(backwardSharedBytes(kMaxHeadDim) + kSinkSharedBytes <= 232448 &&
                  forwardSharedBytes(kMaxHeadDim) <=
                      backwardSharedBytes(kMaxHeadDim),
              "flash attention at D = 128 fits sm_90's shared memory");

__global__ void __launch_bounds__(kThreads)
    flashForwardKernel(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *out,
                       float *lse, FlashDims d, Fp8Sink sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carver carve{smem};
  const int D = d.D;
  const int ldO = ldF32(D);
  bf16 *Qs = carve.take<bf16>(tileBf16(D)), *Ks = carve.take<bf16>(tileBf16(D)),
       *Vs = carve.take<bf16>(tileBf16(D));
  float *S = carve.take<float>(tileF32(kTile));
  bf16 *P = carve.take<bf16>(tileBf16(kTile));
  float *O = carve.take<float>(tileF32(D)), *rowMax = carve.take<float>(kTile),
        *rowSum = carve.take<float>(kTile);

  const int64_t b = blockIdx.y / d.H, h = blockIdx.y % d.H;
  const int64_t q0 = int64_t(blockIdx.x) * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  loadTile(Qs, q, d.ldQkv, d, b, h, q0);
  for (int i = threadIdx.x; i < kTile * ldO; i += blockDim.x)
    O[i] = 0.0f; // pad columns too: never read
  for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
    rowMax[r] = -INFINITY;
    rowSum[r] = 0.0f;
  }
  const int64_t kEnd = d.causal ? min(d.T, q0 + kTile) : d.T;
  for (int64_t k0 = 0; k0 < kEnd; k0 += kTile) {
    loadTile(Ks, k, d.ldQkv, d, b, h, k0);
    loadTile(Vs, v, d.ldQkv, d, b, h, k0);
    __syncthreads();
    gemmABt(S, Qs, Ks, D);
    __syncthreads();
    // Online softmax, one warp per row: rescale what O holds by
    // exp(old max - new max) and add this tile's probabilities.
    for (int r = warp; r < kTile; r += kWarps) {
      float *s = S + r * kLdScoreF32;
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
        P[r * kLdScoreBf16 + c] = __float2bfloat16(p);
      }
      sum = warpSum(sum);
      for (int c = lane; c < D; c += 32)
        O[r * ldO + c] *= corr;
      if (lane == 0) {
        rowMax[r] = newMax;
        rowSum[r] = rowSum[r] * corr + sum;
      }
    }
    __syncthreads();
    gemmPV<false>(O, P, Vs, D, /*accumulate=*/true);
    __syncthreads();
  }
  // The amax of out as stored (the amax epilogue), and its codes in out's
  // layout (the cast epilogue).
  const float codeScale = sink.scaleValue();
  unsigned m = 0;
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
    const int r = i / D, c = i % D;
    if (q0 + r < d.T) {
      const bf16 o = __float2bfloat16(O[r * ldO + c] / rowSum[r]);
      const int64_t element = at(d, d.C, b, h, q0 + r, c);
      out[element] = o;
      sink.put(m, element, __bfloat162float(o), codeScale);
    }
  }
  for (int r = threadIdx.x; r < kTile; r += blockDim.x)
    if (q0 + r < d.T)
      lse[(b * d.H + h) * d.T + q0 + r] = rowMax[r] + logf(rowSum[r]);
  sink.finish(m);
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
    part += __bfloat162float(dout[at(d, d.C, b, h, t, c)]) *
            __bfloat162float(out[at(d, d.C, b, h, t, c)]);
  part = warpSum(part);
  if (lane == 0)
    delta[w] = part;  // w = (b * H + h) * T + t
}

__global__ void __launch_bounds__(kThreads)
    flashBackwardKernel(const bf16 *dout, const bf16 *q, const bf16 *k,
                        const bf16 *v, const float *lse, const float *delta,
                        float *dqSum, bf16 *dk, bf16 *dv, FlashDims d,
                        Fp8Sink sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carver carve{smem};
  const int D = d.D;
  const int ldAcc = ldF32(D);
  bf16 *Ks = carve.take<bf16>(tileBf16(D)), *Vs = carve.take<bf16>(tileBf16(D)),
       *Qs = carve.take<bf16>(tileBf16(D)),
       *dOs = carve.take<bf16>(tileBf16(D));
  float *P = carve.take<float>(tileF32(kTile)),
        *dP = carve.take<float>(tileF32(kTile));
  bf16 *Pb = carve.take<bf16>(tileBf16(kTile)),
       *dSb = carve.take<bf16>(tileBf16(kTile));
  float *dK = carve.take<float>(tileF32(D)),
        *dV = carve.take<float>(tileF32(D)),
        *dQ = carve.take<float>(tileF32(D));
  float *lseRow = carve.take<float>(kTile), *deltaRow = carve.take<float>(kTile);

  const int64_t b = blockIdx.y / d.H, h = blockIdx.y % d.H;
  const int64_t k0 = int64_t(blockIdx.x) * kTile;
  const int64_t stats = (b * d.H + h) * d.T;
  loadTile(Ks, k, d.ldQkv, d, b, h, k0);
  loadTile(Vs, v, d.ldQkv, d, b, h, k0);
  for (int i = threadIdx.x; i < kTile * ldAcc; i += blockDim.x)
    dK[i] = dV[i] = 0.0f; // pad columns too: never read
  // Under the causal mask, queries before k0 see none of these keys.
  for (int64_t q0 = d.causal ? k0 : 0; q0 < d.T; q0 += kTile) {
    loadTile(Qs, q, d.ldQkv, d, b, h, q0);
    loadTile(dOs, dout, d.C, d, b, h, q0);
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
      const int f = r * kLdScoreF32 + c, e = r * kLdScoreBf16 + c;
      const float p =
          visible(d, q0 + r, k0 + c) ? expf(P[f] * d.scale - lseRow[r]) : 0.0f;
      Pb[e] = __float2bfloat16(p);
      // dS = P (dP - delta), with the score scale folded in once.
      dSb[e] = __float2bfloat16(p * (dP[f] - deltaRow[r]) * d.scale);
    }
    __syncthreads();
    gemmPV<true>(dV, Pb, dOs, D, /*accumulate=*/true);   // dV += P^T dO
    gemmPV<true>(dK, dSb, Qs, D, /*accumulate=*/true);   // dK += dS^T Q
    gemmPV<false>(dQ, dSb, Ks, D, /*accumulate=*/false); // dQ part = dS K
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
      const int r = i / D, c = i % D;
      if (q0 + r < d.T)
        atomicAdd(&dqSum[at(d, d.C, b, h, q0 + r, c)], dQ[r * ldAcc + c]);
    }
    __syncthreads();  // before the next query tile overwrites the buffers
  }
  unsigned m = 0;
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
    const int r = i / D, c = i % D;
    if (k0 + r < d.T) {
      const bf16 gk = __float2bfloat16(dK[r * ldAcc + c]),
                 gv = __float2bfloat16(dV[r * ldAcc + c]);
      dk[at(d, d.ldQkv, b, h, k0 + r, c)] = gk;
      dv[at(d, d.ldQkv, b, h, k0 + r, c)] = gv;
      // The sink's index only places FP8 codes, which it has none of.
      sink.put(m, 0, __bfloat162float(gk), 0.0f);
      sink.put(m, 0, __bfloat162float(gv), 0.0f);
    }
  }
  sink.finish(m); // every thread of the block gets here
}

FlashDims flashDims(int64_t batch, int64_t seq, int64_t width, int64_t heads,
                    bool causal, int64_t ldQkv) {
  const int D = int(width / heads);
  return {
      batch, seq, width, heads, D, causal, float(1.0 / std::sqrt(double(D))),
      ldQkv};
}

// dq (rows of ldQkv) = dQ's f32 sums (rows of C), rounded to bf16.
__global__ void dqFromSumsKernel(const float *sums, bf16 *dq, int64_t rows,
                                 int64_t width, int64_t ldQkv, Fp8Sink sink) {
  const int64_t n = rows * width;
  unsigned m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const bf16 g = __float2bfloat16(sums[i]);
    dq[(i / width) * ldQkv + i % width] = g;
    sink.put(m, 0, __bfloat162float(g), 0.0f);
  }
  sink.finish(m);
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
         backwardSharedBytes(int(D)) + kSinkSharedBytes <=
             maxSharedBytesPerBlock_;
}

void DeviceImpl::flashAttentionForward(const void *q, const void *k,
                                       const void *v, void *out, float *lse,
                                       int64_t batch, int64_t seq,
                                       int64_t width, int64_t heads,
                                       bool causal, int64_t ldQkv,
                                       const Fp8Epilogue &fp8) {
  const FlashDims d = flashDims(batch, seq, width, heads, causal, ldQkv);
  const Fp8Sink sink = sinkFor(fp8); // zeroes the amax first
  const size_t shared = forwardSharedBytes(d.D);
  allowSharedBytes(flashForwardKernel, shared,
                   "cudaFuncSetAttribute (flash attention forward)");
  flashForwardKernel<<<tileGrid(d), kThreads, shared, stream_>>>(
      static_cast<const bf16 *>(q), static_cast<const bf16 *>(k),
      static_cast<const bf16 *>(v), static_cast<bf16 *>(out), lse, d, sink);
  checkLaunch("gptrt_attention_fwd (flash)");
}

void DeviceImpl::flashAttentionBackward(
    const void *dout, const void *q, const void *k, const void *v,
    const void *out, const float *lse, void *dq, void *dk, void *dv,
    int64_t batch, int64_t seq, int64_t width, int64_t heads, bool causal,
    int64_t ldQkv, float *amax) {
  const FlashDims d = flashDims(batch, seq, width, heads, causal, ldQkv);
  const int64_t n = batch * seq * width, rows = batch * heads * seq;
  // dk and dv's amax as the backward kernel stores them, dq's as its sums
  // are rounded: one amax over the three, zeroed once here.
  Fp8Epilogue fp8;
  fp8.amax = amax;
  const Fp8Sink sink = sinkFor(fp8);
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
      dqSum, static_cast<bf16 *>(dk), static_cast<bf16 *>(dv), d, sink);
  checkLaunch("gptrt_attention_bwd (flash)");
  if (ldQkv == width && !sink.active()) {
    convert(dqSum, dq, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16);
    return;
  }
  dqFromSumsKernel<<<sink.cappedGrid(gridFor(n)), 256, 0, stream_>>>(
      dqSum, static_cast<bf16 *>(dq), batch * seq, width, ldQkv, sink);
  checkLaunch("gptrt_attention_bwd (flash dq)");
}

} // namespace gptrt::cuda
