#pragma once
// Parameter groups of one pipeline rank as the lowering and the data-parallel reduction see them: one group per
// module that owns parameters (e.g. a layer's "qkv" holds the QKV weight and bias), with the elements one rank
// holds after tensor-parallel sharding, in forward order per model chunk.

#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/param_group.h"

namespace orrery {

/// Groups of transformer layer `layer`, forward order.
std::vector<ParamGroup> layer_param_groups(const LoweringContext& ctx, int layer, int chunk);
/// Groups of the embedding (first virtual stage), forward order.
std::vector<ParamGroup> embedding_param_groups(const LoweringContext& ctx, int chunk);
/// Groups of the final norm and LM head (last virtual stage). The LM head is a group of its own unless its weight
/// is the word embedding on the same rank (tied embeddings with pp == 1). With multi-token prediction on a
/// pipeline of several virtual stages, the copy of the word embedding the MTP depths read ("word_embedding";
/// with tied embeddings the LM head's copy serves).
std::vector<ParamGroup> head_param_groups(const LoweringContext& ctx, int chunk);
/// Every group of pipeline stage `stage`, chunk by chunk, forward order (multi-token prediction depths before the
/// head).
std::vector<ParamGroup> stage_param_groups(const LoweringContext& ctx, int stage);

/// Elements of the named group (0 when the model has no such parameters).
std::int64_t group_elements(const std::vector<ParamGroup>& groups, const char* name);

/// Appends to `params` (when given) the use of group `name` of `layer` by `task` at the emitter's chunk: its first
/// read (forward) or the end of its gradient (backward). Groups the model lacks are skipped, and so is a task the
/// weight-gradient mode dropped (the other pass of the split step records it). Throws std::logic_error for any
/// other skipped task (a collective of one rank), which no parameter can be used by.
void record_param_use(std::vector<ParamUse>* params, const Emitter& emit, const std::vector<ParamGroup>& groups,
                      const char* name, int layer, const MaybeTask& task, bool forward);

}  // namespace orrery
