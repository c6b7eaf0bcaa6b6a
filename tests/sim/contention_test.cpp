// SM contention as predict runs it: a GEMM beside a communication kernel runs at 1 / (1 + overlap_slowdown) of its
// speed, with the factor `orrery fit records` wrote to hardware/presets/cost_model.json (read here from the file,
// not from the code that loads it).
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/predict.h"
#include "test_support.h"

using namespace orrery;

TEST_CASE("an overlapped GEMM slows by the calibrated overlap_slowdown, and only while the collective runs",
          "[sim][engine][contention]") {
  std::ifstream file(test::source_dir() / "hardware" / "presets" / "cost_model.json");
  const nlohmann::json preset = nlohmann::json::parse(file);
  // The default model is the list's first (hardware/cost_params.cpp), its factor under compute.overlap_slowdown.
  const nlohmann::json& found = preset.at("cost_model").at(0).at("compute").at("overlap_slowdown");
  const double factor = found.at("value").get<double>();
  REQUIRE(factor > 0);

  // One rank: a 4 ms GEMM on the compute stream and, issued beside it, a 1 ms TP all-reduce inside the NVLink
  // domain (no port sharing). The all-reduce keeps its speed and ends at 1 ms; meanwhile the GEMM runs at
  // 1 / (1 + f) speed and does 1 / (1 + f) ms of its work, the remaining 4 - 1 / (1 + f) ms at full speed after.
  // End: 1 + 4 - 1 / (1 + f) ms.
  ProgramBuilder b = program_builder(0);
  Task gemm;
  gemm.kind = TaskKind::kGemm;
  gemm.label = "gemm";
  b.add(gemm, GemmShape{1, 1, 1, 1, DType::kBf16});
  Task reduce;
  reduce.kind = TaskKind::kCollective;
  reduce.stream = Stream::kTp;
  reduce.label = "all_reduce";
  CollectiveOp op{CollectiveKind::kAllReduce, 1 << 20, {}};
  op.placement.domains = 1;
  op.placement.size = 8;
  b.add(reduce, op);
  WorkloadGraph g;
  declare_vocabulary(g);
  g.programs.push_back(b.finish());
  Instantiation one;
  one.instances = {{0, 0, 1, 1.0}};
  one.group_kinds = kNumGroupKinds;
  one.group_of.assign(kNumGroupKinds, -1);
  const RunResult r = run_engine(g, one, Durations{{{4e-3, 1e-3}}, {}}, engine_options(default_cost_params()));
  const auto& t = r.instances[0].timings;
  CHECK(t[1].end == 1'000'000);
  CHECK(static_cast<double>(t[0].end) == Approx((1.0 + 4.0 - 1.0 / (1.0 + factor)) * 1e6).margin(1));
  // Without the factor the GEMM takes its 4 ms.
  CHECK(run_engine(g, one, Durations{{{4e-3, 1e-3}}, {}}).instances[0].timings[0].end == 4'000'000);
}
