// ZeRO stages 2 and 3 (FSDP) against the ZeRO paper (Rajbhandari et al., arXiv:1910.02054): model-state memory per
// GPU (Section 5, Figure 1: (2 + 2 + K) Psi / Nd for stage 3, 2 Psi + (2 + K) Psi / Nd for stage 2, K = 12) and
// the communication volume per iteration (Section 7.2: stage 3 moves 3 Psi, an all-gather of the parameters in
// the forward and again in the backward pass and a reduce-scatter of the gradients).
#include <catch2/catch.hpp>

#include <map>

#include "models/model_input.h"
#include "models/param_count.h"
#include "test_support.h"

using namespace orrery;

namespace {

Scenario zero(int stage, int dp, const char* precision = "fp16") {
  return test::scenario(std::string(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": )") + std::to_string(dp) +
                        R"(}, "parallel": {"zero_stage": )" + std::to_string(stage) +
                        R"(}, "training": {"seq_length": 1024, "global_batch_size": )" + std::to_string(dp) +
                        R"(, "precision": ")" + precision + R"("}})");
}

double model_state_bytes(const WorkloadGraph& g) {
  const auto& m = g.programs[0].static_memory;
  return static_cast<double>(m[0] + m[1] + m[2]);
}

// Bytes all-gathered and reduce-scattered over the DP group by stage 0 in one iteration, as nccl-tests counts
// them (the gathered output, the scattered input).
std::pair<double, double> dp_gather_scatter_bytes(const WorkloadGraph& g) {
  double gathered = 0, scattered = 0;
  for (const Task& t : g.programs[0].tasks) {
    const auto* c = std::get_if<CollectiveOp>(&g.programs[0].ops[static_cast<std::size_t>(t.op)]);
    if (!c || t.group != GroupKind::kDp) continue;
    if (c->kind == CollectiveKind::kAllGather) gathered += static_cast<double>(c->bytes);
    if (c->kind == CollectiveKind::kReduceScatter) scattered += static_cast<double>(c->bytes);
  }
  return {gathered, scattered};
}

}  // namespace

TEST_CASE("ZeRO-2 and ZeRO-3 model-state memory per GPU follows the ZeRO paper", "[sim][zero][memory]") {
  const int nd = 16;
  const double K = 12;
  for (int stage : {2, 3}) {
    INFO("stage " << stage);
    const Scenario s = zero(stage, nd);
    const double psi = static_cast<double>(count_parameters(s.model).total);  // tp 1, pp 1: every parameter
    const double expected = stage == 3 ? (2 + 2 + K) * psi / nd : 2 * psi + (2 + K) * psi / nd;
    CHECK(model_state_bytes(test::lowered(s)) == Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("ZeRO-2's peak model states are DeepSpeed's 2 + 18 / N bytes per parameter, not a full gradient buffer",
          "[sim][zero][memory]") {
  // DeepSpeed's corrected estimator (PR #5099, estimate_zero2_model_states_mem_needs): 2 bytes of BF16 parameters
  // on every rank, and per owned parameter 2 (BF16 gradient shard) + 4 (its FP32 copy for the step) + 4 (FP32
  // master) + 8 (Adam moments). Llama-3-8B on 4 GPUs with 128-token sequences: the step's FP32 gradient copy
  // (4 Psi / 4 = 8 GB) outweighs what the backward holds besides the states (two 500M-element BF16 buckets,
  // 2 GB, and small activations), so the peak is the step. The old lowering held a full-size gradient buffer
  // through each backward, 4 + 14 / N bytes per parameter (equal to 2 + 18 / N only at N = 2).
  const int nd = 4;
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 4},
      "parallel": {"zero_stage": 2}, "training": {"seq_length": 128, "global_batch_size": 8, "precision": "bf16"}})");
  const double psi = static_cast<double>(count_parameters(s.model).total);
  const StageMemory m = predict(s).report.per_stage.at(0);
  const double states = static_cast<double>(m.weights + m.gradients + m.optimizer);
  CHECK(states == Approx(2 * psi + 18 * psi / nd).epsilon(1e-6));
  // During the backward the buckets are DeepSpeed's two contiguous-gradient buffers (overlap_comm), in "other".
  const WorkloadGraph g = test::lowered(s);
  Bytes most = 0, live = 0;
  for (const Task& t : g.programs[0].tasks) {
    if (t.start_kind == MemoryKind::kOther) live += t.start_bytes;
    most = std::max(most, live);
    if (t.end_kind == MemoryKind::kOther) live += t.end_bytes;
  }
  CHECK(most == 2 * 500'000'000LL * 2);
}

TEST_CASE("ZeRO-3 gathers the parameters twice and reduce-scatters the gradients once per micro-batch",
          "[sim][zero][communication]") {
  const Scenario s = zero(3, 8, "bf16");
  const WorkloadGraph g = test::lowered(s);
  const double psi = static_cast<double>(count_parameters(s.model).total);
  const auto [gathered, scattered] = dp_gather_scatter_bytes(g);
  // One micro-batch: all-gather outputs 2 Psi parameters of 2 bytes, reduce-scatter inputs Psi gradients of 2
  // bytes (DeepSpeed reduces in the training precision): 3 Psi elements moved in all, as Section 7.2 says.
  CHECK(gathered == Approx(2 * psi * 2));
  CHECK(scattered == Approx(psi * 2));
}

TEST_CASE("ZeRO-1 reduce-scatters the gradients and all-gathers the parameters once per iteration",
          "[sim][zero][communication]") {
  const Scenario s = zero(1, 8, "bf16");
  const WorkloadGraph g = test::lowered(s);
  const double psi = static_cast<double>(count_parameters(s.model).total);
  const auto [gathered, scattered] = dp_gather_scatter_bytes(g);
  // Megatron's distributed optimizer: fp32 gradient buckets (4 bytes), bf16 parameters (2 bytes).
  CHECK(scattered == Approx(psi * 4));
  CHECK(gathered == Approx(psi * 2));
}

TEST_CASE("ZeRO-3 hides the parameter gathers behind compute when the network keeps up", "[sim][zero]") {
  // Inside one node (NVLink) a layer's gather (436 MB) takes about a millisecond, its compute on 8K tokens several:
  // only the first gather of each pass and the last reduce-scatter stay exposed.
  const Scenario big = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 8},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"zero_stage": 3},
      "training": {"seq_length": 4096, "micro_batch_size": 2, "global_batch_size": 16}})");
  const Prediction p = predict(big);
  CHECK(p.report.breakdown.exposed_dp_comm < 0.05 * p.report.iteration_time);
  // ZeRO-3 keeps 1/8 of the parameters resident; the gathered layer is transient.
  const Prediction one = predict(zero(1, 8, "bf16"));
  CHECK(p.report.per_stage[0].weights < one.report.per_stage[0].weights);
}

namespace {

// A GPT-2-style model (biases, LayerNorm, learned positions) whose module sizes are easy to count by hand.
Scenario deepspeed03(int dp) {
  return test::scenario(std::string(R"({"model": {"model_type": "gpt2", "num_hidden_layers": 2, "hidden_size": 1024,
      "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 51200, "max_position_embeddings": 1024},
      "cluster": {"preset": "dgx-a100-80gb", "num_gpus": )") + std::to_string(dp) +
                        R"(}, "parallel": {"dp": )" + std::to_string(dp) + R"(, "zero_stage": 3},
      "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": )" + std::to_string(dp) +
                        R"(, "precision": "fp16", "recompute": "full", "attention_backend": "unfused",
      "framework": "deepspeed-0.3"}})");
}

}  // namespace

TEST_CASE("DeepSpeed 0.3's ZeRO-3 gathers each large parameter on its own, three times with full recompute",
          "[sim][zero][deepspeed]") {
  const int dp = 16;
  const WorkloadGraph g = test::lowered(deepspeed03(dp));
  const double h = 1024, L = 2;
  // Above DeepSpeed's persistence threshold (1e5 elements): per layer QKV (3h^2 + 3h), the attention projection
  // (h^2 + h), fc1 (4h^2 + 4h) and fc2 (4h^2 + h); the word (51200 x h) and position (1024 x h) embeddings; the
  // LM head is the word embedding (GPT-2 ties them), gathered again at the head and reduced once. LayerNorms (2h)
  // and the final norm stay whole everywhere.
  const double layer = 12 * h * h + 9 * h;
  const double embedding = (51200 + 1024) * h;
  const double head = 51200 * h;
  int gathers = 0, scatters = 0;
  double copy_launches = 0;
  for (const Task& t : g.programs[0].tasks) {
    const Op& op = g.programs[0].ops[static_cast<std::size_t>(t.op)];
    if (const auto* c = std::get_if<CollectiveOp>(&op); c && t.group == GroupKind::kDp) {
      gathers += c->kind == CollectiveKind::kAllGather;
      scatters += c->kind == CollectiveKind::kReduceScatter;
    }
    if (const auto* e = std::get_if<ElementwiseShape>(&op); e && e->kernels > 1) copy_launches += static_cast<double>(e->kernels);
  }
  // Forward, recomputed forward and backward for the 4 L layer weights; forward and backward for the two
  // embedding tables and the head, which sit outside the checkpointed layers.
  CHECK(gathers == 3 * 4 * 2 + 2 * 2 + 2);
  CHECK(scatters == 4 * 2 + 2);
  // torch.distributed's list-based all_gather and reduce_scatter copy one chunk per rank.
  CHECK(copy_launches == Approx(dp * (gathers + scatters)));
  const auto [gathered, scattered] = dp_gather_scatter_bytes(g);
  CHECK(gathered == Approx(2 * (3 * L * layer + 2 * embedding + 2 * head)));  // fp16 parameters
  CHECK(scattered == Approx(2 * (L * layer + embedding)));          // fp16 gradients
}

TEST_CASE("DeepSpeed 0.3's ZeRO-3 overlaps nothing: the step is the sum of its tasks", "[sim][zero][deepspeed]") {
  // Every gather follows a device synchronize and every reduce-scatter is waited for before the next kernel, so
  // the simulated step equals the plain sum of the priced durations of its tasks (the GPU's: without host costs).
  const Prediction p = test::predict_without_host(deepspeed03(64));
  const Program& prog = p.graph.programs[0];
  double sum = 0;
  for (const Task& t : prog.tasks) sum += p.durations.op_seconds[0][static_cast<std::size_t>(t.op)];
  CHECK(p.report.iteration_time == Approx(sum).epsilon(0.01));
  CHECK(p.report.breakdown.exposed_dp_comm > 0.2 * p.report.iteration_time);
}

TEST_CASE("DeepSpeed 0.3's ZeRO-3 pays one copy launch per rank and chunk, so its step grows with dp",
          "[sim][zero][deepspeed]") {
  // Doubling dp at a fixed micro-batch per rank adds (gathers + reduce-scatters) x dp copy launches. Each costs at
  // least the GPU's launch gap, and at most that plus the host's issue of it (the host issues them one by one after
  // each synchronize, partly while the collective before them still runs). The network time per rank stays about
  // the same (ring volume (n-1)/n of the tensor).
  const double t32 = predict(deepspeed03(32)).report.iteration_time;
  const double t64 = predict(deepspeed03(64)).report.iteration_time;
  const double collectives = (3 * 4 * 2 + 2 * 2 + 2) + (4 * 2 + 2);
  const ComputeParams& c = default_cost_params().compute;
  const double copies = collectives * 32;
  CHECK(t64 - t32 > copies * c.launch_gap);
  CHECK(t64 - t32 < copies * (c.launch_gap + c.host.library));
}

TEST_CASE("framework deepspeed-0.3 refuses what DeepSpeed 0.3's ZeRO-3 cannot run", "[sim][zero][deepspeed][errors]") {
  const std::string base = R"({"model": {"preset": "gpt-sc21-1.7b"}, "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 16},
      "training": {"seq_length": 1024, "framework": "deepspeed-0.3"}, "parallel": )";
  CHECK_THAT(test::scenario_error(base + R"({"zero_stage": 2}})"), Catch::Contains("parallel.zero_stage"));
  CHECK_THAT(test::scenario_error(base + R"({"zero_stage": 3, "pp": 2}})"), Catch::Contains("parallel.pp"));
  // Flash attention (the default) came after DeepSpeed 0.3.
  CHECK_THAT(test::scenario_error(base + R"({"zero_stage": 3}})"),
             Catch::StartsWith("not modelled yet:") && Catch::Contains("training.attention_backend"));
}

TEST_CASE("ZeRO-2/3 with experts: dense state sharded over DP, expert state over the expert-DP group",
          "[sim][zero][moe]") {
  // Megatron-FSDP with expert parallelism: Mixtral (8 experts of 3 x 4096 x 14336) cut to 4 layers on 16 GPUs, EP 8,
  // so each rank holds one expert per layer, shared by the 16 / 8 = 2 ranks of its expert-DP group; every other
  // parameter is whole and shared by the 16 DP ranks.
  const auto mixtral = [](int stage) {
    return test::scenario(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 4},
        "cluster": {"preset": "dgx-h100", "num_gpus": 16}, "parallel": {"ep": 8, "zero_stage": )" +
                          std::to_string(stage) + R"(},
        "training": {"seq_length": 1024, "global_batch_size": 16, "precision": "bf16"}})");
  };
  const double expert = 3.0 * 4096 * 14336, layers = 4, K = 12;
  const double dense = static_cast<double>(count_parameters(mixtral(3).model).total) - layers * 8 * expert;
  const double local_expert = layers * expert;  // one of the 8 experts per layer
  const double owned = dense / 16 + local_expert / 2;
  CHECK(model_state_bytes(test::lowered(mixtral(3))) == Approx((2 + 2 + K) * owned).epsilon(1e-9));
  CHECK(model_state_bytes(test::lowered(mixtral(2))) == Approx(2 * (dense + local_expert) + (2 + K) * owned).epsilon(1e-9));
  // ZeRO-3's gathers (forward and backward) and gradient reduce-scatter, per micro-batch, each over its own group.
  const WorkloadGraph g = test::lowered(mixtral(3));
  std::map<GroupKind, double> gathered, scattered;
  for (const Task& t : g.programs[0].tasks) {
    const auto* c = std::get_if<CollectiveOp>(&g.programs[0].ops[static_cast<std::size_t>(t.op)]);
    if (!c || std::string(t.label) == "fp8_amax") continue;
    if (c->kind == CollectiveKind::kAllGather && std::string(t.label) == "param_gather") gathered[group_of(t)] += static_cast<double>(c->bytes);
    if (c->kind == CollectiveKind::kReduceScatter && std::string(t.label) == "grad_reduce") scattered[group_of(t)] += static_cast<double>(c->bytes);
  }
  CHECK(gathered[GroupKind::kExpertDp] == Approx(2 * local_expert * 2));
  CHECK(gathered[GroupKind::kDp] == Approx(2 * dense * 2));
  CHECK(scattered[GroupKind::kExpertDp] == Approx(local_expert * 2));
  CHECK(scattered[GroupKind::kDp] == Approx(dense * 2));
}

TEST_CASE("ZeRO-3 gathers only what is sharded: no expert traffic when EP = DP, expert traffic when DP is 1",
          "[sim][zero][moe]") {
  const auto traffic = [](const std::string& plan, int gpus, int global_batch) {
    const WorkloadGraph g = test::lowered(test::scenario(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 4},
        "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) + R"(}, "parallel": {"zero_stage": 3)" + plan + R"(},
        "training": {"seq_length": 1024, "global_batch_size": )" + std::to_string(global_batch) + R"(, "precision": "bf16"}})"));
    std::map<GroupKind, double> gathered;
    for (const Task& t : g.programs[0].tasks) {
      const auto* c = std::get_if<CollectiveOp>(&g.programs[0].ops[static_cast<std::size_t>(t.op)]);
      if (c && std::string(t.label) == "param_gather") gathered[group_of(t)] += static_cast<double>(c->bytes);
    }
    return gathered;
  };
  const double expert = 3.0 * 4096 * 14336, layers = 4;
  // EP 8 on 8 GPUs: each rank owns its expert outright (expert-DP group of one); only the dense part is gathered.
  const auto ep_is_dp = traffic(R"(, "ep": 8)", 8, 8);
  const double dense = static_cast<double>(count_parameters(parse_model_input(
                           nlohmann::json::parse(R"({"preset": "mixtral-8x7b", "num_hidden_layers": 4})"),
                           test::source_dir(), "model")).total) - layers * 8 * expert;
  CHECK(ep_is_dp.count(GroupKind::kExpertDp) == 0);
  CHECK(ep_is_dp.at(GroupKind::kDp) == Approx(2 * dense * 2));  // forward and backward, bf16, one micro-batch
  // TP 8 leaves DP 1, but EP 4 x ETP 1 over the 8 TP ranks leaves expert-DP groups of 2: the experts (2 of the 8
  // per rank) are gathered, forward and backward of the one micro-batch, and nothing else is.
  const auto dp_one = traffic(R"(, "tp": 8, "sequence_parallel": true, "ep": 4, "etp": 1)", 8, 1);
  CHECK(dp_one.count(GroupKind::kDp) == 0);
  CHECK(dp_one.at(GroupKind::kExpertDp) == Approx(2 * layers * 2 * expert * 2));
}
