// The FP8 epilogue a producer kernel runs on each value it stores, for the
// output epilogue of gptrt.h (amax, and cast without transpose): the
// largest magnitude of the stored values and, with codes, their FP8 cast
// at a scale known before the kernel runs -- in the producer's own pass
// over its output instead of a second pass that reads the output again.
// An inactive sink (no amax) does nothing, so one kernel serves the call
// without and with the epilogue; whether it is active is the same for
// every thread.
#ifndef GPTRT_CUDA_FP8SINK_CUH
#define GPTRT_CUDA_FP8SINK_CUH

#include "runtime/cuda/Fp8Codes.cuh"
#include "runtime/cuda/Reduce.cuh"

#include <cstdint>

namespace gptrt::cuda {

struct Fp8Sink {
  // The amax's f32 bits, zeroed before the kernel and atomically maxed by
  // one thread per block: the bits of |v| order as the values do, and a
  // NaN's are above infinity's, so a NaN wins as it does on the CPU.
  unsigned *amax = nullptr;
  const float *scale = nullptr; // with q
  uint8_t *q = nullptr;         // codes, in the output's (row-major) order
  bool e4m3 = true;

  __host__ __device__ bool active() const { return amax != nullptr; }

  // A grid-stride launch feeding an active sink takes at most 2048 blocks,
  // so that few atomics meet on the one amax.
  __host__ unsigned cappedGrid(unsigned blocks) const {
    return active() && blocks > 2048 ? 2048u : blocks;
  }

  // The scale, read once per thread before its loop (0 without codes).
  __device__ float scaleValue() const { return q ? *scale : 0.0f; }

  // v: the value as stored at element i (after rounding to the storage).
  __device__ void put(unsigned &m, int64_t i, float v, float s) const {
    if (!amax)
      return;
    m = max(m, __float_as_uint(fabsf(v)));
    if (q)
      q[i] = e4m3 ? toFp8<__NV_E4M3>(__fmul_rn(v, s))
                  : toFp8<__NV_E5M2>(__fmul_rn(v, s));
  }

  // After the thread's last put; every thread of the block calls it.
  __device__ void finish(unsigned m) const {
    if (!amax)
      return;
    m = blockMax(m, 0u);
    if (threadIdx.x == 0 && m != 0)
      atomicMax(amax, m);
  }
};

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_FP8SINK_CUH
