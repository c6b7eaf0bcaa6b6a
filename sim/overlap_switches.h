#pragma once
// Overlap switches that cannot act on a plan. A switch Megatron-LM would refuse, or that the plan leaves nothing to
// do, is not an error here (the plan is priced as it would run), but a silently inactive switch hides why a plan is
// slow, so each one that matters gets a warning in the report.

#include "sim/scenario.h"

namespace orrery {

/// Appends to s.warnings one line per overlap switch that is on (by default or as requested) but inactive where it
/// would change the time, or requested and without effect:
/// - tp_comm_overlap with tp > 1 and no sequence parallelism (Megatron-LM arguments.py asserts "Tensor parallel
///   communication/GEMM overlap can happen only when sequence parallelism is enabled"): the TP all-reduces run
///   exposed; requested at tp 1: nothing to overlap;
/// - overlap_param_gather requested without the distributed optimizer (zero_stage 0; Megatron-LM asserts it needs
///   the distributed optimizer) or without overlap_grad_reduce (Megatron-LM: "Must use --overlap-param-gather with
///   --overlap-grad-reduce");
/// - overlap_grad_reduce or overlap_param_gather turned off with ZeRO-3, whose per-unit gathers always prefetch and
///   whose reduce-scatters always follow each unit's backward (sim/lower/sharded_params.h).
/// Call after validation has resolved the plan (sequence_parallel is off at tp 1 by then).
void warn_inactive_overlaps(Scenario& s);

}  // namespace orrery
