#include "sim/pipeline_schedule.h"

#include <algorithm>

namespace orrery {

namespace {

std::vector<ScheduleStep> gpipe(int microbatches) {
  std::vector<ScheduleStep> steps;
  for (int mb = 0; mb < microbatches; ++mb) steps.push_back({StepKind::kForward, mb, 0});
  for (int mb = microbatches - 1; mb >= 0; --mb) steps.push_back({StepKind::kBackward, mb, 0});
  return steps;
}

std::vector<ScheduleStep> one_f_one_b(int pp, int stage, int microbatches) {
  std::vector<ScheduleStep> steps;
  const int warmup = std::min(pp - stage - 1, microbatches);
  int next_forward = 0, next_backward = 0;
  for (int i = 0; i < warmup; ++i) steps.push_back({StepKind::kForward, next_forward++, 0});
  while (next_forward < microbatches) {
    steps.push_back({StepKind::kForward, next_forward++, 0});
    steps.push_back({StepKind::kBackward, next_backward++, 0});
  }
  while (next_backward < microbatches) steps.push_back({StepKind::kBackward, next_backward++, 0});
  return steps;
}

ScheduleStep interleaved_step(int k, int pp, int vpp, bool forward) {
  const int group = pp * vpp;
  const int in_group = k % group;
  int chunk = in_group / pp;
  if (!forward) chunk = vpp - chunk - 1;
  const int microbatch = (k / group) * pp + k % pp;
  return {forward ? StepKind::kForward : StepKind::kBackward, microbatch, chunk};
}

std::vector<ScheduleStep> interleaved(int pp, int vpp, int stage, int microbatches) {
  const int total = microbatches * vpp;
  int warmup = (pp - stage - 1) * 2 + (vpp - 1) * pp;
  if (microbatches == pp) warmup = total;  // Megatron-Core: all-warm-up when micro-batches equal pp
  warmup = std::min(warmup, total);
  std::vector<ScheduleStep> steps;
  for (int k = 0; k < warmup; ++k) steps.push_back(interleaved_step(k, pp, vpp, true));
  for (int k = 0; k < total - warmup; ++k) {
    steps.push_back(interleaved_step(warmup + k, pp, vpp, true));
    steps.push_back(interleaved_step(k, pp, vpp, false));
  }
  for (int k = total - warmup; k < total; ++k) steps.push_back(interleaved_step(k, pp, vpp, false));
  return steps;
}

std::vector<ScheduleStep> zb_h1(int pp, int stage, int microbatches) {
  std::vector<ScheduleStep> steps;
  const int warmup = std::min(pp - stage - 1, microbatches);
  const int deferred = stage;  // W passes stage i holds back
  int next_forward = 0, next_backward = 0, next_weight = 0;
  const auto weight = [&] { steps.push_back({StepKind::kWeight, next_weight++, 0}); };
  for (int i = 0; i < warmup; ++i) steps.push_back({StepKind::kForward, next_forward++, 0});
  while (next_forward < microbatches) {
    steps.push_back({StepKind::kForward, next_forward++, 0});
    steps.push_back({StepKind::kBackward, next_backward++, 0});
    if (next_backward - next_weight > deferred) weight();
  }
  // Cool-down: one W after each B fills the wait for the next gradient.
  while (next_backward < microbatches) {
    steps.push_back({StepKind::kBackward, next_backward++, 0});
    if (next_weight < next_backward) weight();
  }
  while (next_weight < microbatches) weight();
  return steps;
}

}  // namespace

std::vector<ScheduleStep> pipeline_steps(Schedule schedule, int pp, int vpp, int stage, int microbatches) {
  if (schedule == Schedule::kGPipe) return gpipe(microbatches);
  if (schedule == Schedule::kZbH1) return zb_h1(pp, stage, microbatches);
  if (vpp > 1) return interleaved(pp, vpp, stage, microbatches);
  return one_f_one_b(pp, stage, microbatches);
}

}  // namespace orrery
