// Frameworks other than Megatron-Core: FSDP2 as torchtitan runs it (sim/lower/fsdp2.h) and Megatron-DeepSpeed
// (sim/lower/megatron_deepspeed.h). Every expected number is worked out here from the model's config.json
// (Llama-3-8B: hidden 4096, 32 heads, 8 KV heads, head_dim 128, intermediate 14336, vocabulary 128256, untied).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/param_count.h"
#include "sim/lower/fsdp2.h"
#include "sim/lower/megatron_deepspeed.h"
#include "test_support.h"

using namespace orrery;

namespace {

// Llama-3-8B's config.json.
constexpr std::int64_t kH = 4096, kHeads = 32, kKv = 8, kD = 128, kF = 14336, kV = 128256;
// One decoder layer: two RMSNorm weights, q/k/v/o projections, gate, up and down.
constexpr std::int64_t kLayer = 2 * kH + kH * kD * (2 * kHeads + 2 * kKv) + 3 * kF * kH;  // 218,112,000
constexpr std::int64_t kEmbedding = kV * kH;                                                // 525,336,576
constexpr std::int64_t kHead = kH + kV * kH;                                                // final norm + lm_head

struct Comm {
  CollectiveKind kind;
  Bytes bytes;
  int microbatch;
};

// The data-parallel collectives of stage 0 in issue order.
std::vector<Comm> dp_collectives(const WorkloadGraph& g) {
  std::vector<Comm> out;
  const Program& prog = g.programs[0];
  for (const Task& t : prog.tasks) {
    const auto* c = std::get_if<CollectiveOp>(&prog.ops[static_cast<std::size_t>(t.op)]);
    if (c && t.group == GroupKind::kDp && std::string(t.label) != "grad_norm") out.push_back({c->kind, c->bytes, t.microbatch});
  }
  return out;
}

std::string fsdp2(int gpus, int layers, int microbatches, const std::string& extra_parallel = "", int zero = 3) {
  return R"({"model": {"preset": "llama3-8b", "num_hidden_layers": )" + std::to_string(layers) +
         R"(}, "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) +
         R"(}, "parallel": {"zero_stage": )" + std::to_string(zero) + extra_parallel + R"(}, "training": {"seq_length": 1024, "global_batch_size": )" +
         std::to_string(gpus * microbatches) + R"(, "framework": "fsdp2"}})";
}

}  // namespace

TEST_CASE("an FSDP step's gather and reduce-scatter bytes per unit by hand", "[sim][frameworks][fsdp2]") {
  // torchtitan's units (distributed/fsdp.py @ b5bcd76): tok_embeddings, each block, and [norm, lm_head], which is
  // not resharded after forward. Per micro-batch the forward gathers every unit in order; the backward gathers
  // the blocks and the embedding again in reverse (the head is still unsharded) and reduce-scatters every unit.
  // Gathers move bf16 (param_dtype), reduce-scatters fp32 (reduce_dtype): 2 and 4 bytes per unit parameter.
  const int n = 8, mb = 2;
  const Scenario s = test::scenario(fsdp2(n, 2, mb));
  const std::vector<Comm> comms = dp_collectives(test::lowered(s));
  const std::vector<std::int64_t> gathers = {kEmbedding, kLayer, kLayer, kHead, kLayer, kLayer, kEmbedding};
  const std::vector<std::int64_t> scatters = {kHead, kLayer, kLayer, kEmbedding};
  std::vector<Bytes> want_gather, want_scatter, got_gather, got_scatter;
  for (int m = 0; m < mb; ++m) {
    for (std::int64_t e : gathers) want_gather.push_back(e * 2);
    for (std::int64_t e : scatters) want_scatter.push_back(e * 4);
  }
  for (const Comm& c : comms) {
    if (c.kind == CollectiveKind::kAllGather) got_gather.push_back(c.bytes);
    if (c.kind == CollectiveKind::kReduceScatter) got_scatter.push_back(c.bytes);
  }
  CHECK(got_gather == want_gather);
  CHECK(got_scatter == want_scatter);
  // The hand formula agrees with the helper the lowering uses.
  const Fsdp2UnitTraffic t = fsdp2_unit_traffic(kLayer, n);
  CHECK(t.all_gather == kLayer * 2);
  CHECK(t.reduce_scatter == kLayer * 4);
  // Copy-in casts the fp32 shard to bf16 and copies it into the output's slot: reads 4 + 2, writes 2 + 2 bytes per
  // shard element; copy-out and chunk_cat touch the whole unit.
  CHECK(t.copy_in_read == kLayer / n * 6);
  CHECK(t.copy_in_written == kLayer / n * 4);
  CHECK(t.copy_out_read == kLayer * 2);
  CHECK(t.rs_copy_in_read == kLayer * 2);
  CHECK(t.rs_copy_in_written == kLayer * 4);
}

TEST_CASE("FSDP2's copy-in, copy-out and reduce-scatter copy-in are memory-bound kernels, one per collective",
          "[sim][frameworks][fsdp2]") {
  const Scenario s = test::scenario(fsdp2(8, 2, 1));
  const WorkloadGraph g = test::lowered(s);
  int copy_in = 0, copy_out = 0, rs_copy_in = 0, gathers = 0, scatters = 0;
  for (const Task& t : g.programs[0].tasks) {
    const std::string label = t.label;
    if (t.kind == TaskKind::kCommCopy && label == "fsdp_all_gather_copy_in") {
      ++copy_in;
      CHECK(t.stream == Stream::kDp);  // the copy-in stream, not the compute stream
    }
    if (t.kind == TaskKind::kCommCopy && label == "fsdp_all_gather_copy_out") ++copy_out;
    if (t.kind == TaskKind::kCommCopy && label == "fsdp_reduce_scatter_copy_in") ++rs_copy_in;
    if (label == "param_gather") ++gathers;
    if (label == "grad_reduce") ++scatters;
  }
  CHECK(gathers == 7);
  CHECK(copy_in == gathers);
  CHECK(copy_out == gathers);
  CHECK(rs_copy_in == scatters);
  CHECK(scatters == 4);
}

TEST_CASE("FSDP2 keeps 16 bytes per parameter sharded: fp32 parameter, fp32 gradient, fp32 Adam moments",
          "[sim][frameworks][fsdp2][memory]") {
  const int n = 8;
  const Scenario s = test::scenario(fsdp2(n, 2, 1));
  const double psi = static_cast<double>(2 * kLayer + kEmbedding + kHead);
  CHECK(static_cast<double>(count_parameters(s.model).total) == psi);
  const WorkloadGraph g = test::lowered(s);
  const auto& m = g.programs[0].static_memory;
  CHECK(static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kWeights)]) == Approx(4 * psi / n));
  CHECK(static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kGradients)]) == Approx(4 * psi / n));
  CHECK(static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kOptimizer)]) == Approx(8 * psi / n));
}

TEST_CASE("FSDP2 runs the eager layer bodies without autocast casts, and the optimizer waits for every reduce-scatter",
          "[sim][frameworks][fsdp2]") {
  const Prediction p = predict(test::scenario(fsdp2(8, 2, 2)));
  const Program& prog = p.graph.programs[0];
  const auto& timings = p.run.instances[0].timings;
  Nanoseconds last_reduce = 0, adam_start = -1;
  int autocast = 0, eager = 0;
  for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
    const std::string label = prog.tasks[i].label;
    if (label.rfind("autocast", 0) == 0) ++autocast;
    if (label == "rmsnorm_pow" || label == "rope_cat") ++eager;
    if (label == "grad_reduce" || label == "fsdp_grad_accumulate") last_reduce = std::max(last_reduce, timings[i].end);
    if (label == "adamw") adam_start = timings[i].start;
  }
  CHECK(autocast == 0);  // MixedPrecisionPolicy gathers bf16 parameters: nothing to cast
  CHECK(eager > 0);      // the unfused eager kernels of sim/lower/pytorch_step
  CHECK(adam_start >= last_reduce);
  CHECK(p.report.iteration_time > 0);
}

TEST_CASE("framework fsdp2 refuses what FSDP2 under torchtitan does not run", "[sim][frameworks][fsdp2][errors]") {
  // Without a stage FSDP2 shards fully (ZeRO 3, torchtitan's fully_shard); a stage it has no mode for is refused.
  CHECK(test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "training": {"seq_length": 1024, "framework": "fsdp2"}})").parallel.zero_stage == 3);
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"zero_stage": 1}, "training": {"seq_length": 1024, "framework": "fsdp2"}})"),
             Catch::Contains("parallel.zero_stage") && Catch::Contains("must be 3"));
  CHECK_THAT(test::scenario_error(fsdp2(8, 2, 1, R"(, "tp_comm_overlap": true)")),
             Catch::Contains("parallel.tp_comm_overlap") && Catch::Contains("fsdp2"));
  CHECK_THAT(test::scenario_error(fsdp2(8, 2, 1, R"(, "overlap_grad_reduce": false)")),
             Catch::Contains("parallel.overlap_grad_reduce"));
  CHECK_THAT(test::scenario_error(fsdp2(8, 2, 1, R"(, "tp": 2)")), Catch::StartsWith("not modelled yet:"));
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "training": {"framework": "fsdp3"}})"),
             Catch::Contains("training.framework") && Catch::Contains("fsdp2") && Catch::Contains("megatron-deepspeed"));
}

namespace {

std::string megatron_deepspeed(int gpus, int pp, int zero, int layers, int microbatches, const std::string& extra = "") {
  const int dp = gpus / pp;
  return R"({"model": {"preset": "llama3-8b", "num_hidden_layers": )" + std::to_string(layers) +
         R"(}, "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) + R"(}, "parallel": {"pp": )" +
         std::to_string(pp) + R"(, "zero_stage": )" + std::to_string(zero) + extra +
         R"(}, "training": {"seq_length": 1024, "global_batch_size": )" + std::to_string(dp * microbatches) +
         R"(, "framework": "megatron-deepspeed"}})";
}

}  // namespace

TEST_CASE("DeepSpeed's bucket rules by hand", "[sim][frameworks][megatron-deepspeed]") {
  // ZeRO 1/2 reduce a bucket before a tensor would overflow it; the engine's ZeRO-0 all-reduce closes a bucket
  // once it exceeds the size (stage_1_and_2.py, engine.py @ edaa722). Sizes in units of 1e8 elements, bucket 5e8.
  const std::vector<std::int64_t> e = {300'000'000, 300'000'000, 100'000'000, 600'000'000, 100'000'000};
  using B = std::vector<std::vector<std::size_t>>;
  CHECK(deepspeed_buckets(e, kDeepSpeedBucketElements, DeepSpeedBucketRule::kFlushBeforeOverflow) == B{{0}, {1, 2}, {3}, {4}});
  CHECK(deepspeed_buckets(e, kDeepSpeedBucketElements, DeepSpeedBucketRule::kCloseAfterExceeding) == B{{0, 1}, {2, 3}, {4}});
}

TEST_CASE("Megatron-DeepSpeed ZeRO-1 reduce-scatters in 5e8-element buckets and gathers the parameters once",
          "[sim][frameworks][megatron-deepspeed]") {
  // Llama-3-8B, 32 layers, 8 GPUs, ZeRO 1 in bf16. reduce_gradients walks the parameters in forward order:
  // word embedding (525.3M, over a bucket by itself), then per layer input_norm, qkv, proj, post_norm, mlp up
  // (gate and up fused, as Megatron holds it), mlp down, then the final norm and the LM head.
  const Scenario s = test::scenario(megatron_deepspeed(8, 1, 1, 32, 2));
  std::vector<std::int64_t> tensors = {kEmbedding};
  for (int l = 0; l < 32; ++l) {
    for (std::int64_t t : {kH, kH * kD * (kHeads + 2 * kKv), kH * kD * kHeads, kH, 2 * kF * kH, kF * kH}) tensors.push_back(t);
  }
  tensors.push_back(kH);
  tensors.push_back(kV * kH);
  // By hand: flush before the tensor that would overflow 5e8.
  std::vector<Bytes> want;
  std::int64_t open = 0;
  for (std::int64_t t : tensors) {
    if (open + t > 500'000'000 && open > 0) {
      want.push_back(open * 2);  // bf16 gradients (DeepSpeed reduces in the parameter dtype)
      open = 0;
    }
    open += t;
  }
  want.push_back(open * 2);
  std::vector<Bytes> got;
  int gathers = 0;
  Bytes gathered = 0;
  for (const Comm& c : dp_collectives(test::lowered(s))) {
    if (c.kind == CollectiveKind::kReduceScatter) got.push_back(c.bytes);
    if (c.kind == CollectiveKind::kAllGather) {
      ++gathers;
      gathered += c.bytes;
    }
  }
  CHECK(got == want);
  CHECK(want.size() == 18);  // the embedding's, 16 of about two layers' tensors each, the LM head's
  // One all_gather_into_tensor of the flat bf16 group after the step.
  CHECK(gathers == 1);
  CHECK(gathered == 2 * static_cast<Bytes>(count_parameters(s.model).total));
}

TEST_CASE("Megatron-DeepSpeed's pipeline engine blocks on its sends: no compute overlaps a transfer",
          "[sim][frameworks][megatron-deepspeed]") {
  // runtime/pipe/p2p.py @ edaa722 asserts async_op False: dist.send and dist.recv block, so the first kernel
  // after a send starts only when the send has ended. Megatron-Core with overlap_p2p_comm does overlap them.
  auto check = [](const std::string& json, bool blocking) {
    const Prediction p = predict(test::scenario(json));
    int sends = 0, overlapped = 0;
    for (std::size_t inst = 0; inst < p.run.instances.size(); ++inst) {
      const Program& prog = p.graph.programs[static_cast<std::size_t>(p.instances.instances[inst].program)];
      const auto& tm = p.run.instances[inst].timings;
      if (tm.empty()) continue;
      for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
        if (prog.tasks[i].kind != TaskKind::kSendRecv || std::string(prog.tasks[i].label) != "activation" ||
            prog.tasks[i].stream != Stream::kPpSendNext) {
          continue;
        }
        ++sends;
        for (std::size_t j = i + 1; j < prog.tasks.size(); ++j) {
          const Task& t = prog.tasks[j];
          if (!is_compute(t) || (t.kind == TaskKind::kElementwise && tm[j].end == tm[j].start)) continue;
          if (tm[j].start < tm[i].end) ++overlapped;
          break;
        }
      }
    }
    CHECK(sends == 4);  // stage 0 sends each of the 4 micro-batches' activations
    if (blocking) CHECK(overlapped == 0);
    if (!blocking) CHECK(overlapped > 0);
  };
  check(megatron_deepspeed(2, 2, 1, 4, 4), true);
  std::string megatron = megatron_deepspeed(2, 2, 1, 4, 4);
  megatron.replace(megatron.find("megatron-deepspeed"), std::string("megatron-deepspeed").size(), "megatron");
  check(megatron, false);
}

TEST_CASE("framework megatron-deepspeed refuses what DeepSpeed's engine cannot run",
          "[sim][frameworks][megatron-deepspeed][errors]") {
  CHECK_THAT(test::scenario_error(megatron_deepspeed(8, 2, 1, 4, 8, R"(, "vpp": 2)")),
             Catch::Contains("parallel.vpp") && Catch::Contains("one model chunk"));
  CHECK_THAT(test::scenario_error(megatron_deepspeed(8, 2, 2, 4, 8)),
             Catch::Contains("parallel.zero_stage") && Catch::Contains("pipeline engine"));
  CHECK_THAT(test::scenario_error(megatron_deepspeed(8, 2, 1, 4, 8, R"(, "overlap_p2p_comm": true)")),
             Catch::Contains("parallel.overlap_p2p_comm"));
  CHECK_THAT(test::scenario_error(megatron_deepspeed(8, 2, 3, 4, 8)),
             Catch::Contains("parallel.zero_stage") && Catch::Contains("pipeline engine"));
  // Left alone, the overlap switches take DeepSpeed's defaults.
  const Scenario s = test::scenario(megatron_deepspeed(8, 2, 1, 4, 8));
  CHECK_FALSE(s.parallel.overlap_grad_reduce);
  CHECK_FALSE(s.parallel.overlap_p2p_comm);
  CHECK_FALSE(s.parallel.tp_comm_overlap);
}

TEST_CASE("Megatron-DeepSpeed's pipeline engine sends 1/tp of each activation and all-gathers it over TP",
          "[sim][frameworks][megatron-deepspeed]") {
  // pipe_partitioned / grad_partitioned (runtime/config.py @ edaa722, true by default): with tp 2 each TP rank
  // sends half of the b s h bf16 activation (no sequence parallelism), and the receiver all-gathers the whole.
  const Scenario s = test::scenario(megatron_deepspeed(4, 2, 1, 4, 4, R"(, "tp": 2)"));
  const WorkloadGraph g = test::lowered(s);
  const Bytes whole = 1 * 1024 * kH * 2;  // micro-batch 1, sequence 1024, hidden 4096, bf16
  int sends = 0, gathers = 0;
  for (const Program& prog : g.programs) {
    for (const Task& t : prog.tasks) {
      if (t.kind == TaskKind::kSendRecv) {
        ++sends;
        CHECK(std::get<CollectiveOp>(prog.ops[static_cast<std::size_t>(t.op)]).bytes == whole / 2);
      }
      if (std::string(t.label) == "pipe_partition_gather") {
        ++gathers;
        CHECK(std::get<CollectiveOp>(prog.ops[static_cast<std::size_t>(t.op)]).bytes == whole);
      }
    }
  }
  // Each micro-batch: stage 0 sends its activation and receives its gradient, stage 1 the reverse.
  const int m = s.num_microbatches();
  CHECK(m == 8);  // global batch 8 over dp 1
  CHECK(sends == 4 * m);
  CHECK(gathers == 2 * m);  // one per receive
}

TEST_CASE("FSDP2 gathers one unit ahead: the next block's all-gather overlaps this block's forward",
          "[sim][frameworks][fsdp2]") {
  // _fsdp_param_group.py @ 62a45b6f: a unit's copy-in waits for the previous unit's copy-out (all_gather_state),
  // and the gather runs on its own streams while the previous unit computes. So in the first forward, layer 1's
  // all-gather starts after layer 0's copy-out has ended and before layer 0's compute has.
  const Prediction p = predict(test::scenario(fsdp2(8, 3, 1)));
  const Program& prog = p.graph.programs[0];
  const auto& tm = p.run.instances[0].timings;
  std::vector<std::size_t> gathers, copy_outs;
  Nanoseconds layer0_end = 0;
  for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
    const Task& t = prog.tasks[i];
    if (t.phase != Phase::kForward) continue;
    const std::string label = t.label;
    if (label == "param_gather") gathers.push_back(i);
    if (label == "fsdp_all_gather_copy_out") copy_outs.push_back(i);
    if (t.layer == 0 && is_compute(t) && t.kind != TaskKind::kCommCopy) layer0_end = std::max(layer0_end, tm[i].end);
  }
  // Forward gathers in issue order: embedding, layers 0, 1, 2, head; copy-outs likewise.
  REQUIRE(gathers.size() == 5);
  REQUIRE(copy_outs.size() == 5);
  const std::size_t layer1_gather = gathers[2], layer0_copy_out = copy_outs[1];
  CHECK(tm[layer1_gather].start >= tm[layer0_copy_out].end);
  CHECK(tm[layer1_gather].start < layer0_end);
}

TEST_CASE("Megatron-DeepSpeed ZeRO-1 holds the ZeRO paper's (2 + 2 + 12 / N) bytes per parameter",
          "[sim][frameworks][megatron-deepspeed][memory]") {
  // ZeRO (arXiv:1910.02054) Figure 1, P_os: 16-bit parameters and gradients on every rank, fp32 master weights and
  // Adam moments (K = 12) sharded over N. DeepSpeed reduces in the 16-bit dtype, unlike Megatron's fp32 buffer.
  const int n = 8;
  const Scenario s = test::scenario(megatron_deepspeed(n, 1, 1, 4, 1));
  const double psi = static_cast<double>(count_parameters(s.model).total);
  const WorkloadGraph g = test::lowered(s);
  const auto& m = g.programs[0].static_memory;
  CHECK(static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kWeights)]) == Approx(2 * psi));
  CHECK(static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kGradients)]) == Approx(2 * psi));
  CHECK(static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kOptimizer)]) == Approx(12 * psi / n).epsilon(1e-6));
}

TEST_CASE("FSDP2 with reshard_after_forward never (zero_stage 2) gathers each unit once per micro-batch",
          "[sim][frameworks][fsdp2]") {
  // torchtitan fsdp_reshard_after_forward "never" (distributed/fsdp.py @ b5bcd76): no unit is resharded after its
  // forward, so the backward gathers nothing; the reduce-scatters are unchanged, and the sharded state too.
  const int n = 8, mb = 2;
  const Scenario s = test::scenario(fsdp2(n, 2, mb, "", 2));
  const WorkloadGraph g = test::lowered(s);
  std::vector<Bytes> gathers, scatters;
  for (const Comm& c : dp_collectives(g)) {
    if (c.kind == CollectiveKind::kAllGather) gathers.push_back(c.bytes);
    if (c.kind == CollectiveKind::kReduceScatter) scatters.push_back(c.bytes);
  }
  std::vector<Bytes> want_gather, want_scatter;
  for (int m = 0; m < mb; ++m) {
    for (std::int64_t e : {kEmbedding, kLayer, kLayer, kHead}) want_gather.push_back(e * 2);
    for (std::int64_t e : {kHead, kLayer, kLayer, kEmbedding}) want_scatter.push_back(e * 4);
  }
  CHECK(gathers == want_gather);
  CHECK(scatters == want_scatter);
  const double psi = static_cast<double>(2 * kLayer + kEmbedding + kHead);
  CHECK(static_cast<double>(g.programs[0].static_memory[static_cast<std::size_t>(MemoryKind::kWeights)]) ==
        Approx(4 * psi / n));
  // Every unit is unsharded at once at the end of the forward, so the peak is above that of resharding.
  const Prediction p = predict(s);
  const Prediction p3 = predict(test::scenario(fsdp2(n, 2, mb)));
  CHECK(p.report.peak_memory > p3.report.peak_memory);
}

TEST_CASE("Megatron-DeepSpeed ZeRO-3's prefetch window, reuse distance and gradient buckets by hand",
          "[sim][frameworks][megatron-deepspeed]") {
  // DeepSpeed 0.19.6 (runtime/zero/config.py, partitioned_param_coordinator.py, stage3.py @ edaa722) on Llama-3-8B
  // cut to 4 layers, 8 GPUs, one micro-batch. Norm weights (4096 elements, under stage3_param_persistence_threshold
  // 1e5) stay whole, so a layer gathers L' = layer - 2 h elements and the head H' = V h. A unit's first
  // stage3_prefetch_bucket_size P = 5e7 elements are prefetched while the unit before it runs; the rest is fetched
  // as it starts. After its forward a unit stays gathered when twice the elements of the units after it (their
  // forward and backward) are under stage3_max_reuse_distance 1e9: only the head (layer 3 has 2 H' = 1.05e9).
  // Gradients go through 5e8-element buckets in backward order, reduced before one would overflow.
  const Scenario s = test::scenario(megatron_deepspeed(8, 1, 3, 4, 1));
  const std::int64_t L = kLayer - 2 * kH, E = kEmbedding, Hd = kV * kH, P = 50'000'000;
  std::vector<std::int64_t> want_gather = {E, P, L - P, P, L - P, P, L - P, P, L - P, P, Hd - P};  // forward
  for (std::int64_t e : {P, L - P, P, L - P, P, L - P, P, L - P, P, E - P}) want_gather.push_back(e);  // backward
  const std::vector<std::int64_t> want_scatter = {Hd, 2 * L, 2 * L, E};
  std::vector<std::int64_t> gathers, scatters;
  for (const Comm& c : dp_collectives(test::lowered(s))) {
    if (c.kind == CollectiveKind::kAllGather) gathers.push_back(c.bytes / 2);   // bf16
    if (c.kind == CollectiveKind::kReduceScatter) scatters.push_back(c.bytes / 2);  // bf16 gradients
  }
  CHECK(gathers == want_gather);
  CHECK(scatters == want_scatter);
  CHECK(s.parallel.overlap_grad_reduce);  // overlap_comm defaults on at stage 3
}
