// What an FP8 cast kernel casts: a stored tensor, or the output a GELU
// producer would store -- gelu(x), or gelu'(x) * dout, rounded to the
// output's dtype -- worked out from the producer's inputs as the cast
// reads them. The second lets a producer and its two casts be one kernel
// that never writes the output nothing else reads
// (rt-fuse-producer-dual-cast's gptrt_gelu_*_cast_dual).
#ifndef GPTRT_CUDA_CASTSOURCE_CUH
#define GPTRT_CUDA_CASTSOURCE_CUH

#include "runtime/abi/gptrt.h"
#include "runtime/cuda/Gelu.cuh"
#include "runtime/cuda/Storage.cuh"

#include <cuda_bf16.h>

namespace gptrt::cuda {

struct CastSource {
  enum class Kind { kStored, kGelu, kGeluGrad };
  Kind kind;
  Storage x;    // the tensor, or GELU's input
  Storage dout; // kGeluGrad: the output gradient
  bool outBf16; // kGelu, kGeluGrad: the producer's output is bf16

  static CastSource stored(const void *x, bool bf16) {
    return {Kind::kStored,
            Storage(x, bf16 ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32),
            Storage(nullptr, GPTRT_DTYPE_F32), bf16};
  }
  static CastSource geluOf(const void *x, int64_t xDtype, int64_t outDtype) {
    return {Kind::kGelu, Storage(x, xDtype), Storage(nullptr, GPTRT_DTYPE_F32),
            outDtype == GPTRT_DTYPE_BF16};
  }
  static CastSource geluGradOf(const void *dout, int64_t doutDtype,
                               const void *x, int64_t xDtype,
                               int64_t outDtype) {
    return {Kind::kGeluGrad, Storage(x, xDtype), Storage(dout, doutDtype),
            outDtype == GPTRT_DTYPE_BF16};
  }

  // Element i as the producer stores it: the GELU kernels' expressions
  // (Elementwise.cu), rounded once to the output's dtype.
  __device__ float at(int64_t i) const {
    if (kind == Kind::kStored)
      return x.load(i);
    const float v = kind == Kind::kGelu ? gelu(x.load(i))
                                        : geluGrad(x.load(i)) * dout.load(i);
    return outBf16 ? __bfloat162float(__float2bfloat16(v)) : v;
  }
};

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_CASTSOURCE_CUH
