// Context parallelism against hand counts: the ring's key/value traffic (Liu et al., ring attention,
// arXiv:2310.01889: each of cp - 1 steps passes one rank's K and V on), Ulysses' all-to-all volume (Jacobs et al.,
// arXiv:2309.14509), and the attention work each rank does (1 / cp of the causal total).
#include <catch2/catch.hpp>

#include <set>

#include "sim/lower/context.h"
#include "test_support.h"

using namespace orrery;

namespace {

// Llama-3-8B shapes (32 heads, 8 KV heads, head dim 128), one layer, one micro-batch of one sequence of 8192.
Scenario cp_scenario(int cp, const char* comm, int tp = 1) {
  return test::scenario(std::string(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": )") + std::to_string(cp * tp) +
                        R"(}, "parallel": {"tp": )" + std::to_string(tp) + R"(, "cp": )" + std::to_string(cp) +
                        R"(, "cp_comm_type": ")" + comm + R"("},
      "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 1}})");
}

struct CpTraffic {
  double forward = 0, backward = 0;  // bytes of CP-group transfers per rank (send/recv sizes, collective sizes)
};

CpTraffic cp_traffic(const WorkloadGraph& g, CollectiveKind kind) {
  CpTraffic out;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    if (t.group != GroupKind::kCp) continue;
    const auto& c = std::get<CollectiveOp>(p.ops[static_cast<std::size_t>(t.op)]);
    if (c.kind != kind) continue;
    (t.phase == Phase::kForward ? out.forward : out.backward) += static_cast<double>(c.bytes);
  }
  return out;
}

struct AttentionWork {
  double model = 0, executed = 0;  // forward FLOPs of the rank's attention kernels
};

AttentionWork forward_attention(const WorkloadGraph& g) {
  AttentionWork w;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    const auto* a = std::get_if<AttentionShape>(&p.ops[static_cast<std::size_t>(t.op)]);
    if (!a || a->backward) continue;
    w.model += a->model_flops();
    w.executed += a->executed_flops();
  }
  return w;
}

}  // namespace

TEST_CASE("ring attention passes each rank's K and V around the ring", "[sim][cp]") {
  for (int cp : {2, 4, 8}) {
    INFO("cp " << cp);
    const WorkloadGraph g = test::lowered(cp_scenario(cp, "p2p"));
    // K and V of s / cp tokens, 8 KV heads of 128, bf16.
    const double kv = 2.0 * (8192.0 / cp) * 8 * 128 * 2;
    const CpTraffic t = cp_traffic(g, CollectiveKind::kSendRecv);
    CHECK(t.forward == Approx((cp - 1) * kv));
    // Backward: the block travels again with its dK/dV (cp - 1 times), and the last dK/dV goes home.
    CHECK(t.backward == Approx((cp - 1) * 2 * kv + kv));
  }
}

TEST_CASE("each CP rank does 1/cp of the causal attention work", "[sim][cp]") {
  const double s = 8192, heads = 32, d = 128;
  const double full_matrix = 2.0 * heads * s * s * (d + d);  // forward model FLOPs, score matrix in full
  for (const char* comm : {"p2p", "allgather", "a2a"}) {
    for (int cp : {2, 4}) {
      INFO(comm << " cp " << cp);
      const AttentionWork w = forward_attention(test::lowered(cp_scenario(cp, comm)));
      CHECK(w.model == Approx(full_matrix / cp));
      // Causal: (s + 1) / 2s of the matrix without CP; the load-balanced split gives every rank half of its share.
      CHECK(w.executed == Approx(0.5 * full_matrix / cp).epsilon(2.0 / (s / cp)));
    }
  }
}

TEST_CASE("Ulysses all-to-all moves Q, K, V in and O out, and their gradients back", "[sim][cp]") {
  const int cp = 4;
  const WorkloadGraph g = test::lowered(cp_scenario(cp, "a2a"));
  const double tokens = 8192.0 / cp;
  const double qkv = tokens * (32 + 2 * 8) * 128 * 2, o = tokens * 32 * 128 * 2;
  const CpTraffic t = cp_traffic(g, CollectiveKind::kAllToAll);
  CHECK(t.forward == Approx(qkv + o));
  CHECK(t.backward == Approx(o + qkv));
}

TEST_CASE("context-parallel plans Megatron and Transformer Engine refuse", "[sim][cp][errors]") {
  auto with = [](const std::string& parallel, const std::string& training, int gpus = 8) {
    return test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": )" +
                                std::to_string(gpus) + R"(}, "parallel": )" + parallel + R"(, "training": )" + training +
                                "}");
  };
  CHECK_THAT(with(R"({"cp": 8})", R"({"seq_length": 8200, "global_batch_size": 1})"),
             Catch::Contains("training.seq_length (8200) must be divisible by 2 x cp (16)"));
  CHECK_THAT(with(R"({"cp": 8})", R"({"seq_length": 8192, "global_batch_size": 1, "attention_backend": "unfused"})"),
             Catch::Contains("must be flash with cp (8)"));
  // 8 KV heads over TP 2 leave 4 per rank, too few to scatter over CP 8.
  CHECK_THAT(with(R"({"cp": 8, "tp": 2, "cp_comm_type": "a2a"})", R"({"seq_length": 8192, "global_batch_size": 1})", 16),
             Catch::Contains("model.num_key_value_heads (8) / tp (2) must be divisible by cp (8)"));
  CHECK_THAT(with(R"({"cp": 8, "cp_comm_type": "ring"})", R"({"seq_length": 8192, "global_batch_size": 1})"),
             Catch::Contains("parallel.cp_comm_type (\"ring\") must be one of: p2p, a2a, allgather, a2a+p2p"));
  CHECK_THAT(with(R"({"cp": 8, "cp_comm_type": "a2a+p2p"})", R"({"seq_length": 8192, "global_batch_size": 1})"),
             Catch::Contains("parallel.hierarchical_context_parallel_sizes"));
  CHECK_THAT(with(R"({"cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": [2, 2]})",
                  R"({"seq_length": 8192, "global_batch_size": 1})"),
             Catch::Contains("must multiply to cp (8)"));
  CHECK_THAT(with(R"({"cp": 8, "cp_comm_type": "p2p", "hierarchical_context_parallel_sizes": [2, 4]})",
                  R"({"seq_length": 8192, "global_batch_size": 1})"),
             Catch::Contains("a2a+p2p"));
  // 8 KV heads cannot be scattered over an all-to-all group of 16.
  CHECK_THAT(with(R"({"cp": 32, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": [16, 2]})",
                  R"({"seq_length": 8192, "global_batch_size": 1})", 32),
             Catch::Contains("must be divisible by the all-to-all group size (16)"));
}

TEST_CASE("hierarchical CP: all-to-all inside the group, the ring across groups", "[sim][cp]") {
  // cp 8 as [a2a 2, p2p 4]: the all-to-all moves the rank's Q, K, V in and O out over 2 consecutive CP ranks; the
  // ring then passes blocks of 2 x s / cp tokens with 8 / 2 KV heads (the same bytes as the rank's own K and V)
  // p2p - 1 times forward, and again with dK/dV backward.
  const int cp = 8, a2a = 2, ring = 4;
  const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"cp": 8, "cp_comm_type": "a2a+p2p",
      "hierarchical_context_parallel_sizes": [2, 4]}, "training": {"seq_length": 8192, "micro_batch_size": 1,
      "global_batch_size": 1}})");
  const WorkloadGraph g = test::lowered(s);
  const double tokens = 8192.0 / cp;
  const double qkv = tokens * (32 + 2 * 8) * 128 * 2, o = tokens * 32 * 128 * 2, kv = tokens * 2 * 8 * 128 * 2;
  double a2a_fwd = 0, ring_fwd = 0, ring_bwd = 0;
  std::set<int> a2a_sizes, ring_sizes;
  const Job job = resolve(s);
  const LoweringContext ctx(job);
  for (const Task& t : g.programs[0].tasks) {
    const auto* c = std::get_if<CollectiveOp>(&g.programs[0].ops[static_cast<std::size_t>(t.op)]);
    if (!c) continue;
    const bool fwd = t.phase == Phase::kForward;
    if (t.group == GroupKind::kCpA2a && fwd) a2a_fwd += static_cast<double>(c->bytes);
    if (t.group == GroupKind::kCpP2p) (fwd ? ring_fwd : ring_bwd) += static_cast<double>(c->bytes);
    if (t.group == GroupKind::kCpA2a) a2a_sizes.insert(c->placement.size);
    if (t.group == GroupKind::kCpP2p) ring_sizes.insert(c->placement.size);
    CHECK(t.group != GroupKind::kCp);
  }
  CHECK(a2a_fwd == Approx(qkv + o));
  CHECK(ring_fwd == Approx((ring - 1) * kv));
  CHECK(ring_bwd == Approx((ring - 1) * 2 * kv + kv));
  CHECK(a2a_sizes == std::set<int>{a2a});
  CHECK(ring_sizes == std::set<int>{ring});
  // Rank 0's groups: CP ranks {0, 1} all-to-all, {0, 2, 4, 6} in the ring.
  CHECK(ctx.ranks.group_members(GroupKind::kCpA2a, 0) == std::vector<int>{0, 1});
  CHECK(ctx.ranks.group_members(GroupKind::kCpP2p, 0) == std::vector<int>{0, 2, 4, 6});
  // Attention work is still 1/cp of the causal total per rank.
  const double full_matrix = 2.0 * 32 * 8192.0 * 8192.0 * 256;
  CHECK(forward_attention(g).model == Approx(full_matrix / cp));
}

TEST_CASE("context parallelism splits activation memory and lets the ring hide behind attention", "[sim][cp]") {
  const Prediction one = predict(cp_scenario(1, "p2p"));
  const Prediction two = predict(cp_scenario(2, "p2p"));
  // Per-rank activations follow the tokens a rank holds: half of them at cp 2.
  CHECK(two.report.per_stage[0].activations == Approx(one.report.per_stage[0].activations / 2).epsilon(0.02));
  // Inside one node the K/V block of a step (4 MB) moves in microseconds while the block's attention takes
  // milliseconds: almost nothing of the ring is exposed.
  CHECK(two.report.breakdown.exposed_cp_comm < 0.02 * two.report.iteration_time);
}
