// Pipeline schedules: orders against the published descriptions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <tuple>

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

TEST_CASE("DualPipe: the published phases on 2 ranks, worked by hand", "[sim][schedule]") {
  // pp 2, 4 micro-batches: 0 and 1 enter at rank 0 (chunk 0), 2 and 3 at rank 1 (chunk 1). Rank 0 is a middle
  // rank (h = 0): one pair of forwards (near, far), then its first main step back to back (F0, B1) and the
  // overlapped pair F1&B0, then (B1, B0) with the last B split, and its W.
  ScheduleStep paired = F(3, 1);
  paired.paired = true;
  ScheduleStep split = B(1, 0);
  split.weight_deferred = true;
  const std::vector<ScheduleStep> rank0{F(0, 0), F(2, 1), F(1, 0), B(2, 1), paired, B(0, 0), B(3, 1), split,
                                        {StepKind::kWeight, 1, 0}};
  CHECK(pipeline_steps(Schedule::kDualPipe, 2, 1, 0, 4) == rank0);
}

TEST_CASE("DualPipe: every pass once, FIFO per direction, p+1 in flight, ranks s and p-1-s mirrored",
          "[sim][schedule]") {
  const int pp = 8, m = 20;  // the README's figure: 8 ranks, 20 micro-batches
  for (int stage = 0; stage < pp; ++stage) {
    INFO("stage " << stage);
    const auto steps = pipeline_steps(Schedule::kDualPipe, pp, 1, stage, m);
    std::set<std::tuple<int, int, int>> seen;
    int in_flight = 0, most = 0, deferred = 0, weights = 0;
    std::array<int, 2> next_forward{0, m / 2}, next_backward{0, m / 2};
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const ScheduleStep& s = steps[i];
      seen.insert({static_cast<int>(s.kind), s.microbatch, s.chunk});
      CHECK(s.chunk == (s.microbatch < m / 2 ? 0 : 1));
      if (s.kind == StepKind::kForward) {
        CHECK(s.microbatch == next_forward[static_cast<std::size_t>(s.chunk)]++);
        most = std::max(most, ++in_flight);
        if (s.paired) CHECK((i + 1 < steps.size() && steps[i + 1].kind == StepKind::kBackward));
      } else if (s.kind == StepKind::kBackward) {
        CHECK(s.microbatch == next_backward[static_cast<std::size_t>(s.chunk)]++);
        --in_flight;
        deferred += s.weight_deferred ? 1 : 0;
      } else {
        ++weights;
        CHECK(weights <= deferred);  // a W follows its B
      }
    }
    CHECK(seen.size() == steps.size());
    CHECK(weights == deferred);
    CHECK(steps.size() == static_cast<std::size_t>(2 * m + weights));
    CHECK(most == pp + 1);  // DeepSeek-V3 report, Table 2: activation memory PP + 1
    // Rank p-1-s runs rank s's order with the directions swapped.
    auto mirrored = pipeline_steps(Schedule::kDualPipe, pp, 1, pp - 1 - stage, m);
    for (ScheduleStep& s : mirrored) {
      s.chunk = 1 - s.chunk;
      s.microbatch = (s.microbatch + m / 2) % m;
    }
    CHECK(mirrored == steps);
  }
}

TEST_CASE("DualPipeV: dualpipev.py's eight phases on 2 ranks, worked by hand", "[sim][schedule]") {
  // pp 2, 4 micro-batches; chunk 0 is virtual stage s on the way down, chunk 1 virtual stage 3 - s on the way back.
  // Rank 0: 2 F0 (phase 1), F0 F1 (2), B1 split, W, F1 (3), F0&B1 and F1&B0 (4), B1, F1&B0 (5), B1 and B0 with the
  // split from the middle on, here B0 (6, an even rank), W and a split B0 (7), the last W (8).
  const auto pair = [](ScheduleStep s) {
    s.paired = true;
    return s;
  };
  const auto split = [](ScheduleStep s) {
    s.weight_deferred = true;
    return s;
  };
  const auto W = [](int mb, int chunk) { return ScheduleStep{StepKind::kWeight, mb, chunk}; };
  const std::vector<ScheduleStep> rank0{F(0), F(1), F(2), F(0, 1), split(B(0, 1)), W(0, 1), F(1, 1),
                                        pair(F(3)), B(1, 1), pair(F(2, 1)), B(0), B(2, 1), pair(F(3, 1)), B(1),
                                        B(3, 1), split(B(2)), W(2, 0), split(B(3)), W(3, 0)};
  CHECK(pipeline_steps(Schedule::kDualPipeV, 2, 1, 0, 4) == rank0);
  // Rank 1, the turn: (F0 F1) twice (2), its first F0 and B1 back to back, then F1&B0, F0&B1, F1&B0 (4), the two
  // last (B1, B0) split from the middle on, here before B1 (6, an odd rank), and their W (8).
  const std::vector<ScheduleStep> rank1{F(0), F(0, 1), F(1), F(1, 1), F(2), B(0, 1), pair(F(2, 1)), B(0),
                                        pair(F(3)), B(1, 1), pair(F(3, 1)), B(1), B(2, 1), B(2),
                                        split(B(3, 1)), split(B(3)), W(3, 1), W(3, 0)};
  CHECK(pipeline_steps(Schedule::kDualPipeV, 2, 1, 1, 4) == rank1);
}

TEST_CASE("DualPipeV: every micro-batch down chunk 0 and back up chunk 1, FIFO, 2p+1 chunk passes in flight",
          "[sim][schedule]") {
  const int pp = 4, m = 10;
  for (int stage = 0; stage < pp; ++stage) {
    INFO("stage " << stage);
    const auto steps = pipeline_steps(Schedule::kDualPipeV, pp, 1, stage, m);
    std::set<std::tuple<int, int, int>> seen;
    int in_flight = 0, most = 0, deferred = 0, weights = 0;
    std::array<int, 2> next_forward{}, next_backward{};
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const ScheduleStep& s = steps[i];
      seen.insert({static_cast<int>(s.kind), s.microbatch, s.chunk});
      const auto c = static_cast<std::size_t>(s.chunk);
      if (s.kind == StepKind::kForward) {
        CHECK(s.microbatch == next_forward[c]++);
        // The way back starts only after the way down has passed this rank.
        if (s.chunk == 1) CHECK(next_forward[0] > s.microbatch);
        most = std::max(most, ++in_flight);
        if (s.paired) CHECK((i + 1 < steps.size() && steps[i + 1].kind == StepKind::kBackward));
      } else if (s.kind == StepKind::kBackward) {
        CHECK(s.microbatch == next_backward[c]++);
        // Gradients come back up chunk 1 first, then down chunk 0.
        if (s.chunk == 0) CHECK(next_backward[1] > s.microbatch);
        --in_flight;
        deferred += s.weight_deferred ? 1 : 0;
      } else {
        ++weights;
        CHECK(weights <= deferred);
      }
    }
    CHECK(seen.size() == steps.size());
    CHECK(next_forward == std::array<int, 2>{m, m});
    CHECK(next_backward == std::array<int, 2>{m, m});
    CHECK(weights == deferred);
    // The DualPipe README's table: activations PP + 1 of its PP = 2 pp model stages, here chunks.
    CHECK(most == 2 * pp + 1);
  }
}
