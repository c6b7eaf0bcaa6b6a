// The schedule's wiring (sim/lower/pipeline_wiring.h): which steps share a slot, against Megatron-Core's schedules
// counted by hand (schedules.py: forward_backward_pipelining_with_interleaving batches the steady state's forward
// with the backward after it; forward_backward_pipelining_without_interleaving sends and receives per step).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "sim/job/job.h"
#include "sim/lower/context.h"
#include "sim/lower/pipeline_wiring.h"
#include "sim/pipeline_schedule.h"
#include "test_support.h"

using namespace orrery;

namespace {

// Llama-3-8B cut to eight decoder layers on a two-stage pipeline, `microbatches` micro-batches of one.
Job two_stages(int vpp, int microbatches = 8) {
  return resolve(test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 8},
      "cluster": {"preset": "dgx-h100", "num_gpus": 2}, "parallel": {"tp": 1, "pp": 2, "vpp": )" +
                                std::to_string(vpp) + R"(}, "training": {"seq_length": 1024, "micro_batch_size": 1,
      "global_batch_size": )" + std::to_string(microbatches) + R"(, "precision": "bf16"}})"));
}

// Slot sizes, in order.
std::vector<std::size_t> slot_sizes(const Job& job, int stage) {
  const LoweringContext ctx(job);
  ProgramBuilder builder = program_builder(stage);
  Emitter emit(ctx, builder, stage);
  const PipelineWiring wiring(ctx, emit, stage);
  const auto steps = pipeline_steps(ctx.plan.schedule, ctx.plan.pp, ctx.plan.vpp, stage, ctx.microbatches);
  std::vector<std::size_t> sizes;
  std::size_t covered = 0;
  for (const auto& [begin, end] : wiring.slots(steps)) {
    CHECK(begin == covered);  // the slots tile the steps in order
    covered = end;
    sizes.push_back(end - begin);
  }
  CHECK(covered == steps.size());
  return sizes;
}

}  // namespace

TEST_CASE("1F1B without interleaving communicates around every step", "[sim][lowering]") {
  const Job job = two_stages(1);
  for (int stage : {0, 1}) {
    const std::vector<std::size_t> sizes = slot_sizes(job, stage);
    CHECK(sizes == std::vector<std::size_t>(16, 1));  // 8 forwards and 8 backwards, one slot each
  }
}

TEST_CASE("interleaved 1F1B pairs each steady-state forward with the backward after it", "[sim][lowering]") {
  // pp 2, vpp 2, 8 micro-batches: 16 forward and 16 backward steps per rank. Warm-up forwards (Megatron-Core):
  // (pp - rank - 1) x 2 + (vpp - 1) x pp, 4 on rank 0 and 2 on rank 1; the remaining 16 - warm-up forwards are
  // each batched with a backward, and the last warm-up many backwards run alone.
  const Job job = two_stages(2);
  for (const auto& [stage, warmup] : {std::pair{0, 4}, std::pair{1, 2}}) {
    CAPTURE(stage);
    std::vector<std::size_t> expected(static_cast<std::size_t>(warmup), 1);
    expected.insert(expected.end(), static_cast<std::size_t>(16 - warmup), 2);
    expected.insert(expected.end(), static_cast<std::size_t>(warmup), 1);
    CHECK(slot_sizes(job, stage) == expected);
  }
}

TEST_CASE("interleaved 1F1B with as many micro-batches as stages runs every step alone", "[sim][lowering]") {
  // Megatron-Core's all-warm-up case (micro-batches == pp): all 4 forwards, then all 4 backwards, each its own
  // send/receive; the last forward and the first backward are not batched although they are adjacent.
  const Job job = two_stages(2, 2);
  for (int stage : {0, 1}) CHECK(slot_sizes(job, stage) == std::vector<std::size_t>(8, 1));
}
