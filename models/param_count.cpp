#include "models/param_count.h"

namespace orrery {

namespace {

using S = ParamSharding;

void add(std::vector<ParamTensor>& out, std::string name, std::int64_t elements, S sharding) {
  if (elements > 0) out.push_back({std::move(name), elements, elements, sharding});
}

std::int64_t norm_elements(const ModelSpec& m, std::int64_t width) { return m.norm_has_bias ? 2 * width : width; }

// Gate+up (gated) or up, and down projections of an MLP of width f, with optional biases.
std::int64_t mlp_elements(const ModelSpec& m, std::int64_t f, bool bias) {
  std::int64_t h = m.hidden_size;
  std::int64_t up = (m.gated_mlp ? 2 : 1) * f;
  return h * up + f * h + (bias ? up + h : 0);
}

void add_attention(const ModelSpec& m, std::vector<ParamTensor>& out) {
  const std::int64_t h = m.hidden_size, a = m.num_attention_heads, kv = m.num_kv_heads, d = m.head_dim;
  if (m.is_mla()) {
    // DeepSeek-V2 (arXiv:2405.04434) eq. 9-14: low-rank query and joint key/value compression.
    const MlaSpec& x = m.mla;
    const std::int64_t qk = x.qk_nope_head_dim + x.qk_rope_head_dim;
    if (x.q_lora_rank > 0) {
      add(out, "q_down", h * x.q_lora_rank, S::kReplicated);
      add(out, "q_down_norm", x.q_lora_rank, S::kReplicated);
      add(out, "q_up", x.q_lora_rank * a * qk, S::kTensorParallel);
    } else {
      add(out, "q", h * a * qk, S::kTensorParallel);
    }
    add(out, "kv_down", h * (x.kv_lora_rank + x.qk_rope_head_dim), S::kReplicated);
    add(out, "kv_down_norm", x.kv_lora_rank, S::kReplicated);
    add(out, "kv_up", x.kv_lora_rank * a * (x.qk_nope_head_dim + x.v_head_dim), S::kTensorParallel);
    add(out, "attention_proj", a * x.v_head_dim * h, S::kTensorParallel);
  } else {
    add(out, "qkv", h * (a + 2 * kv) * d, S::kTensorParallel);
    if (m.qkv_bias) add(out, "qkv_bias", (a + 2 * kv) * d, S::kTensorParallel);
    if (m.qk_norm) add(out, "qk_norm", 2 * d, S::kReplicated);
    add(out, "attention_proj", a * d * h, S::kTensorParallel);
  }
  if (m.attention_output_bias) add(out, "attention_proj_bias", h, S::kReplicated);
  if (m.attention_sinks) add(out, "attention_sinks", a, S::kTensorParallel);
}

void add_mlp(const ModelSpec& m, int layer, std::vector<ParamTensor>& out) {
  const std::int64_t h = m.hidden_size;
  if (!m.layer_is_moe(layer)) {
    std::int64_t f = m.intermediate_size;
    add(out, "mlp_up", h * (m.gated_mlp ? 2 : 1) * f + (m.mlp_bias ? (m.gated_mlp ? 2 : 1) * f : 0), S::kTensorParallel);
    add(out, "mlp_down", f * h, S::kTensorParallel);
    if (m.mlp_bias) add(out, "mlp_down_bias", h, S::kReplicated);
    return;
  }
  const MoeSpec& e = m.moe;
  add(out, "router", h * e.num_experts + (e.router_bias ? e.num_experts : 0), S::kReplicated);
  if (e.router_correction_bias) add(out, "router_correction_bias", e.num_experts, S::kReplicated);
  std::int64_t per_expert = mlp_elements(m, e.expert_intermediate_size, m.mlp_bias);
  out.push_back({"experts", per_expert * e.num_experts, per_expert * e.experts_per_token, S::kExpert});
  if (e.num_shared_experts > 0) {
    add(out, "shared_experts", e.num_shared_experts * mlp_elements(m, e.shared_expert_intermediate_size, false),
        S::kTensorParallel);
    if (m.model_type == "qwen2_moe") add(out, "shared_expert_gate", h, S::kReplicated);
  }
}

}  // namespace

std::vector<ParamTensor> layer_param_tensors(const ModelSpec& m, int layer) {
  std::vector<ParamTensor> out;
  const bool mtp = layer >= m.num_layers;
  if (mtp) {
    add(out, "mtp_enorm", norm_elements(m, m.hidden_size), S::kReplicated);
    add(out, "mtp_hnorm", norm_elements(m, m.hidden_size), S::kReplicated);
    add(out, "mtp_eh_proj", 2 * m.hidden_size * m.hidden_size, S::kTensorParallel);
  }
  add(out, "input_norm", norm_elements(m, m.hidden_size), S::kReplicated);
  add_attention(m, out);
  add(out, "post_attention_norm", norm_elements(m, m.hidden_size), S::kReplicated);
  add_mlp(m, layer, out);
  if (mtp) add(out, "mtp_final_norm", norm_elements(m, m.hidden_size), S::kReplicated);
  return out;
}

std::vector<ParamTensor> embedding_param_tensors(const ModelSpec& m, std::int64_t position_rows) {
  std::vector<ParamTensor> out;
  add(out, "word_embedding", m.vocab_size * m.hidden_size, S::kTensorParallel);
  if (m.position == PositionKind::kLearned) add(out, "position_embedding", position_rows * m.hidden_size, S::kReplicated);
  if (m.embedding_norm) add(out, "embedding_norm", norm_elements(m, m.hidden_size), S::kReplicated);
  return out;
}

std::vector<ParamTensor> head_param_tensors(const ModelSpec& m) {
  std::vector<ParamTensor> out;
  add(out, "final_norm", norm_elements(m, m.hidden_size), S::kReplicated);
  if (!m.tie_word_embeddings) add(out, "lm_head", m.vocab_size * m.hidden_size, S::kTensorParallel);
  return out;
}

std::int64_t sum_elements(const std::vector<ParamTensor>& tensors) {
  std::int64_t n = 0;
  for (const auto& t : tensors) n += t.elements;
  return n;
}

ParamCount count_parameters(const ModelSpec& m) {
  ParamCount c;
  auto take = [&](const std::vector<ParamTensor>& tensors) {
    for (const auto& t : tensors) {
      c.total += t.elements;
      c.active += t.active;
    }
  };
  take(embedding_param_tensors(m, m.max_position_embeddings));
  for (int l = 0; l < m.num_layers; ++l) {
    auto tensors = layer_param_tensors(m, l);
    c.layers += sum_elements(tensors);
    take(tensors);
  }
  take(head_param_tensors(m));
  for (int l = m.num_layers; l < m.num_layers + m.mtp_num_layers; ++l) c.mtp += sum_elements(layer_param_tensors(m, l));
  c.word_embedding = m.vocab_size * m.hidden_size;
  c.lm_head = m.tie_word_embeddings ? 0 : c.word_embedding;
  return c;
}

}  // namespace orrery
