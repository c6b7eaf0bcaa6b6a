#include "tools/orrery/fit_records.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>

#include "calibrate/fit_record.h"
#include "calibrate/record_fit.h"
#include "models/error.h"
#include "models/output_file.h"

namespace orrery::cli {

namespace {

double mape(const std::vector<FitRecord>& records, const std::vector<double>& predicted) {
  double sum = 0;
  for (std::size_t i = 0; i < records.size(); ++i) sum += std::fabs(predicted[i] / records[i].measured - 1.0);
  return records.empty() ? 0.0 : 100.0 * sum / static_cast<double>(records.size());
}

void print_params(const CostParams& p) {
  for (const ComputeKnob& k : fitted_compute_knobs()) fmt::print("  {:<22} {:.4f}\n", k.name, k.get(p.compute));
}

}  // namespace

int fit_records(const std::vector<std::string>& paths, const std::vector<std::string>& exclude,
                const std::vector<std::string>& skip, const std::string& write) {
  if (!write.empty()) check_output_path("--write", write);  // before the fit's minutes of simulation
  const auto records = load_fit_records(paths, exclude, skip);
  require(!records.empty(), "fit records", "0 records", "found no scenario with expect.iteration_time_s that simulates");
  const CostParams start = default_cost_params();
  const auto before = predict_records(records, start);
  fmt::print("fitting {} records (MAPE {:.1f}% with the current parameters)\n", records.size(), mape(records, before));
  const CostParams fitted = fit_compute_params(records, start);
  const auto after = predict_records(records, fitted);
  fmt::print("fitted (MAPE {:.1f}%):\n", mape(records, after));
  print_params(fitted);
  std::map<std::string, std::pair<double, int>> by_prefix;
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto& [sum, n] = by_prefix[records[i].prefix];
    sum += std::fabs(after[i] / records[i].measured - 1.0);
    ++n;
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    fmt::print("    {:<44} {:9.3f} s  published {:9.3f} s  {:+6.1f}%\n", records[i].name, after[i], records[i].measured,
               100.0 * (after[i] / records[i].measured - 1.0));
  }
  for (const auto& [prefix, entry] : by_prefix) {
    fmt::print("  {:<20} MAPE {:5.1f}% ({} records)\n", prefix, 100.0 * entry.first / entry.second, entry.second);
  }
  if (!write.empty()) {
    std::string excluded;
    for (const std::string& e : exclude) excluded += (excluded.empty() ? "" : ", ") + e;
    const std::string note = fmt::format(
        "fitted by `orrery fit records` (least squares on log iteration time) to {} published records of "
        "scenarios/validation{}{}",
        records.size(), excluded.empty() ? "" : " without " + excluded,
        skip.empty() ? "" : " (records named with: " + fmt::format("{}", fmt::join(skip, ", ")) + " left out)");
    std::vector<std::pair<std::string, double>> values;
    for (const ComputeKnob& k : fitted_compute_knobs()) values.emplace_back(k.name, k.get(fitted.compute));
    std::string command = "orrery fit records";
    for (const std::string& p : paths) command += " " + p;
    for (const std::string& e : exclude) command += " --exclude-prefix " + e;
    for (const std::string& k : skip) command += " --skip " + k;
    write_fitted_values(write, "compute", values, note, command);
    fmt::print("wrote {}\n", write);
  }
  return 0;
}

namespace {

// Refits without each group of records in turn (grouped by `group_of`) and scores the group left out.
int leave_one_group_out(const std::vector<std::string>& paths, const std::vector<std::string>& skip,
                        const char* what, const std::function<std::string(const FitRecord&)>& group_of) {
  const auto all = load_fit_records(paths, {}, skip);
  std::map<std::string, int> groups;
  for (const FitRecord& r : all) ++groups[group_of(r)];
  fmt::print("leave-one-{}-out: fit without each {}, score its records\n", what, what);
  double total = 0;
  int count = 0;
  for (const auto& [group, n] : groups) {
    std::vector<FitRecord> train, test;
    for (const FitRecord& r : all) (group_of(r) == group ? test : train).push_back(r);
    if (train.empty()) {
      fmt::print("  {:<20} held out: nothing left to fit on\n", group);
      continue;
    }
    const CostParams fitted = fit_compute_params(train, default_cost_params());
    const auto predicted = predict_records(test, fitted);
    const double m = mape(test, predicted);
    total += m * static_cast<double>(test.size());
    count += static_cast<int>(test.size());
    fmt::print("  {:<20} held out: MAPE {:5.1f}% over {} records, fitted on {} (gemm_peak_fraction {:.3f}, fp8 {:.3f}, "
               "hbm_efficiency {:.3f})\n", group, m, test.size(), train.size(), fitted.compute.gemm_peak_fraction,
               fitted.compute.gemm_fp8_peak_fraction, fitted.compute.hbm_efficiency);
    std::fflush(stdout);
  }
  fmt::print("  overall held-out MAPE {:.1f}% over {} records\n", count ? total / count : 0.0, count);
  return 0;
}

}  // namespace

int leave_one_source_out(const std::vector<std::string>& paths, const std::vector<std::string>& skip) {
  return leave_one_group_out(paths, skip, "source", [](const FitRecord& r) { return r.prefix; });
}

int leave_one_generation_out(const std::vector<std::string>& paths, const std::vector<std::string>& skip) {
  return leave_one_group_out(paths, skip, "generation", [](const FitRecord& r) {
    const std::string& a = r.scenario.cluster.gpu.architecture;
    return a.empty() ? r.scenario.cluster.gpu.name : a;
  });
}

}  // namespace orrery::cli
