#pragma once
// The jitter Monte-Carlo's random numbers: its own generator and samplers, so that the same seed gives the same
// numbers with any standard library (std::normal_distribution and friends are not specified bit for bit).
// Generator: xoshiro256** 1.0 seeded through splitmix64 (Blackman and Vigna, "Scrambled Linear Pseudorandom Number
// Generators", ACM TOMS 2021; Steele, Lea and Flood, OOPSLA 2014). One stream per (seed, iteration), so an
// iteration's draws do not depend on how many the others made.

#include <cmath>
#include <cstdint>

namespace orrery {

class JitterRandom {
 public:
  JitterRandom(std::uint64_t seed, std::uint64_t iteration) {
    std::uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (iteration + 1));
    for (std::uint64_t& word : s_) word = splitmix64(state);
  }

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

  /// Uniform integer in [0, n) for n >= 1: the top 53 bits scaled to n (its bias is below n / 2^53).
  std::uint64_t below(std::uint64_t n) {
    const auto k = static_cast<std::uint64_t>(static_cast<double>(next() >> 11) * 0x1.0p-53 * static_cast<double>(n));
    return k < n ? k : n - 1;
  }

  /// Standard normal by Box-Muller (Box and Muller, Ann. Math. Statist. 1958), one value per two uniforms (the
  /// pair's second is dropped, so each call draws the same count).
  double normal() {
    const double u1 = uniform_open0(), u2 = uniform_open0();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
  }

  /// Exponential of mean `mean` (>= 0) by inversion.
  double exponential(double mean) { return -mean * std::log(uniform_open0()); }

 private:
  static constexpr double kPi = 3.14159265358979323846;
  static std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace orrery
