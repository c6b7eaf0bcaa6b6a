// libFuzzer target over a scenario's whole path: JSON text -> parse -> validate -> lower -> price -> simulate ->
// report. Build with clang and -DORRERY_FUZZ=ON (tests/fuzz/CMakeLists.txt); ctest runs it for a bounded time
// and replays every committed finding (tests/fuzz/README.md).
//
// What counts as a finding: a crash or sanitizer report, an exception other than orrery::Error (a refusal is the
// expected answer to bad input), a run over libFuzzer's -timeout, and a report with a non-finite number, a
// negative time or an MFU/HFU above 1. The simulation is bounded (the constants below) so that one input stays far
// below the timeout; bigger plans stop after validation.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/json_fields.h"
#include "sim/predict.h"
#include "sim/scenario.h"

namespace {

using namespace orrery;

// A plan of more task instances is lowered and refused: the engine runs about a million tasks a second under ASan.
constexpr double kMaxTasks = 200'000;
// Lowering makes every stage's program, about 60 tasks per layer and micro-batch: a scenario of more layers x
// micro-batches than this (about 200,000 tasks) is only parsed and validated. Under ASan and the fuzzer's
// instrumentation a task costs some 13x what it costs in ./build (the 530B record of SC21's Table 2, 6 million
// tasks: 26 s against 2 s), so a scenario under both bounds stays well inside libFuzzer's 10 s timeout.
constexpr double kMaxLayerMicrobatches = 3'000;

[[noreturn]] void finding(const char* what, double value) {
  std::fprintf(stderr, "orrery fuzz finding: %s (%g)\n", what, value);
  std::abort();
}

void check_number(const char* what, double v, bool allow_zero = true) {
  if (!std::isfinite(v) || v < 0 || (!allow_zero && v == 0)) finding(what, v);
}

void check_report(const Report& r) {
  check_number("iteration_time", r.iteration_time, false);
  check_number("tokens_per_s", r.tokens_per_s);
  check_number("model_flops", r.model_flops);
  check_number("hardware_flops", r.hardware_flops);
  check_number("mfu", r.mfu);
  check_number("hfu", r.hfu);
  // Physical bound: no GPU does more than its peak (issue 21's defect: HFU 133% on packed documents).
  if (r.mfu > 1.0 + 1e-9) finding("mfu above 1", r.mfu);
  if (r.hfu > 1.0 + 1e-9) finding("hfu above 1", r.hfu);
  if (r.peak_memory < 0) finding("negative peak memory", static_cast<double>(r.peak_memory));
  const Breakdown& b = r.breakdown;
  for (double part : {b.compute, b.exposed_tp_comm, b.exposed_cp_comm, b.exposed_ep_comm, b.exposed_pp_comm,
                      b.exposed_dp_comm, b.bubble, b.optimizer, b.other, b.host}) {
    check_number("breakdown part", part);
  }
}

double layer_microbatches(const Scenario& s) {
  return static_cast<double>(s.model.num_layers + s.model.mtp_num_layers) * std::max(1, s.num_microbatches());
}

void run_one(const std::string& text) {
  const nlohmann::json doc = parse_json_text(text, "fuzz input");
  Scenario scenario = parse_scenario(doc, ".");
  if (layer_microbatches(scenario) > kMaxLayerMicrobatches) return;
  PredictOptions options;
  options.max_task_instances = kMaxTasks;
  const Prediction p = predict(scenario, options);
  check_report(p.report);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    run_one(text);
  } catch (const orrery::Error&) {
    // A refusal naming the field: the expected answer to bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orrery fuzz finding: exception outside orrery::Error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
