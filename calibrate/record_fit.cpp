#include "calibrate/record_fit.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "calibrate/least_squares.h"
#include "models/error.h"
#include "sim/durations.h"
#include "sim/lowering.h"
#include "sim/predict.h"
#include "sim/validation.h"

namespace orrery {

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> json_files(const std::vector<std::string>& paths) {
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
      }
    } else {
      files.emplace_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

template <typename F>
void parallel_for(std::size_t n, int threads, F&& body) {
  std::atomic<std::size_t> next{0};
  const int workers = std::max(1, threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < workers; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) body(i);
    });
  }
  for (auto& t : pool) t.join();
}

}  // namespace

std::vector<FitRecord> load_fit_records(const std::vector<std::string>& paths, const std::vector<std::string>& exclude,
                                        const std::vector<std::string>& skip) {
  std::vector<FitRecord> out;
  for (const fs::path& file : json_files(paths)) {
    Scenario s;
    try {
      s = load_scenario(file);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kNotModelled) continue;
      throw;
    }
    if (!s.expect.iteration_time_s) continue;
    const std::string prefix = source_prefix(s.name);
    if (std::find(exclude.begin(), exclude.end(), prefix) != exclude.end()) continue;
    if (std::any_of(skip.begin(), skip.end(), [&](const std::string& k) { return s.name.find(k) != std::string::npos; })) {
      continue;
    }
    FitRecord r;
    r.name = s.name;
    r.prefix = prefix;
    r.measured = *s.expect.iteration_time_s;
    r.graph = lower(s, default_cost_params().memory);
    r.instances = make_instances(s.parallel, s.stragglers, Expansion::kAuto);
    r.scenario = std::move(s);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<double> predict_records(const std::vector<FitRecord>& records, const CostParams& params, int threads) {
  std::vector<double> out(records.size());
  parallel_for(records.size(), threads, [&](std::size_t i) {
    const FitRecord& r = records[i];
    DefaultCostModels models(r.scenario.cluster, params);
    const Durations d = price_graph(r.graph, models.models(), host_issue_costs(params.compute.host, r.scenario.training.framework));
    RunOptions options;
    options.record_budget = 0;
    out[i] = from_nanos(run_engine(r.graph, r.instances, d, engine_options(params, options)).makespan);
  });
  return out;
}

const std::vector<ComputeKnob>& fitted_compute_knobs() {
  using C = ComputeParams;
  static const std::vector<ComputeKnob> knobs = {
      {"gemm_peak_fraction", 0.3, 1.0, [](const C& c) { return c.gemm_peak_fraction; },
       [](C& c, double v) { c.gemm_peak_fraction = v; }},
      {"gemm_fp8_peak_fraction", 0.3, 1.0, [](const C& c) { return c.gemm_fp8_peak_fraction; },
       [](C& c, double v) { c.gemm_fp8_peak_fraction = v; }},
      {"gemm_k_half", 1.0, 4096.0, [](const C& c) { return c.gemm_k_half; }, [](C& c, double v) { c.gemm_k_half = v; }},
      {"gemm_wave_tail", 0.0, 1.0, [](const C& c) { return c.gemm_wave_tail; },
       [](C& c, double v) { c.gemm_wave_tail = v; }},
      {"hbm_efficiency", 0.2, 1.0, [](const C& c) { return c.hbm_efficiency; },
       [](C& c, double v) { c.hbm_efficiency = v; }},
      // NCCL runs one CTA per channel, up to 32 SMs of 108 (A100) or 132 (H100), and shares HBM bandwidth:
      // compute loses at most about 30% while a collective runs.
      {"overlap_slowdown", 0.0, 0.3, [](const C& c) { return c.overlap_slowdown; },
       [](C& c, double v) { c.overlap_slowdown = v; }},
  };
  return knobs;
}

CostParams fit_compute_params(const std::vector<FitRecord>& records, const CostParams& start, int threads) {
  const auto& knobs = fitted_compute_knobs();
  std::vector<FitParameter> params;
  for (const ComputeKnob& k : knobs) {
    // Start strictly inside the bounds so that the first Jacobian can move both ways.
    const double margin = 0.02 * (k.upper - k.lower);
    params.push_back({k.name, std::clamp(k.get(start.compute), k.lower + margin, k.upper - margin), k.lower, k.upper});
  }
  auto unpack = [&](const std::vector<double>& v) {
    CostParams p = start;
    for (std::size_t i = 0; i < knobs.size(); ++i) knobs[i].set(p.compute, v[i]);
    return p;
  };
  auto residuals = [&](const std::vector<double>& v) {
    const std::vector<double> predicted = predict_records(records, unpack(v), threads);
    std::vector<double> r;
    for (std::size_t i = 0; i < records.size(); ++i) r.push_back(std::log(predicted[i] / records[i].measured));
    return r;
  };
  const FitResult fit = fit_least_squares(params, static_cast<int>(records.size()), residuals, 200);
  return unpack(fit.values);
}

}  // namespace orrery
