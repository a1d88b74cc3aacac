// FP8 codes made on the device exactly as runtime/cpu/Fp8.h makes them on
// the CPU. CUDA's __nv_cvt_float_to_fp8 with __NV_SATFINITE rounds and
// saturates as the emulation does, but on sm_89 and later it is a single
// PTX cvt.rn.satfinite instruction, for which PTX promises only "a NaN"
// (cuda_fp8.hpp; the header's software path, which the emulation follows,
// gives 0x7F). NaN is therefore mapped to 0x7F explicitly.
#ifndef GPTRT_CUDA_FP8CODES_CUH
#define GPTRT_CUDA_FP8CODES_CUH

#include <cuda_fp8.h>

#include <cstdint>

namespace gptrt::cuda {

template <__nv_fp8_interpretation_t Format>
__device__ inline uint8_t toFp8(float v) {
  return isnan(v) ? uint8_t(0x7F)
                  : uint8_t(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, Format));
}

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_FP8CODES_CUH
