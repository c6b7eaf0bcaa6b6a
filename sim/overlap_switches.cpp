#include "sim/overlap_switches.h"

#include <fmt/format.h>

namespace orrery {

namespace {

const char* how(bool requested) { return requested ? "requested" : "on by default"; }

}  // namespace

void warn_inactive_overlaps(Scenario& s) {
  const ParallelPlan& p = s.parallel;
  const OverlapRequests& asked = p.overlap_requested;
  if (p.tp_comm_overlap && p.tp > 1 && !p.sequence_parallel) {
    s.warnings.push_back(fmt::format(
        "tp_comm_overlap ({}) is inactive: it needs sequence_parallel (Megatron-LM refuses the combination), so the "
        "TP all-reduces run exposed; set parallel.sequence_parallel to overlap them",
        how(asked.tp_comm)));
  } else if (asked.tp_comm && p.tp_comm_overlap && p.tp == 1) {
    s.warnings.push_back("tp_comm_overlap (requested) has nothing to overlap at tp 1");
  }
  if (asked.param_gather && p.overlap_param_gather && p.zero_stage == 0) {
    s.warnings.push_back(
        "overlap_param_gather (requested) is inactive: without the distributed optimizer (zero_stage 0) there is no "
        "parameter all-gather (Megatron-LM refuses --overlap-param-gather without --use-distributed-optimizer)");
  }
  if (asked.param_gather && p.overlap_param_gather && !p.overlap_grad_reduce && p.zero_stage >= 1) {
    s.warnings.push_back(
        "overlap_param_gather without overlap_grad_reduce: Megatron-LM refuses the combination ('Must use "
        "--overlap-param-gather with --overlap-grad-reduce'); priced as given");
  }
  if (p.zero_stage == 3) {
    for (auto [off, name] : {std::pair{asked.grad_reduce && !p.overlap_grad_reduce, "overlap_grad_reduce"},
                             std::pair{asked.param_gather && !p.overlap_param_gather, "overlap_param_gather"}}) {
      if (!off) continue;
      s.warnings.push_back(fmt::format(
          "{} false has no effect with zero_stage 3: each unit's gather is prefetched and its gradients are "
          "reduce-scattered after its backward, as FSDP runs them",
          name));
    }
  }
}

}  // namespace orrery
