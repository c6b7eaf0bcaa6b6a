#include "models/model_flops.h"

namespace orrery {

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

double mlp_matrices(const ModelSpec& m) { return m.gated_mlp ? 3.0 : 2.0; }

// Forward FLOPs of the attention score and value products per token against `kv` keys (full matrix).
double attention_core_per_token(const ModelSpec& m, double kv) {
  double dqk = m.is_mla() ? d(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) : d(m.head_dim);
  double dv = m.is_mla() ? d(m.mla.v_head_dim) : d(m.head_dim);
  return 2.0 * kv * d(m.num_attention_heads) * (dqk + dv);
}

}  // namespace

Flops layer_gemm_flops_per_token(const ModelSpec& m, int layer) {
  const double h = d(m.hidden_size), a = d(m.num_attention_heads);
  double weights = 0.0;
  if (m.is_mla()) {
    const MlaSpec& x = m.mla;
    double qk = d(x.qk_nope_head_dim + x.qk_rope_head_dim);
    weights += x.q_lora_rank > 0 ? h * d(x.q_lora_rank) + d(x.q_lora_rank) * a * qk : h * a * qk;
    weights += h * d(x.kv_lora_rank + x.qk_rope_head_dim);
    weights += d(x.kv_lora_rank) * a * d(x.qk_nope_head_dim + x.v_head_dim);
    weights += a * d(x.v_head_dim) * h;
  } else {
    weights += h * (a + 2.0 * d(m.num_kv_heads)) * d(m.head_dim) + a * d(m.head_dim) * h;
  }
  if (m.layer_is_moe(layer)) {
    const MoeSpec& e = m.moe;
    weights += h * d(e.num_experts);  // router
    weights += d(e.experts_per_token) * mlp_matrices(m) * h * d(e.expert_intermediate_size);
    weights += d(e.num_shared_experts) * mlp_matrices(m) * h * d(e.shared_expert_intermediate_size);
  } else {
    weights += mlp_matrices(m) * h * d(m.intermediate_size);
  }
  return 2.0 * weights;
}

double attended_keys_per_query(std::int64_t seq, std::int64_t window, AttentionFlops attention) {
  const double s = d(seq);
  if (window <= 0 || window >= seq) return attention == AttentionFlops::kFullMatrix ? s : s / 2.0;
  const double w = d(window);
  if (attention == AttentionFlops::kFullMatrix) return w;
  return (w * (w + 1.0) / 2.0 + (s - w) * w) / s;
}

Flops training_flops_per_sequence(const ModelSpec& m, std::int64_t seq_length, std::int64_t lm_head_vocab,
                                  AttentionFlops attention, AttentionSpan span) {
  const double s = d(seq_length);
  double forward_per_token = 2.0 * d(m.hidden_size) * d(lm_head_vocab);  // LM head
  auto attention_kv = [&](int layer) {
    const std::int64_t window = span.windows ? m.layer_window(layer) : 0;
    return attended_keys_per_query(seq_length, window, attention) * span.packed;
  };
  for (int l = 0; l < m.num_layers; ++l) {
    forward_per_token += layer_gemm_flops_per_token(m, l) + attention_core_per_token(m, attention_kv(l));
  }
  // Each multi-token prediction depth: its layer, the 2h -> h projection and another pass through the LM head
  // (Megatron-LM num_floating_point_operations: mtp_num_layers x (3h + 2h^2) and (mtp_num_layers + 1) logits;
  // the 3h of norms is below this count's resolution and left out, as for the decoder's norms).
  for (int l = m.num_layers; l < m.num_layers + m.mtp_num_layers; ++l) {
    forward_per_token += layer_gemm_flops_per_token(m, l) + attention_core_per_token(m, attention_kv(l)) +
                         2.0 * 2.0 * d(m.hidden_size) * d(m.hidden_size) + 2.0 * d(m.hidden_size) * d(lm_head_vocab);
  }
  return 3.0 * forward_per_token * s;
}

Flops sc21_flops_per_iteration(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

Flops korthikanti_model_flops_per_iteration(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

}  // namespace orrery
