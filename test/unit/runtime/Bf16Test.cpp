// bf16 conversions: exhaustive over all 2^16 bf16 codes, constructed rounding
// cases, and a dense float32 sweep checked two independent ways (an integer
// reference of round-half-even on the dropped bits, and a value-based
// "nearest representable, ties to even mantissa" oracle in double). NaN
// follows CUDA (canonical 0x7FFF); ConversionCudaParityTest.cu compares with
// cuda_bf16.h itself.
#include "runtime/cpu/Bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using namespace gptrt::cpu;

bool isNanBits32(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }
bool isNanBits16(uint16_t h) { return (h & 0x7FFFu) > 0x7F80u; }

// Round half to even on the low 16 bits, by explicit comparison; NaN is
// CUDA's canonical bf16 NaN.
uint16_t refIntegerRne(uint32_t u) {
  if (isNanBits32(u))
    return 0x7FFFu;
  uint32_t hi = u >> 16, lo = u & 0xFFFFu;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u)))
    ++hi; // magnitude increment; carries into the exponent as it should
  return static_cast<uint16_t>(hi);
}

// The value-based oracle for finite inputs: of the two bf16 magnitudes around
// |x| (truncation and the next one up, whose value is 2^128 when it is the
// infinity code, as IEEE 754 7.4 overflow under RNE prescribes), pick the
// nearer; on a tie pick the one with an even last mantissa bit.
uint16_t refNearest(uint32_t u) {
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7FFFFFFFu;
  const uint32_t down = mag & 0xFFFF0000u, up = down + 0x10000u;
  auto value = [](uint32_t bits) {
    if (bits == 0x7F800000u)
      return std::ldexp(1.0, 128);
    return static_cast<double>(floatFromBits(bits));
  };
  const double x = floatFromBits(mag);
  const double dDown = x - value(down), dUp = value(up) - x;
  uint32_t pick;
  if (dDown < dUp)
    pick = down;
  else if (dUp < dDown)
    pick = up;
  else
    pick = ((down >> 16) & 1u) ? up : down;
  return static_cast<uint16_t>((sign | pick) >> 16);
}

TEST(CpuBf16, AllCodesRoundTrip) {
  int nans = 0;
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const uint16_t code = static_cast<uint16_t>(h);
    const float f = bf16ToFloat(code);
    ASSERT_EQ(floatBits(f), h << 16) << std::hex << h;
    const uint16_t back = floatToBf16(f);
    if (isNanBits16(code)) {
      ++nans;
      // Every NaN code, either sign, comes back as the canonical NaN.
      ASSERT_EQ(back, 0x7FFFu) << std::hex << h;
    } else {
      ASSERT_EQ(back, code) << std::hex << h;
    }
  }
  EXPECT_EQ(nans, 2 * 127); // 2 signs x (2^7 - 1) nonzero fractions
}

TEST(CpuBf16, HalfwayCasesTieToEven) {
  int ties = 0;
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    if (((h >> 7) & 0xFFu) == 0xFFu)
      continue; // inf/NaN codes: no finite value above them to tie with
    const uint32_t base = h << 16;
    const uint16_t up = static_cast<uint16_t>(h + 1);
    EXPECT_EQ(floatToBf16(floatFromBits(base | 0x8000u)), (h & 1u) ? up : h)
        << std::hex << h;
    EXPECT_EQ(floatToBf16(floatFromBits(base | 0x7FFFu)), h) << std::hex << h;
    EXPECT_EQ(floatToBf16(floatFromBits(base | 0x8001u)), up) << std::hex << h;
    ++ties;
  }
  EXPECT_EQ(ties, 65536 - 2 * 128);
  // Concrete values: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7, goes to 1;
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6, goes to 1 + 2^-6.
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
}

TEST(CpuBf16, CarryIntoExponent) {
  EXPECT_EQ(floatToBf16(floatFromBits(0x3F7FFFFFu)), 0x3F80u); // -> 1.0
  EXPECT_EQ(floatToBf16(floatFromBits(0x3FFF8000u)), 0x4000u); // tie, odd -> 2.0
  EXPECT_EQ(floatToBf16(floatFromBits(0xBFFF8000u)), 0xC000u); // -> -2.0
  // Largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(floatToBf16(floatFromBits(0x007FFFFFu)), 0x0080u);
  EXPECT_EQ(floatToBf16(floatFromBits(0x007F8000u)), 0x0080u);
}

TEST(CpuBf16, OverflowAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(floatToBf16(inf), 0x7F80u);
  EXPECT_EQ(floatToBf16(-inf), 0xFF80u);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80u);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::max()), 0xFF80u);
  // Halfway between the largest bf16 (0x7F7F) and 2^128: ties to "even"
  // 2^128, i.e. overflow; just below stays finite.
  EXPECT_EQ(floatToBf16(floatFromBits(0x7F7F8000u)), 0x7F80u);
  EXPECT_EQ(floatToBf16(floatFromBits(0x7F7F7FFFu)), 0x7F7Fu);
  EXPECT_EQ(floatToBf16(floatFromBits(0xFF7F7FFFu)), 0xFF7Fu);
  EXPECT_TRUE(std::isinf(bf16ToFloat(0x7F80u)));
}

TEST(CpuBf16, Subnormals) {
  const float tiny = std::numeric_limits<float>::denorm_min(); // 0x00000001
  EXPECT_EQ(floatToBf16(tiny), 0x0000u);
  EXPECT_EQ(floatToBf16(-tiny), 0x8000u); // sign of zero kept
  EXPECT_EQ(floatToBf16(floatFromBits(0x00008000u)), 0x0000u); // tie -> even 0
  EXPECT_EQ(floatToBf16(floatFromBits(0x00008001u)), 0x0001u);
  EXPECT_EQ(floatToBf16(floatFromBits(0x00018000u)), 0x0002u); // tie -> even
  EXPECT_EQ(floatToBf16(floatFromBits(0x80028000u)), 0x8002u); // tie -> even
  // Smallest bf16 subnormal is 2^-133 and widens exactly.
  EXPECT_EQ(bf16ToFloat(0x0001u), std::ldexp(1.0f, -133));
  EXPECT_EQ(bf16ToFloat(0x8001u), -std::ldexp(1.0f, -133));
}

TEST(CpuBf16, NaNBecomesCanonical) {
  // Payload only in the low 16 bits: plain rounding would give infinity.
  EXPECT_EQ(floatToBf16(floatFromBits(0x7F800001u)), 0x7FFFu);
  EXPECT_EQ(floatToBf16(floatFromBits(0xFF800001u)), 0x7FFFu); // sign dropped
  EXPECT_EQ(floatToBf16(floatFromBits(0x7FC00000u)), 0x7FFFu);
  EXPECT_EQ(floatToBf16(floatFromBits(0xFFFFFFFFu)), 0x7FFFu);
  EXPECT_EQ(floatToBf16(floatFromBits(0x7FBFFFFFu)), 0x7FFFu); // signalling
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::quiet_NaN()), 0x7FFFu);
  // Every NaN pattern with one of its 23 fraction bits set, both signs.
  for (uint32_t sign : {0u, 0x80000000u})
    for (int bit = 0; bit < 23; ++bit)
      EXPECT_EQ(floatToBf16(floatFromBits(sign | 0x7F800000u | (1u << bit))),
                0x7FFFu)
          << sign << " " << bit;
}

TEST(CpuBf16, DenseFloatSweep) {
  // Every 4099th float32 pattern (4099 is prime, so the sweep visits every
  // residue of the dropped 16 bits) plus the neighbourhoods of the edges.
  std::vector<uint32_t> patterns;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099)
    patterns.push_back(static_cast<uint32_t>(u));
  for (uint32_t edge : {0x00000000u, 0x00800000u, 0x3F800000u, 0x7F7F0000u,
                        0x7F800000u, 0x80000000u, 0xFF7F0000u})
    for (uint32_t d = 0; d < 0x20000u; ++d)
      patterns.push_back(edge + d - 0x10000u);

  size_t checked = 0;
  for (uint32_t u : patterns) {
    const uint16_t got = floatToBf16(floatFromBits(u));
    ASSERT_EQ(got, refIntegerRne(u)) << std::hex << u;
    if (!isNanBits32(u) && (u & 0x7FFFFFFFu) != 0x7F800000u) {
      ASSERT_EQ(got, refNearest(u)) << std::hex << u;
    }
    ++checked;
  }
  EXPECT_GT(checked, 1000000u);
}

TEST(CpuBf16, RoundToBf16InPlace) {
  std::vector<float> x = {1.0f + 0x1p-8f, -3.14159265f, 1e-40f, 65504.0f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 0.0f};
  std::vector<float> want;
  for (float v : x)
    want.push_back(bf16ToFloat(floatToBf16(v)));
  roundToBf16(x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(floatBits(x[i]), floatBits(want[i])) << i;
  EXPECT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[1], -3.140625f);
  EXPECT_EQ(x[3], 65536.0f); // 65504 = 1.9990234375 * 2^15 rounds up
  EXPECT_EQ(floatBits(x[5]), 0x7FFF0000u); // canonical NaN, widened
}

} // namespace
