// Bit-exact FP8 conversions (E4M3FN and E5M2), so the CPU runtime produces
// the same FP8 bytes as CUDA's conversions and CPU runs can be compared bit
// for bit with CUDA runs (DESIGN.md sections 4 and 7).
//
// Formats: OCP 8-bit Floating Point Specification (OFP8), revision 1.0
// (Open Compute Project, 2023):
// - E4M3 ("E4M3FN"): 1 sign, 4 exponent, 3 mantissa bits, bias 7. No
//   infinities; S.1111.111 is NaN, so S.1111.110 = +-448 is the largest
//   finite value. Subnormals: 2^-6 * 0.mmm, the smallest is 2^-9.
// - E5M2: 1 sign, 5 exponent, 2 mantissa bits, bias 15, IEEE 754-like:
//   S.11111.00 is +-inf, S.11111.{01,10,11} are NaN, +-57344 is the largest
//   finite value. Subnormals: 2^-14 * 0.mm, the smallest is 2^-16.
//
// Narrowing follows CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)
// (cuda_fp8.h host path, CUDA 13), which the parity test checks on every bf16
// value and a dense sweep of float32:
// - Round to nearest, ties to even, on the exact value (no double rounding),
//   subnormals included; the sign of zero is kept (-tiny -> 0x80).
// - Saturation: a value whose rounded magnitude would exceed the largest
//   finite one becomes +-max. For E4M3 that means (448, 464] -> 448 by RNE
//   (464 is the tie, 448 is even) and everything above -> 448; for E5M2,
//   61440 and above -> 57344. +-inf also saturates to +-max: __NV_SATFINITE
//   clamps infinities too rather than keeping them.
// - NaN of either sign and any payload -> 0x7F, a positive NaN in both
//   formats: CUDA's software path canonicalises the NaN before converting
//   and drops its sign (the hardware instruction of sm_89+ promises only a
//   NaN, so the CUDA kernels map NaN to 0x7F themselves: Fp8Codes.cuh).
// Widening (fp8 -> float) is exact for every finite code; every NaN code
// widens to the float 0x7FFFFFFF, as CUDA's fp8 -> half -> float does.
//
// Plain C++17, no CUDA headers: this is compiled into the CPU runtime.
#ifndef GPTRT_CPU_FP8_H
#define GPTRT_CPU_FP8_H

#include "runtime/cpu/Bf16.h"

#include <cstdint>

namespace gptrt::cpu {

inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE5M2Max = 57344.0f;

namespace fp8detail {

// The canonical NaN CUDA returns from both its float -> fp8 and its
// fp8 -> float conversions.
inline constexpr uint8_t kNanCode = 0x7F;
inline constexpr uint32_t kNanFloatBits = 0x7FFFFFFFu;

// Branch-free (selects by masks, no early returns), so that the casts'
// loops vectorize: the CPU runtime's FP8 emulation spends most of its
// cast time here.
template <int ExpBits, int ManBits, uint8_t MaxCode>
inline uint8_t floatToFp8(float x) {
  constexpr int kBias = (1 << (ExpBits - 1)) - 1;
  // Float mantissa bits a normal fp8 value drops.
  constexpr int kDrop = 23 - ManBits;
  // The float bits of the smallest normal fp8 value, 2^(1 - bias).
  constexpr uint32_t kMinNormal = uint32_t(127 + 1 - kBias) << 23;
  const uint32_t u = floatBits(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t mag = u & 0x7FFFFFFFu;

  // A normal fp8 result: round the float bits to nearest even at bit kDrop
  // (adding half a unit less one, plus the lowest kept bit, carries out of
  // the dropped bits exactly when rounding up; a carry out of the mantissa
  // lands in the exponent by itself), then rebias the exponent field.
  const uint32_t rounded =
      (mag + ((1u << (kDrop - 1)) - 1u) + ((mag >> kDrop) & 1u)) >> kDrop;
  const uint32_t normal = rounded - (uint32_t(127 - kBias) << ManBits);
  // A subnormal fp8 result is |x| in units of the smallest subnormal,
  // 2^(1 - bias - ManBits), rounded to an integer: the multiply by a power
  // of two is exact (float subnormals included), and adding then
  // subtracting 2^23 rounds a value below 2^22 once, to nearest even (the
  // default rounding mode; -ffast-math would fold the pair away). A carry
  // to 1 << ManBits is exactly the smallest normal's code.
  const float units =
      floatFromBits(mag) *
      floatFromBits(uint32_t(127 + kBias + ManBits - 1) << 23);
  const uint32_t subnormal =
      uint32_t(int32_t((units + 8388608.0f) - 8388608.0f));

  const uint32_t subnormalMask = 0u - uint32_t(mag < kMinNormal);
  uint32_t code = (subnormal & subnormalMask) | (normal & ~subnormalMask);
  // Codes above MaxCode are NaN (E4M3 S.1111.111), inf (E5M2) or beyond the
  // format -- infinity included: all of them the overflow that saturation
  // turns into max. The sign of zero is kept.
  code = code < MaxCode ? code : MaxCode;
  const uint32_t nanMask = 0u - uint32_t(mag > 0x7F800000u);
  return static_cast<uint8_t>(((sign | code) & ~nanMask) |
                              (kNanCode & nanMask));
}

template <int ExpBits, int ManBits>
inline float fp8ToFloat(uint8_t c) {
  constexpr int kBias = (1 << (ExpBits - 1)) - 1;
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t exp = (c & 0x7Fu) >> ManBits;
  const uint32_t man = c & ((1u << ManBits) - 1u);
  if (exp == 0) {
    // Subnormal: man * 2^(1 - bias - ManBits); the product is exact.
    const float unit = floatFromBits(
        static_cast<uint32_t>(127 + 1 - kBias - ManBits) << 23);
    const float v = static_cast<float>(man) * unit;
    return floatFromBits(sign | floatBits(v));
  }
  return floatFromBits(sign |
                       ((exp + 127 - kBias) << 23) | (man << (23 - ManBits)));
}

} // namespace fp8detail

inline uint8_t floatToE4M3(float x) {
  return fp8detail::floatToFp8<4, 3, 0x7E>(x);
}

inline uint8_t floatToE5M2(float x) {
  return fp8detail::floatToFp8<5, 2, 0x7B>(x);
}

inline float e4m3ToFloat(uint8_t c) {
  if ((c & 0x7Fu) == 0x7Fu)
    return floatFromBits(fp8detail::kNanFloatBits);
  return fp8detail::fp8ToFloat<4, 3>(c);
}

inline float e5m2ToFloat(uint8_t c) {
  if ((c & 0x7Fu) > 0x7Cu)
    return floatFromBits(fp8detail::kNanFloatBits);
  if ((c & 0x7Fu) == 0x7Cu)
    return floatFromBits((c & 0x80u) ? 0xFF800000u : 0x7F800000u);
  return fp8detail::fp8ToFloat<5, 2>(c);
}

// bf16 widens to float exactly, so narrowing through float rounds once, as
// CUDA's __nv_cvt_bfloat16raw_to_fp8 does (bf16 NaN -> 0x7F, inf -> max).
inline uint8_t bf16ToE4M3(uint16_t h) { return floatToE4M3(bf16ToFloat(h)); }
inline uint8_t bf16ToE5M2(uint16_t h) { return floatToE5M2(bf16ToFloat(h)); }

// Scaled casts for tensors: q = cvt(x * scale) and x = f(q) / scale, each
// step one correctly rounded float operation. GPU kernels must use the same
// operations (a true division, not a multiply by 1/scale or __fdividef) for
// CPU and GPU results to agree bit for bit.
inline void quantizeE4M3(const float *x, int64_t n, float scale, uint8_t *q) {
  for (int64_t i = 0; i < n; ++i)
    q[i] = floatToE4M3(x[i] * scale);
}

inline void quantizeE5M2(const float *x, int64_t n, float scale, uint8_t *q) {
  for (int64_t i = 0; i < n; ++i)
    q[i] = floatToE5M2(x[i] * scale);
}

inline void dequantizeE4M3(const uint8_t *q, int64_t n, float scale,
                           float *x) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = e4m3ToFloat(q[i]) / scale;
}

inline void dequantizeE5M2(const uint8_t *q, int64_t n, float scale,
                           float *x) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = e5m2ToFloat(q[i]) / scale;
}

} // namespace gptrt::cpu

#endif // GPTRT_CPU_FP8_H
