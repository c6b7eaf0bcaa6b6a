#pragma once
// The one pseudorandom generator of the seeded Monte-Carlos and shuffles (goodput, jitter, random placement), so
// that a seed gives the same numbers with any standard library (std:: distributions are not specified bit for bit):
// xoshiro256** 1.0 (Blackman and Vigna, "Scrambled Linear Pseudorandom Number Generators", ACM TOMS 2021), seeded
// through splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).

#include <cstdint>

namespace orrery {

/// splitmix64: advances `state` and returns the next 64-bit output. Errors: none.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// xoshiro256**, its four words filled by splitmix64 from `seed`.
class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed) {
    for (std::uint64_t& word : s_) word = splitmix64(seed);
  }
  /// The next 64 random bits.
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in (0, 1]: the top 53 bits plus one ulp, so that log never sees 0.
  double uniform_open0() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace orrery
