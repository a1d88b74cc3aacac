// The portable RNG behind parameter initialisation: known outputs of the
// reference algorithms, determinism, and the moments of its normals.
#include "runtime/core/Rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gptrt::test {
namespace {

// Outputs of Vigna's reference splitmix64.c seeded with 0 (also the first
// values Java's SplittableRandom(0) mixes).
TEST(RngTest, SplitMix64MatchesReference) {
  uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(state), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64(state), 0x06c45d188009454fULL);
}

// xoshiro256** from state {1, 2, 3, 4}: the first outputs follow by hand
// from the reference next(): rotl(2 * 5, 7) * 9 = 11520, then 0, ...
TEST(RngTest, Xoshiro256StarStarMatchesReference) {
  Xoshiro256StarStar rng(1, 2, 3, 4);
  EXPECT_EQ(rng.next(), 11520u);
  EXPECT_EQ(rng.next(), 0u);
  EXPECT_EQ(rng.next(), 1509978240u);
  EXPECT_EQ(rng.next(), 1215971899390074240u);
}

TEST(RngTest, Fnv1aMatchesReference) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(RngTest, SameSeedSameSequenceOtherSeedOther) {
  Xoshiro256StarStar a(42), b(42), c(43);
  int same = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    same += x == c.next();
  }
  EXPECT_EQ(same, 0);
  NormalRng n1(7), n2(7);
  for (int i = 0; i < 1001; ++i)
    ASSERT_EQ(n1.next(), n2.next());
}

TEST(RngTest, UniformIsInUnitIntervalWithMeanOneHalf) {
  Xoshiro256StarStar rng(1);
  const int n = 200000;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  // std of the mean: sqrt(1/12 / n) ~ 6.5e-4; allow 5 sigma.
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
}

TEST(RngTest, NormalHasMeanZeroStdOneAndGaussianTails) {
  NormalRng rng(2024);
  const int n = 1000000;
  double sum = 0, sq = 0;
  int within1 = 0, beyond3 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = rng.next();
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += x * x;
    within1 += std::fabs(x) < 1;
    beyond3 += std::fabs(x) > 3;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  // 5-sigma bounds: std(mean) = 1/sqrt(n), std(var) = sqrt(2/n).
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(double(n)));
  EXPECT_NEAR(var, 1.0, 5 * std::sqrt(2.0 / n));
  // P(|x| < 1) = 0.682689, P(|x| > 3) = 0.0026998 (binomial 5-sigma).
  const double p1 = 0.682689492, p3 = 0.002699796;
  EXPECT_NEAR(double(within1) / n, p1, 5 * std::sqrt(p1 * (1 - p1) / n));
  EXPECT_NEAR(double(beyond3) / n, p3, 5 * std::sqrt(p3 * (1 - p3) / n));
}

TEST(RngTest, ParamSeedsDependOnSeedAndName) {
  EXPECT_EQ(paramSeed(1, "wte"), paramSeed(1, "wte"));
  EXPECT_NE(paramSeed(1, "wte"), paramSeed(2, "wte"));
  EXPECT_NE(paramSeed(1, "wte"), paramSeed(1, "wpe"));
  EXPECT_NE(paramSeed(0, "h.0.attn.qkv.weight"),
            paramSeed(0, "h.1.attn.qkv.weight"));
}

} // namespace
} // namespace gptrt::test
