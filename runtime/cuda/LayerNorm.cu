// LayerNorm forward and backward: one block per row for the statistics and
// dx; dweight and dbias are summed across rows through per-block partial
// rows in scratch and a second pass, so they are deterministic (no atomics).
// Activations and their gradients are f32 or bf16 storage (Storage.cuh);
// weights, statistics and all arithmetic are f32.
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Fp8Sink.cuh"
#include "runtime/cuda/Reduce.cuh"
#include "runtime/cuda/Storage.cuh"

namespace gptrt::cuda {

namespace {

constexpr int kThreads = 256;

// The rest of a row's layernorm once each thread has summed its elements
// of x (j = threadIdx.x, + blockDim.x, ...): a second pass for the variance
// as the CPU reference does (E[x^2] - E[x]^2 cancels badly when |mean| >>
// std), then the output; the row is re-read from L2/L1, each thread
// reading only its own elements.
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

// dw[j] = sum over blocks of partial[block][0][j], db likewise.
__global__ void sumPartialsKernel(const float *partial, Storage dw, Storage db,
                                  int blocks, int64_t width) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < width;
       j += int64_t(gridDim.x) * blockDim.x) {
    float sw = 0, sb = 0;
    for (int g = 0; g < blocks; ++g) {
      sw += partial[int64_t(g) * 2 * width + j];
      sb += partial[int64_t(g) * 2 * width + width + j];
    }
    dw.store(j, sw);
    db.store(j, sb);
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
  layerNormForwardKernel<<<unsigned(rows), kThreads, 0, stream_>>>(
      Storage(x, xDtype), w, b, Storage(out, outDtype), mean, rstd, width,
      eps, sink);
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
  addLayerNormForwardKernel<<<unsigned(rows), kThreads, 0, stream_>>>(
      Storage(a, aDtype), Storage(b, bDtype), Storage(x, xDtype), w, bias,
      Storage(out, outDtype), mean, rstd, width, eps, sink);
  checkLaunch("gptrt_add_layernorm_fwd");
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
  const int blocks = int(rows < 512 ? (rows < 1 ? 1 : rows) : 512);
  float *partial = static_cast<float *>(
      scratch(size_t(blocks) * 2 * size_t(width) * sizeof(float)));
  const Storage out(dx, residual.resid ? residual.sumDtype : dxDtype);
  layerNormBackwardKernel<<<blocks, kThreads, 0, stream_>>>(
      Storage(dout, doutDtype), Storage(x, xDtype), w, mean, rstd,
      Storage(dx, dxDtype), Storage(residual.resid, residual.residDtype), out,
      partial, rows, width, sink);
  checkLaunch("gptrt_layernorm_bwd");
  sumPartialsKernel<<<gridFor(width), 256, 0, stream_>>>(
      partial, Storage(dw, dwDtype), Storage(db, dbDtype), blocks, width);
  checkLaunch("gptrt_layernorm_bwd (sum of partials)");
}

} // namespace gptrt::cuda
