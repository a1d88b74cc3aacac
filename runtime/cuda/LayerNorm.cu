// LayerNorm forward and backward. Rows whose width is a multiple of 8 (up
// to kMaxRowVectors * 8, with 16-byte aligned operands) take the vector
// kernels: a warp per row, 16-byte loads and stores, warp shuffles only
// (llm.c's layout); other rows take the scalar kernels, a block per row.
// dweight and dbias are summed across rows through per-block partial rows
// in scratch and a second pass, so they are deterministic (no atomics).
// Activations and their gradients are f32 or bf16 storage (Storage.cuh);
// weights, statistics and all arithmetic are f32.
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Fp8Sink.cuh"
#include "runtime/cuda/Reduce.cuh"
#include "runtime/cuda/Storage.cuh"

#include <algorithm>
#include <initializer_list>
#include <type_traits>

namespace gptrt::cuda {

namespace {

constexpr int kThreads = 256;

// The vector kernels: kRowWarps warps per block, a warp per row; lane l
// holds the row's 8-element vectors l, l + 32, ..., at most kMaxLaneVectors
// of them, so rows up to 2048 wide (GPT-2 1.5B's 1600 included).
constexpr int kRowWarps = 4;
constexpr int kMaxLaneVectors = 8;
constexpr int64_t kMaxRowVectors = 32 * kMaxLaneVectors;

// The rest of a row's layernorm once each thread has summed its elements
// of x (j = threadIdx.x, + blockDim.x, ...): a second pass for the variance
// as the CPU reference does (E[x^2] - E[x]^2 cancels badly when |mean| >>
// std), then the output; the row is re-read from L2/L1, each thread
// reading only its own elements. An output without data is only fed to
// the sink (layerNormCastDual).
__device__ void finishLayerNormRow(float sum, Storage x, const float *w,
                                   const float *b, Storage out, float *mean,
                                   float *rstd, int64_t r, int64_t width,
                                   float eps, const Fp8Sink &sink) {
  const int64_t row = r * width;
  const float mu = blockSum(sum) / width;
  float sq = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    float d = x.load(row + j) - mu;
    sq += d * d;
  }
  const float var = blockSum(sq) / width;
  const float s = rsqrtf(var + eps);
  const float scale = sink.scaleValue();
  unsigned m = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const float y = out.rounded((x.load(row + j) - mu) * s * w[j] + b[j]);
    if (out.data)
      out.store(row + j, y);
    sink.put(m, row + j, y, scale);
  }
  sink.finish(m);
  if (threadIdx.x == 0) {
    mean[r] = mu;
    rstd[r] = s;
  }
}

__global__ void layerNormForwardKernel(Storage x, const float *w,
                                       const float *b, Storage out, float *mean,
                                       float *rstd, int64_t width, float eps,
                                       Fp8Sink sink) {
  const int64_t r = blockIdx.x, row = r * width;
  float sum = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    sum += x.load(row + j);
  finishLayerNormRow(sum, x, w, b, out, mean, rstd, r, width, eps, sink);
}

// The residual add fused in front: x = a + b is stored and its rounded
// value summed in the same first pass, so the statistics and the output
// are those of layerNormForwardKernel over the stored x.
__global__ void addLayerNormForwardKernel(Storage a, Storage b, Storage x,
                                          const float *w, const float *bias,
                                          Storage out, float *mean, float *rstd,
                                          int64_t width, float eps,
                                          Fp8Sink sink) {
  const int64_t r = blockIdx.x, row = r * width;
  float sum = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const float v = x.rounded(a.load(row + j) + b.load(row + j));
    x.store(row + j, v);
    sum += v;
  }
  finishLayerNormRow(sum, x, w, bias, out, mean, rstd, r, width, eps, sink);
}

// w[c .. c + 7] (16-byte aligned, as the host checks).
__device__ void loadWeights8(const float *w, int64_t c, float (&v)[8]) {
  const float4 lo = reinterpret_cast<const float4 *>(w + c)[0];
  const float4 hi = reinterpret_cast<const float4 *>(w + c)[1];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
  v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

// layerNormForwardKernel / addLayerNormForwardKernel for vector rows, a
// warp per row with the row in registers (kVecs vectors per lane): the
// statistics by warp shuffles, the variance as a second pass over the
// registers, the output in 16-byte stores (none without out.data: only
// the sink takes it). With kAdd, x = a + b is stored and its rounded
// values make the row.
template <int kVecs, bool kAdd>
__global__ void
layerNormForwardRowsKernel(Storage a, Storage b, Storage x, const float *w,
                           const float *bias, Storage out, float *mean,
                           float *rstd, int64_t rows, int64_t width, float eps,
                           Fp8Sink sink) {
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t(blockIdx.x) * kRowWarps + threadIdx.x / 32;
  const int64_t vectors = width / 8;
  const float scale = sink.scaleValue();
  unsigned m = 0;
  if (r < rows) { // the whole warp or none of it
    const int64_t row = r * width;
    float v[kVecs][8];
    float sum = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int64_t c = 8 * (lane + 32 * int64_t(k));
      if (c >= width)
        continue;
      if (kAdd) {
        float bv[8];
        a.load8(row + c, v[k]);
        b.load8(row + c, bv);
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[k][i] = x.rounded(v[k][i] + bv[i]);
        x.store8(row + c, v[k]);
      } else {
        x.load8(row + c, v[k]);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
        sum += v[k][i];
    }
    const float mu = warpSum(sum) / width;
    float sq = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k)
      if (lane + 32 * int64_t(k) < vectors)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float d = v[k][i] - mu;
          sq += d * d;
        }
    const float s = rsqrtf(warpSum(sq) / width + eps);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int64_t c = 8 * (lane + 32 * int64_t(k));
      if (c >= width)
        continue;
      float wv[8], bv[8], y[8];
      loadWeights8(w, c, wv);
      loadWeights8(bias, c, bv);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        y[i] = out.rounded((v[k][i] - mu) * s * wv[i] + bv[i]);
        sink.put(m, row + c + i, y[i], scale);
      }
      if (out.data)
        out.store8(row + c, y);
    }
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = s;
    }
  }
  sink.finish(m); // every thread of the block gets here
}

// Block `blockIdx.x` handles rows blockIdx.x, + gridDim.x, ...: dx of each,
// and its own partial sums of dweight and dbias in partial[blockIdx.x].
// dx is rounded as `dx` stores it; with a residual (resid.data non-null)
// it is then added to the residual and the sum stored through `out`, as
// gptrt_add would (out is dx's own storage otherwise).
__global__ void layerNormBackwardKernel(Storage dout, Storage x, const float *w,
                                        const float *mean, const float *rstd,
                                        Storage dx, Storage resid, Storage out,
                                        float *partial, int64_t rows,
                                        int64_t width, Fp8Sink sink) {
  float *pw = partial + int64_t(blockIdx.x) * 2 * width;
  float *pb = pw + width;
  const float scale = sink.scaleValue();
  unsigned amaxBits = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    pw[j] = pb[j] = 0;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t row = r * width;
    const float m = mean[r], s = rstd[r];
    float dsum = 0, dnsum = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      float norm = (x.load(row + j) - m) * s;
      float dnorm = w[j] * dout.load(row + j);
      dsum += dnorm;
      dnsum += dnorm * norm;
    }
    const float dmean = blockSum(dsum) / width;
    const float dnmean = blockSum(dnsum) / width;
    // Each thread owns the same columns in every row, so its partial sums
    // need no synchronisation.
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      float norm = (x.load(row + j) - m) * s;
      float d = dout.load(row + j);
      float dnorm = w[j] * d;
      pb[j] += d;
      pw[j] += norm * d;
      float g = dx.rounded((dnorm - dmean - norm * dnmean) * s);
      if (resid.data)
        g = out.rounded(resid.load(row + j) + g);
      out.store(row + j, g);
      sink.put(amaxBits, row + j, g, scale);
    }
  }
  sink.finish(amaxBits); // every thread of the block gets here
}

// layerNormBackwardKernel for vector rows: warp `w` of block `blockIdx.x`
// handles rows (blockIdx.x * kRowWarps + w) + k * gridDim.x * kRowWarps,
// keeping its partial dweight and dbias for its lanes' columns in
// registers; the block's warps then add theirs in warp order in shared
// memory (2 * width floats, dynamic) and the block writes one partial row
// pair, as the scalar kernel does. x and dout are read twice per row, the
// second time from L1.
template <int kVecs>
__global__ void
layerNormBackwardRowsKernel(Storage dout, Storage x, const float *w,
                            const float *mean, const float *rstd, Storage dx,
                            Storage resid, Storage out, float *partial,
                            int64_t rows, int64_t width, Fp8Sink sink) {
  extern __shared__ float blockPartial[]; // [2][width]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float scale = sink.scaleValue();
  unsigned amaxBits = 0;
  float pw[kVecs][8] = {}, pb[kVecs][8] = {};
  for (int64_t r = int64_t(blockIdx.x) * kRowWarps + warp; r < rows;
       r += int64_t(gridDim.x) * kRowWarps) {
    const int64_t row = r * width;
    const float mu = mean[r], s = rstd[r];
    float dsum = 0, dnsum = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int64_t c = 8 * (lane + 32 * int64_t(k));
      if (c >= width)
        continue;
      float xv[8], dv[8], wv[8];
      x.load8(row + c, xv);
      dout.load8(row + c, dv);
      loadWeights8(w, c, wv);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float norm = (xv[i] - mu) * s, dnorm = wv[i] * dv[i];
        dsum += dnorm;
        dnsum += dnorm * norm;
      }
    }
    const float dmean = warpSum(dsum) / width;
    const float dnmean = warpSum(dnsum) / width;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int64_t c = 8 * (lane + 32 * int64_t(k));
      if (c >= width)
        continue;
      float xv[8], dv[8], wv[8], rv[8], g[8];
      x.load8(row + c, xv);
      dout.load8(row + c, dv);
      loadWeights8(w, c, wv);
      if (resid.data)
        resid.load8(row + c, rv);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float norm = (xv[i] - mu) * s, dnorm = wv[i] * dv[i];
        pb[k][i] += dv[i];
        pw[k][i] += norm * dv[i];
        g[i] = dx.rounded((dnorm - dmean - norm * dnmean) * s);
        if (resid.data)
          g[i] = out.rounded(rv[i] + g[i]);
        sink.put(amaxBits, row + c + i, g[i], scale);
      }
      out.store8(row + c, g);
    }
  }
  for (int turn = 0; turn < kRowWarps; ++turn) {
    if (warp == turn)
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const int64_t c = 8 * (lane + 32 * int64_t(k));
        if (c >= width)
          continue;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          blockPartial[c + i] =
              turn ? blockPartial[c + i] + pw[k][i] : pw[k][i];
          blockPartial[width + c + i] =
              turn ? blockPartial[width + c + i] + pb[k][i] : pb[k][i];
        }
      }
    __syncthreads();
  }
  float *own = partial + int64_t(blockIdx.x) * 2 * width;
  for (int64_t j = threadIdx.x; j < 2 * width; j += blockDim.x)
    own[j] = blockPartial[j];
  sink.finish(amaxBits); // every thread of the block gets here
}

// dw[j] = sum over blocks g of partial[g][0][j], db likewise. A block
// sums 32 columns: its warp w adds the partial rows g = w, w + kSumWarps,
// ... (a lane per column: coalesced), then warp 0 adds the warps' sums in
// warp order -- a fixed order, so deterministic, and kSumWarps times the
// threads of one serial sum per column.
constexpr int kSumWarps = 16;

__global__ void sumPartialsKernel(const float *partial, Storage dw, Storage db,
                                  int blocks, int64_t width) {
  __shared__ float sums[2][kSumWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t j = int64_t(blockIdx.x) * 32 + lane;
  float sw = 0, sb = 0;
  if (j < width)
    for (int g = warp; g < blocks; g += kSumWarps) {
      sw += partial[int64_t(g) * 2 * width + j];
      sb += partial[int64_t(g) * 2 * width + width + j];
    }
  sums[0][warp][lane] = sw;
  sums[1][warp][lane] = sb;
  __syncthreads();
  if (warp == 0 && j < width) {
    float tw = 0, tb = 0;
    for (int w = 0; w < kSumWarps; ++w) {
      tw += sums[0][w][lane];
      tb += sums[1][w][lane];
    }
    dw.store(j, tw);
    db.store(j, tb);
  }
}

// The forward kernels take one block per row: false for no rows, and a
// clear error for more rows than a grid holds.
bool rowsPerBlockFit(int64_t rows) {
  if (rows > 2147483647)
    throw std::invalid_argument("rows = " + std::to_string(rows) +
                                ", expected < 2^31 (one block per row)");
  return rows > 0;
}

// Vectors per lane for the vector kernels, or 0 where a row is not whole
// 16-byte vectors (width not a multiple of 8, an operand not 16-byte
// aligned) or is too wide for them.
int laneVectors(int64_t width, std::initializer_list<const void *> operands) {
  if (width <= 0 || width % 8 != 0 || width / 8 > kMaxRowVectors)
    return 0;
  for (const void *p : operands)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return 0;
  return int((width / 8 + 31) / 32);
}

// Calls f with std::integral_constant<int, vecs> (1 .. kMaxLaneVectors), so
// that each row width gets a kernel whose registers fit it.
template <typename F> void withLaneVectors(int vecs, F &&f) {
  switch (vecs) {
  case 1:
    return f(std::integral_constant<int, 1>{});
  case 2:
    return f(std::integral_constant<int, 2>{});
  case 3:
    return f(std::integral_constant<int, 3>{});
  case 4:
    return f(std::integral_constant<int, 4>{});
  case 5:
    return f(std::integral_constant<int, 5>{});
  case 6:
    return f(std::integral_constant<int, 6>{});
  case 7:
    return f(std::integral_constant<int, 7>{});
  case 8:
    return f(std::integral_constant<int, 8>{});
  }
  static_assert(kMaxLaneVectors == 8, "one case per lane vector count");
  throw std::logic_error("withLaneVectors: " + std::to_string(vecs) +
                         " vectors per lane, expected 1 to 8");
}

// Blocks for a warp-per-row forward launch.
unsigned rowWarpBlocks(int64_t rows) {
  return unsigned((rows + kRowWarps - 1) / kRowWarps);
}

} // namespace

void DeviceImpl::layerNormForward(const void *x, int64_t xDtype,
                                  const float *w, const float *b, void *out,
                                  int64_t outDtype, float *mean, float *rstd,
                                  int64_t rows, int64_t width, float eps) {
  layerNormForwardFp8(x, xDtype, w, b, out, outDtype, mean, rstd, rows, width,
                      eps, Fp8Epilogue{});
}

void DeviceImpl::layerNormForwardFp8(const void *x, int64_t xDtype,
                                     const float *w, const float *b,
                                     void *out, int64_t outDtype, float *mean,
                                     float *rstd, int64_t rows, int64_t width,
                                     float eps, const Fp8Epilogue &fp8) {
  // The sink first: its amax is zeroed even when there are no rows.
  const Fp8Sink sink = sinkFor(fp8);
  if (!rowsPerBlockFit(rows))
    return;
  if (int vecs = laneVectors(width, {x, w, b, out})) {
    withLaneVectors(vecs, [&](auto lanes) {
      layerNormForwardRowsKernel<decltype(lanes)::value, false>
          <<<rowWarpBlocks(rows), 32 * kRowWarps, 0, stream_>>>(
              Storage(nullptr, xDtype), Storage(nullptr, xDtype),
              Storage(x, xDtype), w, b, Storage(out, outDtype), mean, rstd,
              rows, width, eps, sink);
    });
  } else {
    layerNormForwardKernel<<<unsigned(rows), kThreads, 0, stream_>>>(
        Storage(x, xDtype), w, b, Storage(out, outDtype), mean, rstd, width,
        eps, sink);
  }
  checkLaunch("gptrt_layernorm_fwd");
}

void DeviceImpl::addLayerNormForward(const void *a, int64_t aDtype,
                                     const void *b, int64_t bDtype,
                                     const float *w, const float *bias, void *x,
                                     int64_t xDtype, void *out,
                                     int64_t outDtype, float *mean, float *rstd,
                                     int64_t rows, int64_t width, float eps,
                                     const Fp8Epilogue &fp8) {
  // The sink first: its amax is zeroed even when there are no rows.
  const Fp8Sink sink = sinkFor(fp8);
  if (!rowsPerBlockFit(rows))
    return;
  if (int vecs = laneVectors(width, {a, b, x, w, bias, out})) {
    withLaneVectors(vecs, [&](auto lanes) {
      layerNormForwardRowsKernel<decltype(lanes)::value, true>
          <<<rowWarpBlocks(rows), 32 * kRowWarps, 0, stream_>>>(
              Storage(a, aDtype), Storage(b, bDtype), Storage(x, xDtype), w,
              bias, Storage(out, outDtype), mean, rstd, rows, width, eps, sink);
    });
  } else {
    addLayerNormForwardKernel<<<unsigned(rows), kThreads, 0, stream_>>>(
        Storage(a, aDtype), Storage(b, bDtype), Storage(x, xDtype), w, bias,
        Storage(out, outDtype), mean, rstd, width, eps, sink);
  }
  checkLaunch("gptrt_add_layernorm_fwd");
}

void DeviceImpl::layerNormCastDual(const void *a, int64_t aDtype, const void *b,
                                   int64_t bDtype, void *x, int64_t xDtype,
                                   const float *w, const float *bias,
                                   int64_t outDtype, float *mean, float *rstd,
                                   int64_t rows, int64_t width, float eps,
                                   const Fp8Epilogue &fp8, uint8_t *qT,
                                   int64_t statSlot, int64_t statSlotT) {
  // The statistics read the output's values, which only a logging step
  // (run eagerly, never captured) stores, into scratch.
  const int64_t n = rows * width;
  void *y = nullptr;
  if (statSlot >= 0 || statSlotT >= 0)
    y = scratch(size_t(n) * (outDtype == GPTRT_DTYPE_BF16 ? sizeof(uint16_t)
                                                          : sizeof(float)));
  if (a)
    addLayerNormForward(a, aDtype, b, bDtype, w, bias, x, xDtype, y, outDtype,
                        mean, rstd, rows, width, eps, fp8);
  else
    layerNormForwardFp8(x, xDtype, w, bias, y, outDtype, mean, rstd, rows,
                        width, eps, fp8);
  for (int64_t slot : {statSlot, statSlotT})
    if (slot >= 0)
      recordCastStats(y, outDtype, n, fp8.scale, fp8.format, slot);
  // Both layouts hold the same codes: the transposed cast at the same
  // scale is the row-major codes transposed, a byte per element read
  // instead of the stored output's two or four.
  transposeBytes(fp8.q, qT, rows, width, /*batch=*/1, /*srcStride=*/0);
}

void DeviceImpl::layerNormBackward(const void *dout, int64_t doutDtype,
                                   const void *x, int64_t xDtype,
                                   const float *w, const float *mean,
                                   const float *rstd, void *dx, int64_t dxDtype,
                                   void *dw, int64_t dwDtype, void *db,
                                   int64_t dbDtype, int64_t rows, int64_t width,
                                   const Fp8Epilogue &fp8,
                                   const ResidualGradient &residual) {
  // The sink first: its amax is zeroed even when there is nothing to do.
  const Fp8Sink sink = sinkFor(fp8);
  if (width <= 0)
    return;
  // Enough blocks to fill the GPU, few enough that the partials stay small.
  const int64_t perBlock = std::max<int64_t>(rows, 1);
  const int vecs = laneVectors(
      width, {dout, x, w, dx, residual.resid ? residual.resid : dx});
  const int64_t wanted =
      vecs ? (perBlock + kRowWarps - 1) / kRowWarps : perBlock;
  const int blocks = int(std::min<int64_t>(wanted, 512));
  float *partial = static_cast<float *>(
      scratch(size_t(blocks) * 2 * size_t(width) * sizeof(float)));
  const Storage out(dx, residual.resid ? residual.sumDtype : dxDtype);
  const Storage dxStorage(dx, dxDtype),
      resid(residual.resid, residual.residDtype);
  if (vecs) {
    withLaneVectors(vecs, [&](auto lanes) {
      layerNormBackwardRowsKernel<decltype(lanes)::value>
          <<<blocks, 32 * kRowWarps, 2 * width * sizeof(float), stream_>>>(
              Storage(dout, doutDtype), Storage(x, xDtype), w, mean, rstd,
              dxStorage, resid, out, partial, rows, width, sink);
    });
  } else {
    layerNormBackwardKernel<<<blocks, kThreads, 0, stream_>>>(
        Storage(dout, doutDtype), Storage(x, xDtype), w, mean, rstd, dxStorage,
        resid, out, partial, rows, width, sink);
  }
  checkLaunch("gptrt_layernorm_bwd");
  sumPartialsKernel<<<unsigned((width + 31) / 32), 32 * kSumWarps, 0,
                      stream_>>>(partial, Storage(dw, dwDtype),
                                 Storage(db, dbDtype), blocks, width);
  checkLaunch("gptrt_layernorm_bwd (sum of partials)");
}

} // namespace gptrt::cuda
