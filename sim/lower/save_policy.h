#pragma once
// What a layer's forward pass keeps for its backward, per recompute policy: the layer blocks
// (sim/lower/attention_block.h, mla_block.h, mlp_block.h, moe_block.h) each save and count their own part of it.

#include "sim/scenario.h"

namespace orrery {

/// What a forward pass keeps for the backward: the layer input, the other modules' inputs, and the attention
/// core's internals (score-sized tensors, or flash's softmax statistics).
struct SavePolicy {
  bool layer_input = true;
  bool modules = true;
  bool attention_internals = true;
  bool norm_outputs = true;               // the input and pre-MLP norms' outputs (the next linears' inputs)
  bool expert_activation_outputs = true;  // the routed experts' activation outputs (the down projection's input)
  bool mlp_internals = true;              // a dense MLP's up outputs and down input (recompute module mlp)
  bool shared_expert_internals = true;    // the same of the shared experts (recompute module shared_experts)
  bool mla_up_outputs = true;             // MLA's up-projected, rotary q, k, v (recompute module mla_up_proj)
  bool moe_internals = true;              // everything of an MoE layer but its input (recompute module moe)
};

/// What a layer's forward keeps under the training spec's recompute policy: everything (none); with selective,
/// all but what training.recompute_modules drops (the attention core's internals by default), recomputed in the
/// backward; only the layer input (full, the whole layer recomputed).
SavePolicy save_policy(const TrainingSpec& training);
/// The same for a layer whose recompute is `policy` (a block-recomputed chunk's later layers run kNone).
SavePolicy save_policy(const TrainingSpec& training, Recompute policy);

}  // namespace orrery
