// The measured H200 runs (scenarios/measured, tools/pytorch_train_step.py on one H200, 2026-11-30) against the
// prediction for the same scenarios: the targets are the step time within 10% and the peak memory within 5%
// of the measured median step and torch.cuda.max_memory_allocated. The measured figures are read from the run's
// own result files, not from the scenarios' expect blocks, so a hand-edited expectation cannot pass this test.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "models/json_fields.h"
#include "sim/predict.h"
#include "sim/scenario.h"
#include "test_support.h"

using namespace orrery;

TEST_CASE("measured H200 steps: time within 10%, peak memory within 5%, priced by the measured H200 profile",
          "[sim][measured]") {
  const auto measured = test::source_dir() / "scenarios" / "measured";
  for (const char* model : {"llama-0.5b", "llama-1b", "llama-3b"}) {
    INFO(model);
    const nlohmann::json run = read_json_file(measured / "h200-2026-11-30" / (std::string(model) + ".json"), "run");
    const double step = run.at("iteration_time_s").get<double>();
    const double peak = run.at("max_memory_allocated_bytes").get<double>();
    const Scenario s = load_scenario(measured / ("h200-" + std::string(model) + ".json"));
    REQUIRE(s.expect.iteration_time_s);
    CHECK(*s.expect.iteration_time_s == Approx(step).epsilon(1e-4));  // the record states the run's own figure
    const Prediction p = predict(s);
    CHECK(p.report.profile.find("h200") != std::string::npos);  // priced by the measured profile
    CHECK(std::abs(p.report.iteration_time / step - 1) < 0.10);
    CHECK(std::abs(static_cast<double>(p.report.peak_memory) / peak - 1) < 0.05);
  }
}
