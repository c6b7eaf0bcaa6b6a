#pragma once
// Lowering of one transformer layer (a dense decoder, GPT- or Llama-style, or one with multi-head latent attention
// and routed experts) into kernel tasks, forward, backward and recompute, as the composition of its blocks:
//
//   input norm -> attention (AttentionBlock, or MlaBlock) -> residual add -> pre-MLP norm -> MLP (MlpBlock, or
//   MoeBlock) -> residual add,
//
// each block owning its forward, its backward with the recompute of what it dropped, and its saved bytes; the
// blocks are made of LayerOps (sim/lower/layer_ops.h), with Megatron-LM's tensor parallelism. The layer holds
// what lies between the blocks and the recompute policy: full recompute, which of the selective policy's
// recompute modules the blocks run again, the norms' recompute.
//
// Saved activations follow Korthikanti et al. (arXiv:2205.05198) Section 4.1: each op allocates what its backward
// needs when it runs forward, and the backward frees it; with dropout and unfused attention one layer saves
// s b h (34 + 5 a s / h) bytes without parallelism, and the Table 2 variants under TP, SP and recompute.

#include <variant>
#include <vector>

#include "sim/lower/attention_block.h"
#include "sim/lower/context.h"
#include "sim/lower/layer_ops.h"
#include "sim/lower/mla_block.h"
#include "sim/lower/mlp_block.h"
#include "sim/lower/moe_block.h"
#include "sim/lower/save_policy.h"

namespace orrery {

class TransformerLayerLowering {
 public:
  TransformerLayerLowering(Emitter& emit, int layer);
  // Its blocks refer to its ops: not copied.
  TransformerLayerLowering(const TransformerLayerLowering&) = delete;
  TransformerLayerLowering& operator=(const TransformerLayerLowering&) = delete;

  /// Emits the forward pass (phase kForward, or kRecompute for full recompute) after task `input`; returns the
  /// task that produces the layer output. `params`, when given, receives the first use of each parameter group.
  MaybeTask forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params = nullptr);

  /// Emits the backward pass after `grad_output` (with the recompute the training spec asks for) and returns the
  /// task producing the input gradient. `params`, when given, receives the gradient-ready task of each group.
  MaybeTask backward(MaybeTask grad_output, std::vector<ParamUse>* params = nullptr);

  /// Bytes one forward pass of this layer saves under `save`: its blocks' saved bytes, its input (the input
  /// norm's), the pre-MLP norm's input and the residual adds' dropout masks (for tests and reports).
  Bytes saved_bytes(const SavePolicy& save) const;

  /// This layer's recompute: the training spec's, except that with full recompute by Megatron-Core's "block"
  /// method only the first recompute_num_layers layers of each model chunk recompute (the rest run kNone).
  Recompute recompute() const { return recompute_; }
  /// What this layer's forward keeps under its recompute (save_policy of recompute()).
  SavePolicy save() const { return save_policy(ops_.ctx().training, recompute_); }

 private:
  Recompute recompute_;
  LayerOps ops_;
  std::variant<AttentionBlock, MlaBlock> attention_;
  std::variant<MlpBlock, MoeBlock> mlp_;
};

}  // namespace orrery
