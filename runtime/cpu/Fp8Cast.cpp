// The array loops of runtime/cpu/Fp8Cast.h, apart from Kernels.cpp because
// they are the FP8 emulation's, not f32 reference kernels.
#include "runtime/cpu/Fp8Cast.h"

#include "runtime/cpu/Formulas.h"

#include <algorithm>
#include <cmath>

namespace gptrt::cpu {

namespace {

/// Calls body(encode) with the float -> FP8 conversion of `format` as a
/// lambda of its own, so that the casts' loops over it, compiled once per
/// format, vectorize (the conversion is branch-free: runtime/cpu/Fp8.h).
template <typename Body> void withFp8Encoder(int64_t format, Body &&body) {
  if (format == GPTRT_FP8_E4M3)
    body([](float v) { return cpu::floatToE4M3(v); });
  else
    body([](float v) { return cpu::floatToE5M2(v); });
}

} // namespace

float amaxOf(const float *x, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float a = std::fabs(x[i]);
    if (std::isnan(a))
      return a;
    amax = std::max(amax, a);
  }
  return amax;
}

void encodeFp8(const float *x, int64_t rows, int64_t cols,
               const float *rowScales, const float *colScales, float scale,
               int64_t format, bool transpose, uint8_t *q) {
  withFp8Encoder(format, [&](auto encode) {
    // Codes of row r, columns c0 .. c0 + width, into out.
    auto encodeRow = [&](int64_t r, int64_t c0, int64_t width, uint8_t *out) {
      const float *row = x + r * cols + c0;
      if (colScales) {
        const float *s = colScales + c0;
        for (int64_t j = 0; j < width; ++j)
          out[j] = encode(row[j] * s[j]);
      } else {
        const float s = rowScales ? rowScales[r] : scale;
        for (int64_t j = 0; j < width; ++j)
          out[j] = encode(row[j] * s);
      }
    };
    if (!transpose) {
      for (int64_t r = 0; r < rows; ++r)
        encodeRow(r, 0, cols, q + r * cols);
      return;
    }
    constexpr int64_t kBlock = 64;
    uint8_t tile[kBlock][kBlock];
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
      for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
        const int64_t height = std::min(rows - r0, kBlock),
                      width = std::min(cols - c0, kBlock);
        for (int64_t i = 0; i < height; ++i)
          encodeRow(r0 + i, c0, width, tile[i]);
        for (int64_t j = 0; j < width; ++j)
          for (int64_t i = 0; i < height; ++i)
            q[(c0 + j) * rows + r0 + i] = tile[i][j];
      }
  });
}

float scaleFromAmax(float amax, double fp8Max, int64_t margin,
                    int64_t powerOfTwo, double eps) {
  return formulas::scaleFromAmax(amax, static_cast<float>(fp8Max),
                                 static_cast<int>(margin), powerOfTwo != 0,
                                 static_cast<float>(eps));
}

} // namespace gptrt::cpu
