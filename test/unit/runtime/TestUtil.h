// Helpers shared by the CPU kernel tests: seeded random data, norm-wise error
// measures, NaN poisoning and central finite differences.
#ifndef GPTRT_TEST_UNIT_RUNTIME_TESTUTIL_H
#define GPTRT_TEST_UNIT_RUNTIME_TESTUTIL_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace gptrt::test {

using Vec = std::vector<double>;

inline Vec randomVec(size_t n, uint64_t seed, double lo = -1.0,
                     double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

inline std::vector<int32_t> randomIds(size_t n, int32_t bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, bound - 1);
  std::vector<int32_t> v(n);
  for (int32_t &x : v)
    x = dist(rng);
  return v;
}

template <typename To, typename From>
std::vector<To> convert(const std::vector<From> &v) {
  return std::vector<To>(v.begin(), v.end());
}

// Values exactly representable in float, so the float and double kernels
// see the same inputs.
inline Vec floatExact(Vec v) {
  for (double &x : v)
    x = static_cast<float>(x);
  return v;
}

inline double norm(const Vec &v) {
  double s = 0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

// ||got - want|| / ||want||: one number per tensor, so single elements that
// cancel to nearly zero do not dominate.
template <typename G>
double relErr(const std::vector<G> &got, const Vec &want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    double d = static_cast<double>(got[i]) - want[i];
    diff += d * d;
  }
  double w = norm(want);
  return std::sqrt(diff) / (w > 0 ? w : 1.0);
}

// Streams extra context like any EXPECT_*; the failure shows the error.
#define EXPECT_REL_NEAR(got, want, tol)                                        \
  EXPECT_LE(::gptrt::test::relErr((got), (want)), (tol))

template <typename T> std::vector<T> poisoned(size_t n) {
  return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

template <typename T> bool allFinite(const std::vector<T> &v) {
  for (T x : v)
    if (!std::isfinite(x))
      return false;
  return true;
}

#define EXPECT_ALL_WRITTEN(v)                                                  \
  EXPECT_TRUE(::gptrt::test::allFinite(v)) << #v " has unwritten (NaN) elements"

// Central differences of f with respect to every element of x, h = 1e-6.
inline Vec finiteDiff(Vec &x, const std::function<double()> &f,
                      double h = 1e-6) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double fp = f();
    x[i] = xi - h;
    const double fm = f();
    x[i] = xi;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

inline double dot(const Vec &a, const Vec &b) {
  EXPECT_EQ(a.size(), b.size());
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    s += a[i] * b[i];
  return s;
}

// Tolerances used across the tests (see the notes where they are used).
constexpr double kExactTol = 1e-12;  // double kernel vs double reference
constexpr double kGradTol = 1e-6;    // analytic vs finite differences
constexpr double kFloatTol = 1e-5;   // float kernel vs double kernel

} // namespace gptrt::test

#endif // GPTRT_TEST_UNIT_RUNTIME_TESTUTIL_H
