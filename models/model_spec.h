#pragma once
// The architecture of a decoder-only transformer, as far as performance depends on it. Filled from a Hugging Face
// config.json (models/hf_config.h) or a preset (models/model_presets.h). Sizes are element counts, not bytes.

#include <cstdint>
#include <string>
#include <vector>

namespace orrery {

enum class NormKind { kLayerNorm, kRmsNorm };
enum class Activation { kGelu, kSilu, kRelu, kSquaredRelu };
enum class PositionKind { kLearned, kRotary, kAlibi };

/// Mixture-of-experts block. Zero experts means dense MLPs everywhere.
struct MoeSpec {
  int num_experts = 0;             // routed experts per MoE layer
  int experts_per_token = 0;       // top-k
  std::int64_t expert_intermediate_size = 0;  // per-expert MLP width
  int num_shared_experts = 0;      // always-active experts (DeepSeek, Qwen2-MoE)
  std::int64_t shared_expert_intermediate_size = 0;  // width of each shared expert
  int first_dense_layers = 0;      // first_k_dense_replace: leading layers with a dense MLP
  std::vector<bool> moe_layers;    // per layer: true where the MLP is routed experts (set by the importer)
  bool router_bias = false;        // a bias on the router logits (GPT-OSS)
  bool router_correction_bias = false;  // DeepSeek-V3's e_score_correction_bias (E numbers, not in the logits GEMM)
  /// Group-limited routing (DeepSeek-V3 report Section 2.1.2, "node-limited routing"; HF n_group / topk_group,
  /// Megatron-Core moe_router_num_groups / moe_router_group_topk): the experts form num_groups equal groups and each
  /// token picks its experts from its best groups_per_token groups. 0: routing is not group-limited.
  int num_groups = 0;
  int groups_per_token = 0;
};

/// Multi-head latent attention (DeepSeek-V2/V3, arXiv:2405.04434 Section 2.1). Zero kv_lora_rank means none.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly from the hidden state
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct ModelSpec {
  std::string name;        // preset or user name, for reports
  std::string model_type;  // Hugging Face model_type, e.g. "llama", "gpt2"

  int num_layers = 0;
  std::int64_t hidden_size = 0;
  int num_attention_heads = 0;
  int num_kv_heads = 0;            // GQA/MQA query groups; equals num_attention_heads for MHA
  std::int64_t head_dim = 0;       // need not be hidden_size / num_attention_heads (Qwen3)
  std::int64_t intermediate_size = 0;  // dense MLP width
  std::int64_t vocab_size = 0;     // unpadded; Megatron's padding is applied by the lowering
  std::int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;

  NormKind norm = NormKind::kRmsNorm;
  bool norm_has_bias = false;      // LayerNorm with a bias vector
  Activation activation = Activation::kSilu;
  bool gated_mlp = true;           // SwiGLU-style: gate and up projections
  PositionKind position = PositionKind::kRotary;
  /// Hugging Face `rope_scaling` of type "yarn" (YaRN, Peng et al., arXiv:2309.00071; GPT-OSS): the rotary cos and
  /// sin carry an attention scale (mscale) that Transformer Engine's fused RoPE kernel does not apply, so
  /// Megatron-Bridge runs Megatron-Core's unfused RoPE for it (TrainingSpec::apply_rope_fusion).
  bool rope_yarn = false;
  bool qkv_bias = false;
  bool attention_output_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;            // per-head RMSNorm on queries and keys (Qwen3)
  bool embedding_norm = false;     // LayerNorm right after the word embedding (BLOOM)
  bool attention_sinks = false;    // one learned logit per head (GPT-OSS)
  /// Clamp of a gated MLP's two halves before the activation: gate to at most `swiglu_limit`, linear half to
  /// [-limit, limit] (Hugging Face `swiglu_limit`, GPT-OSS 7.0; Megatron-Core `activation_func_clamp_value`). 0: none.
  double swiglu_limit = 0.0;

  double attention_dropout = 0.0;  // dropout on attention probabilities
  double hidden_dropout = 0.0;     // dropout before each residual add

  std::int64_t sliding_window = 0;         // 0: full attention everywhere
  std::vector<bool> sliding_window_layers;  // per layer; empty means every layer uses the window when one is set

  /// Multi-token prediction depths (DeepSeek-V3 report, arXiv:2412.19437 Section 2.2; HF num_nextn_predict_layers,
  /// Megatron-Core mtp_num_layers). Depth k adds, on the last pipeline stage, the embedding of the tokens shifted by
  /// k, two RMSNorms, a 2h -> h projection, one more transformer layer of the last decoder layer's kind (layer index
  /// num_layers + k - 1), a final norm, and a second pass through the shared LM head and loss. 0: none.
  int mtp_num_layers = 0;

  MoeSpec moe;
  MlaSpec mla;

  bool is_moe() const { return moe.num_experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  /// True when layer `layer` (0-based) has a routed-expert MLP. Indexes from num_layers on are the multi-token
  /// prediction layers, which take the last decoder layer's kind (Megatron-Core builds them from its layer spec).
  bool layer_is_moe(int layer) const;
  /// Attention window of layer `layer` in tokens, or 0 for full (causal) attention (MTP layers: as the last layer).
  std::int64_t layer_window(int layer) const;
};

const char* to_string(NormKind kind);
const char* to_string(Activation act);
const char* to_string(PositionKind kind);

}  // namespace orrery
