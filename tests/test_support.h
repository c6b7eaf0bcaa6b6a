#pragma once
// Helpers shared by the tests: paths to the project's data, scenarios from JSON text, and lowering shortcuts.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "models/error.h"
#include "sim/lowering.h"
#include "sim/predict.h"
#include "sim/scenario.h"

namespace orrery::test {

inline std::filesystem::path source_dir() { return ORRERY_SOURCE_DIR; }
inline std::filesystem::path data_dir() { return source_dir() / "tests" / "data"; }
inline std::filesystem::path validation_dir() { return source_dir() / "scenarios" / "validation"; }

/// Parses a scenario given as JSON text.
inline Scenario scenario(const std::string& json_text) {
  return parse_scenario(nlohmann::json::parse(json_text), source_dir());
}

/// Parses a scenario and returns the error message it raises ("" when it parses).
inline std::string scenario_error(const std::string& json_text) {
  try {
    scenario(json_text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline WorkloadGraph lowered(const Scenario& s) { return lower(s, default_cost_params().memory); }

/// The default cost parameters with no host issue cost (every task issued at time 0), for tests of GPU-side
/// mechanics whose hand calculation leaves the host timeline out (tests/sim/host_timeline_test.cpp tests it).
inline const CostParams& params_without_host() {
  static const CostParams params = [] {
    CostParams p = default_cost_params();
    p.compute.host = {};
    return p;
  }();
  return params;
}

/// predict() under params_without_host().
inline Prediction predict_without_host(const Scenario& s, PredictOptions options = {}) {
  options.params = &params_without_host();
  return predict(s, options);
}

}  // namespace orrery::test
