#pragma once
// Parameter tensors and counts of a ModelSpec. The same tensor list drives the published-count checks, the
// per-rank weight memory (sharded by TP, PP, EP) and the data-parallel gradient buckets in sim/.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace orrery {

/// How Megatron-Core shards a parameter across ranks.
enum class ParamSharding {
  kReplicated,      // norms, row-parallel biases, routers, MLA down-projections: full copy on every TP rank
  kTensorParallel,  // column/row-parallel weights, vocab-parallel embeddings: 1/TP each
  kExpert,          // routed experts: 1/(EP x ETP) each
};

struct ParamTensor {
  std::string name;             // e.g. "qkv", "mlp_down", "experts"
  std::int64_t elements = 0;    // all of it
  std::int64_t active = 0;      // touched per token (differs only for routed experts)
  ParamSharding sharding = ParamSharding::kReplicated;
};

/// Tensors of transformer layer `layer` (0-based), in forward order. Indexes num_layers .. num_layers +
/// mtp_num_layers - 1 are the multi-token prediction depths: their embedding and hidden-state norms ("mtp_enorm",
/// "mtp_hnorm", h each) and 2h -> h projection ("mtp_eh_proj", column-parallel) come first, then the transformer
/// layer, then the depth's final norm ("mtp_final_norm"); the embedding and LM head are shared with the main model
/// (Megatron-Core MultiTokenPredictionLayer).
std::vector<ParamTensor> layer_param_tensors(const ModelSpec& model, int layer);

/// Word embedding, learned positions (`position_rows` rows) and the embedding LayerNorm, in forward order.
std::vector<ParamTensor> embedding_param_tensors(const ModelSpec& model, std::int64_t position_rows);

/// Final norm and, when not tied to the word embedding, the LM head.
std::vector<ParamTensor> head_param_tensors(const ModelSpec& model);

struct ParamCount {
  std::int64_t total = 0;
  std::int64_t active = 0;            // per token, counting the input embedding and the LM head
  std::int64_t word_embedding = 0;    // vocab x hidden (the input table)
  std::int64_t lm_head = 0;           // 0 when tied
  std::int64_t layers = 0;            // all transformer layers
  /// Multi-token prediction depths (layers, projections, norms; they share the embedding and the LM head), not in
  /// `total` or `active`: published totals count the main model (DeepSeek-V3: 671 B, plus its MTP module).
  std::int64_t mtp = 0;
};

/// Counts with the HF vocabulary (unpadded) and max_position_embeddings rows of learned positions.
ParamCount count_parameters(const ModelSpec& model);

std::int64_t sum_elements(const std::vector<ParamTensor>& tensors);

}  // namespace orrery
