#pragma once
// ZeRO stage 3 / FSDP (Rajbhandari et al., ZeRO, arXiv:1910.02054 Section 5.3; PyTorch FSDP, arXiv:2304.11277):
// parameters stay sharded over the data-parallel ranks; each unit (the embedding, each transformer layer, the
// head) all-gathers its parameters right before it runs, forward and again backward, and frees them after; the
// next unit's gather is issued as the current one starts (prefetch), so it overlaps with compute. After a unit's
// backward its full gradients are reduce-scattered to their owners and freed. Every micro-batch repeats this.

#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/param_groups.h"

namespace orrery {

/// One unit of parameters gathered at once.
struct ParamUnit {
  int layer = -1;  // -1: embedding or head
  bool head = false;
  std::int64_t elements = 0;  // local (TP-sharded) elements, before ZeRO sharding
};

class ShardedParamsLowering {
 public:
  ShardedParamsLowering(const LoweringContext& ctx, int stage);
  bool active() const { return active_; }

  /// Units of model chunk `chunk`, in forward order.
  std::vector<ParamUnit> units(int chunk) const;

  /// Before the forward (or backward) of units[i]: the gather it waits for, issuing it and the prefetch of the
  /// unit that runs next (units[i+1] forward, units[i-1] backward). -1 when not active.
  TaskId gather(Emitter& emit, const std::vector<ParamUnit>& units, std::size_t i, bool backward);
  /// After the forward of a unit: its gathered parameters are freed.
  void release(Emitter& emit, const ParamUnit& unit);
  /// After the backward of a unit, whose last weight-gradient task is `grads_done`: reduce-scatter its full
  /// gradients and free them and its gathered parameters.
  void reduce(Emitter& emit, const ParamUnit& unit, TaskId grads_done);

 private:
  Bytes param_bytes(const ParamUnit& u) const;
  Bytes grad_bytes(const ParamUnit& u) const;
  TaskId issue_gather(Emitter& emit, const ParamUnit& unit);

  const LoweringContext& ctx_;
  int stage_;
  bool active_ = false;
  // Gathers issued ahead of their unit (prefetch), by unit identity (layer, head flag).
  std::vector<std::pair<std::pair<int, bool>, TaskId>> prefetched_;
};

}  // namespace orrery
