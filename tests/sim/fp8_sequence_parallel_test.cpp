// FP8 with sequence parallelism: a per-tensor-scaled output gradient is quantized on each TP rank and gathered in
// FP8, and current scaling all-reduces the amax of every gathered shard over the TP group, as Transformer Engine
// runs them (gather_along_first_dim with a quantizer; with_amax_reduction on the column-parallel input and
// row-parallel output-gradient quantizers under sequence parallelism).
#include <catch2/catch.hpp>

#include "test_support.h"

using namespace orrery;

namespace {

struct Setup {
  bool sequence_parallel = true;
  int tp = 2;
  bool tp_comm_overlap = false;
  const char* cluster = "dgx-h100";
  const char* recompute = "none";
};

Scenario llama_sp(const char* recipe, Setup o = {}) {
  return test::scenario(std::string(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
      "cluster": {"preset": ")") + o.cluster + R"(", "num_gpus": )" + std::to_string(o.tp) + R"(},
      "parallel": {"tp": )" + std::to_string(o.tp) + R"(, "sequence_parallel": )" +
                        (o.sequence_parallel ? "true" : "false") + R"(, "tp_comm_overlap": )" +
                        (o.tp_comm_overlap ? "true" : "false") + R"(},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 2, "precision": "fp8",
                   "fp8_recipe": ")" + recipe + R"(", "recompute": ")" + o.recompute + R"("}})");
}

// Tasks `id` waits for directly (data or stream order).
std::vector<std::size_t> predecessors(const Program& p, std::size_t id) {
  std::vector<std::size_t> out;
  for (std::size_t u = 0; u < id; ++u) {
    auto [begin, end] = boost::out_edges(static_cast<std::uint32_t>(u), p.successors);
    for (auto e = begin; e != end; ++e) {
      if (boost::target(*e, p.successors) == id) out.push_back(u);
    }
  }
  return out;
}

bool waits_for(const Program& p, std::size_t id, const char* label) {
  for (std::size_t u : predecessors(p, id)) {
    if (std::string(p.tasks[u].label) == label) return true;
  }
  return false;
}

int count(const WorkloadGraph& g, const char* label, Phase phase) {
  int n = 0;
  for (const Task& t : g.programs[0].tasks) n += std::string(t.label) == label && t.phase == phase;
  return n;
}

struct RowBackward {
  double gather_bytes = 0;                   // the output gradients' all-gathers of the two row-parallel linears
  double cast_read = 0, cast_written = 0;    // their FP8 casts
  double transpose_read = 0, transpose_written = 0;
  int tp_amax_forward = 0, tp_amax_backward = 0;
  bool every_tp_amax_is_one_fp32_on_tp = true;
};

// Layer 0, micro-batch 0 of stage 0.
RowBackward row_backward(const WorkloadGraph& g) {
  RowBackward r;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    if (t.layer != 0 || t.microbatch != 0) continue;
    const std::string label = t.label;
    const Op& op = p.ops[static_cast<std::size_t>(t.op)];
    const bool backward = t.phase == Phase::kBackwardInput || t.phase == Phase::kBackwardWeight;
    if (label == "fp8_amax_tp") {
      ++(backward ? r.tp_amax_backward : r.tp_amax_forward);
      const auto* c = std::get_if<CollectiveOp>(&op);
      r.every_tp_amax_is_one_fp32_on_tp &= c && c->bytes == 4 && c->kind == CollectiveKind::kAllReduce &&
                                           t.stream == Stream::kTp;
    }
    if (!backward) continue;
    if (const auto* c = std::get_if<CollectiveOp>(&op)) {
      if ((label == "attention_proj" || label == "mlp_down") && c->kind == CollectiveKind::kAllGather) {
        r.gather_bytes += static_cast<double>(c->bytes);
      }
    }
    if (const auto* e = std::get_if<ElementwiseShape>(&op)) {
      const double read = static_cast<double>(e->bytes_read), written = static_cast<double>(e->bytes_written);
      // The row-parallel gradients are h wide; the column-parallel ones (QKV, up/gate) are cast on their own
      // width, so the h-wide casts of a 4096-token micro-batch are told apart by size.
      const double local_h = 4096.0 / 2 * 4096, full_h = 4096.0 * 4096;
      if (label == "fp8_cast" && (read == 2 * local_h || read == 2 * full_h)) r.cast_read += read, r.cast_written += written;
      if (label == "fp8_transpose") r.transpose_read += read, r.transpose_written += written;
    }
  }
  return r;
}

}  // namespace

TEST_CASE("FP8 per-tensor scaling gathers a sequence-parallel output gradient in FP8", "[sim][fp8]") {
  // Two row-parallel linears (attention projection, MLP down) per layer, each with an h-wide output gradient of
  // T = 4096 tokens, h = 4096, split over TP 2.
  const double T = 4096, h = 4096, tp = 2;
  // Delayed scaling: the shard is cast to its row-wise FP8 copy (read 2, write 1 per element), gathered in FP8
  // (1 byte per element), then transposed for the weight gradient (read 1, write 1 per element).
  const RowBackward delayed = row_backward(test::lowered(llama_sp("delayed")));
  CHECK(delayed.gather_bytes == Approx(2 * T * h));
  CHECK(delayed.cast_read == Approx(2 * 2 * T / tp * h));
  CHECK(delayed.cast_written == Approx(2 * T / tp * h));
  CHECK(delayed.transpose_read == Approx(2 * T * h));
  CHECK(delayed.transpose_written == Approx(2 * T * h));
  CHECK(delayed.tp_amax_forward + delayed.tp_amax_backward == 0);  // the scale comes from the amax history

  // Blockwise: column-wise block scales cannot be made from the row-wise copy, so the BF16 gradient is gathered
  // (2 bytes per element) and quantized whole into both copies.
  const RowBackward block = row_backward(test::lowered(llama_sp("blockwise")));
  CHECK(block.gather_bytes == Approx(2 * 2 * T * h));
  CHECK(block.cast_read == Approx(2 * 2 * T * h));
  CHECK(block.transpose_read == 0);
}

TEST_CASE("FP8 current scaling all-reduces the amax of every sequence-parallel shard over the TP group",
          "[sim][fp8]") {
  // Forward: the inputs of the two column-parallel linears (QKV, up/gate), which the norms write and which are
  // gathered; backward: the output gradients of the two row-parallel linears. One FP32 each, on the TP stream.
  const RowBackward current = row_backward(test::lowered(llama_sp("tensorwise")));
  CHECK(current.tp_amax_forward == 2);
  CHECK(current.tp_amax_backward == 2);
  CHECK(current.every_tp_amax_is_one_fp32_on_tp);
  // The cast waits for the reduced amax: every fp8_norm_cast of the run follows an fp8_amax_tp.
  const WorkloadGraph g = test::lowered(llama_sp("tensorwise"));
  const Program& p = g.programs[0];
  int norm_casts = 0, after_reduction = 0;
  for (const Task& t : p.tasks) norm_casts += std::string(t.label) == "fp8_norm_cast";
  for (std::size_t u = 0; u < p.tasks.size(); ++u) {
    if (std::string(p.tasks[u].label) != "fp8_amax_tp") continue;
    auto [begin, end] = boost::out_edges(static_cast<std::uint32_t>(u), p.successors);
    for (auto e = begin; e != end; ++e) {
      after_reduction += std::string(p.tasks[boost::target(*e, p.successors)].label) == "fp8_norm_cast";
    }
  }
  CHECK(norm_casts > 0);
  CHECK(after_reduction == norm_casts);

  // Without sequence parallelism every TP rank holds the whole tensor, so its own amax is the group's.
  const RowBackward no_sp = row_backward(test::lowered(llama_sp("tensorwise", {.sequence_parallel = false})));
  CHECK(no_sp.tp_amax_forward + no_sp.tp_amax_backward == 0);
}

TEST_CASE("FP8 current scaling reduces the amax over TP only where a shard is gathered", "[sim][fp8]") {
  // Per-tensor delayed scaling, the block recipes and TP 1 have no TP reduction; full recompute reruns the
  // forward's two per layer (2 layers x 2 micro-batches).
  CHECK(count(test::lowered(llama_sp("delayed")), "fp8_amax_tp", Phase::kForward) == 0);
  CHECK(count(test::lowered(llama_sp("blockwise")), "fp8_amax_tp", Phase::kForward) == 0);
  CHECK(count(test::lowered(llama_sp("mxfp8", {.cluster = "dgx-b200"})), "fp8_amax_tp", Phase::kForward) == 0);
  CHECK(count(test::lowered(llama_sp("tensorwise", {.tp = 1})), "fp8_amax_tp", Phase::kForward) == 0);
  const WorkloadGraph full = test::lowered(llama_sp("tensorwise", {.recompute = "full"}));
  CHECK(count(full, "fp8_amax_tp", Phase::kForward) == 2 * 2 * 2);
  CHECK(count(full, "fp8_amax_tp", Phase::kRecompute) == 2 * 2 * 2);
}

TEST_CASE("FP8 gathered output gradients keep their order: cast, gather, input-gradient GEMMs, transpose, weight "
          "gradient",
          "[sim][fp8]") {
  const Prediction pred = predict(llama_sp("tensorwise", {.tp = 8, .tp_comm_overlap = true}));
  const Program& p = pred.graph.programs[0];
  const auto& timings = pred.run.instances[0].timings;
  const std::int64_t T = 4096, tp = 8;
  Nanoseconds gather_end = -1, first_chunk_start = -1;
  int gathers = 0, gathers_after_cast = 0, weight_gemms = 0, weight_gemms_after_transpose = 0;
  int shard_casts_after_reduction = 0;
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    if (t.layer != 0 || t.microbatch != 0) continue;
    const std::string label = t.label;
    // Of layer 0's backward casts only the two row-parallel output gradients' shards (attention projection, MLP
    // down) are gathered, so only they wait for a TP amax reduction; the column-parallel ones stay rank-local.
    if (label == "fp8_cast" && t.phase == Phase::kBackwardInput) shard_casts_after_reduction += waits_for(p, i, "fp8_amax_tp");
    if (label != "mlp_down") continue;
    const Op& op = p.ops[static_cast<std::size_t>(t.op)];
    if (const auto* c = std::get_if<CollectiveOp>(&op); c && t.phase == Phase::kBackwardInput &&
                                                        c->kind == CollectiveKind::kAllGather) {
      ++gathers;
      gathers_after_cast += waits_for(p, i, "fp8_cast");
      gather_end = timings[i].end;
    }
    if (const auto* g = std::get_if<GemmShape>(&op)) {
      if (t.phase == Phase::kBackwardInput && g->m == T - T / tp) first_chunk_start = timings[i].start;
      if (t.phase == Phase::kBackwardWeight) {
        ++weight_gemms;
        weight_gemms_after_transpose += waits_for(p, i, "fp8_transpose");
      }
    }
  }
  CHECK(gathers == 1);
  CHECK(gathers_after_cast == 1);
  CHECK(weight_gemms == 1);
  CHECK(weight_gemms_after_transpose == 1);
  CHECK(shard_casts_after_reduction == 2);
  // With userbuffers overlap the GEMM on the chunks already held runs while the rest is gathered.
  REQUIRE(gather_end >= 0);
  REQUIRE(first_chunk_start >= 0);
  CHECK(first_chunk_start < gather_end);
}
