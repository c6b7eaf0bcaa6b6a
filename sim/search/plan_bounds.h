#pragma once
// Cheap bounds that let the search skip candidates without simulating them. Both are true lower bounds of what
// `predict` reports, so pruning with them never drops a plan that would have ranked (the exactness test holds the
// pruned search to the exhaustive one).

#include "hardware/cost_params.h"
#include "sim/job/job.h"

namespace orrery {

/// Lower bounds of one candidate: activation memory on top of the static bound (bytes) and iteration time.
struct PlanBounds {
  /// Bytes stage 0 holds at least beyond its own state (first_stage_state_lower_bound): its in-flight activations
  /// before the first backward, or with ZeRO-3 in layer units (Megatron, FSDP2) those of all but the last of those
  /// forwards plus one layer's gathered parameters beyond the rank's shard, whichever is larger.
  Bytes activations = 0;
  Seconds time = 0;       // seconds
};

/// Both bounds from one micro-batch of each distinct layer lowered alone and priced by the cost model:
/// activations = what stage 0 holds before its first backward (min(pp, m)
///   micro-batches under 1F1B, interleaving and ZB-H1, m under GPipe; none with activation offload);
/// time = max(the busiest stage's compute-stream work, m micro-batches of layer forward + backward), and the
///   pipeline's critical path: p - 1 lightest chunks' forwards before the last stage starts, its work, then p - 1
///   lightest chunks' input-gradient passes, less (ZB-H1) the p - 1 weight-gradient passes the last stage runs
///   after its last one (DualPipe: the busiest stage's work alone, each of its two chunks running half the
///   micro-batches; DualPipeV: the same with every micro-batch through both chunks, the head on stage 0).
///   Under Megatron's 1F1B (interleaved or not) and GPipe, without the expert-parallel overlap, delayed weight
///   gradients or block recompute, each layer's forward and backward count at least their compute window: the
///   span of its compute tasks when the layer runs alone at base durations, its waits for blocking communication
///   (expert all-to-alls, context-parallel ring steps, TP all-reduces the next GEMM reads) included.
///   Communication outside the layers, optimizer, embedding and head only add to these.
/// Errors: none (a Job is validated).
PlanBounds plan_bounds(const Job& job, const CostParams& params);

/// Bytes of weights, gradients and optimizer state of the lightest pipeline stage's transformer layers, at the job's
/// bytes per element (Job::state_bytes: resident parameter, gradient buffer, optimizer state; none of the last
/// with optimizer CPU offload), sharded as TP x PP (experts EP x ETP x PP) and by ZeRO; embeddings, the head and
/// replicated tensors (norms) are left out: at most the static memory `predict` reports for any stage.
/// Errors: none.
Bytes static_memory_lower_bound(const Job& job);

/// The same for stage 0 alone, its word embedding included (the unpadded vocabulary): the static part of stage 0's
/// memory, to which PlanBounds::activations adds. Errors: none.
Bytes first_stage_state_lower_bound(const Job& job);

/// Seconds the iteration takes at least: the larger of (a) a GPU's share of the GEMM FLOPs (forward, backward 2x,
/// full recompute another forward) at the fastest GEMM rate the cost model allows (peak x fitted fraction; the
/// model only adds tile, wave, short-k and launch costs) and (b) the pipeline's critical path: the last stage
/// cannot start before p - 1 virtual stages have run the first micro-batch's forward, then does all its own
/// work, after which the last gradient still crosses p - 1 virtual stages (their input-gradient GEMMs); under ZB-H1
/// the last stage's last p - 1 weight-gradient passes run meanwhile and leave its work; DualPipe's ranks fill that
/// wait with the other direction (DualPipeV with the way back), so for them (b) is the work alone. Errors: none.
Seconds iteration_time_lower_bound(const Job& job, const CostParams& params);

}  // namespace orrery
