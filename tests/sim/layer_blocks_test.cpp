// The blocks of a transformer layer (sim/lower/attention_block.h, mla_block.h, mlp_block.h, moe_block.h) each count
// what their forward pass keeps, and TransformerLayerLowering::saved_bytes adds its norms' inputs and residual
// dropout masks to their sum. Checked against the terms of Korthikanti et al., "Reducing Activation Recomputation in
// Large Transformer Models" (arXiv:2205.05198), Section 4 and Table 2 (16-bit activations, dropout, unfused
// attention), and against what each layer's lowered forward really allocates. (tests/sim/activation_memory_test.cpp
// checks the whole lowered graph against the same table.)
#include <catch2/catch.hpp>

#include <string>

#include "sim/job/job.h"
#include "sim/lower/attention_block.h"
#include "sim/lower/mla_block.h"
#include "sim/lower/mlp_block.h"
#include "sim/lower/moe_block.h"
#include "sim/lower/transformer_layer.h"
#include "test_support.h"

using namespace orrery;

namespace {

// GPT-3 175B cut to two layers (h 12288, a 96, 4h MLP, dropout 0.1), one sequence of 2048, unfused attention.
Scenario gpt3(int tp, bool sp, const char* recompute) {
  return test::scenario(std::string(R"({"model": {"preset": "gpt3-175b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-a100-80gb", "num_gpus": )") + std::to_string(tp) + R"(}, "parallel": {"tp": )" +
                        std::to_string(tp) + R"(, "sequence_parallel": )" + (sp ? "true" : "false") +
                        R"(}, "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 1,
      "recompute": ")" + recompute + R"(", "attention_backend": "unfused"}})");
}

// Stage 0's emitter at micro-batch 0, chunk 0, layer `layer`, forward.
struct LayerSite {
  LayerSite(const Scenario& s, int layer)
      : job(resolve(s)), ctx(job), builder(program_builder(0)), emit(ctx, builder, 0),
        at(emit, {0, 0, layer, Phase::kForward}), ops(emit, layer) {}

  Job job;
  LoweringContext ctx;
  ProgramBuilder builder;
  Emitter emit;
  PositionScope at;
  LayerOps ops;
};

// Bytes of activations the tasks emitted so far keep (allocations minus frees).
double kept_bytes(ProgramBuilder& builder) {
  const Program p = builder.finish();
  double bytes = 0;
  for (const Task& t : p.tasks) {
    if (t.start_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.start_bytes);
    if (t.end_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.end_bytes);
  }
  return bytes;
}

}  // namespace

TEST_CASE("a GPT layer's blocks save Korthikanti et al.'s terms, and the layer saves their sum",
          "[sim][memory][lowering]") {
  const double s = 2048, b = 1, h = 12288, a = 96;
  const double sbh = s * b * h, scores = 5 * a * s * s * b;  // softmax output, its dropout mask and output
  struct Row {
    int tp;
    bool sp;
    const char* recompute;
    double table2;  // Table 2's bytes per layer
  };
  const double t = 8;
  const Row rows[] = {
      {1, false, "none", sbh * (34 + 5 * a * s / h)},                // row 1, no parallelism
      {8, false, "none", sbh * (10 + 24 / t + 5 * a * s / (h * t))},  // row 2, tensor parallelism
      {8, true, "none", sbh * (34 / t + 5 * a * s / (h * t))},        // row 3, tensor + sequence parallelism
      {8, false, "selective", sbh * (10 + 24 / t)},                   // row 4, TP + selective recompute
      {8, true, "selective", sbh * 34 / t},                           // row 5, TP + SP + selective recompute
      {8, false, "full", 2 * sbh},                                    // row 6, full recompute
  };
  for (const Row& row : rows) {
    INFO("tp " << row.tp << ", sequence parallel " << row.sp << ", recompute " << row.recompute);
    LayerSite site(gpt3(row.tp, row.sp, row.recompute), 1);
    const TransformerLayerLowering layer(site.emit, 1);
    const SavePolicy save = layer.save();
    const double n = row.tp;                 // what tensor parallelism shards
    const double m = row.sp ? row.tp : 1.0;  // what only sequence parallelism shards
    const bool full = std::string(row.recompute) == "full";
    const bool internals = std::string(row.recompute) == "none";
    // Section 4.1's attention block, but for the dropout mask after the output projection (the layer's residual):
    // the QKV input 2sbh, Q, K and V 6sbh, the output projection's input 2sbh, the core's 5 a s^2 b.
    const double attention = (full ? 0 : 2 * sbh / m + 8 * sbh / n) + (internals ? scores / n : 0);
    // The MLP block, but for its dropout mask: the first linear's input 2sbh, GeLU's input 8sbh and output 8sbh.
    const double mlp = full ? 0 : 2 * sbh / m + 16 * sbh / n;
    // The layer's own: its input (the input norm's) 2sbh; the pre-MLP norm's input 2sbh and the two dropout masks.
    const double own = 2 * sbh / m + (full ? 0 : 4 * sbh / m);
    CHECK(static_cast<double>(AttentionBlock(site.ops).saved_bytes(save)) == Approx(attention));
    CHECK(static_cast<double>(MlpBlock(site.ops, MlpKind::kDense).saved_bytes(save)) == Approx(mlp));
    CHECK(static_cast<double>(layer.saved_bytes(save)) == Approx(attention + mlp + own));
    CHECK(static_cast<double>(layer.saved_bytes(save)) == Approx(row.table2));
  }
}

TEST_CASE("a layer's saved bytes are its blocks' sum and what its forward pass keeps", "[sim][memory][lowering]") {
  // Llama-3-8B (GQA, rotary), Qwen3-30B-A3B (q and k norms, routed experts without shared ones), DeepSeek-V3 cut to
  // four layers (MLA; layers 0-2 dense, layer 3 routed and shared experts) and GPT-OSS-20B (clamped GLU experts),
  // each under every recompute policy and under recompute modules that drop each block's part. Flash attention,
  // bf16, four GPUs: TP 2 with sequence parallelism, and EP 2 on MoE models.
  struct Case {
    const char* model;
    int layer;
    const char* modules;
  };
  const Case cases[] = {
      {R"("llama3-8b", "num_hidden_layers": 2)", 1, R"(["core_attn", "layernorm", "mlp"])"},
      {R"("qwen3-30b-a3b", "num_hidden_layers": 2)", 1, R"(["core_attn", "layernorm", "moe_act"])"},
      {R"("qwen3-30b-a3b", "num_hidden_layers": 2)", 1, R"(["moe", "layernorm"])"},
      {R"("deepseek-v3", "num_hidden_layers": 4)", 0, R"(["core_attn", "mlp", "mla_up_proj"])"},
      {R"("deepseek-v3", "num_hidden_layers": 4)", 3, R"(["core_attn", "moe_act", "shared_experts", "mla_up_proj"])"},
      {R"("deepseek-v3", "num_hidden_layers": 4)", 3, R"(["moe", "mla_up_proj"])"},
      {R"("gpt-oss-20b", "num_hidden_layers": 2)", 1, R"(["core_attn", "moe_act"])"},
  };
  for (const Case& c : cases) {
    for (const char* recompute : {"none", "selective", "full"}) {
      INFO(c.model << ", layer " << c.layer << ", recompute " << recompute << " " << c.modules);
      const bool moe = std::string(c.model).find("llama") == std::string::npos;
      std::string training = std::string(R"("seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 2,
          "recompute": ")") + recompute + "\"";
      if (std::string(recompute) == "selective") training += std::string(R"(, "recompute_modules": )") + c.modules;
      const std::string text = std::string(R"({"model": {"preset": )") + c.model + R"(},
          "cluster": {"preset": "dgx-h100", "num_gpus": 4}, "parallel": {"tp": 2, "sequence_parallel": true)" +
                               (moe ? R"(, "ep": 2)" : "") + "}, \"training\": {" + training + "}}";
      LayerSite site(test::scenario(text), c.layer);
      TransformerLayerLowering layer(site.emit, c.layer);
      const SavePolicy save = layer.save();
      const ModelSpec& m = site.ctx.model;
      const Bytes attention = m.is_mla() ? MlaBlock(site.ops).saved_bytes(save)
                                         : AttentionBlock(site.ops).saved_bytes(save);
      const Bytes mlp = m.layer_is_moe(c.layer) ? MoeBlock(site.ops).saved_bytes(save)
                                                : MlpBlock(site.ops, MlpKind::kDense).saved_bytes(save);
      // The layer's own: its input; with the modules the pre-MLP norm's input and the residuals' dropout masks
      // (none: these models train without dropout).
      const Bytes own = site.ops.norm_saved() + (save.modules ? site.ops.norm_saved() : 0);
      CHECK(layer.saved_bytes(save) == attention + mlp + own);
      layer.forward({}, save);
      CHECK(kept_bytes(site.builder) == Approx(static_cast<double>(layer.saved_bytes(save))));
    }
  }
}
