#pragma once
// Pipeline schedules as the order in which one pipeline rank runs forward and backward passes of (micro-batch,
// model chunk) pairs. A schedule is a pure function here; the lowering turns its steps into tasks (ARCHITECTURE.md
// rule 11: a schedule is a graph builder, not engine code).

#include <vector>

#include "sim/scenario.h"

namespace orrery {

/// kBackward: the whole backward, or with zero-bubble schedules its input-gradient part (B); kWeight: the
/// weight-gradient part (W) of a micro-batch whose B has run.
enum class StepKind { kForward, kBackward, kWeight };

struct ScheduleStep {
  StepKind kind = StepKind::kForward;
  int microbatch = 0;
  int chunk = 0;  // model chunk (virtual stage) on this rank; with DualPipe, the direction (0 from rank 0)
  /// kBackward only: the input-gradient pass B alone, its weight gradients left to a later kWeight step.
  bool weight_deferred = false;
  /// kForward only: runs overlapped with the kBackward right after it (DualPipe's "F&B" pair).
  bool paired = false;
  bool operator==(const ScheduleStep&) const = default;
};

/// Steps of pipeline rank `stage` of `pp`, with `vpp` chunks each and `microbatches` micro-batches.
/// - GPipe (Huang et al., arXiv:1811.06965): all forwards, then all backwards (last micro-batch first).
/// - 1F1B (PipeDream-Flush, Narayanan et al., arXiv:2006.09503): pp - stage - 1 warm-up forwards, then alternating
///   one forward and one backward, then the remaining backwards.
/// - Interleaved 1F1B (SC21, arXiv:2104.04473 Section 2.2.2), Megatron-Core's order: forward k runs chunk
///   (k mod (pp vpp)) / pp of micro-batch (k / (pp vpp)) pp + k mod pp; backward k the mirrored chunk; warm-up
///   (pp - stage - 1) 2 + (vpp - 1) pp forwards, all of them when microbatches == pp.
/// - ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv:2401.10241, Section 3.1): 1F1B's forwards and
///   input-gradient passes B, with each weight-gradient pass W run right after a B except that stage i keeps i of
///   them back, running them in the cool-down where it would otherwise wait for gradients. Peak memory stays at
///   1F1B's (pp in-flight micro-batches on stage 0), and the bubble shrinks from (pp - 1)(F + B + W) to
///   (pp - 1)(F + B - W).
/// - DualPipe (DeepSeek-V3 technical report, arXiv:2412.19437, Section 3.2.1; the schedule of
///   github.com/deepseek-ai/DualPipe): pp even; rank s holds model stage s for micro-batches 0 .. m/2 - 1, fed at
///   rank 0 (chunk 0), and a second copy of stage pp - 1 - s for micro-batches m/2 .. m - 1, fed at rank pp - 1
///   (chunk 1). With h = min(s, pp - 1 - s), "near" the direction whose entry is on s's half of the pipeline and
///   "far" the other, each rank runs: 2 (pp/2 - h - 1) near forwards; h + 1 pairs (near forward, far forward);
///   pp/2 - h - 1 of (far B, its W, far forward); m/2 - pp + h + 1 of (near forward & far backward, far forward &
///   near backward) as overlapped pairs (the middle ranks run their first pair back to back); pp/2 - h - 1 of (far
///   backward, far forward & near backward); h + 1 of (far backward, near backward), the second half of them B
///   only; pp/2 - h - 1 of (W, near B); and the h + 1 remaining W, weight passes first in, first out. Backwards run
///   in micro-batch order per direction. The bubble is (pp/2 - 1)(F&B + B - 3W), with B a whole backward and F&B an
///   overlapped pair; pp + 1 micro-batches are in flight on every rank; each rank holds two stages' parameters.
///   Errors: none here (the scenario checks pp even and m >= 2 pp, m even).
/// - DualPipeV (github.com/deepseek-ai/DualPipe, dualpipev.py; Sea AI Lab's "cut-in-half" of DualPipe): every
///   micro-batch runs chunk 0 (virtual stage s) down the ranks and chunk 1 (virtual stage 2 pp - 1 - s) back.
///   Rank s runs: 2 (pp - s - 1) F0; s + 1 of (F0, F1); pp - s - 1 of (B1 without its W, W, F1); m - 2 pp + s + 1
///   of (F0 & B1, F1 & B0) as overlapped pairs (the last rank runs its first F0 and B1 back to back); pp - s - 1 of
///   (B1, F1 & B0); s + 1 of (B1, B0), splitting off W from the middle one on (before B1 on odd ranks, before B0
///   on even ones); pp - s - 1 of (W, B0 without its W); the remaining W, first in, first out. Each rank holds
///   one copy of its two chunks; the bubble is (pp - 1)(F&B + B - 3W) for F, B, W of one chunk, DualPipe's
///   (PP/2 - 1)(F&B + B - 3W) with PP = 2 pp model stages (the DualPipe README's table). Needs m >= 2 pp.
std::vector<ScheduleStep> pipeline_steps(Schedule schedule, int pp, int vpp, int stage, int microbatches);

/// The interleaved 1F1B schedule's warm-up forwards on rank `stage` (Megatron-Core's
/// forward_backward_pipelining_with_interleaving): (pp - stage - 1) 2 + (vpp - 1) pp, at most all microbatches x vpp,
/// and all of them when microbatches == pp. The steady state (one forward and one backward per step) follows them.
int interleaved_warmup_forwards(int pp, int vpp, int stage, int microbatches);

}  // namespace orrery
