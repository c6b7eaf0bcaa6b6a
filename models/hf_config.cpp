#include "models/hf_config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/physical_bounds.h"

namespace orrery {

using nlohmann::json;

namespace {

enum class Family { kGpt, kLlama, kNemotron, kMpt, kBloom };

struct FamilyEntry {
  const char* model_type;
  Family family;
};

// model_type -> family. GPT-style means LayerNorm, GELU MLP, biases, learned positions.
constexpr FamilyEntry kFamilies[] = {
    {"gpt2", Family::kGpt},           {"gpt", Family::kGpt},           {"megatron-gpt", Family::kGpt},
    {"llama", Family::kLlama},        {"mistral", Family::kLlama},     {"mixtral", Family::kLlama},
    {"qwen2", Family::kLlama},        {"qwen3", Family::kLlama},       {"qwen2_moe", Family::kLlama},
    {"qwen3_moe", Family::kLlama},    {"deepseek_v2", Family::kLlama}, {"deepseek_v3", Family::kLlama},
    {"gpt_oss", Family::kLlama},      {"nemotron", Family::kNemotron}, {"mpt", Family::kMpt},
    {"bloom", Family::kBloom},
};

// Reads the first present key among HF spellings (e.g. hidden_size / n_embd / d_model).
std::optional<std::int64_t> first_int(FieldReader& in, std::initializer_list<const char*> keys, std::int64_t min,
                                      std::int64_t max) {
  for (const char* key : keys) {
    if (in.has(key)) return in.optional_int(key, min, max);
    in.allow(key);
  }
  return std::nullopt;
}

std::int64_t required_int(FieldReader& in, std::initializer_list<const char*> keys, std::int64_t min,
                          std::int64_t max) {
  auto value = first_int(in, keys, min, max);
  if (!value) {
    std::string names;
    for (const char* key : keys) names += (names.empty() ? "" : " / ") + std::string(key);
    throw Error::invalid(in.field(*keys.begin()), "missing", "is required (HF spellings: " + names + ")");
  }
  return *value;
}

// A dropout probability, named by its own key (attn_pdrop, resid_pdrop, attention_dropout, hidden_dropout).
double read_dropout(FieldReader& in, const char* key, double fallback) {
  const double p = in.double_or(key, fallback);
  require(p >= 0.0 && p < 1.0, in.field(key), fmt::format("{}", p), "is a dropout probability and must be in [0, 1)");
  return p;
}

Activation parse_activation(FieldReader& in, const char* key, Activation fallback) {
  auto name = in.optional_string(key);
  if (!name) return fallback;
  if (*name == "silu" || *name == "swish") return Activation::kSilu;
  if (name->rfind("gelu", 0) == 0) return Activation::kGelu;
  if (*name == "relu") return Activation::kRelu;
  if (*name == "relu2" || *name == "squared-relu" || *name == "squared_relu") return Activation::kSquaredRelu;
  throw Error::invalid(in.field(key), *name, "is not a known activation (silu, gelu*, relu, relu2)");
}

void read_common_shape(FieldReader& in, ModelSpec& m) {
  m.hidden_size = required_int(in, {"hidden_size", "n_embd", "d_model", "n_embed"}, 1, limits::kHidden);
  m.num_layers = static_cast<int>(required_int(in, {"num_hidden_layers", "n_layer", "n_layers", "num_layers"}, 1, limits::kLayers));
  m.num_attention_heads = static_cast<int>(required_int(in, {"num_attention_heads", "n_head", "n_heads"}, 1, limits::kHeads));
  m.vocab_size = required_int(in, {"vocab_size"}, 1, limits::kVocab);
}

void read_gpt(FieldReader& in, ModelSpec& m) {
  read_common_shape(in, m);
  m.num_kv_heads = m.num_attention_heads;
  m.intermediate_size = first_int(in, {"n_inner", "intermediate_size", "ffn_hidden_size"}, 1, limits::kIntermediate).value_or(4 * m.hidden_size);
  m.max_position_embeddings = first_int(in, {"n_positions", "max_position_embeddings"}, 1, limits::kPositions).value_or(1024);
  m.tie_word_embeddings = in.bool_or("tie_word_embeddings", true);
  m.norm = NormKind::kLayerNorm;
  m.norm_has_bias = true;
  m.activation = parse_activation(in, "activation_function", Activation::kGelu);
  m.gated_mlp = false;
  m.position = PositionKind::kLearned;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  // GPT2Config defaults: attn_pdrop = resid_pdrop = 0.1, as Megatron-LM's GPT defaults.
  m.attention_dropout = read_dropout(in, "attn_pdrop", 0.1);
  m.hidden_dropout = read_dropout(in, "resid_pdrop", 0.1);
}

void read_sliding_window(FieldReader& in, ModelSpec& m) {
  bool use = in.bool_or("use_sliding_window", true);  // Qwen2 ships a window but disables it
  if (!use) {
    in.allow("sliding_window");
    in.allow("layer_types");
    return;
  }
  auto window = in.optional_int("sliding_window", 1, limits::kPositions);
  if (!window) return;
  m.sliding_window = *window;
  if (const json* types = in.raw("layer_types")) {
    if (!types->is_array() || static_cast<int>(types->size()) != m.num_layers) {
      throw Error::invalid(in.field("layer_types"), describe_json(*types),
                           fmt::format("must list one entry per layer ({})", m.num_layers));
    }
    for (const auto& t : *types) {
      if (!t.is_string()) throw Error::invalid(in.field("layer_types"), describe_json(t), "entries must be strings");
      m.sliding_window_layers.push_back(t.get<std::string>() == "sliding_attention");
    }
  }
}

void read_moe(FieldReader& in, ModelSpec& m) {
  const std::string& type = m.model_type;
  auto experts = first_int(in, {"num_local_experts", "num_experts", "n_routed_experts"}, 0, limits::kExperts);
  if (!experts || *experts == 0) return;
  MoeSpec& moe = m.moe;
  moe.num_experts = static_cast<int>(*experts);
  moe.experts_per_token = static_cast<int>(required_int(in, {"num_experts_per_tok", "experts_per_token", "moe_topk"}, 1, limits::kExperts));
  if (type == "mixtral" || type == "gpt_oss") {
    moe.expert_intermediate_size = m.intermediate_size;  // in these families intermediate_size is per expert
  } else {
    moe.expert_intermediate_size = required_int(in, {"moe_intermediate_size"}, 1, limits::kIntermediate);
  }
  if (type == "deepseek_v2" || type == "deepseek_v3") {
    moe.num_shared_experts = static_cast<int>(in.int_or("n_shared_experts", 0, 0, limits::kExperts));
    moe.shared_expert_intermediate_size = moe.expert_intermediate_size;
    moe.first_dense_layers = static_cast<int>(in.int_or("first_k_dense_replace", 0, 0, limits::kLayers));
    auto freq = in.int_or("moe_layer_freq", 1, 1, limits::kLayers);
    moe.router_correction_bias = in.optional_string("topk_method").value_or("") == "noaux_tc";
    // Group-limited routing picks topk_group of the n_group expert groups (HF modeling_deepseek: a top-k over the
    // group scores), so topk_group lies in 1..n_group; n_group 0 or 1 is one group of all the experts.
    const auto groups = in.int_or("n_group", 0, 0, limits::kExperts);
    const auto topk = in.optional_int("topk_group", 1, limits::kExperts);
    if (topk) {
      require(*topk <= std::max<std::int64_t>(groups, 1), in.field("topk_group"), std::to_string(*topk),
              fmt::format("must be at most n_group ({}): routing picks topk_group of the n_group expert groups", groups));
    }
    if (groups > 1) {
      if (!topk) throw Error::invalid(in.field("topk_group"), "missing", fmt::format("is required with n_group ({})", groups));
      moe.num_groups = static_cast<int>(groups);
      moe.groups_per_token = static_cast<int>(*topk);
    }
    for (int l = 0; l < m.num_layers; ++l) moe.moe_layers.push_back(l >= moe.first_dense_layers && l % freq == 0);
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    auto shared = in.int_or("shared_expert_intermediate_size", 0, 0, limits::kIntermediate);
    moe.num_shared_experts = shared > 0 ? 1 : 0;
    moe.shared_expert_intermediate_size = shared;
    auto step = in.int_or("decoder_sparse_step", 1, 1, limits::kLayers);
    std::vector<int> dense_only;
    if (const json* only = in.raw("mlp_only_layers")) {
      if (!only->is_array()) throw Error::invalid(in.field("mlp_only_layers"), describe_json(*only), "must be a list of layer indexes");
      for (const auto& l : *only) {
        if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() >= m.num_layers) {
          throw Error::invalid(in.field("mlp_only_layers"), describe_json(l), "entries must be layer indexes");
        }
        dense_only.push_back(l.get<int>());
      }
    }
    for (int l = 0; l < m.num_layers; ++l) {
      bool dense = std::find(dense_only.begin(), dense_only.end(), l) != dense_only.end();
      moe.moe_layers.push_back(!dense && (l + 1) % step == 0);
    }
  } else {
    moe.router_bias = (type == "gpt_oss");
    moe.moe_layers.assign(static_cast<std::size_t>(m.num_layers), true);
  }
}

void read_mla(FieldReader& in, ModelSpec& m) {
  auto kv_lora = in.optional_int("kv_lora_rank", 0, limits::kRank);
  if (!kv_lora || *kv_lora == 0) return;
  m.mla.kv_lora_rank = *kv_lora;
  m.mla.q_lora_rank = in.int_or("q_lora_rank", 0, 0, limits::kRank);
  m.mla.qk_nope_head_dim = in.require_int("qk_nope_head_dim", 1, limits::kHeadDim);
  m.mla.qk_rope_head_dim = in.require_int("qk_rope_head_dim", 1, limits::kHeadDim);
  m.mla.v_head_dim = in.require_int("v_head_dim", 1, limits::kHeadDim);
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  m.num_kv_heads = m.num_attention_heads;  // MLA's num_key_value_heads is nominal
}

// Hugging Face rope_scaling: null, or an object whose rope_type (older configs: type) is one of transformers'
// ROPE_INIT_FUNCTIONS (modeling_rope_utils.py) and whose factor, where given, is positive. Only YaRN changes how
// Megatron runs the rotary (ModelSpec::rope_yarn); the others change its frequencies, not its cost.
void read_rope_scaling(FieldReader& in, ModelSpec& m) {
  const json* scaling = in.raw("rope_scaling");
  if (!scaling || scaling->is_null()) return;
  const std::string field = in.field("rope_scaling");
  if (!scaling->is_object()) throw Error::invalid(field, describe_json(*scaling), "must be an object or null");
  static constexpr const char* kTypes[] = {"default", "linear", "dynamic", "yarn", "longrope", "llama3"};
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (!scaling->contains(key)) continue;
    const json& v = (*scaling)[key];
    const std::string at = field + "." + key;
    if (!v.is_string()) throw Error::invalid(at, describe_json(v), "must be a string");
    const std::string t = v.get<std::string>();
    if (std::find(std::begin(kTypes), std::end(kTypes), t) == std::end(kTypes)) {
      throw Error::invalid(at, t, "is not a rotary scaling transformers knows (default, linear, dynamic, yarn, longrope, llama3)");
    }
    if (!type.empty() && t != type) throw Error::invalid(at, t, fmt::format("contradicts rope_type ({})", type));
    type = t;
  }
  if (scaling->contains("factor")) {
    const json& f = (*scaling)["factor"];
    if (!f.is_number() || !(f.get<double>() > 0) || !std::isfinite(f.get<double>())) {
      throw Error::invalid(field + ".factor", describe_json(f), "must be a positive number");
    }
    const bounds::Range& r = bounds::kRopeScalingFactor;
    require(f.get<double>() >= r.min && f.get<double>() <= r.max, field + ".factor", describe_json(f),
            fmt::format("must lie in [{}, {}] ({})", r.min, r.max, r.why));
  }
  m.rope_yarn = type == "yarn";
}

void read_llama(FieldReader& in, ModelSpec& m) {
  read_common_shape(in, m);
  const std::string& type = m.model_type;
  m.num_kv_heads = static_cast<int>(in.int_or("num_key_value_heads", m.num_attention_heads, 1, limits::kHeads));
  m.head_dim = in.int_or("head_dim", 0, 1, limits::kHeadDim);
  m.intermediate_size = required_int(in, {"intermediate_size"}, 1, limits::kIntermediate);
  m.max_position_embeddings = in.int_or("max_position_embeddings", 4096, 1, limits::kPositions);
  m.tie_word_embeddings = in.bool_or("tie_word_embeddings", false);
  m.norm = NormKind::kRmsNorm;
  m.activation = parse_activation(in, "hidden_act", Activation::kSilu);
  m.gated_mlp = true;
  m.position = PositionKind::kRotary;
  read_rope_scaling(in, m);
  bool attention_bias = in.bool_or("attention_bias", type == "gpt_oss");
  m.qkv_bias = attention_bias || type == "qwen2" || type == "qwen2_moe";  // Qwen2 always biases q, k, v
  m.attention_output_bias = attention_bias;
  m.mlp_bias = in.bool_or("mlp_bias", type == "gpt_oss");
  m.qk_norm = (type == "qwen3" || type == "qwen3_moe");
  m.attention_sinks = (type == "gpt_oss");
  m.attention_dropout = read_dropout(in, "attention_dropout", 0.0);
  read_sliding_window(in, m);
  read_moe(in, m);
  read_mla(in, m);
  // GPT-OSS's config.json carries swiglu_limit 7.0, and transformers' GptOssConfig defaults to it.
  m.swiglu_limit = in.double_or("swiglu_limit", type == "gpt_oss" && m.is_moe() ? 7.0 : 0.0, true);
  require(m.swiglu_limit <= bounds::kMaxSwigluLimit, in.field("swiglu_limit"), fmt::format("{}", m.swiglu_limit),
          fmt::format("must be at most {} (GPT-OSS, the only model that clamps, uses 7.0)", bounds::kMaxSwigluLimit));
  if (m.swiglu_limit > 0 && !m.is_moe()) {
    throw Error::invalid(in.field("swiglu_limit"), fmt::format("{}", m.swiglu_limit),
                         "needs MoE layers (Megatron-Core refuses activation_func_clamp_value without MoE: the clamp is "
                         "fused into the grouped experts' activation only)");
  }
}

void read_nemotron(FieldReader& in, ModelSpec& m) {
  read_common_shape(in, m);
  m.num_kv_heads = static_cast<int>(in.int_or("num_key_value_heads", m.num_attention_heads, 1, limits::kHeads));
  m.head_dim = first_int(in, {"head_dim", "kv_channels"}, 1, limits::kHeadDim).value_or(0);
  m.intermediate_size = required_int(in, {"intermediate_size", "ffn_hidden_size"}, 1, limits::kIntermediate);
  m.max_position_embeddings = in.int_or("max_position_embeddings", 4096, 1, limits::kPositions);
  m.tie_word_embeddings = in.bool_or("tie_word_embeddings", false);
  m.norm = NormKind::kLayerNorm;  // Nemotron's LayerNorm1P: a LayerNorm with weight and bias
  m.norm_has_bias = true;
  m.activation = parse_activation(in, "hidden_act", Activation::kSquaredRelu);
  m.gated_mlp = false;
  m.position = PositionKind::kRotary;
  m.qkv_bias = m.attention_output_bias = in.bool_or("attention_bias", false);
  m.mlp_bias = in.bool_or("mlp_bias", false);
  m.attention_dropout = read_dropout(in, "attention_dropout", 0.0);
}

void read_mpt(FieldReader& in, ModelSpec& m) {
  read_common_shape(in, m);
  m.num_kv_heads = m.num_attention_heads;
  bool alibi = false;
  if (const json* attn = in.raw("attn_config"); attn && attn->is_object()) {
    FieldReader a(*attn, in.field("attn_config"));
    alibi = a.bool_or("alibi", false);
    m.num_kv_heads = static_cast<int>(a.int_or("kv_n_heads", m.num_attention_heads, 1, limits::kHeads));
    m.attention_dropout = read_dropout(a, "attn_pdrop", 0.0);
  }
  m.intermediate_size = in.int_or("expansion_ratio", 4, 1, 64) * m.hidden_size;
  m.max_position_embeddings = first_int(in, {"max_seq_len", "max_position_embeddings"}, 1, limits::kPositions).value_or(2048);
  m.tie_word_embeddings = true;  // MPT reuses the word embedding as the LM head
  bool no_bias = in.bool_or("no_bias", true);
  m.norm = NormKind::kLayerNorm;
  m.norm_has_bias = !no_bias;
  m.activation = Activation::kGelu;
  m.gated_mlp = false;
  bool learned = in.bool_or("learned_pos_emb", true);
  m.position = alibi ? PositionKind::kAlibi : (learned ? PositionKind::kLearned : PositionKind::kRotary);
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = !no_bias;
  m.hidden_dropout = read_dropout(in, "resid_pdrop", 0.0);
}

void read_bloom(FieldReader& in, ModelSpec& m) {
  read_common_shape(in, m);
  m.num_kv_heads = m.num_attention_heads;
  m.intermediate_size = 4 * m.hidden_size;
  m.max_position_embeddings = in.int_or("seq_length", 2048, 1, limits::kPositions);
  m.tie_word_embeddings = in.bool_or("tie_word_embeddings", true);
  m.norm = NormKind::kLayerNorm;
  m.norm_has_bias = true;
  m.activation = Activation::kGelu;
  m.gated_mlp = false;
  m.position = PositionKind::kAlibi;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  m.embedding_norm = true;
  m.attention_dropout = read_dropout(in, "attention_dropout", 0.0);
  m.hidden_dropout = read_dropout(in, "hidden_dropout", 0.0);
}

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& f : kFamilies) t.emplace_back(f.model_type);
    return t;
  }();
  return types;
}

ModelSpec parse_hf_config(const json& config, const std::string& path, std::vector<std::string>* unread) {
  FieldReader in(config, path);
  ModelSpec m;
  m.model_type = in.require_string("model_type");
  const FamilyEntry* entry = nullptr;
  for (const auto& f : kFamilies) {
    if (m.model_type == f.model_type) entry = &f;
  }
  if (!entry) {
    throw Error::invalid(in.field("model_type"), m.model_type,
                         "is not a supported model family; supported: " + fmt::format("{}", fmt::join(supported_model_types(), ", ")));
  }
  switch (entry->family) {
    case Family::kGpt: read_gpt(in, m); break;
    case Family::kLlama: read_llama(in, m); break;
    case Family::kNemotron: read_nemotron(in, m); break;
    case Family::kMpt: read_mpt(in, m); break;
    case Family::kBloom: read_bloom(in, m); break;
  }
  if (m.head_dim == 0) {
    require(m.hidden_size % m.num_attention_heads == 0, join_path(path, "hidden_size"), std::to_string(m.hidden_size),
            fmt::format("must be divisible by num_attention_heads ({}) when head_dim is not given", m.num_attention_heads));
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  // Multi-token prediction: HF's num_nextn_predict_layers (DeepSeek-V3, GLM-4.5), or Megatron's name, which wins
  // (a preset's HF key is turned off with {"mtp_num_layers": 0}; model_input refuses both in one override).
  const auto mtp = in.optional_int("mtp_num_layers", 0, limits::kLayers);
  const auto nextn = in.optional_int("num_nextn_predict_layers", 0, limits::kLayers);
  m.mtp_num_layers = static_cast<int>(mtp ? *mtp : nextn.value_or(0));
  m.name = in.optional_string("name").value_or(m.model_type);
  // RoPE's base sets no cost, so nothing reads it (an override of it is still reported as ignored); a value no
  // model could have is refused all the same, through a reader of its own.
  FieldReader(config, path).optional_double("rope_theta", bounds::kRopeTheta);
  validate_model(m, path);
  if (unread) *unread = in.unread_keys();
  return m;
}

void validate_model(const ModelSpec& m, const std::string& path) {
  auto field = [&](const char* key) { return join_path(path, key); };
  require(m.num_layers >= 1, field("num_hidden_layers"), std::to_string(m.num_layers), "must be at least 1");
  require(m.hidden_size >= 1, field("hidden_size"), std::to_string(m.hidden_size), "must be at least 1");
  require(m.num_attention_heads >= 1, field("num_attention_heads"), std::to_string(m.num_attention_heads), "must be at least 1");
  require(m.num_kv_heads >= 1 && m.num_attention_heads % m.num_kv_heads == 0, field("num_attention_heads"),
          std::to_string(m.num_attention_heads),
          fmt::format("must be divisible by num_key_value_heads ({})", m.num_kv_heads));
  require(m.head_dim >= 1, field("head_dim"), std::to_string(m.head_dim), "must be at least 1");
  require(m.intermediate_size >= 1, field("intermediate_size"), std::to_string(m.intermediate_size), "must be at least 1");
  require(m.vocab_size >= 1, field("vocab_size"), std::to_string(m.vocab_size), "must be at least 1");
  for (double p : {m.attention_dropout, m.hidden_dropout}) {
    require(p >= 0.0 && p < 1.0, field("dropout"), fmt::format("{}", p), "must be in [0, 1)");
  }
  if (m.is_moe()) {
    require(m.moe.experts_per_token <= m.moe.num_experts, field("num_experts_per_tok"),
            std::to_string(m.moe.experts_per_token),
            fmt::format("must not exceed the number of experts ({})", m.moe.num_experts));
    require(static_cast<int>(m.moe.moe_layers.size()) == m.num_layers, field("num_hidden_layers"),
            std::to_string(m.num_layers), "must match the MoE layer map");
    if (m.moe.num_groups > 0) {
      require(m.moe.num_experts % m.moe.num_groups == 0, field("n_group"), std::to_string(m.moe.num_groups),
              fmt::format("must divide the number of experts ({})", m.moe.num_experts));
      const int reachable = m.moe.groups_per_token * (m.moe.num_experts / m.moe.num_groups);
      require(m.moe.experts_per_token <= reachable, field("topk_group"), std::to_string(m.moe.groups_per_token),
              fmt::format("groups hold {} experts, fewer than num_experts_per_tok ({})", reachable,
                          m.moe.experts_per_token));
    }
  }
}

}  // namespace orrery
