#pragma once
// The host's issue order of a merged forward-and-backward slot (Megatron-Core's EP communication overlap), which
// interleaves the two passes' layers sub-module by sub-module instead of issuing one whole pass, then the other.

#include <vector>

#include "sim/task_vocabulary.h"

namespace orrery {

/// One layer's tasks within a pass, first..last inclusive (a decoder or multi-token-prediction layer).
struct LayerSpan {
  ProgramBuilder::TaskId first = 0;
  ProgramBuilder::TaskId last = -1;
};

/// One pass of a merged slot: its tasks first..last inclusive, and its layers in the order it ran them.
struct PassTasks {
  ProgramBuilder::TaskId first = 0;
  ProgramBuilder::TaskId last = -1;
  std::vector<LayerSpan> layers;
};

/// The order in which the host issues tasks `first`..builder.last() of a slot that merges `forward` and `backward`
/// (each a contiguous range; together with the tasks first..their start they cover the slot). Megatron-Core's
/// TransformerLayerSchedulePlan.run (models/common/model_chunk_schedule_plan.py @ d98e8a6) pairs forward layer i
/// with backward layer n-1-i and issues, per pair: the backward's combine, the forward's attention (through the
/// router and the dispatch preprocess), the backward's MLP, the forward's dispatch (whose token-count host sync
/// sits in token_dispatch, "before_ep_alltoall"), the backward's dispatch with the delayed expert weight gradients,
/// the forward's MLP and combine, and the backward's attention. Unpaired layers follow whole (backward first), and
/// each pass's tasks outside its layers keep their place before (embedding; head backward) or after (head forward,
/// sends; embedding backward) them, forward first. A layer without an expert dispatch (a dense layer) issues whole
/// in its attention part. Returns an empty vector when the ranges do not have that shape (the task order stands).
std::vector<ProgramBuilder::TaskId> merged_issue_order(const ProgramBuilder& builder, ProgramBuilder::TaskId first,
                                                      const PassTasks& forward, const PassTasks& backward);

}  // namespace orrery
