// Pipeline schedules: orders against the published descriptions.
#include <catch2/catch.hpp>

#include <set>

#include "sim/pipeline_schedule.h"

using namespace orrery;

namespace {

ScheduleStep F(int mb, int chunk = 0) { return {StepKind::kForward, mb, chunk}; }
ScheduleStep B(int mb, int chunk = 0) { return {StepKind::kBackward, mb, chunk}; }

}  // namespace

TEST_CASE("1F1B: p - s - 1 warm-up forwards, then one forward one backward", "[sim][schedule]") {
  // PipeDream-Flush (arXiv:2006.09503) Fig. 4 with 4 stages and 6 micro-batches, stage 1.
  const auto steps = pipeline_steps(Schedule::k1F1B, 4, 1, 1, 6);
  const std::vector<ScheduleStep> expected{F(0), F(1), F(2), B(0), F(3), B(1), F(4), B(2), F(5), B(3), B(4), B(5)};
  CHECK(steps == expected);
  // The last stage alternates from the start.
  CHECK(pipeline_steps(Schedule::k1F1B, 4, 1, 3, 2) == std::vector<ScheduleStep>{F(0), B(0), F(1), B(1)});
}

TEST_CASE("GPipe: all forwards, then all backwards", "[sim][schedule]") {
  CHECK(pipeline_steps(Schedule::kGPipe, 4, 1, 0, 3) == std::vector<ScheduleStep>{F(0), F(1), F(2), B(2), B(1), B(0)});
}

TEST_CASE("interleaved 1F1B runs every (micro-batch, chunk) once each way, in Megatron's order", "[sim][schedule]") {
  const int pp = 4, vpp = 2, m = 8;
  for (int stage = 0; stage < pp; ++stage) {
    const auto steps = pipeline_steps(Schedule::k1F1B, pp, vpp, stage, m);
    std::set<std::tuple<int, int, int>> seen;
    for (const auto& s : steps) seen.insert({static_cast<int>(s.kind), s.microbatch, s.chunk});
    CHECK(steps.size() == static_cast<std::size_t>(2 * m * vpp));
    CHECK(seen.size() == steps.size());
    // Warm-up: (pp - stage - 1) * 2 + (vpp - 1) * pp forwards before the first backward (SC21 Section 2.2.2).
    std::size_t warmup = 0;
    while (steps[warmup].kind == StepKind::kForward) ++warmup;
    CHECK(warmup == static_cast<std::size_t>((pp - stage - 1) * 2 + (vpp - 1) * pp + 1));
  }
  // Megatron-Core's mapping: the first pp forwards are chunk 0 of micro-batches 0..pp-1, then chunk 1.
  const auto s0 = pipeline_steps(Schedule::k1F1B, pp, vpp, 0, m);
  CHECK(s0[0] == F(0, 0));
  CHECK(s0[3] == F(3, 0));
  CHECK(s0[4] == F(0, 1));
  CHECK(s0[8] == F(4, 0));
  // The first backward is chunk vpp-1 of micro-batch 0.
  const auto s3 = pipeline_steps(Schedule::k1F1B, pp, vpp, 3, m);
  CHECK(s3[(vpp - 1) * pp + 1] == B(0, 1));
}
