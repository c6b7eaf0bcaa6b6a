#include "sim/pipeline_schedule.h"

#include <algorithm>
#include <array>
#include <deque>

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
  const int warmup = interleaved_warmup_forwards(pp, vpp, stage, microbatches);
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
    steps.push_back({StepKind::kBackward, next_backward++, 0, true});
    if (next_backward - next_weight > deferred) weight();
  }
  // Cool-down: one W after each B fills the wait for the next gradient.
  while (next_backward < microbatches) {
    steps.push_back({StepKind::kBackward, next_backward++, 0, true});
    if (next_weight < next_backward) weight();
  }
  while (next_weight < microbatches) weight();
  return steps;
}

// DualPipe's order (see the header). Steps name a direction by phase: 0 the near one, 1 the far one.
// DualPipeV runs the same eight phases as the first half of a DualPipe pipeline of 2 pp ranks, with rank s in the
// place of DualPipe's rank s, chunk 0 (the way down) as the near direction and all micro-batches through each chunk.
class DualPipeOrder {
 public:
  static DualPipeOrder mirrored(int pp, int stage, int microbatches) {
    return {pp / 2, std::min(stage, pp - 1 - stage), microbatches / 2, stage >= pp / 2, false};
  }
  static DualPipeOrder v_shaped(int pp, int stage, int microbatches) { return {pp, stage, microbatches, false, true}; }

  std::vector<ScheduleStep> steps() {
    const int outer = half_pp_ - h_ - 1;  // ranks between this one and the middle
    for (int i = 0; i < 2 * outer; ++i) forward(0);
    for (int i = 0; i <= h_; ++i) forward(0), forward(1);
    for (int i = 0; i < outer; ++i) backward(1, true), weight(), forward(1);
    for (int i = 0; i < half_m_ - 2 * half_pp_ + h_ + 1; ++i) {
      // The middle ranks run their first pair back to back, which shortens the bubble (DualPipe's note).
      forward(0, !(i == 0 && outer == 0)), backward(1, false);
      forward(1, true), backward(0, false);
    }
    for (int i = 0; i < outer; ++i) backward(1, false), forward(1, true), backward(0, false);
    // The second half of these backwards defer their W; an odd h flips before the far one, an even h after.
    bool split = false;
    for (int i = 0; i <= h_; ++i) {
      if (i == (h_ + 1) / 2 && h_ % 2 == 1) split = true;
      backward(1, split);
      if (i == (h_ + 1) / 2 && h_ % 2 == 0) split = true;
      backward(0, split);
    }
    for (int i = 0; i < outer; ++i) weight(), backward(0, true);
    while (!deferred_.empty()) weight();
    return std::move(out_);
  }

 private:
  int direction(int phase) const { return phase ^ (flip_ ? 1 : 0); }
  // DualPipe feeds micro-batches 0 .. m/2 - 1 in direction 0 and the rest in direction 1; DualPipeV sends every
  // micro-batch down chunk 0 and back up chunk 1.
  int microbatch(int dir, int k) const { return v_shape_ ? k : dir * half_m_ + k; }

  void forward(int phase, bool paired = false) {
    const int d = direction(phase);
    out_.push_back({StepKind::kForward, microbatch(d, forwards_[static_cast<std::size_t>(d)]++), d, false, paired});
  }
  void backward(int phase, bool split) {
    const int d = direction(phase);
    const ScheduleStep step{StepKind::kBackward, microbatch(d, backwards_[static_cast<std::size_t>(d)]++), d, split};
    if (split) deferred_.push_back(step);
    out_.push_back(step);
  }
  void weight() {
    out_.push_back({StepKind::kWeight, deferred_.front().microbatch, deferred_.front().chunk});
    deferred_.pop_front();
  }

  DualPipeOrder(int half_pp, int h, int half_m, bool flip, bool v_shape)
      : half_pp_(half_pp), h_(h), half_m_(half_m), flip_(flip), v_shape_(v_shape) {}

  int half_pp_, h_, half_m_;  // DualPipeV: pp, the rank and all micro-batches
  bool flip_;                 // on the second half of the ranks the near direction is direction 1
  bool v_shape_;
  std::array<int, 2> forwards_{}, backwards_{};
  std::deque<ScheduleStep> deferred_;  // B passes whose W has not run, oldest first
  std::vector<ScheduleStep> out_;
};

}  // namespace

int interleaved_warmup_forwards(int pp, int vpp, int stage, int microbatches) {
  const int total = microbatches * vpp;
  if (microbatches == pp) return total;  // Megatron-Core: all-warm-up when micro-batches equal pp
  return std::min((pp - stage - 1) * 2 + (vpp - 1) * pp, total);
}

std::vector<ScheduleStep> pipeline_steps(Schedule schedule, int pp, int vpp, int stage, int microbatches) {
  if (schedule == Schedule::kGPipe) return gpipe(microbatches);
  if (schedule == Schedule::kZbH1) return zb_h1(pp, stage, microbatches);
  if (schedule == Schedule::kDualPipe) return DualPipeOrder::mirrored(pp, stage, microbatches).steps();
  if (schedule == Schedule::kDualPipeV) return DualPipeOrder::v_shaped(pp, stage, microbatches).steps();
  if (vpp > 1) return interleaved(pp, vpp, stage, microbatches);
  return one_f_one_b(pp, stage, microbatches);
}

}  // namespace orrery
