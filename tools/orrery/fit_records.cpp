#include "tools/orrery/fit_records.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>

#include "calibrate/record_fit.h"
#include "models/error.h"

namespace orrery::cli {

namespace {

double mape(const std::vector<FitRecord>& records, const std::vector<double>& predicted) {
  double sum = 0;
  for (std::size_t i = 0; i < records.size(); ++i) sum += std::fabs(predicted[i] / records[i].measured - 1.0);
  return records.empty() ? 0.0 : 100.0 * sum / static_cast<double>(records.size());
}

void print_params(const CostParams& p) {
  fmt::print("  gemm_peak_fraction {:.4f}\n  gemm_k_half        {:.1f}\n  gemm_wave_tail     {:.4f}\n"
             "  hbm_efficiency     {:.4f}\n  kernel_overhead_us {:.2f}\n  overlap_slowdown   {:.4f}\n",
             p.compute.gemm_peak_fraction, p.compute.gemm_k_half, p.compute.gemm_wave_tail, p.compute.hbm_efficiency,
             to_us(p.compute.kernel_overhead), p.compute.overlap_slowdown);
}

void write_params(const std::string& file, const CostParams& p, const std::string& note) {
  std::ifstream in(file);
  if (!in) throw Error::io(file, "cannot be read");
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  auto& c = doc.at("cost_model").at(0).at("compute");
  auto set = [&](const char* key, double value) { c[key] = {{"value", std::round(value * 1e4) / 1e4}, {"source", note}}; };
  set("gemm_peak_fraction", p.compute.gemm_peak_fraction);
  set("gemm_k_half", p.compute.gemm_k_half);
  set("gemm_wave_tail", p.compute.gemm_wave_tail);
  set("hbm_efficiency", p.compute.hbm_efficiency);
  set("kernel_overhead_us", to_us(p.compute.kernel_overhead));
  set("overlap_slowdown", p.compute.overlap_slowdown);
  std::ofstream out(file);
  if (!out) throw Error::io(file, "cannot be written");
  out << doc.dump(2) << "\n";
}

}  // namespace

int fit_records(const std::vector<std::string>& paths, const std::vector<std::string>& exclude, const std::string& write) {
  const auto records = load_fit_records(paths, exclude);
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
        "scenarios/validation{}",
        records.size(), excluded.empty() ? "" : " without " + excluded);
    write_params(write, fitted, note);
    fmt::print("wrote {}\n", write);
  }
  return 0;
}

}  // namespace orrery::cli
