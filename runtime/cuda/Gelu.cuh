// GPT-2's tanh GELU and its derivative on the device, shared by the GELU
// kernels (Elementwise.cu) and the FP8 casts that compute a GELU output
// instead of reading it back (CastSource.cuh): one definition, so both
// make the same bits.
#ifndef GPTRT_CUDA_GELU_CUH
#define GPTRT_CUDA_GELU_CUH

namespace gptrt::cuda {

// The constants runtime/cpu/Kernels.cpp uses.
constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__device__ inline float gelu(float x) {
  float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

__device__ inline float geluGrad(float x) {
  float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  float t = tanhf(u);
  float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_GELU_CUH
