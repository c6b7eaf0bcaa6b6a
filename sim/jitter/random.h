#pragma once
// The jitter Monte-Carlo's random numbers: its own generator and samplers, so that the same seed gives the same
// numbers with any standard library (std::normal_distribution and friends are not specified bit for bit).
// Generator: sim/xoshiro256.h's. One stream per (seed, iteration), so an iteration's draws do not depend on how many
// the others made.

#include <cmath>
#include <cstdint>

#include "sim/xoshiro256.h"

namespace orrery {

class JitterRandom {
 public:
  JitterRandom(std::uint64_t seed, std::uint64_t iteration) : bits_(seed ^ (0xD1B54A32D192ED03ull * (iteration + 1))) {}

  std::uint64_t next() { return bits_.next(); }

  /// Uniform in (0, 1]: the top 53 bits plus one ulp, so that log never sees 0.
  double uniform_open0() { return bits_.uniform_open0(); }

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
  Xoshiro256 bits_;
};

}  // namespace orrery
