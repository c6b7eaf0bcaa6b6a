// FLOP counts over what attention really computes (sliding windows, packed documents), and the physical bound that
// no GPU executes more FLOPs than its peak allows in the time it is given.
#include <catch2/catch.hpp>

#include <filesystem>
#include <variant>

#include "models/model_flops.h"
#include "models/ops.h"
#include "sim/lower/context.h"
#include "sim/packing.h"
#include "test_support.h"

using namespace orrery;

namespace {

// A Mistral-7B shape (its config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocabulary 32000,
// sliding_window 4096) at sequence `seq` on one H100.
Scenario mistral_7b(std::int64_t seq, const std::string& extra_training = "") {
  return test::scenario(R"({"model": {"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096,
      "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
      "max_position_embeddings": 32768, "sliding_window": 4096},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"tp": 8, "sequence_parallel": true},
      "training": {"seq_length": )" + std::to_string(seq) + R"(, "micro_batch_size": 1, "global_batch_size": 4,
      "recompute": "selective")" + extra_training + "}}");
}

// Forward + backward GEMM FLOPs per token of the Mistral-7B shape (6 x weights each token multiplies, LM head
// included), by hand; the LM head has Megatron's padded vocabulary, 32000 -> 32768 (a multiple of 128 x tp 8).
double mistral_gemm_flops_per_token() {
  const double h = 4096, layers = 32, V = 32768;
  const double per_layer = h * (32 + 2 * 8) * 128 + 32 * 128 * h + 3 * h * 14336;
  return 6.0 * (layers * per_layer + h * V);
}

// Seconds a program's tasks need at least: each GEMM's and attention core's executed FLOPs at the dense peak of
// its dtype.
double least_compute_seconds(const Program& p, const GpuSpec& gpu) {
  std::vector<double> per_op;
  for (const Op& op : p.ops) {
    double s = 0.0;
    if (const auto* g = std::get_if<GemmShape>(&op)) s = g->flops() / gpu.peak_for(g->dtype);
    if (const auto* a = std::get_if<AttentionShape>(&op)) s = a->executed_flops() / gpu.peak_for(a->dtype);
    per_op.push_back(s);
  }
  double total = 0.0;
  for (const Task& t : p.tasks) total += per_op[static_cast<std::size_t>(t.op)];
  return total;
}

}  // namespace

TEST_CASE("a sliding window shortens each query's span in model FLOPs: 12 l s w a d per token, not 12 l s s a d",
          "[sim][flops]") {
  // Mistral-7B at 32K with its 4096-token window: the full-matrix count takes w keys per query, so attention adds
  // 3 (forward + backward) x 2 (QK^T and PV) x 2 (multiply-add) x w x heads x head_dim per layer and token.
  const Scenario s = mistral_7b(32768);
  const Report r = predict(s).report;
  const double tokens = 4.0 * 32768;
  const double attention = 12.0 * 32 * 4096 * 32 * 128;
  CHECK(r.model_flops == Approx(tokens * (mistral_gemm_flops_per_token() + attention)).epsilon(1e-9));
  // Causal-halved: the first w queries see 1..w keys, the rest w.
  const double s_len = 32768, w = 4096;
  const double kept = (w * (w + 1) / 2 + (s_len - w) * w) / s_len;
  CHECK(attended_keys_per_query(32768, 4096, AttentionFlops::kCausalHalved) == Approx(kept));
  // The old count (the whole 32K square) put MFU at 86% and HFU at 114% for this plan.
  CHECK(r.mfu < 1.0);
  CHECK(r.hfu < 1.0);
  CHECK(r.hfu >= r.mfu);  // selective recompute only adds work
}

TEST_CASE("packed documents count attention within each document: 128-token pieces in 4096-token sequences",
          "[sim][flops]") {
  // Each 4096-token sequence holds 32 documents of 128 tokens: the causal pairs are 32 x 128 x 129 / 2 against
  // 4096 x 4097 / 2 for one document, a ratio of 129 / 4097, which scales the attention term of both counts.
  // (128-token documents never reach the 4096-token window.)
  const Scenario s = mistral_7b(4096, R"(, "packed_documents": {"lengths": [128]})");
  const Report r = predict(s).report;
  const double ratio = 129.0 / 4097.0;
  REQUIRE(r.packing);
  CHECK(r.packing->packed_over_full == Approx(ratio));
  const double attention_per_token = 12.0 * 32 * 4096 * ratio * 32 * 128;
  CHECK(r.model_flops == Approx(4.0 * 4096 * (mistral_gemm_flops_per_token() + attention_per_token)).epsilon(1e-9));
  CHECK(r.hfu < 1.0);  // it was 133% with the whole square counted
}

TEST_CASE("every example and record executes no more FLOPs than the peak allows, and MFU and HFU stay below 1",
          "[sim][flops][slow]") {
  // On each rank the GEMMs and attention cores cannot take less than their executed FLOPs at the dense peak of
  // their dtype (the FP8 peak for FP8 GEMMs), whatever the overlap; the report's FLOP rates follow.
  int checked = 0;
  for (const char* folder : {"examples", "validation"}) {
    for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() / "scenarios" / folder)) {
      if (entry.path().extension() != ".json") continue;
      const Prediction p = predict(load_scenario(entry.path()));
      INFO(entry.path().filename().string());
      for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
        const Program& program = p.graph.programs[static_cast<std::size_t>(p.instances.instances[i].program)];
        CHECK(least_compute_seconds(program, p.scenario.cluster.gpu) <= from_nanos(p.run.instances[i].end));
      }
      CHECK(p.report.mfu < 1.0);
      CHECK(p.report.hfu < 1.0);
      CHECK(p.report.mfu_causal <= p.report.mfu);
      ++checked;
    }
  }
  CHECK(checked > 70);
}

TEST_CASE("context parallelism by all-gather prices a sliding window as the window, not the whole sequence",
          "[sim][flops][cp]") {
  // Each local query of a 32K sequence split over CP 2 sees its 4096-token window of the gathered keys: the
  // attention kernel keeps q x w pairs of its q x 32K matrix (it kept half of it, as for full causal attention).
  const auto attention_pairs = [](const char* window) {
    const Scenario s = test::scenario(std::string(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2)") +
        window + R"(}, "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"tp": 4, "cp": 2,
        "sequence_parallel": true, "cp_comm_type": "allgather"}, "training": {"seq_length": 32768,
        "global_batch_size": 1}})");
    const WorkloadGraph g = test::lowered(s);
    double pairs = 0;
    for (const Op& op : g.programs[0].ops) {
      if (const auto* a = std::get_if<AttentionShape>(&op); a && !a->backward) {
        pairs = a->kept_fraction() * static_cast<double>(a->q_len * a->kv_len);
      }
    }
    return pairs;
  };
  CHECK(attention_pairs("") == Approx(16384.0 * 32768 / 2));
  CHECK(attention_pairs(R"(, "sliding_window": 4096)") == Approx(16384.0 * 4096));
}
