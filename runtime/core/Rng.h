// A portable, deterministic random number generator for parameter
// initialisation: the same seed gives the same bytes with any compiler and
// standard library (std::normal_distribution and friends are
// implementation-defined, so they are not used).
//
// Algorithms (implemented here from their published descriptions):
// - splitmix64: Steele, Lea and Flood, "Fast splittable pseudorandom number
//   generators", OOPSLA 2014; constants as in Vigna's public-domain
//   reference splitmix64.c (prng.di.unimi.it). Used to expand seeds.
// - xoshiro256**: Blackman and Vigna, "Scrambled linear pseudorandom number
//   generators", ACM TOMS 2021 (reference xoshiro256starstar.c, same site).
// - Uniform doubles from the top 53 bits, (x >> 11) * 2^-53, as recommended
//   on that site.
// - Normals by the Box-Muller transform (Box and Muller, 1958), both outputs
//   of each pair used, cos first. Only std::log/sqrt/cos/sin of glibc-quality
//   libms enter, computed in double and rounded once to f32 by the caller.
// - Per-parameter streams: FNV-1a 64 (Fowler, Noll, Vo) of the parameter name
//   mixed into the seed, so adding or reordering parameters does not change
//   the values of the others.
#ifndef GPTRT_CORE_RNG_H
#define GPTRT_CORE_RNG_H

#include <cstdint>
#include <string_view>

namespace gptrt {

// Advances state by the golden-ratio increment and returns the mixed value.
uint64_t splitmix64(uint64_t &state);

// FNV-1a, 64-bit.
uint64_t fnv1a64(std::string_view bytes);

class Xoshiro256StarStar {
public:
  // The four state words come from splitmix64 seeded with `seed`, as the
  // authors recommend (never all zero).
  explicit Xoshiro256StarStar(uint64_t seed);
  // Exact state, for checking against the reference's known outputs.
  Xoshiro256StarStar(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3);

  uint64_t next();
  // In [0, 1), 53 random bits.
  double uniform();

private:
  uint64_t s_[4];
};

// Standard normal samples (mean 0, std 1) by Box-Muller.
class NormalRng {
public:
  explicit NormalRng(uint64_t seed) : bits_(seed) {}
  double next();

private:
  Xoshiro256StarStar bits_;
  double spare_ = 0;
  bool hasSpare_ = false;
};

// The stream seed of one parameter for a run seed.
uint64_t paramSeed(uint64_t seed, std::string_view paramName);

} // namespace gptrt

#endif // GPTRT_CORE_RNG_H
