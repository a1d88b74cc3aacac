// f32-or-bf16 storage as the kernels with a dtype per operand see it
// (gptrt.h): widened to f32 as it is read (exact), rounded to nearest even
// once as it is written (__float2bfloat16, which runtime/cpu/Bf16.h
// emulates). The dtype is one branch per access, the same for every thread.
#ifndef GPTRT_CUDA_STORAGE_CUH
#define GPTRT_CUDA_STORAGE_CUH

#include "runtime/abi/gptrt.h"

#include <cuda_bf16.h>

#include <cstdint>

namespace gptrt::cuda {

struct Storage {
  void *data;
  bool bf16;
  // GPTRT_DTYPE_F32_ACCUMULATE: f32, and store() adds to what is there (an
  // output each element of which one thread stores once).
  bool add;

  Storage(const void *p, int64_t dtype)
      : data(const_cast<void *>(p)), bf16(dtype == GPTRT_DTYPE_BF16),
        add(dtype == GPTRT_DTYPE_F32_ACCUMULATE) {}

  __device__ float load(int64_t i) const {
    return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i])
                : static_cast<const float *>(data)[i];
  }
  // v as store() rounds it (to bf16, or as it is). In add mode that is the
  // addend, not the sum it is added into.
  __device__ float rounded(float v) const {
    return bf16 ? __bfloat162float(__float2bfloat16(v)) : v;
  }
  __device__ void store(int64_t i, float v) const {
    if (bf16)
      static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16(v);
    else if (add)
      static_cast<float *>(data)[i] =
          __fadd_rn(static_cast<float *>(data)[i], v);
    else
      static_cast<float *>(data)[i] = v;
  }
};

// Eight bf16 values in one 16-byte access: the vector path of the kernels
// when every operand is bf16, aligned, and the count a multiple of 8.
// __floats2bfloat162_rn rounds to nearest even as __float2bfloat16 does.
struct alignas(16) Bf16x8 {
  __nv_bfloat162 pair[4];

  __device__ void unpack(float (&out)[8]) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(pair[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  }
  __device__ static Bf16x8 pack(const float (&in)[8]) {
    Bf16x8 v;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      v.pair[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    return v;
  }
};

} // namespace gptrt::cuda

#endif
