// Lining up a predicted and a measured timeline: tasks matched by (rank, name, phase, occurrence), sums per kind
// and layer, iteration span, peak memory, and the largest misses, all checked against hand-made timelines.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "calibrate/timeline_compare.h"
#include "models/error.h"

using namespace orrery;
using nlohmann::json;

namespace {

json task(const char* name, const char* kind, int layer, const char* phase, double start, double end) {
  return {{"rank", 0}, {"stream", "compute"}, {"kind", kind}, {"name", name}, {"stage", 0}, {"layer", layer},
          {"microbatch", 0}, {"phase", phase}, {"start_s", start}, {"end_s", end}};
}

}  // namespace

TEST_CASE("timelines are matched task by task and summed per kind and layer", "[calibrate][compare]") {
  // Predicted: two GEMMs of 1 ms and an elementwise of 0.5 ms per layer, layers 0 and 1; the second "L0 mul" is
  // the same name again (matched by occurrence).
  json p = {{"source", "orrery simulation"}, {"tasks", json::array()},
            {"memory", {{{"rank", 0}, {"samples", {{0.0, 100.0}, {0.001, 300.0}}}}}}};
  json m = {{"source", "orrery-execute"}, {"tasks", json::array()},
            {"memory", {{{"rank", 0}, {"samples", {{0.0, 100.0}, {0.002, 360.0}}}}}}};
  double t = 0, u = 0;
  for (int layer : {0, 1}) {
    const std::string g = "L" + std::to_string(layer) + " qkv gemm mb0", e = "L" + std::to_string(layer) + " mul elementwise mb0";
    p["tasks"].push_back(task(g.c_str(), "gemm", layer, "forward", t, t + 1e-3));
    m["tasks"].push_back(task(g.c_str(), "gemm", layer, "forward", u, u + 1.25e-3));  // measured 25% slower
    t += 1e-3, u += 1.25e-3;
    for (int rep = 0; rep < 2; ++rep) {
      p["tasks"].push_back(task(e.c_str(), "elementwise", layer, "forward", t, t + 0.5e-3));
      m["tasks"].push_back(task(e.c_str(), "elementwise", layer, "forward", u, u + 0.4e-3));
      t += 0.5e-3, u += 0.4e-3;
    }
  }
  m["tasks"].push_back(task("L1 extra elementwise mb0", "elementwise", 1, "forward", u, u + 1e-4));
  const TimelineComparison c = compare_timelines(parse_timeline(p, "p"), parse_timeline(m, "m"), 3);
  CHECK(c.matched == 6);
  CHECK(c.only_predicted == 0);
  CHECK(c.only_measured == 1);
  CHECK(c.iteration.predicted == Approx(4e-3));
  CHECK(c.iteration.measured == Approx(2 * 1.25e-3 + 4 * 0.4e-3 + 1e-4));
  CHECK(c.by_kind.at("gemm").predicted == Approx(2e-3));
  CHECK(c.by_kind.at("gemm").measured == Approx(2.5e-3));
  CHECK(c.by_kind.at("gemm").error() == Approx(-0.2));
  CHECK(c.by_kind.at("elementwise").measured == Approx(1.6e-3));  // the unmatched extra task is not summed
  CHECK(c.by_layer.at(1).predicted == Approx(2e-3));
  CHECK(c.predicted_peak == 300);
  CHECK(c.measured_peak == 360);
  REQUIRE(c.largest_misses.size() == 3);
  CHECK(c.largest_misses[0].kind == "gemm");  // 0.25 ms off, against 0.1 ms for each elementwise
  CHECK(c.largest_misses[0].time.measured == Approx(1.25e-3));
}

TEST_CASE("a malformed timeline is refused by field", "[calibrate][compare]") {
  CHECK_THROWS_WITH(parse_timeline(json{{"tasks", 3}}, "m.json"), Catch::Contains("m.json.tasks (3) must be a list"));
  json bad = {{"tasks", {task("x", "gemm", 0, "forward", 2.0, 1.0)}}};
  CHECK_THROWS_WITH(parse_timeline(bad, "m.json"), Catch::Contains("m.json.tasks[0].end_s (1) must not be before"));
  bad = {{"tasks", {task("x", "banana", 0, "forward", 1.0, 2.0)}}};
  CHECK_THROWS_WITH(parse_timeline(bad, "m.json"), Catch::Contains("m.json.tasks[0].kind (banana) must be a task kind"));
}
