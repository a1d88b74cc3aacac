// Data-movement kernels: arange, copy_blocks (one piece of a split or
// concat), permute (rank <= 6 transpose), bias_add and reduce_rows (the
// bias and its gradient). Simple one-thread-per-element versions, but for
// reduce_rows, a tree of chunk sums; the GEMM epilogues absorb the bias and
// its reduction where cuBLASLt offers them.
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Storage.cuh"

namespace gptrt::cuda {

namespace {

constexpr int kMaxRank = 6;

// Shapes and strides travel by value in the kernel's parameters.
struct PermuteArgs {
  int rank;
  int64_t dstShape[kMaxRank];
  int64_t srcStrideOfDst[kMaxRank];  // src stride of dst dimension i
};

__global__ void permuteKernel(const float *src, float *dst, int64_t n,
                              PermuteArgs p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, from = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      from += (rest % p.dstShape[d]) * p.srcStrideOfDst[d];
      rest /= p.dstShape[d];
    }
    dst[i] = src[from];
  }
}

__global__ void arangeKernel(int32_t *out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = int32_t(i);
}

template <typename T>
__global__ void copyBlocksKernel(const T *src, T *dst, int64_t outer,
                                 int64_t len, int64_t dstStride,
                                 int64_t srcStride, int64_t dstOffset,
                                 int64_t srcOffset) {
  const int64_t n = outer * len;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i / len, j = i % len;
    dst[o * dstStride + dstOffset + j] = src[o * srcStride + srcOffset + j];
  }
}

__global__ void biasAddKernel(const float *bias, float *c, int64_t rows,
                              int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    c[i] += bias[i % cols];
}

// c[p * strideC + i] = sum[p * strideC + i] + bias[i % n], stored as f32 or
// bf16: the bias epilogue of a bf16 GEMM that cuBLASLt could not fuse.
__global__ void biasStoreKernel(const float *sum, const float *bias,
                                Storage c, int64_t batch, int64_t rows,
                                int64_t cols, int64_t strideC) {
  const int64_t perBatch = rows * cols, total = batch * perBatch;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = t / perBatch, i = t % perBatch;
    c.store(p * strideC + i, sum[p * strideC + i] + bias[i % cols]);
  }
}

// One thread per column, rows in index order: deterministic, and the CPU
// reference's summation order (sumRows).
// gptrt_reduce_rows's tree (cpu::sumRowsTree): one level sums each chunk
// of kChunkRows rows per column, in row order, into sums[chunk, column];
// a thread per (column, chunk), adjacent threads on adjacent columns, so
// a [16384, 768] gradient keeps the whole GPU busy instead of 768 threads
// each walking 16384 rows.
constexpr int64_t kChunkRows = 32; // cpu::kSumRowsChunk
constexpr int kReduceThreads = 256;

__global__ void sumChunksKernel(Storage x, float *sums, int64_t rows,
                                int64_t cols, int64_t chunks) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= cols)
    return;
  for (int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
    const int64_t end = min(rows, (c + 1) * kChunkRows);
    float s = 0;
    for (int64_t r = c * kChunkRows; r < end; ++r)
      s += x.load(r * cols + j);
    sums[c * cols + j] = s;
  }
}

// The last level: at most kChunkRows rows, in row order, into out.
__global__ void sumRowsKernel(Storage x, Storage out, int64_t rows,
                              int64_t cols) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < cols;
       j += int64_t(gridDim.x) * blockDim.x) {
    float s = 0;
    for (int64_t r = 0; r < rows; ++r)
      s += x.load(r * cols + j);
    out.store(j, s);
  }
}

} // namespace

void DeviceImpl::arange(int32_t *out, int64_t n) {
  if (n > 2147483647)
    throw std::invalid_argument("n = " + std::to_string(n) +
                                ", expected < 2^31 (int32 positions)");
  if (n <= 0)
    return;
  arangeKernel<<<gridFor(n), 256, 0, stream_>>>(out, n);
  checkLaunch("gptrt_arange");
}

void DeviceImpl::copyBlocks(const void *src, void *dst, int64_t outer,
                            int64_t len, int64_t dstStride, int64_t srcStride,
                            int64_t dstOffset, int64_t srcOffset,
                            int elementBytes) {
  if (outer <= 0 || len <= 0)
    return;
  if (elementBytes == 2)
    copyBlocksKernel<<<gridFor(outer * len), 256, 0, stream_>>>(
        static_cast<const uint16_t *>(src), static_cast<uint16_t *>(dst),
        outer, len, dstStride, srcStride, dstOffset, srcOffset);
  else
    copyBlocksKernel<<<gridFor(outer * len), 256, 0, stream_>>>(
        static_cast<const float *>(src), static_cast<float *>(dst), outer,
        len, dstStride, srcStride, dstOffset, srcOffset);
  checkLaunch("gptrt_copy_blocks");
}

void DeviceImpl::permute(const float *src, float *dst, const int64_t *shape,
                         const int64_t *perm, int rank) {
  if (rank < 0 || rank > kMaxRank)
    throw std::invalid_argument("rank " + std::to_string(rank) +
                                " is out of range, expected 0..6");
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      throw std::invalid_argument("perm is not a permutation of [0, " +
                                  std::to_string(rank) + ")");
    seen[perm[i]] = true;
  }
  int64_t srcStride[kMaxRank];
  int64_t n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    srcStride[d] = n;
    n *= shape[d];
  }
  PermuteArgs p{};
  p.rank = rank;
  for (int i = 0; i < rank; ++i) {
    p.dstShape[i] = shape[perm[i]];
    p.srcStrideOfDst[i] = srcStride[perm[i]];
  }
  if (n <= 0)
    return;
  permuteKernel<<<gridFor(n), 256, 0, stream_>>>(src, dst, n, p);
  checkLaunch("gptrt_permute");
}

void DeviceImpl::biasAdd(const float *bias, float *c, int64_t rows,
                         int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return;
  biasAddKernel<<<gridFor(rows * cols), 256, 0, stream_>>>(bias, c, rows,
                                                           cols);
  checkLaunch("gptrt_bias_add");
}

void DeviceImpl::biasStore(const float *sum, const float *bias, void *c,
                           int64_t cDtype, int64_t batch, int64_t rows,
                           int64_t cols, int64_t strideC) {
  const int64_t total = batch * rows * cols;
  if (total <= 0)
    return;
  biasStoreKernel<<<gridFor(total), 256, 0, stream_>>>(
      sum, bias, Storage(c, cDtype), batch, rows, cols, strideC);
  checkLaunch("gptrt_gemm.bf16+bias (bias and store)");
}

void DeviceImpl::reduceRows(const void *x, int64_t xDtype, void *out,
                            int64_t outDtype, int64_t rows, int64_t cols) {
  if (cols <= 0)
    return;
  const int64_t total = reduceRowsScratch(rows, cols);
  float *sums =
      total ? static_cast<float *>(scratch(size_t(total) * 4)) : nullptr;
  sumRowLevels(x, xDtype, rows, cols, sums, out, outDtype);
}

int64_t DeviceImpl::reduceRowsScratch(int64_t rows, int64_t cols) {
  // Every level's chunk sums, one after another in one block.
  int64_t total = 0;
  for (int64_t n = rows; n > kChunkRows; n = (n + kChunkRows - 1) / kChunkRows)
    total += (n + kChunkRows - 1) / kChunkRows * cols;
  return total;
}

void DeviceImpl::sumRowLevels(const void *x, int64_t xDtype, int64_t n,
                              int64_t cols, float *sums, void *out,
                              int64_t outDtype) {
  if (cols <= 0)
    return;
  Storage level(x, xDtype);
  while (n > kChunkRows) {
    const int64_t chunks = (n + kChunkRows - 1) / kChunkRows;
    const dim3 grid(unsigned((cols + kReduceThreads - 1) / kReduceThreads),
                    unsigned(std::min<int64_t>(chunks, 65535)));
    sumChunksKernel<<<grid, kReduceThreads, 0, stream_>>>(level, sums, n, cols,
                                                          chunks);
    checkLaunch("gptrt_reduce_rows (chunk sums)");
    level = Storage(sums, GPTRT_DTYPE_F32);
    sums += chunks * cols;
    n = chunks;
  }
  sumRowsKernel<<<gridFor(cols, 128), 128, 0, stream_>>>(
      level, Storage(out, outDtype), n, cols);
  checkLaunch("gptrt_reduce_rows");
}

} // namespace gptrt::cuda
