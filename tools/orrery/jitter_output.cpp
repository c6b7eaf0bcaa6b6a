#include "tools/orrery/jitter_output.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace orrery::cli {

nlohmann::json jitter_json(const JitterSummary& s) {
  const JitterSpec& j = s.spec;
  nlohmann::json out;
  out["seed"] = j.seed;
  out["iterations"] = j.iterations;
  out["ranks"] = s.ranks;
  out["inputs"] = {{"compute_sigma", j.compute_sigma},
                   {"thermal_fraction", j.thermal_fraction},
                   {"thermal_clock_factor", j.thermal_clock_factor},
                   {"network_fraction", j.network_fraction},
                   {"network_slowdown", j.network_slowdown},
                   {"launch_mean_delay_s", j.launch_delay_mean},
                   {"gc_rate_per_s", j.gc_rate_per_s},
                   {"gc_pause_s", j.gc_pause}};
  out["jitter_free_step_s"] = s.jitter_free_step;
  out["mean_step_s"] = s.mean;
  out["p50_step_s"] = s.p50;
  out["p90_step_s"] = s.p90;
  out["p99_step_s"] = s.p99;
  out["min_step_s"] = s.min;
  out["max_step_s"] = s.max;
  out["expected_loss"] = s.expected_loss;
  out["analytic_expected_max_compute_slowdown"] = s.analytic_expected_max_slowdown;
  nlohmann::json scaling = nlohmann::json::array();
  for (const JitterScalePoint& p : s.scaling) {
    scaling.push_back({{"ranks", p.ranks},
                       {"expected_max_compute_slowdown", p.expected_max_slowdown},
                       {"expected_loss", p.expected_loss}});
  }
  out["scaling"] = scaling;
  out["step_s"] = s.steps;
  return out;
}

void print_jitter_summary(std::ostream& out, const JitterSummary& s) {
  fmt::print(out, "\n  jitter: {} iterations, seed {}, {} ranks each simulated\n", s.spec.iterations, s.spec.seed, s.ranks);
  fmt::print(out, "    jitter-free step   {:10.3f} s\n", s.jitter_free_step);
  fmt::print(out, "    mean step          {:10.3f} s   expected loss {:+.2f}%\n", s.mean, 100 * s.expected_loss);
  fmt::print(out, "    p50 / p90 / p99    {:.3f} / {:.3f} / {:.3f} s\n", s.p50, s.p90, s.p99);
  std::string row;
  for (const JitterScalePoint& p : s.scaling) row += fmt::format("{}{}: {:+.2f}%", row.empty() ? "" : ", ", p.ranks, 100 * p.expected_loss);
  fmt::print(out, "    compute-bound loss by ranks, E[max of N slowdowns] - 1: {}\n", row);
}

}  // namespace orrery::cli
