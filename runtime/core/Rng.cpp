// The portable RNG (sources of the algorithms in Rng.h).
#include "runtime/core/Rng.h"

#include <cmath>

namespace gptrt {

namespace {

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr double kTwoPi = 6.283185307179586476925286766559;

} // namespace

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL; // offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL; // FNV prime
  }
  return h;
}

Xoshiro256StarStar::Xoshiro256StarStar(uint64_t seed) {
  uint64_t sm = seed;
  for (uint64_t &w : s_)
    w = splitmix64(sm);
}

Xoshiro256StarStar::Xoshiro256StarStar(uint64_t s0, uint64_t s1, uint64_t s2,
                                       uint64_t s3)
    : s_{s0, s1, s2, s3} {}

uint64_t Xoshiro256StarStar::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Xoshiro256StarStar::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double NormalRng::next() {
  if (hasSpare_) {
    hasSpare_ = false;
    return spare_;
  }
  // u1 in (0, 1] keeps log finite.
  const double u1 = 1.0 - bits_.uniform();
  const double u2 = bits_.uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = kTwoPi * u2;
  spare_ = r * std::sin(theta);
  hasSpare_ = true;
  return r * std::cos(theta);
}

uint64_t paramSeed(uint64_t seed, std::string_view paramName) {
  uint64_t state = seed ^ fnv1a64(paramName);
  return splitmix64(state);
}

} // namespace gptrt
