// FP8 tensorwise scaling on the device: amax (block max + one atomic),
// scale_from_amax, quantize (CUDA's own SATFINITE conversion, which
// runtime/cpu/Fp8.h emulates bit for bit), and the delayed-scaling history.
// The scalar kernels run one thread: they exist so that scales never leave
// the GPU (no host sync inside a step, DESIGN.md section 5).
#include "runtime/abi/gptrt.h"
#include "runtime/cpu/Formulas.h"
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Fp8Codes.cuh"
#include "runtime/cuda/Reduce.cuh"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstring>
#include <vector>

namespace gptrt::cuda {

namespace {

// |x| as bits: for non-negative floats the unsigned order is the float
// order, and every NaN (sign cleared) is above +inf, so an unsigned max
// over the bits is amax with NaN winning, as gptrt.h asks.
__global__ void amaxKernel(const float *x, int64_t n, unsigned *out) {
  unsigned m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    m = max(m, __float_as_uint(fabsf(x[i])));
  m = blockMax(m, 0u);
  if (threadIdx.x == 0 && m != 0)
    atomicMax(out, m);
}

// The scale formulas (formulas::scaleFromAmax, scaleFromHistory) are the
// CPU's, runtime/cpu/Formulas.h, compiled for the device.

// The one scale of a tensorwise cast as its kernel reads it: *in, or made
// from an amax (scale_from_amax) or an amax history (fp8_state_scale) by
// every thread with the standalone kernels' functions -- so their bits --
// and stored to *out by block (0, 0)'s thread 0 for the GEMMs after the
// cast (rt-fuse-cast-scale).
struct CastScale {
  const float *in;
  ScaleFromAmax own;

  CastScale(const float *scale, const ScaleFromAmax &own)
      : in(scale), own(own) {}

  // Read once per thread, before its loop.
  __device__ float value() const {
    if (own.amax == nullptr && own.history == nullptr)
      return *in;
    const float fp8Max = float(own.fp8Max), eps = float(own.eps);
    const int margin = int(own.margin);
    const float s = own.amax != nullptr
                        ? formulas::scaleFromAmax(*own.amax, fp8Max, margin,
                                                  own.powerOfTwo, eps)
                        : formulas::scaleFromHistory(
                              own.history, own.historyLength, fp8Max, margin,
                              own.powerOfTwo, eps, own.mostRecent);
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
      *own.out = s;
    return s;
  }

  // Rowwise scaling's scale of row or column i: in[i], or made from
  // own.amax[i] with rowScalesKernel's function and stored to own.out[i]
  // by the one thread told to (gptrt_scale_quantize_rows_transposed).
  __device__ float at(int64_t i, bool store) const {
    if (own.amax == nullptr)
      return in[i];
    const float s =
        formulas::scaleFromAmax(own.amax[i], float(own.fp8Max), int(own.margin),
                                own.powerOfTwo, float(own.eps));
    if (store)
      own.out[i] = s;
    return s;
  }
};

__global__ void scaleFromAmaxKernel(const float *amax, float *out,
                                    float fp8Max, int margin, bool powerOfTwo,
                                    float eps) {
  *out = formulas::scaleFromAmax(*amax, fp8Max, margin, powerOfTwo, eps);
}

__global__ void stateScaleKernel(const float *history, float *out,
                                 int64_t length, float fp8Max, int margin,
                                 bool powerOfTwo, float eps,
                                 bool mostRecent) {
  *out = formulas::scaleFromHistory(history, length, fp8Max, margin, powerOfTwo,
                                    eps, mostRecent);
}

__device__ void updateHistory(float a, float *history, int64_t length) {
  if (!isfinite(a))
    return;
  for (int64_t i = length - 1; i > 0; --i)
    history[i] = history[i - 1];
  history[0] = a;
}

__global__ void stateUpdateKernel(const float *amax, float *history,
                                  int64_t length) {
  updateHistory(*amax, history, length);
}

// A thread per state (at most 64), those whose mask bit is set.
__global__ void stateUpdateBatchKernel(const float *amax, float *history,
                                       int count, int64_t length,
                                       int64_t stride, uint64_t mask) {
  const int s = threadIdx.x;
  if (s < count && ((mask >> s) & 1))
    updateHistory(amax[s], history + s * stride, length);
}

// A thread per state (at most 64), those whose mask bit is set.
__global__ void stateScaleBatchKernel(const float *history, float *out,
                                      int count, int64_t length, int64_t stride,
                                      uint64_t mask, float fp8Max, int margin,
                                      bool powerOfTwo, float eps,
                                      bool mostRecent) {
  const int s = threadIdx.x;
  if (s < count && ((mask >> s) & 1))
    out[s] = formulas::scaleFromHistory(history + s * stride, length, fp8Max,
                                        margin, powerOfTwo, eps, mostRecent);
}

template <__nv_fp8_interpretation_t Format>
__global__ void quantizeKernel(const float *x, CastScale scale, uint8_t *q,
                               int64_t n) {
  const float s = scale.value();
  // x * s is one rounded f32 multiply, as on the CPU; then the conversion.
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    q[i] = toFp8<Format>(__fmul_rn(x[i], s));
}

// Four elements per thread: a 16-byte load and a 4-byte store.
template <__nv_fp8_interpretation_t Format>
__global__ void quantize4Kernel(const float4 *x, CastScale scale, uchar4 *q,
                                int64_t n4) {
  const float s = scale.value();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4;
       i += int64_t(gridDim.x) * blockDim.x) {
    float4 v = x[i];
    q[i] = make_uchar4(
        toFp8<Format>(__fmul_rn(v.x, s)), toFp8<Format>(__fmul_rn(v.y, s)),
        toFp8<Format>(__fmul_rn(v.z, s)), toFp8<Format>(__fmul_rn(v.w, s)));
  }
}

// Value i of a tensor stored as f32 or bf16 (the fused epilogues' out_dtype).
__device__ float valueAt(const void *x, bool bf16, int64_t i) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16 *>(x)[i])
              : static_cast<const float *>(x)[i];
}

__global__ void amaxAnyKernel(const void *x, bool bf16, int64_t n,
                              unsigned *out) {
  unsigned m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    m = max(m, __float_as_uint(fabsf(valueAt(x, bf16, i))));
  m = blockMax(m, 0u);
  if (threadIdx.x == 0 && m != 0)
    atomicMax(out, m);
}

// q = fp8(value * scale) over n values stored f32 or bf16.
template <__nv_fp8_interpretation_t Format>
__global__ void castKernel(const void *x, bool bf16, CastScale scale,
                           uint8_t *q, int64_t n) {
  const float s = scale.value();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    q[i] = toFp8<Format>(__fmul_rn(valueAt(x, bf16, i), s));
}

// The _cast epilogue in one pass over the producer's output: the amax of
// the values (as amaxAnyKernel) and their codes at a scale known in advance
// (delayed scaling), row-major.
template <__nv_fp8_interpretation_t Format>
__global__ void amaxCastKernel(const void *x, bool bf16, const float *scale,
                               uint8_t *q, int64_t n, unsigned *amax) {
  const float s = *scale;
  unsigned m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = valueAt(x, bf16, i);
    m = max(m, __float_as_uint(fabsf(v)));
    q[i] = toFp8<Format>(__fmul_rn(v, s));
  }
  m = blockMax(m, 0u);
  if (threadIdx.x == 0 && m != 0)
    atomicMax(amax, m);
}

// The same with the codes transposed (q[c][r] of x's [r][c]), the layout a
// Hopper FP8 GEMM wants for the backward's operands: 32 x 32 tiles through
// shared memory, so that both the reads of x and the writes of q are
// coalesced. 256 threads, one warp per 4 rows of a tile; blocks walk the
// tile rows (grid.y may be smaller than their number). amax may be null
// (a plain transposed cast); qRowMajor, when given, gets the codes in x's
// own layout too, written as they are made (coalesced like the reads).
// scaleAxis: one scale (0), or rowwise scaling's scale per row of x (1) or
// per column (2).
constexpr int kCastTile = 32;

template <__nv_fp8_interpretation_t Format>
__global__ void amaxCastTransposedKernel(CastSource x, CastScale scale,
                                         uint8_t *q, int64_t rows, int64_t cols,
                                         unsigned *amax, uint8_t *qRowMajor,
                                         int scaleAxis, float *colSums) {
  __shared__ uint8_t tile[kCastTile][kCastTile + 1];
  __shared__ float values[kCastTile][kCastTile + 1]; // with colSums
  const float one = scaleAxis == 0 ? scale.value() : 0.0f;
  const int lane = threadIdx.x % kCastTile, warp = threadIdx.x / kCastTile;
  const int warps = blockDim.x / kCastTile;
  const int64_t c0 = int64_t(blockIdx.x) * kCastTile;
  // A scale per column: a thread's column, so its scale, is the same in
  // every tile row (made once; stored by the first row's warp).
  const float colScale = scaleAxis == 2 && c0 + lane < cols
                             ? scale.at(c0 + lane, blockIdx.y == 0 && warp == 0)
                             : 0.0f;
  const int64_t tileRows = (rows + kCastTile - 1) / kCastTile;
  unsigned m = 0;
  for (int64_t tr = blockIdx.y; tr < tileRows; tr += gridDim.y) {
    const int64_t r0 = tr * kCastTile;
    for (int i = warp; i < kCastTile; i += warps) {
      const int64_t r = r0 + i, c = c0 + lane;
      if (r < rows && c < cols) {
        const float v = x.at(r * cols + c);
        m = max(m, __float_as_uint(fabsf(v)));
        const float s = scaleAxis == 0   ? one
                        : scaleAxis == 2 ? colScale
                                         : scale.at(r, c == 0);
        const uint8_t code = toFp8<Format>(__fmul_rn(v, s));
        tile[i][lane] = code;
        if (qRowMajor != nullptr)
          qRowMajor[r * cols + c] = code;
        if (colSums != nullptr)
          values[i][lane] = v;
      }
    }
    __syncthreads();
    // gptrt_reduce_rows's first level: this tile's rows, in row order.
    if (colSums != nullptr && warp == 0 && c0 + lane < cols) {
      const int64_t n = min(int64_t(kCastTile), rows - r0);
      float s = 0;
      for (int i = 0; i < n; ++i)
        s += values[i][lane];
      colSums[tr * cols + c0 + lane] = s;
    }
    for (int i = warp; i < kCastTile; i += warps) {
      const int64_t c = c0 + i, r = r0 + lane;
      if (r < rows && c < cols)
        q[c * rows + r] = tile[lane][i];
    }
    __syncthreads(); // the tile is refilled by the next tile row
  }
  if (amax == nullptr) // the same for every thread: no divergent barrier
    return;
  m = blockMax(m, 0u);
  if (threadIdx.x == 0 && m != 0)
    atomicMax(amax, m);
}

// Rowwise scaling. amax per row (one block a row) or per column (one thread
// a column, rows walked in order: coalesced across the threads); NaN wins
// through the bit order, as in amaxKernel.
__global__ void amaxEachRowKernel(const void *x, bool bf16, float *out,
                                  int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    unsigned m = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      m = max(m, __float_as_uint(fabsf(valueAt(x, bf16, r * cols + c))));
    m = blockMax(m, 0u);
    if (threadIdx.x == 0)
      out[r] = __uint_as_float(m);
  }
}

// Per column: a thread per (column, slice of rows), adjacent threads on
// adjacent columns, each slice's max atomically maxed into out's bits
// (zeroed first). A max does not depend on the order, so the slices change
// no bit; one thread per column walking every row could not keep the GPU
// busy on a [16384, 768] gradient.
__global__ void amaxEachColumnKernel(const void *x, bool bf16, unsigned *out,
                                     int64_t rows, int64_t cols) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= cols)
    return;
  const int64_t slice = (rows + gridDim.y - 1) / gridDim.y;
  const int64_t r0 = blockIdx.y * slice, r1 = min(rows, r0 + slice);
  unsigned m = 0;
  for (int64_t r = r0; r < r1; ++r)
    m = max(m, __float_as_uint(fabsf(valueAt(x, bf16, r * cols + c))));
  if (m != 0)
    atomicMax(&out[c], m);
}

__global__ void rowScalesKernel(const float *amax, float *out, int64_t n,
                                float fp8Max, int margin, bool powerOfTwo,
                                float eps) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = formulas::scaleFromAmax(amax[i], fp8Max, margin, powerOfTwo, eps);
}

template <__nv_fp8_interpretation_t Format>
__global__ void quantizeRowsKernel(const void *x, bool bf16,
                                   const float *scales, uint8_t *q,
                                   int64_t rows, int64_t cols,
                                   bool alongCols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float s = alongCols ? scales[i % cols] : scales[i / cols];
    q[i] = toFp8<Format>(__fmul_rn(valueAt(x, bf16, i), s));
  }
}

// amaxEachRowKernel, rowScalesKernel and quantizeRowsKernel (along rows) in
// one pass: a warp per row takes the row's amax (the same bit-order max, so
// a NaN wins), makes its scale with formulas::scaleFromAmax, stores both, and
// casts the row, which it reads a second time from cache rather than from
// memory after two more launches.
template <__nv_fp8_interpretation_t Format>
__global__ void amaxQuantizeRowsKernel(const void *x, bool bf16, float *amax,
                                       float *scales, uint8_t *q, int64_t rows,
                                       int64_t cols, float fp8Max, int margin,
                                       bool powerOfTwo, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  // Every lane of a warp has the same row: the shuffles see the whole warp.
  for (int64_t r = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
       r < rows; r += warps) {
    const int64_t base = r * cols;
    unsigned m = 0;
    for (int64_t c = lane; c < cols; c += 32)
      m = max(m, __float_as_uint(fabsf(valueAt(x, bf16, base + c))));
    const float a = __uint_as_float(warpMax(m));
    const float s = formulas::scaleFromAmax(a, fp8Max, margin, powerOfTwo, eps);
    if (lane == 0) {
      amax[r] = a;
      scales[r] = s;
    }
    for (int64_t c = lane; c < cols; c += 32)
      q[base + c] = toFp8<Format>(__fmul_rn(valueAt(x, bf16, base + c), s));
  }
}

// How unscaleRowwiseKernel stores each quotient.
enum class RowwiseStore { kF32, kBf16, kAddToF32 };

// c[r, j] = sum[r, j] / (scaleA(r) * scaleB(j)): one rounded product, one
// rounded quotient, as the CPU does after its unscaled FP8 GEMM; stored as
// f32 (sum may be c itself), rounded once to bf16, or added to an f32 c
// (the _accumulate form: one more rounded addition, as the CPU's). With a
// bias (the _bias form), bias[j] is added to the quotient as stored and
// the sum rounded to c's type: gptrt_add after the GEMM, in the same pass.
__global__ void unscaleRowwiseKernel(const float *sum, void *c,
                                     RowwiseStore store, int64_t rows,
                                     int64_t n, const float *scaleA,
                                     bool rowwiseA, const float *scaleB,
                                     bool rowwiseB, const float *bias) {
  const int64_t total = rows * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float sa = rowwiseA ? scaleA[i / n] : scaleA[0];
    const float sb = rowwiseB ? scaleB[i % n] : scaleB[0];
    float v = __fdiv_rn(sum[i], __fmul_rn(sa, sb));
    if (bias) {
      if (store == RowwiseStore::kBf16)
        v = __bfloat162float(__float2bfloat16(v));
      v = __fadd_rn(v, bias[i % n]);
    }
    if (store == RowwiseStore::kBf16)
      static_cast<__nv_bfloat16 *>(c)[i] = __float2bfloat16(v);
    else if (store == RowwiseStore::kAddToF32)
      static_cast<float *>(c)[i] = __fadd_rn(static_cast<float *>(c)[i], v);
    else
      static_cast<float *>(c)[i] = v;
  }
}

// The device side of CastStats, one per slot. amaxBits: |x| as bits,
// max-reduced like amaxKernel's.
struct SlotCounters {
  unsigned amaxBits;
  float scale;
  unsigned long long underflow, saturated, elements;
};

// The statistics of one cast, as recordCastStats in runtime/core/AbiSupport.h
// computes them on the CPU: the same products (one rounded f32 multiply)
// and the same conversion as castKernel. scaleAxis 0: one scale, *scale;
// 1 / 2 (rowwise): scale[the value's row] / scale[its column] of a
// `cols`-wide x, and the slot's scale becomes the smallest of them (its
// f32 bits atomically minimised: the scales are positive, and a NaN's bits
// lie above the +infinity the slot starts from, so NaNs are skipped as
// the CPU's std::min skips them).
template <__nv_fp8_interpretation_t Format>
__global__ void castStatsKernel(CastSource x, int64_t n, const float *scale,
                                int scaleAxis, int64_t cols,
                                SlotCounters *slot) {
  const float one = scaleAxis == 0 ? *scale : 0.0f;
  // Halfway between the largest finite value and the next power: what
  // round-to-nearest would still have brought back (OCP FP8 formats).
  const float limit = Format == __NV_E4M3 ? 464.0f : 61440.0f;
  constexpr unsigned kInfinityBits = 0x7F800000u;
  unsigned m = 0, smallest = kInfinityBits;
  unsigned long long zeros = 0, clamped = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float s = scaleAxis == 0   ? one
                    : scaleAxis == 1 ? scale[i / cols]
                                     : scale[i % cols];
    smallest = min(smallest, __float_as_uint(s));
    const float v = x.at(i);
    const float magnitude = fabsf(v);
    m = max(m, __float_as_uint(magnitude));
    const float scaled = __fmul_rn(magnitude, s);
    clamped += Format == __NV_E4M3 ? scaled > limit : scaled >= limit;
    const unsigned code = toFp8<Format>(__fmul_rn(v, s));
    zeros += v != 0.0f && (code & 0x7Fu) == 0;
  }
  m = blockMax(m, 0u);
  if (threadIdx.x == 0 && m != 0)
    atomicMax(&slot->amaxBits, m);
  // Rare logging steps: one atomic per thread with a count is cheap enough.
  if (zeros)
    atomicAdd(&slot->underflow, zeros);
  if (clamped)
    atomicAdd(&slot->saturated, clamped);
  if (scaleAxis != 0 && smallest != kInfinityBits)
    atomicMin(reinterpret_cast<unsigned *>(&slot->scale), smallest);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (scaleAxis == 0)
      slot->scale = one;
    atomicAdd(&slot->elements, static_cast<unsigned long long>(n));
  }
}

// A rowwise cast's logged scale is the smallest of this cast's (the CPU
// overwrites the slot's with it): the minimum starts from +infinity.
__global__ void resetSlotScaleKernel(SlotCounters *slot) {
  slot->scale = INFINITY;
}

void requireFormat(int64_t format) {
  if (format != GPTRT_FP8_E4M3 && format != GPTRT_FP8_E5M2)
    throw std::invalid_argument("fp8 format " + std::to_string(format) +
                                ", expected 0 (E4M3) or 1 (E5M2)");
}

void requireLength(int64_t length) {
  if (length <= 0)
    throw std::invalid_argument("history_length " + std::to_string(length) +
                                ", expected >= 1");
}

} // namespace

void DeviceImpl::launchAmax(const void *x, int64_t xDtype, float *out,
                            int64_t n, cudaStream_t stream, const char *what) {
  // The result is built in place: zero, then atomic maxima of the blocks.
  check(cudaMemsetAsync(out, 0, sizeof(float), stream), what);
  if (n <= 0)
    return;
  unsigned blocks = gridFor(n, 512);
  if (blocks > 1024)
    blocks = 1024;  // a grid-stride loop covers the rest
  if (xDtype == GPTRT_DTYPE_BF16)
    amaxAnyKernel<<<blocks, 512, 0, stream>>>(
        x, true, n, reinterpret_cast<unsigned *>(out));
  else
    amaxKernel<<<blocks, 512, 0, stream>>>(static_cast<const float *>(x), n,
                                           reinterpret_cast<unsigned *>(out));
  checkLaunch(what);
}

void DeviceImpl::amax(const void *x, int64_t xDtype, float *out, int64_t n) {
  launchAmax(x, xDtype, out, n, stream_, "gptrt_amax");
}

void DeviceImpl::scaleFromAmax(const float *amax, float *out, double fp8Max,
                               int64_t margin, bool powerOfTwo, double eps) {
  scaleFromAmaxKernel<<<1, 1, 0, stream_>>>(amax, out, float(fp8Max),
                                            int(margin), powerOfTwo,
                                            float(eps));
  checkLaunch("gptrt_scale_from_amax");
}

void DeviceImpl::scaleWithoutCast(const ScaleFromAmax &own) {
  if (own.amax != nullptr)
    scaleFromAmax(own.amax, own.out, own.fp8Max, own.margin, own.powerOfTwo,
                  own.eps);
  else if (own.history != nullptr)
    fp8StateScale(own.history, own.out, own.historyLength, own.fp8Max,
                  own.margin, own.powerOfTwo, own.eps, own.mostRecent);
}

void DeviceImpl::quantizeFp8(const void *xData, int64_t xDtype,
                             const float *scaleData, uint8_t *q, int64_t n,
                             int64_t format, const ScaleFromAmax &own) {
  requireFormat(format);
  if (n <= 0) {
    scaleWithoutCast(own);
    return;
  }
  const CastScale scale(scaleData, own);
  const bool e4m3 = format == GPTRT_FP8_E4M3;
  if (xDtype == GPTRT_DTYPE_BF16) {
    if (e4m3)
      castKernel<__NV_E4M3>
          <<<gridFor(n), 256, 0, stream_>>>(xData, true, scale, q, n);
    else
      castKernel<__NV_E5M2>
          <<<gridFor(n), 256, 0, stream_>>>(xData, true, scale, q, n);
    checkLaunch("gptrt_quantize_fp8");
    return;
  }
  const float *x = static_cast<const float *>(xData);
  const bool vec = n % 4 == 0 &&
                   (reinterpret_cast<uintptr_t>(x) & 15) == 0 &&
                   (reinterpret_cast<uintptr_t>(q) & 3) == 0;
  if (vec) {
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    uchar4 *q4 = reinterpret_cast<uchar4 *>(q);
    if (e4m3)
      quantize4Kernel<__NV_E4M3><<<gridFor(n / 4), 256, 0, stream_>>>(x4, scale, q4, n / 4);
    else
      quantize4Kernel<__NV_E5M2><<<gridFor(n / 4), 256, 0, stream_>>>(x4, scale, q4, n / 4);
  } else if (e4m3) {
    quantizeKernel<__NV_E4M3><<<gridFor(n), 256, 0, stream_>>>(x, scale, q, n);
  } else {
    quantizeKernel<__NV_E5M2><<<gridFor(n), 256, 0, stream_>>>(x, scale, q, n);
  }
  checkLaunch("gptrt_quantize_fp8");
}

void DeviceImpl::fp8StateScale(const float *history, float *out,
                               int64_t length, double fp8Max, int64_t margin,
                               bool powerOfTwo, double eps, bool mostRecent) {
  requireLength(length);
  stateScaleKernel<<<1, 1, 0, stream_>>>(history, out, length, float(fp8Max),
                                         int(margin), powerOfTwo, float(eps),
                                         mostRecent);
  checkLaunch("gptrt_fp8_state_scale");
}

void DeviceImpl::fp8StateUpdate(const float *amax, float *history,
                                int64_t length) {
  requireLength(length);
  stateUpdateKernel<<<1, 1, 0, stream_>>>(amax, history, length);
  checkLaunch("gptrt_fp8_state_update");
}

void DeviceImpl::fp8StateUpdateBatch(const float *amax, float *history,
                                     int64_t count, int64_t length,
                                     int64_t stride, uint64_t mask) {
  requireLength(length);
  if (count <= 0)
    return;
  stateUpdateBatchKernel<<<1, 64, 0, stream_>>>(amax, history, int(count),
                                                length, stride, mask);
  checkLaunch("gptrt_fp8_state_update_batch");
}

void DeviceImpl::fp8StateScaleBatch(const float *history, float *out,
                                    int64_t count, int64_t length,
                                    int64_t stride, uint64_t mask,
                                    double fp8Max, int64_t margin,
                                    bool powerOfTwo, double eps,
                                    bool mostRecent) {
  requireLength(length);
  if (count <= 0)
    return;
  stateScaleBatchKernel<<<1, 64, 0, stream_>>>(
      history, out, int(count), length, stride, mask, float(fp8Max),
      int(margin), powerOfTwo, float(eps), mostRecent);
  checkLaunch("gptrt_fp8_state_scale_batch");
}

void DeviceImpl::amaxRows(const void *x, int64_t xDtype, float *out,
                          int64_t rows, int64_t cols, bool alongCols) {
  const bool bf16 = xDtype == GPTRT_DTYPE_BF16;
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("rows, cols = " + std::to_string(rows) + ", " +
                                std::to_string(cols) + ", expected >= 0");
  if (alongCols) {
    if (cols == 0)
      return;
    if (rows == 0) {
      zero(out, size_t(cols) * sizeof(float));
      return;
    }
    zero(out, size_t(cols) * sizeof(float));
    // Slices of at least 64 rows, at most 1024 of them.
    const int64_t slices = std::min<int64_t>((rows + 63) / 64, 1024);
    const dim3 grid(unsigned((cols + 255) / 256), unsigned(slices));
    amaxEachColumnKernel<<<grid, 256, 0, stream_>>>(
        x, bf16, reinterpret_cast<unsigned *>(out), rows, cols);
  } else {
    if (rows == 0)
      return;
    unsigned blocks = rows > 65535 ? 65535u : unsigned(rows);
    amaxEachRowKernel<<<blocks, 256, 0, stream_>>>(x, bf16, out, rows, cols);
  }
  checkLaunch("gptrt_amax_rows");
}

void DeviceImpl::rowScales(const float *amax, float *out, int64_t n,
                           double fp8Max, int64_t margin, bool powerOfTwo,
                           double eps) {
  if (n < 0)
    throw std::invalid_argument("n = " + std::to_string(n) + ", expected >= 0");
  if (n == 0)
    return;
  rowScalesKernel<<<gridFor(n), 256, 0, stream_>>>(
      amax, out, n, float(fp8Max), int(margin), powerOfTwo, float(eps));
  checkLaunch("gptrt_row_scales");
}

void DeviceImpl::quantizeRows(const void *x, int64_t xDtype,
                              const float *scales, uint8_t *q, int64_t rows,
                              int64_t cols, bool alongCols, int64_t format) {
  const bool bf16 = xDtype == GPTRT_DTYPE_BF16;
  requireFormat(format);
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("rows, cols = " + std::to_string(rows) + ", " +
                                std::to_string(cols) + ", expected >= 0");
  const int64_t n = rows * cols;
  if (n == 0)
    return;
  if (format == GPTRT_FP8_E4M3)
    quantizeRowsKernel<__NV_E4M3><<<gridFor(n), 256, 0, stream_>>>(
        x, bf16, scales, q, rows, cols, alongCols);
  else
    quantizeRowsKernel<__NV_E5M2><<<gridFor(n), 256, 0, stream_>>>(
        x, bf16, scales, q, rows, cols, alongCols);
  checkLaunch("gptrt_quantize_rows");
}

void DeviceImpl::amaxQuantizeRows(const void *x, int64_t xDtype, float *amax,
                                  float *scales, uint8_t *q, int64_t rows,
                                  int64_t cols, int64_t format, double fp8Max,
                                  int64_t margin, bool powerOfTwo, double eps) {
  const bool bf16 = xDtype == GPTRT_DTYPE_BF16;
  requireFormat(format);
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("rows, cols = " + std::to_string(rows) + ", " +
                                std::to_string(cols) + ", expected >= 0");
  if (rows == 0)
    return;
  // Eight rows (warps) a block; a grid-stride loop beyond 65535 blocks.
  const int64_t blocks = std::min<int64_t>((rows + 7) / 8, 65535);
  if (format == GPTRT_FP8_E4M3)
    amaxQuantizeRowsKernel<__NV_E4M3><<<unsigned(blocks), 256, 0, stream_>>>(
        x, bf16, amax, scales, q, rows, cols, float(fp8Max), int(margin),
        powerOfTwo, float(eps));
  else
    amaxQuantizeRowsKernel<__NV_E5M2><<<unsigned(blocks), 256, 0, stream_>>>(
        x, bf16, amax, scales, q, rows, cols, float(fp8Max), int(margin),
        powerOfTwo, float(eps));
  checkLaunch("gptrt_amax_quantize_rows");
}

void DeviceImpl::quantizeRowsTransposed(const void *x, int64_t xDtype,
                                        const float *scales, uint8_t *q,
                                        int64_t rows, int64_t cols,
                                        bool alongCols, int64_t format,
                                        void *db, int64_t dbDtype) {
  requireFormat(format);
  float *sums = castTileSums(db, rows, cols);
  if (rows != 0 && cols != 0) {
    launchTransposedCast(CastSource::stored(x, xDtype == GPTRT_DTYPE_BF16),
                         scales, q, rows, cols, format == GPTRT_FP8_E4M3,
                         nullptr, nullptr, alongCols ? 2 : 1, sums);
    checkLaunch(db ? "gptrt_quantize_rows_transposed_bgrad"
                   : "gptrt_quantize_rows_transposed");
  }
  biasGradientAfterCast(sums, x, xDtype, db, dbDtype, rows, cols);
}

void DeviceImpl::geluCastDual(const void *dout, int64_t doutDtype,
                              const void *x, int64_t xDtype, int64_t outDtype,
                              const float *scale, float *amax, uint8_t *q,
                              uint8_t *qT, void *db, int64_t dbDtype,
                              int64_t rows, int64_t cols, int64_t format,
                              int64_t statSlot, int64_t statSlotT) {
  requireFormat(format);
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("rows, cols = " + std::to_string(rows) + ", " +
                                std::to_string(cols) + ", expected >= 0");
  const CastSource source =
      dout == nullptr
          ? CastSource::geluOf(x, xDtype, outDtype)
          : CastSource::geluGradOf(dout, doutDtype, x, xDtype, outDtype);
  // The output is never stored, so the bias gradient cannot be summed from
  // it afterwards: the tile kernel's column sums are always its first
  // level (one row-order sum up to 32 rows, as reduce_rows's).
  const int64_t tileRows = (rows + kCastTile - 1) / kCastTile;
  float *sums =
      db != nullptr && rows > 0
          ? static_cast<float *>(scratch(
                size_t(tileRows * cols + reduceRowsScratch(tileRows, cols)) *
                4))
          : nullptr;
  zero(amax, sizeof(float));
  if (rows != 0 && cols != 0) {
    launchTransposedCast(source, scale, qT, rows, cols,
                         format == GPTRT_FP8_E4M3,
                         reinterpret_cast<unsigned *>(amax), q, 0, sums);
    checkLaunch(dout == nullptr ? "gptrt_gelu_fwd+dual_cast"
                                : "gptrt_gelu_bwd+dual_cast");
  }
  if (db != nullptr) {
    if (sums != nullptr)
      sumRowLevels(sums, GPTRT_DTYPE_F32, tileRows, cols,
                   sums + tileRows * cols, db, dbDtype);
    else // no rows: reduce_rows of nothing
      reduceRows(x, xDtype, db, dbDtype, 0, cols);
  }
  for (int64_t slot : {statSlot, statSlotT})
    if (slot >= 0)
      launchCastStats(source, rows * cols, /*cols=*/1, scale, /*scaleAxis=*/0,
                      format, slot);
}

void DeviceImpl::scaleQuantizeRowsTransposed(
    const void *x, int64_t xDtype, const float *amax, uint8_t *q, float *scales,
    int64_t rows, int64_t cols, bool alongCols, int64_t format, double fp8Max,
    int64_t margin, bool powerOfTwo, double eps, void *db, int64_t dbDtype) {
  requireFormat(format);
  if (rows == 0 || cols == 0) {
    // No tile to make the scales: the standalone kernel does.
    rowScales(amax, scales, alongCols ? cols : rows, fp8Max, margin, powerOfTwo,
              eps);
    biasGradientAfterCast(nullptr, x, xDtype, db, dbDtype, rows, cols);
    return;
  }
  ScaleFromAmax own;
  own.amax = amax;
  own.out = scales;
  own.fp8Max = fp8Max;
  own.margin = margin;
  own.powerOfTwo = powerOfTwo;
  own.eps = eps;
  float *sums = castTileSums(db, rows, cols);
  launchTransposedCast(CastSource::stored(x, xDtype == GPTRT_DTYPE_BF16),
                       nullptr, q, rows, cols, format == GPTRT_FP8_E4M3,
                       nullptr, nullptr, alongCols ? 2 : 1, sums, own);
  checkLaunch(db ? "gptrt_scale_quantize_rows_transposed_bgrad"
                 : "gptrt_scale_quantize_rows_transposed");
  biasGradientAfterCast(sums, x, xDtype, db, dbDtype, rows, cols);
}

void DeviceImpl::scaledMatmulRowwise(
    const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, const float *bias, void *c, int64_t batch, int64_t m,
    int64_t n, int64_t k, bool transA, bool transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
    bool fastAccum, bool rowwiseA, bool rowwiseB, int64_t outDtype) {
  if (batch > 1 && strideC != m * n)
    throw std::invalid_argument("stride_c " + std::to_string(strideC) +
                                ", expected m * n = " + std::to_string(m * n) +
                                " (rowwise scales index contiguous rows)");
  if (bias != nullptr && outDtype == kAccumulateF32)
    throw std::logic_error("scaledMatmulRowwise: an accumulating result has "
                           "no bias");
  const int64_t total = batch * m * n;
  // One GEMM scaled by the reciprocals, where cuBLASLt offers it; a bias
  // is then added to the stored result as the unscaling pass below does.
  if (rowwiseOuterVecGemm(a, b, scaleA, rowwiseA, scaleB, rowwiseB, c, batch, m,
                          n, k, transA, transB, strideA, strideB, strideC,
                          formatA, formatB, fastAccum, outDtype)) {
    if (bias)
      add(c, outDtype, bias, GPTRT_DTYPE_F32, c, outDtype, batch * m, n, true);
    return;
  }
  // The unit-scale product in f32: in c itself, or in scratch for a bf16
  // c or one it is added to.
  const RowwiseStore store = outDtype == GPTRT_DTYPE_BF16 ? RowwiseStore::kBf16
                             : outDtype == kAccumulateF32
                                 ? RowwiseStore::kAddToF32
                                 : RowwiseStore::kF32;
  float *sum =
      store != RowwiseStore::kF32
          ? static_cast<float *>(scratch(size_t(total) * sizeof(float)))
          : static_cast<float *>(c);
  scaledMatmul(a, b, unitScales_, unitScales_ + 1, sum, batch, m, n, k, transA,
               transB, strideA, strideB, strideC, formatA, formatB, fastAccum,
               GPTRT_DTYPE_F32);
  if (total == 0)
    return;
  unscaleRowwiseKernel<<<gridFor(total), 256, 0, stream_>>>(
      sum, c, store, batch * m, n, scaleA, rowwiseA, scaleB, rowwiseB, bias);
  checkLaunch("gptrt_gemm.fp8_rowwise unscale");
}

void DeviceImpl::beginCastStats(size_t slots) {
  if (slots > castStatsCapacity_) {
    check(cudaFree(castStats_), "cudaFree(cast statistics)");
    castStats_ = nullptr;
    castStatsCapacity_ = 0;
    check(cudaMalloc(&castStats_, slots * sizeof(SlotCounters)),
          "cudaMalloc(cast statistics)");
    castStatsCapacity_ = slots;
  }
  castStatsSlots_ = slots;
  if (slots)
    zero(castStats_, slots * sizeof(SlotCounters));
}

namespace {
CastSource storedForStats(const void *x, int64_t dtype) {
  if (dtype != GPTRT_DTYPE_F32 && dtype != GPTRT_DTYPE_BF16)
    throw std::invalid_argument("dtype " + std::to_string(dtype) +
                                ", expected f32 (1) or bf16 (2)");
  return CastSource::stored(x, dtype == GPTRT_DTYPE_BF16);
}
} // namespace

void DeviceImpl::recordCastStats(const void *x, int64_t dtype, int64_t n,
                                 const float *scale, int64_t format,
                                 int64_t slot) {
  launchCastStats(storedForStats(x, dtype), n, /*cols=*/1, scale,
                  /*scaleAxis=*/0, format, slot);
}

void DeviceImpl::recordRowwiseCastStats(const void *x, int64_t dtype,
                                        int64_t rows, int64_t cols,
                                        const float *scales, bool alongCols,
                                        int64_t format, int64_t slot) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("rows, cols = " + std::to_string(rows) + ", " +
                                std::to_string(cols) + ", expected >= 0");
  launchCastStats(storedForStats(x, dtype), rows * cols, cols, scales,
                  alongCols ? 2 : 1, format, slot);
}

void DeviceImpl::launchCastStats(const CastSource &x, int64_t n, int64_t cols,
                                 const float *scale, int scaleAxis,
                                 int64_t format, int64_t slot) {
  requireFormat(format);
  if (slot < 0 || static_cast<size_t>(slot) >= castStatsSlots_)
    throw std::invalid_argument(
        "stat_slot " + std::to_string(slot) + ", expected < " +
        std::to_string(castStatsSlots_) + " (the manifest's fp8_stats)");
  if (n <= 0)
    return;
  SlotCounters *counters = static_cast<SlotCounters *>(castStats_) + slot;
  if (scaleAxis != 0)
    resetSlotScaleKernel<<<1, 1, 0, stream_>>>(counters);
  unsigned blocks = gridFor(n, 512);
  blocks = blocks > 1024 ? 1024 : blocks;
  if (format == GPTRT_FP8_E4M3)
    castStatsKernel<__NV_E4M3>
        <<<blocks, 512, 0, stream_>>>(x, n, scale, scaleAxis, cols, counters);
  else
    castStatsKernel<__NV_E5M2>
        <<<blocks, 512, 0, stream_>>>(x, n, scale, scaleAxis, cols, counters);
  checkLaunch("FP8 cast statistics");
}

void DeviceImpl::endCastStats(std::vector<CastStats> &out) {
  std::vector<SlotCounters> counters(castStatsSlots_);
  if (!counters.empty())
    toHost(counters.data(), castStats_, counters.size() * sizeof(SlotCounters));
  out.resize(counters.size());
  for (size_t i = 0; i < counters.size(); ++i) {
    const SlotCounters &c = counters[i];
    unsigned bits = c.amaxBits;
    std::memcpy(&out[i].amax, &bits, sizeof bits);
    out[i].scale = c.scale;
    out[i].underflow = static_cast<int64_t>(c.underflow);
    out[i].saturated = static_cast<int64_t>(c.saturated);
    out[i].elements = static_cast<int64_t>(c.elements);
  }
}

Fp8Sink DeviceImpl::sinkFor(const Fp8Epilogue &fp8) {
  Fp8Sink sink;
  if (fp8.amax == nullptr)
    return sink;
  if (fp8.q != nullptr)
    requireFormat(fp8.format);
  // Built in place: zero, then atomic maxima of the blocks.
  zero(fp8.amax, sizeof(float));
  sink.amax = reinterpret_cast<unsigned *>(fp8.amax);
  sink.scale = fp8.scale;
  sink.q = fp8.q;
  sink.e4m3 = fp8.format == GPTRT_FP8_E4M3;
  return sink;
}

void DeviceImpl::castEpilogue(const void *out, int64_t dtype, int64_t rows,
                              int64_t cols, float *amax, const float *scale,
                              uint8_t *q, int64_t format, bool transpose) {
  if (dtype != GPTRT_DTYPE_F32 && dtype != GPTRT_DTYPE_BF16)
    throw std::invalid_argument("out_dtype " + std::to_string(dtype) +
                                ", expected f32 (1) or bf16 (2)");
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("rows, cols = " + std::to_string(rows) +
                                ", " + std::to_string(cols) +
                                ", expected >= 0");
  const bool bf16 = dtype == GPTRT_DTYPE_BF16;
  const int64_t n = rows * cols;
  if (q != nullptr)
    requireFormat(format);
  // The result is built in place: zero, then atomic maxima of the blocks.
  zero(amax, sizeof(float));
  if (n == 0)
    return;
  unsigned *bits = reinterpret_cast<unsigned *>(amax);
  unsigned blocks = gridFor(n, 512);
  if (blocks > 1024)
    blocks = 1024; // a grid-stride loop covers the rest
  const bool e4m3 = format == GPTRT_FP8_E4M3;
  if (q == nullptr) {
    amaxAnyKernel<<<blocks, 512, 0, stream_>>>(out, bf16, n, bits);
  } else if (!transpose) {
    if (e4m3)
      amaxCastKernel<__NV_E4M3>
          <<<blocks, 512, 0, stream_>>>(out, bf16, scale, q, n, bits);
    else
      amaxCastKernel<__NV_E5M2>
          <<<blocks, 512, 0, stream_>>>(out, bf16, scale, q, n, bits);
  } else {
    launchTransposedCast(CastSource::stored(out, bf16), scale, q, rows, cols,
                         e4m3, bits);
  }
  checkLaunch("fused epilogue (amax and cast)");
}

void DeviceImpl::launchTransposedCast(const CastSource &x, const float *scale,
                                      uint8_t *q, int64_t rows, int64_t cols,
                                      bool e4m3, unsigned *amax,
                                      uint8_t *qRowMajor, int scaleAxis,
                                      float *colSums,
                                      const ScaleFromAmax &own) {
  const CastScale castScale(scale, own);
  const int64_t tileCols = (cols + kCastTile - 1) / kCastTile,
                tileRows = (rows + kCastTile - 1) / kCastTile;
  if (tileCols > 0x7FFFFFFF)
    throw std::invalid_argument("transposed FP8 cast of " +
                                std::to_string(cols) +
                                " columns: expected fewer than 2^36");
  dim3 grid(unsigned(tileCols), unsigned(tileRows < 65535 ? tileRows : 65535));
  if (e4m3)
    amaxCastTransposedKernel<__NV_E4M3><<<grid, 256, 0, stream_>>>(
        x, castScale, q, rows, cols, amax, qRowMajor, scaleAxis, colSums);
  else
    amaxCastTransposedKernel<__NV_E5M2><<<grid, 256, 0, stream_>>>(
        x, castScale, q, rows, cols, amax, qRowMajor, scaleAxis, colSums);
}

void DeviceImpl::quantizeFp8Transposed(const void *x, int64_t xDtype,
                                       const float *scale, uint8_t *q,
                                       int64_t rows, int64_t cols,
                                       int64_t format,
                                       const ScaleFromAmax &own) {
  requireFormat(format);
  if (rows == 0 || cols == 0) {
    scaleWithoutCast(own);
    return;
  }
  launchTransposedCast(CastSource::stored(x, xDtype == GPTRT_DTYPE_BF16), scale,
                       q, rows, cols, format == GPTRT_FP8_E4M3, nullptr,
                       nullptr, 0, nullptr, own);
  checkLaunch("gptrt_quantize_fp8_transposed");
}

float *DeviceImpl::castTileSums(const void *db, int64_t rows, int64_t cols) {
  if (db == nullptr || rows <= kCastTile || cols == 0)
    return nullptr;
  const int64_t tileRows = (rows + kCastTile - 1) / kCastTile;
  return static_cast<float *>(
      scratch(size_t(tileRows * cols + reduceRowsScratch(tileRows, cols)) * 4));
}

void DeviceImpl::biasGradientAfterCast(float *sums, const void *x,
                                       int64_t xDtype, void *db,
                                       int64_t dbDtype, int64_t rows,
                                       int64_t cols) {
  if (db == nullptr)
    return;
  const int64_t tileRows = (rows + kCastTile - 1) / kCastTile;
  if (sums != nullptr)
    sumRowLevels(sums, GPTRT_DTYPE_F32, tileRows, cols, sums + tileRows * cols,
                 db, dbDtype);
  else
    reduceRows(x, xDtype, db, dbDtype, rows, cols);
}

void DeviceImpl::quantizeFp8Dual(const void *x, int64_t xDtype,
                                 const float *scale, uint8_t *q, uint8_t *qT,
                                 int64_t rows, int64_t cols, int64_t format,
                                 void *db, int64_t dbDtype,
                                 const ScaleFromAmax &own) {
  requireFormat(format);
  float *sums = castTileSums(db, rows, cols);
  if (rows != 0 && cols != 0) {
    launchTransposedCast(CastSource::stored(x, xDtype == GPTRT_DTYPE_BF16),
                         scale, qT, rows, cols, format == GPTRT_FP8_E4M3,
                         nullptr, q, 0, sums, own);
    checkLaunch("gptrt_quantize_fp8_dual");
  } else {
    scaleWithoutCast(own);
  }
  biasGradientAfterCast(sums, x, xDtype, db, dbDtype, rows, cols);
}

} // namespace gptrt::cuda
