#pragma once
// ZeRO stage 3 / FSDP (Rajbhandari et al., ZeRO, arXiv:1910.02054 Section 5.3; PyTorch FSDP, arXiv:2304.11277):
// parameters stay sharded over the data-parallel ranks; each unit (the embedding, each transformer layer, the
// head) all-gathers its parameters right before it runs, forward and again backward, and frees them after; the
// next unit's gather is issued as the current one starts (prefetch), so it overlaps with compute. After a unit's
// backward its full gradients are reduce-scattered to their owners and freed. Every micro-batch repeats this.
//
// training.framework "deepspeed-0.3" lowers the ZeRO-3 of DeepSpeed 0.3 (2021; the ZeRO-3 that Narayanan et al.,
// SC21, Table 2 compare against), which worked per parameter tensor and without overlap. Each parameter above
// stage3_param_persistence_threshold (1e5 elements, DeepSpeed's default) is gathered on its own before its module
// runs, forward, again in the recomputed forward of full recompute, and backward; smaller ones stay whole on every
// rank. A gather (partition_parameters.py, _allgather_param) zero-fills a full-size buffer, calls
// torch.cuda.synchronize(), then torch.distributed.all_gather with a list of one view per rank, which PyTorch's
// ProcessGroupNCCL serves with one NCCL all-gather into a flat buffer and one copy kernel per rank's chunk. A
// gradient reduce-scatter (_reduce_scatter_gradient) passes one input view per rank: one copy per chunk into a
// flat buffer, the NCCL reduce-scatter, and a wait on it before the gradients are partitioned. So every gather
// and reduce-scatter sits on the compute path, and each costs dp x cp copy launches: O(ranks) launches per
// parameter, which is why its time per iteration grows with the data-parallel size (SC21, Fig. 10).
//
// training.framework "fsdp2" lowers FSDP2 as torchtitan runs it through the same units, with its copy kernels,
// dtypes and resharding (sim/lower/fsdp2.h).

#include <utility>
#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/param_groups.h"

namespace orrery {

/// One unit of parameters gathered at once.
struct ParamUnit {
  int layer = -1;  // -1: embedding or head
  bool head = false;
  std::int64_t elements = 0;  // local (TP-sharded) elements, before ZeRO sharding
  /// Of `elements`, the routed experts' (EP x ETP-sharded): gathered and reduced over the expert-data-parallel
  /// group, the rest over the data-parallel group (Megatron-FSDP with expert parallelism).
  std::int64_t expert_elements = 0;
  /// deepspeed-0.3 only: local elements of each parameter gathered on its own (above the persistence threshold).
  std::vector<std::int64_t> partitioned;
  /// Elements of another unit's parameter this unit gathers too (deepspeed-0.3: the tied word embedding at the
  /// head; multi-token prediction: the word embedding its first depth reads); its gradient is reduced once, with
  /// its owner.
  std::int64_t external = 0;
  /// megatron-deepspeed ZeRO-3: kept gathered from its forward to its backward (within max_reuse_distance).
  bool ds_kept = false;
};

/// What a unit is; each pass of the lowering emits one body per kind (sim/lower/stage_program.cpp).
enum class UnitKind { kEmbedding, kDecoderLayer, kMtpDepth, kHead };

/// The kind of a unit of `model`: a layer index from model.num_layers on is a multi-token prediction depth
/// (Megatron-Core numbers them after the decoder layers).
inline UnitKind unit_kind(const ParamUnit& unit, const ModelSpec& model) {
  if (unit.layer < 0) return unit.head ? UnitKind::kHead : UnitKind::kEmbedding;
  return unit.layer >= model.num_layers ? UnitKind::kMtpDepth : UnitKind::kDecoderLayer;
}

class ShardedParamsLowering {
 public:
  ShardedParamsLowering(const LoweringContext& ctx, int stage);
  bool active() const { return active_; }

  /// Units of model chunk `chunk`, in forward order.
  std::vector<ParamUnit> units(int chunk) const;

  /// Before the forward (or backward) of units[i]: the gather it waits for, issuing it and the prefetch of the
  /// unit that runs next (units[i+1] forward, units[i-1] backward). None when not active.
  MaybeTask gather(Emitter& emit, const std::vector<ParamUnit>& units, std::size_t i, bool backward);
  /// After the forward of a unit: its gathered parameters are freed.
  void release(Emitter& emit, const ParamUnit& unit);
  /// After the backward of a unit, whose last weight-gradient task is `grads_done`: reduce-scatter its full
  /// gradients and free them and its gathered parameters.
  void reduce(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done);
  /// fsdp2 and megatron-deepspeed ZeRO-3: the reduce-scatters (and shard accumulations) issued so far, which the
  /// optimizer step waits for.
  const std::vector<MaybeTask>& reductions() const { return reductions_; }
  /// megatron-deepspeed ZeRO-3: the gather of the part of the unit just gathered that was not prefetched, which
  /// the unit's last task waits for (none if none); cleared by the call.
  MaybeTask take_tail() { return std::exchange(tail_, MaybeTask()); }

 private:
  // Elements of the unit that ZeRO-3 shards: the dense ones over DP (none when DP has one rank), the routed
  // experts' over the expert-DP group (none when it has one rank).
  std::int64_t sharded_dense(const ParamUnit& u) const;
  std::int64_t sharded_expert(const ParamUnit& u) const;
  // Bytes the unit gathers (and holds while it runs), and the bytes of its full gradient buffer until reduced.
  Bytes param_bytes(const ParamUnit& u) const;
  Bytes grad_bytes(const ParamUnit& u) const;
  MaybeTask issue_gather(Emitter& emit, const ParamUnit& unit);
  /// deepspeed-0.3: the per-parameter gathers of `unit`, `passes` times, serialised after the compute issued so far.
  MaybeTask gather_per_parameter(Emitter& emit, const ParamUnit& unit, int passes);
  /// deepspeed-0.3: the per-parameter gradient reduce-scatters of `unit` after `grads_done`, each waited for.
  void reduce_per_parameter(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done);
  /// Frees the unit's gathered parameters (reshard).
  void release_params(Emitter& emit, const ParamUnit& unit);
  /// fsdp2 (sim/lower/fsdp2.h): the copy-in and all-gather of `unit`; the copy-out into its unsharded parameters
  /// after `gathered`, on the compute stream; and its reduce-scatter after its backward.
  MaybeTask fsdp2_issue_gather(Emitter& emit, const ParamUnit& unit);
  MaybeTask fsdp2_copy_out(Emitter& emit, const ParamUnit& unit, MaybeTask gathered);
  void fsdp2_reduce(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done);
  /// fsdp2: torchtitan's [norm, lm_head] unit stays unsharded from its forward to the end of its backward, and at
  /// zero_stage 2 (fsdp_reshard_after_forward "never") every unit does; megatron-deepspeed ZeRO-3: those within
  /// DeepSpeed's max_reuse_distance.
  bool kept_after_forward(const ParamUnit& unit) const {
    return (fsdp2_ && (unit.head || ctx_.plan.zero_stage == 2)) || (ds3_ && unit.ds_kept);
  }
  /// megatron-deepspeed ZeRO-3 (sim/lower/megatron_deepspeed.h): marks the units kept after their forward.
  void ds3_mark_kept(std::vector<ParamUnit>& units) const;
  /// The gather of `elements` of `unit` (the first or the rest), after the compute issued so far.
  MaybeTask ds3_gather(Emitter& emit, std::int64_t elements);
  /// Adds the unit's gradients to DeepSpeed's ipg bucket, reduce-scattering it first when they would overflow it,
  /// and the rest at the step's last unit.
  void ds3_reduce(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done);
  void ds3_flush(Emitter& emit);

  const LoweringContext& ctx_;
  int stage_;
  bool active_ = false;
  bool per_parameter_ = false;  // deepspeed-0.3
  bool fsdp2_ = false;
  bool ds3_ = false;  // megatron-deepspeed at ZeRO 3
  std::vector<MaybeTask> reductions_;  // fsdp2, ds3
  MaybeTask tail_;                // ds3: see take_tail()
  std::vector<std::pair<std::pair<int, bool>, std::int64_t>> prefetched_elements_;  // ds3: what each prefetch took
  std::int64_t ds_open_ = 0;        // ds3: elements in the open gradient bucket
  MaybeTask ds_last_grads_;       // ds3: the last gradient task added to it
  // Gathers issued ahead of their unit (prefetch), by unit identity (layer, head flag).
  std::vector<std::pair<std::pair<int, bool>, MaybeTask>> prefetched_;
};

}  // namespace orrery
