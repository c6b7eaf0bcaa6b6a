// The goodput model (sim/plan/goodput.h): its exact expectation by hand, the seeded Monte-Carlo against it, the
// published ETTRs of Llama 3 405B (arXiv:2407.21783, Section 3.3.4) and ByteRobust (arXiv:2509.16293), checkpoint
// costs, and the refusal of bad `failures` and `checkpoint` sections.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "models/error.h"
#include "sim/plan/checkpoint_interval.h"
#include "sim/plan/goodput.h"
#include "sim/plan/goodput_monte_carlo.h"
#include "sim/plan/goodput_parse.h"

using namespace orrery;
using nlohmann::json;

namespace {

constexpr double kDay = 86400.0;

// One category at one failure per GPU-hour on one GPU (lambda = 1/3600 per s), 20 s to detect, 30 s to recover,
// a 10 s start-up, and saves and reloads of nothing (0 bytes), so every number is on paper.
FailureModel one_category() {
  FailureModel m;
  m.categories = {{"any", 1.0, 20.0}};
  m.recovery_s = 30.0;
  m.startup = {10.0, 1.0, 0.0};
  return m;
}

// Llama 3 405B's run as the paper describes it, with documented assumptions: 16,384 H100s (Section 3.3.4), its
// checkpoint store's sustained 2 TB/s (Section 3.1.2, Tectonic), a checkpoint of 405e9 parameters x 14 bytes (bf16
// weights, fp32 master weights and two fp32 Adam moments; assumed, the paper gives no size) spread over the GPUs,
// and a step of 6 s (assumed; it only floors the interval).
GoodputJob llama3_job() { return {16384, 54 * kDay, 6.0, 405e9 * 14 / 16384}; }

CheckpointSpec llama3_blocking() {
  CheckpointSpec spec;
  spec.mode = CheckpointMode::kBlocking;
  spec.storage_GB_s_total = 2000.0;
  return spec;
}

}  // namespace

TEST_CASE("the expected time of one failure category is (1/lambda + D)(e^{lambda s} - 1) per segment, by hand",
          "[sim][plan][goodput]") {
  // T = 3600 s in two 1800 s segments, lambda = 1/3600 per s, D = 20 + 30 + 10 + 0 = 60 s: each segment takes
  // (3600 + 60)(e^0.5 - 1) = 3660 x 0.6487212707 = 2374.3199 s; with the first start, 10 + 2 x 2374.3199 = 4758.6397 s.
  CheckpointSpec spec;
  spec.mode = CheckpointMode::kBlocking;
  spec.interval_s = 1800.0;
  const GoodputExpectation e = expected_goodput(one_category(), spec, {1, 3600, 1, 0});
  CHECK(e.effective_time_to_train_s == Approx(4758.6397).margin(1e-3));
  CHECK(e.ettr == Approx(3600 / 4758.6397));
  CHECK(e.failures_expected == Approx(2 * 0.6487212707));
  CHECK(e.job_mtbf_s == Approx(3600));
  CHECK(e.checkpoint.interval_rule == "given");
  // Each failure costs its downtime; each segment loses expm1(lambda s)/lambda - s of work; the parts add up to the
  // effective time less T.
  const LostTime& l = e.lost;
  CHECK(l.detection == Approx(20 * e.failures_expected));
  CHECK(l.recovery == Approx(30 * e.failures_expected));
  CHECK(l.startup == Approx(10 + 10 * e.failures_expected));
  CHECK(l.lost_work == Approx(2 * (3600 * 0.6487212707 - 1800)));
  CHECK(3600 + l.checkpoint_saves + l.lost_work + l.detection + l.recovery + l.checkpoint_loads + l.startup ==
        Approx(e.effective_time_to_train_s));
  REQUIRE(e.categories.size() == 1);
  CHECK(e.categories[0].expected_count == Approx(e.failures_expected));
  // Without failures the job takes its start-up plus its work plus its saves.
  FailureModel none = one_category();
  none.categories[0].rate_per_gpu_hour = 0;
  CHECK(expected_goodput(none, spec, {1, 3600, 1, 0}).effective_time_to_train_s == Approx(3610));
}

TEST_CASE("the Monte-Carlo mean converges to the expected value and a seed gives identical runs", "[sim][plan][goodput]") {
  const FailureModel failures = failure_preset("llama3-405b", "test");
  const GoodputJob job = llama3_job();
  const CheckpointCost checkpoint = choose_checkpoint(llama3_blocking(), job, failures);
  const double expected = expected_goodput_at(failures, checkpoint, job).effective_time_to_train_s;
  // Each of 20 seeds' 1,000-run mean is within 1% of the expectation, and their mean within 0.1%.
  const auto start = std::chrono::steady_clock::now();
  double sum = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const MonteCarloSummary mc = monte_carlo_goodput(failures, checkpoint, job, seed, 1000);
    CHECK(std::abs(mc.mean_s / expected - 1) < 0.01);
    CHECK(mc.p50_s <= mc.p90_s);
    CHECK(mc.p90_s <= mc.p99_s);
    sum += mc.mean_s;
  }
  CHECK(std::abs(sum / 20 / expected - 1) < 0.001);
  // 20,000 runs of a 54-day, 16K-GPU job (about 470 failures each) in well under a second of optimised code; a
  // generous bound here, as this test also runs unoptimised.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));

  // Every-step checkpoints (millions of segments) converge too: failures are sampled, not steps.
  const FailureModel byte = failure_preset("byterobust", "test");
  CheckpointSpec every;
  every.mode = CheckpointMode::kEveryStep;
  const GoodputJob byte_job{9600, 90 * kDay, 10.0, 1e9};
  const CheckpointCost every_cost = choose_checkpoint(every, byte_job, byte);
  const double byte_expected = expected_goodput_at(byte, every_cost, byte_job).effective_time_to_train_s;
  CHECK(std::abs(monte_carlo_goodput(byte, every_cost, byte_job, 7, 2000).mean_s / byte_expected - 1) < 0.01);

  // The same seed gives the same numbers, bit for bit; another seed does not.
  const MonteCarloSummary a = monte_carlo_goodput(failures, checkpoint, job, 42, 500);
  const MonteCarloSummary b = monte_carlo_goodput(failures, checkpoint, job, 42, 500);
  const MonteCarloSummary c = monte_carlo_goodput(failures, checkpoint, job, 43, 500);
  CHECK(a.mean_s == b.mean_s);
  CHECK(a.p50_s == b.p50_s);
  CHECK(a.p99_s == b.p99_s);
  CHECK(a.ettr_p10 == b.ettr_p10);
  CHECK(a.mean_s != c.mean_s);
}

TEST_CASE("Llama 3 405B's failure rates give an ETTR above 90%, as the paper reports", "[sim][plan][goodput]") {
  // Llama 3 (arXiv:2407.21783, Section 3.3.4): 466 interruptions in 54 days on 16,384 H100s, "higher than 90%
  // effective training time". Detection waits for the 10-minute NCCL timeout and recovery is a requeue (both
  // assumed, failures.json says why); blocking saves at the Daly interval.
  const GoodputExpectation e = expected_goodput(failure_preset("llama3-405b", "test"), llama3_blocking(), llama3_job());
  WARN("Llama 3 ETTR " << e.ettr << ", failures " << e.failures_expected << ", interval " << e.checkpoint.interval_s
                       << " s, save " << e.checkpoint.save_stall_s << " s");
  CHECK(e.ettr > 0.90);
  CHECK(e.ettr < 0.95);
  // Failures strike only while the job runs (Wald's identity: expected failures = rate x expected running time,
  // the work plus completed saves plus work lost); the job's rate is Llama 3's, 466 per 54 days on 16,384 GPUs.
  const double running_s = llama3_job().compute_s + e.lost.checkpoint_saves + e.lost.lost_work;
  CHECK(e.failures_expected == Approx(466.0 / (54 * kDay) * running_s).epsilon(1e-4));
}

TEST_CASE("ByteRobust's mechanisms on 9,600 GPUs give an ETTR near its 97%", "[sim][plan][goodput]") {
  // ByteRobust (arXiv:2509.16293): 97% ETTR over a three-month job on 9,600 GPUs, with detection by inspection
  // (Table 3), warm standby machines and every-step in-memory checkpoints. The incident rate is Llama 3's
  // (assumed, failures.json), the step 10 s and the checkpoint 1 GB per GPU (assumed).
  CheckpointSpec every;
  every.mode = CheckpointMode::kEveryStep;
  const GoodputExpectation e = expected_goodput(failure_preset("byterobust", "test"), every, {9600, 90 * kDay, 10, 1e9});
  WARN("ByteRobust ETTR " << e.ettr << ", failures " << e.failures_expected);
  CHECK(e.ettr > 0.95);
  CHECK(e.ettr < 0.995);
}

TEST_CASE("every-step in-memory saves stall under 1% of a step while blocking saves stall for the whole write",
          "[sim][plan][goodput]") {
  const GoodputJob job = llama3_job();
  CheckpointSpec every;
  every.mode = CheckpointMode::kEveryStep;
  const CheckpointCost in_memory = checkpoint_cost(every, job, job.step_s);
  // 346 MB per GPU over 64 GB/s of PCIe: 5.4 ms, and the 2.8 GB per node reach the peer (50 GB/s) in 55 ms, within
  // the 6 s step: under 1% of the step, so under 1% of MFU. ByteRobust measures 0.01-0.04 s per step for its
  // every-step in-memory saves (Section 8, as quoted by secondary summaries): the same order.
  CHECK(in_memory.save_stall_s / job.step_s < 0.01);
  CHECK(in_memory.save_stall_s < 0.04);
  // Blocking: each node writes its 8 x 346 MB at its share of 2 TB/s (2,048 nodes: 0.98 GB/s each), 2.83 s.
  const CheckpointCost blocking = checkpoint_cost(llama3_blocking(), job, job.step_s);
  CHECK(blocking.save_stall_s == Approx(405e9 * 14 / 2000e9));
  // Saved every step, blocking saves leave step / (step + stall) of the time for training: 68% here. ByteRobust
  // reports every-step saves to remote storage leaving 39.84-43.07% of its MFU (as quoted by secondary summaries),
  // which this formula gives for a write 1.32-1.51 times its step.
  CHECK(job.step_s / (job.step_s + blocking.save_stall_s) == Approx(0.68).margin(0.01));
  // Asynchronous saves stall only for the copy to host while the background write keeps up, and wait for the
  // write when saved more often than it takes.
  CheckpointSpec async = llama3_blocking();
  async.mode = CheckpointMode::kAsync;
  CHECK(checkpoint_cost(async, job, 60).save_stall_s == Approx(job.checkpoint_bytes_per_gpu / 64e9));
  CHECK(checkpoint_cost(async, job, 1).save_stall_s == Approx(job.checkpoint_bytes_per_gpu / 64e9 + 2.835 - 1));
}

TEST_CASE("the chosen interval is Daly's optimum and the ETTR curve peaks near it", "[sim][plan][goodput]") {
  const FailureModel failures = failure_preset("llama3-405b", "test");
  const GoodputJob job = llama3_job();
  const CheckpointCost chosen = choose_checkpoint(llama3_blocking(), job, failures);
  CHECK(chosen.interval_rule == "daly");
  CHECK(chosen.interval_s == Approx(daly_checkpoint_interval_s(chosen.save_stall_s,
                                                              1 / job_failure_rate_per_s(failures, job.gpus))));
  const std::vector<IntervalPoint> curve = ettr_vs_checkpoint_interval(failures, llama3_blocking(), job);
  REQUIRE(curve.size() >= 5);
  double best = 0;
  double best_at = 0;
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (i > 0) CHECK(curve[i].interval_s > curve[i - 1].interval_s);
    if (curve[i].ettr > best) best = curve[i].ettr, best_at = curve[i].interval_s;
  }
  // Daly's interval is within a factor of 1.5 of the best point of the curve.
  CHECK(best_at / chosen.interval_s > 0.66);
  CHECK(best_at / chosen.interval_s < 1.51);
}

TEST_CASE("failures and checkpoint sections read strictly, with the field in every error", "[sim][plan][goodput]") {
  const FailureModel preset = parse_failures(json("llama3-405b"), "failures");
  CHECK(preset.categories.size() == 19);
  CHECK(preset.recovery == RecoveryStrategy::kRequeue);
  const FailureModel custom = parse_failures(
      json::parse(R"({"preset": "byterobust", "rate_scale": 2, "recovery": "hot_update",
                      "startup": {"reference_s": 30, "reference_gpus": 2048, "exponent": 1}})"),
      "failures");
  CHECK(custom.recovery_s == default_recovery_s(RecoveryStrategy::kHotUpdate));
  CHECK(custom.categories[0].rate_per_gpu_hour ==
        Approx(2 * failure_preset("byterobust", "t").categories[0].rate_per_gpu_hour));
  CHECK(startup_s(custom.startup, 4096) == Approx(60));
  const CheckpointSpec spec = parse_checkpoint(json::parse(R"({"mode": "blocking", "interval_s": 600})"), "checkpoint");
  CHECK(spec.mode == CheckpointMode::kBlocking);
  CHECK(*spec.interval_s == 600);

  CHECK_THROWS_WITH(parse_failures(json::parse(R"({"categories": [{"name": "x", "rate_per_gpu_hour": -1,
                                                   "detection_s": 1}]})"), "failures"),
                    Catch::Contains("failures.categories[0].rate_per_gpu_hour") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(parse_failures(json::parse(R"({"recovery": "pray"})"), "failures"),
                    Catch::Contains("failures.recovery (pray)") && Catch::Contains("warm_standby"));
  CHECK_THROWS_WITH(parse_failures(json("llama4"), "failures"), Catch::Contains("failures (llama4)"));
  CHECK_THROWS_WITH(parse_failures(json::parse(R"({"rate": 1})"), "failures"), Catch::Contains("failures.rate"));
  CHECK_THROWS_WITH(parse_checkpoint(json::parse(R"({"mode": "sometimes"})"), "checkpoint"),
                    Catch::Contains("checkpoint.mode (sometimes)") && Catch::Contains("every_step"));
  CHECK_THROWS_WITH(parse_checkpoint(json::parse(R"({"intervals": 5})"), "checkpoint"),
                    Catch::Contains("checkpoint.intervals"));
  CHECK_THROWS_WITH(parse_checkpoint(json::parse(R"({"interval_s": -5})"), "checkpoint"),
                    Catch::Contains("checkpoint.interval_s (-5"));
  CHECK_THROWS_WITH(parse_checkpoint(json::parse(R"({"mode": "every_step", "interval_s": 5})"), "checkpoint"),
                    Catch::Contains("checkpoint.interval_s"));
  CHECK_THROWS_WITH(parse_checkpoint(json::parse(R"({"storage_write_GB_s_per_node": 0})"), "checkpoint"),
                    Catch::Contains("checkpoint.storage_write_GB_s_per_node (0"));
  CHECK_THROWS_WITH(monte_carlo_goodput(preset, CheckpointCost{CheckpointMode::kAsync, 60, "given", 0, 0, 0},
                                        llama3_job(), 1, 0),
                    Catch::Contains("runs (0)"));
  CHECK_THROWS_WITH(expected_goodput(preset, CheckpointSpec{}, {0, 1, 1, 0}), Catch::Contains("gpus (0)"));
}
