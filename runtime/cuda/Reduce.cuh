// Block-wide sum and max for the CUDA kernels: warp shuffles, then one
// value per warp through shared memory. Every thread of the block must
// call them (they contain __syncthreads) and gets the result.
#ifndef GPTRT_CUDA_REDUCE_CUH
#define GPTRT_CUDA_REDUCE_CUH

namespace gptrt::cuda {

template <typename T> __device__ T warpSum(T v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T> __device__ T warpMax(T v) {
  for (int o = 16; o > 0; o >>= 1)
    v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// blockDim.x must be a multiple of 32 and at most 1024.
template <typename T> __device__ T blockSum(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpSum(v);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  T total = lane < (blockDim.x + 31) / 32 ? partial[lane] : T(0);
  return warpSum(total);
}

template <typename T> __device__ T blockMax(T v, T lowest) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  T m = lane < (blockDim.x + 31) / 32 ? partial[lane] : lowest;
  return warpMax(m);
}

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_REDUCE_CUH
