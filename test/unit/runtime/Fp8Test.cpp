// FP8 conversions (runtime/cpu/Fp8.h) against an independent reference
// written here from the OCP 8-bit Floating Point Specification v1.0: codes
// decode to the values its tables give, and narrowing picks the nearest
// finite value (ties to the even code, beyond max -> max), which is what
// CUDA's __NV_SATFINITE conversion does. NaN follows CUDA: 0x7F from any
// NaN, and every NaN code widens to 0x7FFFFFFF. ConversionCudaParityTest.cu
// compares with cuda_fp8.h itself where the toolkit is present.
#include "runtime/cpu/Fp8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace gptrt::cpu;

constexpr uint32_t kCanonicalNanFloat = 0x7FFFFFFFu;
constexpr uint8_t kCanonicalNanFp8 = 0x7F;

// What the spec says a code means; the two formats differ only in field
// widths and in E5M2 keeping IEEE infinities.
struct Format {
  const char *name;
  int expBits, manBits, bias;
  bool hasInf;
  uint8_t maxCode;
  double maxValue;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
  uint8_t (*fromBf16)(uint16_t);
};

const Format kE4M3 = {"E4M3", 4, 3, 7, false, 0x7E, 448.0,
                      floatToE4M3, e4m3ToFloat, bf16ToE4M3};
const Format kE5M2 = {"E5M2", 5, 2, 15, true, 0x7B, 57344.0,
                      floatToE5M2, e5m2ToFloat, bf16ToE5M2};
const Format *const kFormats[] = {&kE4M3, &kE5M2};

enum class Kind { Finite, Inf, NaN };

Kind refKind(const Format &f, uint8_t c) {
  const int e = (c & 0x7F) >> f.manBits, m = c & ((1 << f.manBits) - 1);
  const int eMax = (1 << f.expBits) - 1, mMax = (1 << f.manBits) - 1;
  if (e != eMax)
    return Kind::Finite;
  if (f.hasInf)
    return m == 0 ? Kind::Inf : Kind::NaN;
  return m == mMax ? Kind::NaN : Kind::Finite; // E4M3: only S.1111.111
}

// Value of a finite code: (-1)^S * 2^(1-bias) * 0.M for E = 0, else
// (-1)^S * 2^(E-bias) * 1.M (OCP OFP8 v1.0).
double refValue(const Format &f, uint8_t c) {
  const int e = (c & 0x7F) >> f.manBits, m = c & ((1 << f.manBits) - 1);
  const double mag =
      e == 0 ? std::ldexp(m, 1 - f.bias - f.manBits)
             : std::ldexp((1 << f.manBits) + m, e - f.bias - f.manBits);
  return (c & 0x80) ? -mag : mag;
}

// The non-negative finite codes in increasing order: for positive codes the
// code order is the value order.
std::vector<uint8_t> positiveFiniteCodes(const Format &f) {
  std::vector<uint8_t> codes;
  for (int c = 0; c < 0x80; ++c)
    if (refKind(f, static_cast<uint8_t>(c)) == Kind::Finite)
      codes.push_back(static_cast<uint8_t>(c));
  return codes;
}

// Nearest finite value to x, ties to the code with an even last bit, and
// magnitudes at or beyond max (infinity included) saturated to max.
uint8_t refEncode(const Format &f, double x) {
  if (std::isnan(x))
    return kCanonicalNanFp8;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(x);
  if (a >= f.maxValue)
    return sign | f.maxCode;
  static thread_local std::vector<uint8_t> cache[2];
  std::vector<uint8_t> &codes = cache[&f == &kE4M3 ? 0 : 1];
  if (codes.empty())
    codes = positiveFiniteCodes(f);
  // First code whose value exceeds a; a < max, so it exists and is not the
  // first (whose value is 0).
  const auto hi = std::upper_bound(
      codes.begin(), codes.end(), a,
      [&](double v, uint8_t c) { return v < refValue(f, c); });
  const uint8_t up = *hi, down = *(hi - 1);
  const double dDown = a - refValue(f, down), dUp = refValue(f, up) - a;
  uint8_t pick;
  if (dDown < dUp)
    pick = down;
  else if (dUp < dDown)
    pick = up;
  else
    pick = (down & 1) ? up : down;
  return sign | pick;
}

uint8_t refEncodeFloat(const Format &f, float x) {
  return refEncode(f, static_cast<double>(x));
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%X", v);
  return buf;
}

TEST(CpuFp8, DecodeAllCodesMatchesSpec) {
  for (const Format *f : kFormats) {
    int nans = 0, infs = 0;
    for (int i = 0; i < 256; ++i) {
      const uint8_t c = static_cast<uint8_t>(i);
      const float got = f->decode(c);
      switch (refKind(*f, c)) {
      case Kind::NaN:
        ++nans;
        EXPECT_EQ(floatBits(got), kCanonicalNanFloat) << f->name << " " << hex(c);
        break;
      case Kind::Inf:
        ++infs;
        EXPECT_TRUE(std::isinf(got)) << f->name << " " << hex(c);
        EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << f->name << " " << hex(c);
        break;
      case Kind::Finite:
        EXPECT_EQ(static_cast<double>(got), refValue(*f, c))
            << f->name << " " << hex(c);
        EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << f->name << " " << hex(c);
        break;
      }
    }
    EXPECT_EQ(nans, f->hasInf ? 6 : 2) << f->name;
    EXPECT_EQ(infs, f->hasInf ? 2 : 0) << f->name;
  }
}

// The limits the OCP OFP8 v1.0 spec tabulates for each format.
TEST(CpuFp8, SpecTableValues) {
  EXPECT_EQ(e4m3ToFloat(0x7E), 448.0f);            // S.1111.110 max normal
  EXPECT_EQ(e4m3ToFloat(0xFE), -448.0f);
  EXPECT_EQ(e4m3ToFloat(0x08), std::ldexp(1.0f, -6)); // min normal
  EXPECT_EQ(e4m3ToFloat(0x07), 0.875f * std::ldexp(1.0f, -6)); // max subn.
  EXPECT_EQ(e4m3ToFloat(0x01), std::ldexp(1.0f, -9)); // min subnormal
  EXPECT_EQ(e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(e4m3ToFloat(0x78), 256.0f); // S.1111.000 is finite in E4M3FN
  EXPECT_EQ(floatBits(e4m3ToFloat(0x80)), 0x80000000u); // -0
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xFF)));

  EXPECT_EQ(e5m2ToFloat(0x7B), 57344.0f); // S.11110.11 max normal
  EXPECT_EQ(e5m2ToFloat(0xFB), -57344.0f);
  EXPECT_EQ(e5m2ToFloat(0x04), std::ldexp(1.0f, -14)); // min normal
  EXPECT_EQ(e5m2ToFloat(0x03), 0.75f * std::ldexp(1.0f, -14)); // max subn.
  EXPECT_EQ(e5m2ToFloat(0x01), std::ldexp(1.0f, -16)); // min subnormal
  EXPECT_EQ(e5m2ToFloat(0x3C), 1.0f);
  EXPECT_EQ(e5m2ToFloat(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(e5m2ToFloat(0xFC), -std::numeric_limits<float>::infinity());
  for (uint8_t c : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF})
    EXPECT_TRUE(std::isnan(e5m2ToFloat(c))) << hex(c);
  EXPECT_EQ(kE4M3Max, 448.0f);
  EXPECT_EQ(kE5M2Max, 57344.0f);
}

TEST(CpuFp8, EncodeDecodeIsIdentityOnFiniteCodes) {
  for (const Format *f : kFormats) {
    int finite = 0;
    for (int i = 0; i < 256; ++i) {
      const uint8_t c = static_cast<uint8_t>(i);
      const Kind kind = refKind(*f, c);
      const uint8_t back = f->encode(f->decode(c));
      if (kind == Kind::Finite) {
        ++finite;
        EXPECT_EQ(back, c) << f->name << " " << hex(c);
        // bf16 holds every fp8 value exactly, so the bf16 path agrees.
        EXPECT_EQ(f->fromBf16(floatToBf16(f->decode(c))), c)
            << f->name << " " << hex(c);
      } else if (kind == Kind::Inf) {
        // Saturating conversion: E5M2's own infinity does not survive.
        EXPECT_EQ(back, (c & 0x80) | f->maxCode) << f->name << " " << hex(c);
      } else {
        EXPECT_EQ(back, kCanonicalNanFp8) << f->name << " " << hex(c);
      }
    }
    EXPECT_EQ(finite, f->hasInf ? 248 : 254) << f->name;
  }
}

TEST(CpuFp8, HalfwayValuesTieToEven) {
  for (const Format *f : kFormats) {
    const std::vector<uint8_t> codes = positiveFiniteCodes(*f);
    int ties = 0;
    for (size_t i = 0; i + 1 < codes.size(); ++i) {
      const uint8_t lo = codes[i], hi = codes[i + 1];
      // The midpoint needs one more significand bit than the format: exact
      // in float and in bf16.
      const float mid = static_cast<float>(
          (refValue(*f, lo) + refValue(*f, hi)) / 2);
      ASSERT_EQ(static_cast<double>(mid),
                (refValue(*f, lo) + refValue(*f, hi)) / 2);
      const uint8_t even = (lo & 1) ? hi : lo;
      const float below = std::nextafter(mid, 0.0f);
      const float above = std::nextafter(mid, 1e30f);
      for (uint8_t sign : {0x00, 0x80}) {
        const float s = sign ? -1.0f : 1.0f;
        EXPECT_EQ(f->encode(s * mid), sign | even) << f->name << " " << mid;
        EXPECT_EQ(f->encode(s * below), sign | lo) << f->name << " " << mid;
        EXPECT_EQ(f->encode(s * above), sign | hi) << f->name << " " << mid;
        const uint16_t bMid = floatToBf16(s * mid);
        ASSERT_EQ(bf16ToFloat(bMid), s * mid);
        EXPECT_EQ(f->fromBf16(bMid), sign | even) << f->name << " " << mid;
        // One bf16 step either side of the tie (towards and away from 0).
        EXPECT_EQ(f->fromBf16(static_cast<uint16_t>(bMid - 1)), sign | lo)
            << f->name << " " << mid;
        EXPECT_EQ(f->fromBf16(static_cast<uint16_t>(bMid + 1)), sign | hi)
            << f->name << " " << mid;
      }
      ++ties;
    }
    EXPECT_EQ(ties, f->hasInf ? 123 : 126) << f->name;
  }
  // Concrete cases: 1 + 1/16 lies between E4M3's 1 and 1.125 -> 1 (even);
  // 1.1875 between 1.125 and 1.25 -> 1.25 (even); 0.5 * 2^-9 between 0 and
  // the smallest subnormal -> 0.
  EXPECT_EQ(e4m3ToFloat(floatToE4M3(1.0625f)), 1.0f);
  EXPECT_EQ(e4m3ToFloat(floatToE4M3(1.1875f)), 1.25f);
  EXPECT_EQ(floatToE4M3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(floatToE4M3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(floatToE4M3(std::ldexp(1.5f, -9)), 0x02); // tie 1 | 2 -> 2
  EXPECT_EQ(floatToE5M2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(floatToE5M2(std::ldexp(3.0f, -17)), 0x02); // tie 1 | 2 -> 2
  // Largest subnormal rounding up into the smallest normal.
  EXPECT_EQ(floatToE4M3(std::ldexp(15.0f, -10)), 0x08); // tie 7 | 8 -> 8
  EXPECT_EQ(floatToE5M2(std::ldexp(7.0f, -17)), 0x04);  // tie 3 | 4 -> 4
}

TEST(CpuFp8, OverflowSaturates) {
  const float inf = std::numeric_limits<float>::infinity();
  const float big = std::numeric_limits<float>::max();
  // E4M3: 464 = 448 + half an ulp ties to even 448 (0x7E); anything above
  // would round to the NaN code S.1111.111 and saturates instead.
  for (float x : {448.0f, 449.0f, 463.99997f, 464.0f,
                  std::nextafter(464.0f, inf), 480.0f, 512.0f, 1e6f, big, inf})
    for (float s : {1.0f, -1.0f}) {
      EXPECT_EQ(floatToE4M3(s * x), s > 0 ? 0x7E : 0xFE) << s * x;
      EXPECT_EQ(bf16ToE4M3(floatToBf16(s * x)), s > 0 ? 0x7E : 0xFE)
          << s * x;
    }
  EXPECT_EQ(floatToE4M3(std::nextafter(432.0f, 0.0f)), 0x7D); // 416
  EXPECT_EQ(floatToE4M3(432.0f), 0x7E); // tie 416 | 448 -> 448 (even)
  // E5M2: 61440 = 57344 + half an ulp would tie to 65536 (= inf) under
  // plain RNE; saturation keeps 57344, and so for inf itself.
  for (float x : {57344.0f, 60000.0f, std::nextafter(61440.0f, 0.0f),
                  61440.0f, 65536.0f, 1e10f, big, inf})
    for (float s : {1.0f, -1.0f}) {
      EXPECT_EQ(floatToE5M2(s * x), s > 0 ? 0x7B : 0xFB) << s * x;
      EXPECT_EQ(bf16ToE5M2(floatToBf16(s * x)), s > 0 ? 0x7B : 0xFB)
          << s * x;
    }
  // bf16 infinity (and finite bf16 values beyond fp8's range) saturate too.
  EXPECT_EQ(bf16ToE4M3(0x7F80u), 0x7E);
  EXPECT_EQ(bf16ToE5M2(0xFF80u), 0xFB);
  EXPECT_EQ(bf16ToE4M3(0x7F7Fu), 0x7E);
}

TEST(CpuFp8, NaNBecomesCanonical) {
  std::vector<uint32_t> nans = {0x7FC00000u, 0xFFC00000u, 0x7F800001u,
                                0xFF800001u, 0x7FBFFFFFu, 0xFFFFFFFFu,
                                0x7FFFFFFFu};
  for (int bit = 0; bit < 23; ++bit)
    for (uint32_t sign : {0u, 0x80000000u})
      nans.push_back(sign | 0x7F800000u | (1u << bit));
  for (uint32_t u : nans) {
    // Either sign, any payload: the positive NaN 0x7F in both formats.
    EXPECT_EQ(floatToE4M3(floatFromBits(u)), 0x7F) << hex(u);
    EXPECT_EQ(floatToE5M2(floatFromBits(u)), 0x7F) << hex(u);
  }
  int bf16Nans = 0;
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    if ((h & 0x7FFFu) <= 0x7F80u)
      continue;
    ++bf16Nans;
    EXPECT_EQ(bf16ToE4M3(static_cast<uint16_t>(h)), 0x7F) << hex(h);
    EXPECT_EQ(bf16ToE5M2(static_cast<uint16_t>(h)), 0x7F) << hex(h);
  }
  EXPECT_EQ(bf16Nans, 254);
  // 0x7F is a NaN code in both formats, and widening keeps it NaN.
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(e5m2ToFloat(0x7F)));
}

TEST(CpuFp8, UnderflowKeepsTheSignOfZero) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  for (const Format *f : kFormats) {
    EXPECT_EQ(f->encode(0.0f), 0x00) << f->name;
    EXPECT_EQ(f->encode(-0.0f), 0x80) << f->name;
    EXPECT_EQ(f->encode(tiny), 0x00) << f->name;
    EXPECT_EQ(f->encode(-tiny), 0x80) << f->name;
    EXPECT_EQ(f->encode(std::numeric_limits<float>::min()), 0x00) << f->name;
    const float minSub = f->decode(0x01);
    EXPECT_EQ(f->encode(-minSub / 2), 0x80) << f->name; // tie -> -0
    EXPECT_EQ(f->encode(std::nextafter(minSub / 2, 1.0f)), 0x01) << f->name;
    EXPECT_EQ(f->encode(-std::nextafter(minSub / 2, 1.0f)), 0x81) << f->name;
    EXPECT_EQ(f->fromBf16(0x8001u), 0x80) << f->name; // bf16 subnormal
  }
}

// Every 1021st float32 pattern (1021 is prime, so every residue of the 20 or
// 21 bits that rounding drops is visited) against the value reference.
TEST(CpuFp8, DenseFloatSweepAgainstReference) {
  size_t checked = 0;
  for (const Format *f : kFormats) {
    for (uint64_t v = 0; v <= 0xFFFFFFFFull; v += 1021) {
      const uint32_t u = static_cast<uint32_t>(v);
      const float x = floatFromBits(u);
      const uint8_t got = f->encode(x);
      ASSERT_EQ(got, refEncodeFloat(*f, x)) << f->name << " " << hex(u);
      ++checked;
    }
  }
  EXPECT_GT(checked, 8000000u);
}

TEST(CpuFp8, AllBf16ValuesAgainstReference) {
  for (const Format *f : kFormats)
    for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
      const float x = bf16ToFloat(static_cast<uint16_t>(h));
      ASSERT_EQ(f->fromBf16(static_cast<uint16_t>(h)), refEncodeFloat(*f, x))
          << f->name << " " << hex(h);
    }
}

TEST(CpuFp8, ScaledQuantizeAndDequantize) {
  // A per-tensor scale as the compiler computes it: max / amax, so amax
  // lands on the largest finite code.
  const std::vector<float> x = {3.5f, -3.5f, 0.001f, 1.0f, -0.0f, 2.2f,
                                std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()};
  const int64_t n = static_cast<int64_t>(x.size());
  for (const Format *f : kFormats) {
    const float scale = static_cast<float>(f->maxValue) / 3.5f;
    std::vector<uint8_t> q(x.size());
    std::vector<float> back(x.size());
    if (f == &kE4M3) {
      quantizeE4M3(x.data(), n, scale, q.data());
      dequantizeE4M3(q.data(), n, scale, back.data());
    } else {
      quantizeE5M2(x.data(), n, scale, q.data());
      dequantizeE5M2(q.data(), n, scale, back.data());
    }
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(q[i], f->encode(x[i] * scale)) << f->name << " " << i;
      EXPECT_EQ(floatBits(back[i]), floatBits(f->decode(q[i]) / scale))
          << f->name << " " << i;
    }
    EXPECT_EQ(q[0], f->maxCode) << f->name;
    EXPECT_EQ(q[1], 0x80 | f->maxCode) << f->name;
    EXPECT_EQ(back[0], 3.5f) << f->name;
    EXPECT_EQ(q[4], 0x80) << f->name;
    EXPECT_EQ(q[6], f->maxCode) << f->name; // inf saturates
    EXPECT_EQ(q[7], kCanonicalNanFp8) << f->name;
    EXPECT_TRUE(std::isnan(back[7])) << f->name;
  }
}

} // namespace
