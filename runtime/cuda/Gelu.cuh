// GPT-2's tanh GELU and its derivative on the device, shared by the GELU
// kernels (Elementwise.cu) and the FP8 casts that compute a GELU output
// instead of reading it back (CastSource.cuh): the CPU reference's own
// definitions (runtime/cpu/Formulas.h) compiled for the device, so the
// formula is written once.
#ifndef GPTRT_CUDA_GELU_CUH
#define GPTRT_CUDA_GELU_CUH

#include "runtime/cpu/Formulas.h"

namespace gptrt::cuda {

__device__ inline float gelu(float x) { return formulas::gelu(x); }
__device__ inline float geluGrad(float x) { return formulas::geluGrad(x); }

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_GELU_CUH
