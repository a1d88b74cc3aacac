// The CPU's FP8 casts of whole arrays (amax, scale from amax, codes by
// format number): plain numerics with no Context, so they sit with the
// bit-exact emulation in runtime/cpu rather than in the ABI wrappers.
#ifndef GPTRT_CPU_FP8CAST_H
#define GPTRT_CPU_FP8CAST_H

#include "runtime/abi/gptrt.h"
#include "runtime/cpu/Fp8.h"

#include <cstdint>

namespace gptrt::cpu {

/// Largest magnitude, NaN if any value is NaN.
float amaxOf(const float *x, int64_t n);

inline uint8_t fp8Encode(float v, int64_t format) {
  return format == GPTRT_FP8_E4M3 ? cpu::floatToE4M3(v) : cpu::floatToE5M2(v);
}

inline float fp8Decode(uint8_t code, int64_t format) {
  return format == GPTRT_FP8_E4M3 ? cpu::e4m3ToFloat(code)
                                  : cpu::e5m2ToFloat(code);
}

/// The codes of x (rows x cols) times its scale -- rowScales[r],
/// colScales[c] (where not null) or `scale` -- into q, row-major, or
/// transposed (q cols x rows). Transposed in 64 x 64 blocks, each block's
/// rows encoded first (contiguous, so the encoder's loop vectorizes) and
/// then stored transposed: row by row, each code of a wide row would land
/// on its own cache line of q (the logits' gradient: 50304 of them).
void encodeFp8(const float *x, int64_t rows, int64_t cols,
               const float *rowScales, const float *colScales, float scale,
               int64_t format, bool transpose, uint8_t *q);

/// fp8_max / max(amax, eps) / 2^margin, rounded down to a power of two on
/// request: Formulas.h's scaleFromAmax with the ABI's constant types.
float scaleFromAmax(float amax, double fp8Max, int64_t margin,
                    int64_t powerOfTwo, double eps);

} // namespace gptrt::cpu

#endif // GPTRT_CPU_FP8CAST_H
