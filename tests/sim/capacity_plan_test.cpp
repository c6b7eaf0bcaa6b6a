// Capacity planning against published training times (issue 23): a plan point's time to train, from Orrery's own
// predicted throughput, against SC21's 8TP/(nX) estimate and MegaScale's measured time, each within the prediction's
// error on that record; and the goodput model's ETTR on the plan scenario of Llama 3's run.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "models/json_fields.h"
#include "sim/plan/plan_point.h"
#include "sim/plan/plan_sweep.h"
#include "sim/plan/time_to_train.h"
#include "sim/predict.h"
#include "test_support.h"

using namespace orrery;

namespace {

constexpr double kDay = 86400.0;

Scenario scenario_file(const std::filesystem::path& path) {
  return parse_scenario(read_json_file(path, "scenario"), path.parent_path());
}

}  // namespace

TEST_CASE("time to train from Orrery's throughput is SC21's 8TP/(nX) estimate within the record's error",
          "[sim][plan][published]") {
  // SC21 Table 1's 1,008B model on 3,072 A100s at 163 TFLOP/s, 450 billion tokens: "about 84 days" (Section 5.1).
  const Scenario s = scenario_file(test::validation_dir() / "sc21-t1-1008p0b.json");
  const Prediction p = predict(s);
  const PlanPoint point = plan_point(p, {.tokens = 450e9});
  const double published_step = 102.63;  // the record's measured iteration time (its expect block)
  const double step_error = p.report.iteration_time / published_step - 1;
  // The plan carries the step exactly: whole steps for the budget, each at the predicted iteration time.
  const double steps = std::ceil(450e9 / (3072.0 * 2048));
  CHECK(point.steps == steps);
  CHECK(point.time_to_train == Approx(steps * p.report.iteration_time));
  // SC21's estimate with the paper's 163 TFLOP/s: 83.9 days. Orrery's, within the record's step error (-1.5%) plus
  // the 8P approximation's neglect of attention and the LM head (about 1% at this size).
  const double sc21 = time_to_train_s(450e9, tokens_per_s_at(1008e9, true, 3072, 163e12));
  CHECK(sc21 / kDay == Approx(83.9).margin(0.05));
  CHECK(std::abs(point.time_to_train / sc21 - 1) < std::abs(step_error) + 0.02);
  // SC21's formula with Orrery's own per-GPU hardware FLOP rate gives the plan's time to within that approximation.
  const double with_own_rate = time_to_train_s(450e9, tokens_per_s_at(1008e9, true, 3072, p.report.hardware_tflops_per_gpu * 1e12));
  CHECK(point.time_to_train / with_own_rate == Approx(1).margin(0.02));
}

TEST_CASE("MegaScale's 175B on 12,288 GPUs: 300 billion tokens in about 1.75 days", "[sim][plan][published]") {
  // MegaScale (NSDI'24) Table 2, as issue 23 quotes it. The record's plan is assumed (scenarios/plan/
  // megascale-175b-12288xa100.json); MegaScale's own overlap and fused kernels are not in it, so Orrery is slower:
  // 1.92 days, +9.7%, inside the 11-30% that out-of-sample runs are off by (README "Accuracy today").
  const Scenario s = scenario_file(test::source_dir() / "scenarios" / "plan" / "megascale-175b-12288xa100.json");
  const PlanPoint point = plan_point(predict(s), {.tokens = 300e9});
  CHECK(point.steps == std::ceil(300e9 / (6144.0 * 2048)));
  CHECK(point.time_to_train / kDay == Approx(1.75).epsilon(0.12));
}

TEST_CASE("the 405B plan with Llama 3's failure rates keeps ETTR above 90%, as the paper reports, and the sweep's "
          "scaling efficiencies are relative to its first point", "[sim][plan][published]") {
  SweepRequest rq;
  rq.document = read_json_file(test::source_dir() / "scenarios" / "plan" / "llama3.1-405b-h100.json", "scenario");
  rq.base_dir = test::source_dir() / "scenarios" / "plan";
  rq.run = {.tokens = 15.6e12};
  rq.gpu_counts = {8192, 16384};
  rq.monte_carlo_runs = 200;
  const PlanSweep sweep = plan_sweep(rq);
  REQUIRE(sweep.points.size() == 2);
  REQUIRE(sweep.main == 1);  // the scenario's own 16,384 GPUs
  const SweepPoint& main = sweep.points[1];
  // Llama 3 (arXiv:2407.21783, Section 3.3.4): "higher than 90% effective training time" with 466 interruptions.
  CHECK(main.goodput.ettr > 0.90);
  CHECK(main.goodput.ettr < 0.97);
  // The Monte-Carlo mean follows the expectation (200 runs; the goodput tests check 1% over many seeds).
  CHECK(main.monte_carlo->mean_s == Approx(main.goodput.effective_time_to_train_s).epsilon(0.01));
  // Strong scaling: tokens per second per GPU over the first point's; weak: the first point's batch per GPU.
  const SweepPoint& first = sweep.points[0];
  CHECK(first.strong_scaling_efficiency == 1);
  CHECK(main.strong_scaling_efficiency == Approx(main.point.tokens_per_s_per_gpu / first.point.tokens_per_s_per_gpu));
  CHECK(main.strong_scaling_efficiency < 1);  // a fixed batch over twice the GPUs: fewer micro-batches, more bubble
  REQUIRE(main.weak_scaling_efficiency.has_value());
  CHECK(*main.weak_scaling_efficiency > main.strong_scaling_efficiency);
  // Weak scaling stays near 1 (it may pass 1 by a hair: the distributed optimizer's shard shrinks with DP).
  CHECK(*main.weak_scaling_efficiency == Approx(1).margin(0.02));
}
