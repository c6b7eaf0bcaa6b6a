#include "sim/jitter/order_statistics.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "sim/jitter/rank_factors.h"

namespace orrery {

namespace {

constexpr double kTailSigmas = 9.0;      // 2 (1 - Phi(9)) = 2.3e-19 per rank
constexpr int kSimpsonIntervals = 4096;  // per piece; even

// log P(s <= x) of one unthrottled rank, at u = ln x >= 0: log erf(u / (sigma sqrt 2)), written with erfc so that
// it keeps its digits where the CDF is near 1.
double log_cdf(double u, double sigma) {
  if (u <= 0) return -INFINITY;
  return std::log1p(-std::erfc(u / (sigma * std::sqrt(2.0))));
}

double simpson(const std::function<double(double)>& f, double a, double b) {
  if (!(b > a)) return 0;
  const double h = (b - a) / kSimpsonIntervals;
  double sum = f(a) + f(b);
  for (int i = 1; i < kSimpsonIntervals; ++i) sum += f(a + h * i) * (i % 2 == 1 ? 4.0 : 2.0);
  return sum * h / 3.0;
}

}  // namespace

double expected_max_compute_slowdown(const JitterSpec& spec, std::int64_t ranks) {
  const bool throttles = spec.thermal_fraction > 0 && spec.thermal_clock_factor < 1;
  const std::int64_t hot = throttles ? std::min(ranks_hit(spec.thermal_fraction, ranks), ranks) : 0;
  const double shift = hot > 0 ? -std::log(spec.thermal_clock_factor) : 0.0;  // ln of the throttled factor
  const double sigma = spec.compute_sigma;
  if (sigma <= 0) return std::exp(shift);
  const auto cool = static_cast<double>(ranks - hot), warm = static_cast<double>(hot);
  // The integrand of E[max] = 1 + int_0^inf (1 - P(max <= e^u)) e^u du.
  const auto excess = [&](double u) {
    double log_p = cool > 0 ? cool * log_cdf(u, sigma) : 0.0;
    if (warm > 0) log_p += warm * log_cdf(u - shift, sigma);
    return -std::expm1(log_p) * std::exp(u);
  };
  const double end = shift + kTailSigmas * sigma;
  // Split at the throttled factor, where the integrand has a kink.
  return 1.0 + simpson(excess, 0.0, shift) + simpson(excess, shift, end);
}

std::vector<JitterScalePoint> jitter_scaling(const JitterSpec& spec, std::int64_t job_ranks) {
  std::vector<std::int64_t> sizes{8, 64, 512, 4096, 32768, 262144};
  if (std::find(sizes.begin(), sizes.end(), job_ranks) == sizes.end()) sizes.push_back(job_ranks);
  std::sort(sizes.begin(), sizes.end());
  std::vector<JitterScalePoint> out;
  for (std::int64_t n : sizes) {
    const double m = expected_max_compute_slowdown(spec, n);
    out.push_back({n, m, m - 1.0});
  }
  return out;
}

}  // namespace orrery
