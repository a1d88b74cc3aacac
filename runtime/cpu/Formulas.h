// Numeric formulas the CPU reference and the CUDA kernels both compute,
// written once so the two cannot drift apart: FP8 scales from an amax or an
// amax history, and GPT-2's tanh GELU with its derivative. Plain C++ for
// the host compiler; __host__ __device__ under nvcc. (FP8 and bf16 rounding
// are in Fp8.h and Bf16.h on the host; the device uses cuda_fp8.h's and
// cuda_bf16.h's conversions, which those match bit for bit.)
#ifndef GPTRT_CPU_FORMULAS_H
#define GPTRT_CPU_FORMULAS_H

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define GPTRT_HOST_DEVICE __host__ __device__
#else
#define GPTRT_HOST_DEVICE
#endif

namespace gptrt::formulas {

// ldexpf, frexpf, tanhf and tanh are the C library's on the host (<cmath>)
// and CUDA's on the device; only isfinite is spelled differently.
GPTRT_HOST_DEVICE inline bool isFinite(float x) {
#ifdef __CUDA_ARCH__
  return isfinite(x);
#else
  return std::isfinite(x);
#endif
}

// For the GELU templates: tanh in their T.
GPTRT_HOST_DEVICE inline float tanhOf(float x) { return tanhf(x); }
GPTRT_HOST_DEVICE inline double tanhOf(double x) { return tanh(x); }

/// The FP8 scale of a tensor whose largest magnitude is `amax`, in f32:
/// fp8_max / max(amax, eps) / 2^margin, rounded down to a power of two
/// when asked (TransformerEngine's recipe; the power of two keeps the
/// scaling exact). A NaN amax gives a NaN scale (max keeps its first
/// argument when the comparison is false, as std::max does).
GPTRT_HOST_DEVICE inline float scaleFromAmax(float amax, float fp8Max,
                                             int margin, bool powerOfTwo,
                                             float eps) {
  float scale = fp8Max / (amax < eps ? eps : amax);
  scale = ldexpf(scale, -margin);
  if (powerOfTwo && isFinite(scale) && scale > 0.0f) {
    int exponent;
    frexpf(scale, &exponent); // scale = f * 2^exponent, f in [0.5, 1)
    scale = ldexpf(1.0f, exponent - 1);
  }
  return scale;
}

/// Delayed scaling's scale from an amax history (newest first): of its
/// largest entry (the first largest, as std::max_element), or of its newest
/// with `mostRecent`. Amaxes are >= 0 and only finite ones are recorded,
/// so 0 means none yet: the scale is then 1 and the first step runs
/// unscaled.
GPTRT_HOST_DEVICE inline float scaleFromHistory(const float *history,
                                                int64_t length, float fp8Max,
                                                int margin, bool powerOfTwo,
                                                float eps, bool mostRecent) {
  float amax = history[0];
  if (!mostRecent)
    for (int64_t i = 1; i < length; ++i)
      amax = amax < history[i] ? history[i] : amax;
  return amax == 0.0f ? 1.0f
                      : scaleFromAmax(amax, fp8Max, margin, powerOfTwo, eps);
}

// sqrt(2/pi) and the cubic coefficient of GPT-2's tanh GELU (Hendrycks and
// Gimpel 2016, as used by GPT-2 and PyTorch's approximate="tanh").
constexpr double kGeluSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

/// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in T.
template <typename T> GPTRT_HOST_DEVICE inline T gelu(T x) {
  const T s = static_cast<T>(kGeluSqrt2OverPi);
  const T c = static_cast<T>(kGeluCubic);
  T u = s * (x + c * x * x * x);
  return T(0.5) * x * (T(1) + tanhOf(u));
}

/// d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
/// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2), in T.
template <typename T> GPTRT_HOST_DEVICE inline T geluGrad(T x) {
  const T s = static_cast<T>(kGeluSqrt2OverPi);
  const T c = static_cast<T>(kGeluCubic);
  T u = s * (x + c * x * x * x);
  T t = tanhOf(u);
  T du = s * (T(1) + T(3) * c * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

} // namespace gptrt::formulas

#endif // GPTRT_CPU_FORMULAS_H
