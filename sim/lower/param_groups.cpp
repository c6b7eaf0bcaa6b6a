#include "sim/lower/param_groups.h"

#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

namespace orrery {

namespace {

struct GroupDef {
  const char* name;
  std::initializer_list<const char*> tensors;
};

// Module -> parameter tensors (names of models/param_count.cpp).
const GroupDef kLayerGroups[] = {
    {"mtp_enorm", {"mtp_enorm"}},  // multi-token prediction depths only
    {"mtp_hnorm", {"mtp_hnorm"}},
    {"mtp_eh_proj", {"mtp_eh_proj"}},
    {"input_norm", {"input_norm"}},
    {"qkv", {"qkv", "qkv_bias"}},
    {"qk_norm", {"qk_norm"}},
    {"q", {"q"}},  // multi-head latent attention without q_lora_rank
    {"q_down", {"q_down"}},
    {"kv_down", {"kv_down"}},
    {"q_down_norm", {"q_down_norm"}},
    {"kv_down_norm", {"kv_down_norm"}},
    {"q_up", {"q_up"}},
    {"kv_up", {"kv_up"}},
    {"attention_proj", {"attention_proj", "attention_proj_bias"}},
    {"post_attention_norm", {"post_attention_norm"}},
    {"mlp_up", {"mlp_up"}},
    {"mlp_down", {"mlp_down", "mlp_down_bias"}},
    {"router", {"router", "router_correction_bias"}},
    {"experts", {"experts"}},
    {"shared_experts", {"shared_experts", "shared_expert_gate"}},
    {"mtp_final_norm", {"mtp_final_norm"}},
};

std::vector<ParamGroup> collect(const LoweringContext& ctx, const std::vector<ParamTensor>& tensors,
                                std::span<const GroupDef> defs, int layer, int chunk) {
  std::vector<ParamGroup> out;
  for (const GroupDef& def : defs) {
    std::int64_t n = 0;
    for (const ParamTensor& t : tensors) {
      for (const char* name : def.tensors) {
        if (t.name == name) n += ctx.local_elements(t);
      }
    }
    if (n > 0) out.push_back({chunk, layer, def.name, n, std::strcmp(def.name, "experts") == 0});
  }
  return out;
}

std::int64_t position_rows(const LoweringContext& ctx) {
  return std::max(ctx.model.max_position_embeddings, ctx.training.seq_length);
}

}  // namespace

std::vector<ParamGroup> layer_param_groups(const LoweringContext& ctx, int layer, int chunk) {
  const std::pair<int, int> key{layer, chunk};
  if (const auto it = ctx.layer_groups_.find(key); it != ctx.layer_groups_.end()) return it->second;
  const auto tensors = layer_param_tensors(ctx.padded_model, layer);
  return ctx.layer_groups_.emplace(key, collect(ctx, tensors, kLayerGroups, layer, chunk)).first->second;
}

std::vector<ParamGroup> embedding_param_groups(const LoweringContext& ctx, int chunk) {
  const auto tensors = embedding_param_tensors(ctx.padded_model, position_rows(ctx));
  static const GroupDef kEmbeddingGroups[] = {{"word_embedding", {"word_embedding"}},
                                              {"position_embedding", {"position_embedding"}},
                                              {"embedding_norm", {"embedding_norm"}}};
  return collect(ctx, tensors, kEmbeddingGroups, -1, chunk);
}

std::vector<ParamGroup> head_param_groups(const LoweringContext& ctx, int chunk) {
  static const GroupDef kHeadGroups[] = {{"final_norm", {"final_norm"}}, {"lm_head", {"lm_head"}}};
  auto out = collect(ctx, head_param_tensors(ctx.padded_model), kHeadGroups, -1, chunk);
  if (ctx.model.tie_word_embeddings && ctx.plan.pp > 1 && !ctx.layout.head_beside_embedding()) {
    // Megatron keeps a copy of the word embedding on the last stage to use as the LM head. DualPipe's and
    // DualPipeV's head runs on a rank that holds the embedding chunk too, and uses it directly.
    out.push_back({chunk, -1, "lm_head", ctx.word_embedding_elements()});
  }
  if (ctx.model.mtp_num_layers > 0 && ctx.layout.virtual_stages() > 1 && !ctx.layout.head_beside_embedding() &&
      !ctx.model.tie_word_embeddings) {
    // Multi-token prediction embeds the shifted tokens on this rank: Megatron-Core builds the word embedding here
    // too (GPTModel with mtp_process), kept in step with the first stage's like a tied embedding. DualPipe's rank
    // that holds the head holds the embedding chunk too, and the two share it (DeepSeek-V3 report Section 3.2.1);
    // so does DualPipeV's rank 0.
    out.push_back({chunk, -1, "word_embedding", ctx.word_embedding_elements()});
  }
  return out;
}

std::vector<ParamGroup> stage_param_groups(const LoweringContext& ctx, int stage) {
  std::vector<ParamGroup> out;
  const PipelineLayout& layout = ctx.layout;
  for (int chunk = 0; chunk < layout.vpp; ++chunk) {
    if (layout.holds_embedding(stage, chunk)) {
      auto e = embedding_param_groups(ctx, chunk);
      out.insert(out.end(), e.begin(), e.end());
    }
    const int first = layout.first_layer_of(stage, chunk);
    for (int l = first; l < first + layout.layers_in(stage, chunk); ++l) {
      auto g = layer_param_groups(ctx, l, chunk);
      out.insert(out.end(), g.begin(), g.end());
    }
    if (layout.holds_head(stage, chunk)) {
      for (int l = ctx.model.num_layers; l < ctx.model.num_layers + ctx.model.mtp_num_layers; ++l) {
        auto g = layer_param_groups(ctx, l, chunk);
        out.insert(out.end(), g.begin(), g.end());
      }
      auto h = head_param_groups(ctx, chunk);
      out.insert(out.end(), h.begin(), h.end());
    }
  }
  return out;
}

void record_param_use(std::vector<ParamUse>* params, const Emitter& emit, const std::vector<ParamGroup>& groups,
                      const char* name, int layer, const MaybeTask& task, bool forward) {
  const std::int64_t elements = group_elements(groups, name);
  if (!params || elements == 0) return;
  if (!task.emitted() && emit.weight_grad_mode() != WeightGradMode::kInline) return;  // dropped in this split step
  // Otherwise only a one-rank collective is skipped, and no collective reads or finishes a parameter: the task
  // that does is a kernel, and an edge to the data-parallel reduction or gather must not go missing with it.
  if (!task.emitted()) {
    throw std::logic_error(std::string("lowering: the use of parameter group '") + name + "' is a skipped task");
  }
  ParamUse use;
  use.chunk = emit.chunk();
  use.layer = layer;
  use.name = name;
  use.elements = elements;
  (forward ? use.first_use : use.grad_ready) = task.task();
  params->push_back(use);
}

std::int64_t group_elements(const std::vector<ParamGroup>& groups, const char* name) {
  for (const ParamGroup& g : groups) {
    if (std::strcmp(g.name, name) == 0) return g.elements;
  }
  return 0;
}

}  // namespace orrery
