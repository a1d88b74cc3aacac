// Bit-exact bfloat16 conversions, so the CPU runtime can emulate "stored as
// bf16" tensors and its results can be compared bit for bit with GPU runs.
//
// Rules and where they come from:
// - Format: bf16 is the top 16 bits of an IEEE 754 binary32 (1 sign bit,
//   8 exponent bits, 7 fraction bits), so widening is a 16-bit shift and is
//   exact.
// - Narrowing rounds to nearest, ties to even (IEEE 754-2019, 4.3.1
//   roundTiesToEven), applied to the 16 dropped bits. Subnormals round the
//   same way (no flush to zero); a carry out of the fraction moves into the
//   exponent, which is what makes the largest finite values round up to
//   infinity exactly when RNE says they overflow.
// - NaN: every NaN, whatever its sign and payload, becomes the canonical
//   0x7FFF, as CUDA's __float2bfloat16 does (cuda_bf16.h host path, CUDA 13);
//   DESIGN.md asks for bit-exact agreement with CUDA, which
//   test/unit/runtime/ConversionCudaParityTest.cu checks. NaN is tested
//   before rounding because rounding a NaN whose payload lives only in the
//   low 16 bits would give infinity. (Intel's VCVTNEPS2BF16 keeps the payload
//   and PyTorch returns 0x7FC0; only CUDA's rule matters here.)
#ifndef GPTRT_CPU_BF16_H
#define GPTRT_CPU_BF16_H

#include <cstdint>
#include <cstring>

namespace gptrt::cpu {

inline uint32_t floatBits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline float floatFromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline uint16_t floatToBf16(float x) {
  uint32_t u = floatBits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FFFu;
  // Adding 0x7FFF rounds halfway cases down and everything above up; the
  // extra 1 when the kept LSB is odd turns ties into ties-to-even. Finite
  // magnitudes are below 0x7F800000, so the sum cannot reach the sign bit.
  uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  return floatFromBits(static_cast<uint32_t>(h) << 16);
}

// Emulates storing each value as bf16 and loading it back.
inline void roundToBf16(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = bf16ToFloat(floatToBf16(x[i]));
}

} // namespace gptrt::cpu

#endif // GPTRT_CPU_BF16_H
