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

  // Elements i .. i + 7 in 16-byte accesses (one for bf16, two for f32):
  // i a multiple of 8 and data 16-byte aligned, which the caller checks.
  __device__ void load8(int64_t i, float (&v)[8]) const;
  __device__ void store8(int64_t i, const float (&v)[8]) const;
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

__device__ inline void Storage::load8(int64_t i, float (&v)[8]) const {
  if (bf16) {
    static_cast<const Bf16x8 *>(data)[i / 8].unpack(v);
    return;
  }
  const float4 *p = static_cast<const float4 *>(data) + i / 4;
  const float4 lo = p[0], hi = p[1];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
  v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

__device__ inline void Storage::store8(int64_t i, const float (&v)[8]) const {
  if (bf16) {
    static_cast<Bf16x8 *>(data)[i / 8] = Bf16x8::pack(v);
    return;
  }
  if (add) {
    for (int k = 0; k < 8; ++k)
      store(i + k, v[k]);
    return;
  }
  float4 *p = static_cast<float4 *>(data) + i / 4;
  p[0] = make_float4(v[0], v[1], v[2], v[3]);
  p[1] = make_float4(v[4], v[5], v[6], v[7]);
}

} // namespace gptrt::cuda

#endif
