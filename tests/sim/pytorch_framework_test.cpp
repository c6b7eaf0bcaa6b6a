// training.framework "pytorch": the eager PyTorch recipe of tools/pytorch_train_step.py on a Hugging Face Llama.
// Expected values are computed here from the model's dimensions (autograd's saved tensors, fp32 state sizes), not
// read back from the lowering.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <variant>

#include "test_support.h"

using namespace orrery;

namespace {

Scenario llama_1b(const std::string& framework, const std::string& parallel = "{}") {
  // Llama-3.2-1B: h 2048, 16 layers, 32 heads of 64, 8 KV heads, f 8192, vocabulary 128256, tied embeddings.
  return test::scenario(R"({"model": {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048,
      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192,
      "vocab_size": 128256, "tie_word_embeddings": true},
    "cluster": {"preset": "dgx-h200", "num_gpus": 1}, "parallel": )" + parallel + R"(,
    "training": {"seq_length": 4096, "micro_batch_size": 4, "global_batch_size": 4, "framework": ")" + framework + R"("}})");
}

}  // namespace

TEST_CASE("pytorch framework: each layer keeps what autograd saves, and everything is freed again",
          "[sim][pytorch]") {
  const Scenario s = llama_1b("pytorch");
  const WorkloadGraph g = test::lowered(s);
  REQUIRE(g.programs.size() == 1);
  const Program& p = g.programs[0];
  const double T = 4 * 4096, h = 2048, H = 32, K = 8, d = 64, f = 8192;
  // Two RMSNorms (fp32 input, 1/rms, normalised), five bf16 input casts (q, k, v, gate, up), SDPA's bf16 q, k, v and
  // output (also o_proj's input) and fp32 log-sum-exp, and the MLP's gate, SiLU, up and product outputs.
  const double expected = 2 * (4 * T * h + 4 * T + 4 * T * h) + 5 * 2 * T * h + 2 * T * (H + 2 * K) * d +
                          2 * T * H * d + 4 * 4 * H * 4096 + 4 * 2 * T * f;
  double layer0 = 0;
  std::map<MemoryKind, double> net;
  for (const Task& t : p.tasks) {
    if (t.layer == 0 && t.phase == Phase::kForward && t.start_kind == MemoryKind::kActivations) layer0 += static_cast<double>(t.start_bytes);
    if (t.layer == 0 && t.phase == Phase::kForward && t.end_kind == MemoryKind::kActivations) layer0 += static_cast<double>(t.end_bytes);
    net[t.start_kind] += static_cast<double>(t.start_bytes);
    net[t.end_kind] += static_cast<double>(t.end_bytes);
  }
  CHECK(layer0 == Approx(expected));
  CHECK(net[MemoryKind::kActivations] == 0);
  CHECK(net[MemoryKind::kGradients] == 0);  // .grad created in the backward, freed by zero_grad(set_to_none)
  CHECK(net[MemoryKind::kWeights] == 0);    // autocast's bf16 weight copies, freed by each linear's backward
}

TEST_CASE("pytorch framework: fp32 parameters and AdamW moments, no static gradients", "[sim][pytorch]") {
  const Scenario s = llama_1b("pytorch");
  const WorkloadGraph graph = test::lowered(s);
  const Program& p = graph.programs[0];
  // Parameters: embedding (tied head) V h, per layer q/o 2 h^2, k/v 2 h (K d), MLP 3 h f, two norms; final norm.
  const double h = 2048, params = 128256 * h + 16 * (2 * h * h + 2 * h * 512 + 3 * h * 8192 + 2 * h) + h;
  CHECK(static_cast<double>(p.static_memory[static_cast<std::size_t>(MemoryKind::kWeights)]) == Approx(4 * params));
  CHECK(static_cast<double>(p.static_memory[static_cast<std::size_t>(MemoryKind::kOptimizer)]) == Approx(8 * params));
  CHECK(p.static_memory[static_cast<std::size_t>(MemoryKind::kGradients)] == 0);
}

TEST_CASE("pytorch framework: the same GEMMs as Megatron, more memory traffic, a slower step", "[sim][pytorch]") {
  const auto gemm_flops = [](const Scenario& s) {
    double flops = 0;
    const WorkloadGraph graph = test::lowered(s);
    const Program& p = graph.programs[0];
    for (const Task& t : p.tasks) {
      if (const auto* g = std::get_if<GemmShape>(&p.ops[static_cast<std::size_t>(t.op)])) flops += g->flops();
    }
    return flops;
  };
  const Scenario eager = llama_1b("pytorch"), megatron = llama_1b("megatron");
  CHECK(gemm_flops(eager) == Approx(gemm_flops(megatron)));
  const double t_eager = predict(eager).report.iteration_time, t_megatron = predict(megatron).report.iteration_time;
  CHECK(t_eager > 1.1 * t_megatron);
}

TEST_CASE("pytorch framework refuses what its recipe does not run", "[sim][pytorch]") {
  CHECK(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 2},
      "parallel": {"tp": 2}, "training": {"seq_length": 4096, "framework": "pytorch"}})")
            .find("not modelled yet: parallel (tp 2 pp 1 cp 1 ep 1 dp 1) training.framework \"pytorch\" covers one GPU") == 0);
  CHECK(test::scenario_error(R"({"model": "gpt3-175b", "cluster": {"preset": "dgx-h100", "num_gpus": 1},
      "training": {"seq_length": 2048, "framework": "pytorch"}})")
            .find("lowers Llama-style models only") != std::string::npos);
  CHECK(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 1},
      "training": {"seq_length": 4096, "framework": "jax"}})")
            .find("training.framework (\"jax\")") != std::string::npos);
}

TEST_CASE("pytorch framework: each elementwise op names the kernel path PyTorch takes for it", "[sim][pytorch]") {
  // The paths of aten/src/ATen/native/cuda/CUDALoops.cuh as the H200 trace of this model shows them: the residual
  // add mixes an fp32 stream with a bf16 branch (unrolled, casting), RoPE multiplies a transposed bf16 q by fp32 cos
  // (strided with casts), negates a bf16 half (strided, 2-byte elements) and concatenates q's halves, the logits are
  // widened by a bf16 -> fp32 copy, RMSNorm multiplies by a broadcast row, the bf16 MLP product
  // and the fp32 -> bf16 autocast copies are vectorized, and the loss and the optimizer have kernels of their own.
  const WorkloadGraph g = test::lowered(llama_1b("pytorch"));
  const Program& p = g.programs[0];
  std::map<std::string, std::set<ElementwiseKernel>> forward;
  std::map<std::string, std::set<ElementwiseKernel>> other;
  for (const Task& t : p.tasks) {
    const auto* e = std::get_if<ElementwiseShape>(&p.ops[static_cast<std::size_t>(t.op)]);
    if (!e) continue;
    (t.phase == Phase::kForward && t.layer == 3 ? forward : other)[t.label].insert(e->kernel);
  }
  using K = ElementwiseKernel;
  CHECK(forward["residual_add"] == std::set<K>{K::kCast});
  CHECK(forward["rope_mul"] == std::set<K>{K::kStridedCast});
  CHECK(forward["rope_cat"] == std::set<K>{K::kCat});
  CHECK(forward["rope_neg"] == std::set<K>{K::kStridedHalf});  // a bf16 slice: bound by elements
  CHECK(other["logits_float"] == std::set<K>{K::kCastCopy, K::kVectorized});  // bf16 -> fp32 up, fp32 -> bf16 back
  CHECK(forward["rmsnorm_mul"] == std::set<K>{K::kStrided});
  CHECK(forward["mul"] == std::set<K>{K::kVectorized});
  CHECK(forward["autocast_input"] == std::set<K>{K::kVectorized});
  CHECK(other["log_softmax"] == std::set<K>{K::kLogSoftmax, K::kLogSoftmaxBackward});
  CHECK(other["adamw"] == std::set<K>{K::kFusedAdamW});
  // RMSNorm's backward: dy * normalised is contiguous, dy * weight broadcasts the weight.
  CHECK(other["rmsnorm_weight"].count(K::kStrided) == 1);
  CHECK(other["rmsnorm_weight"].count(K::kVectorized) == 1);
  // Megatron's fused kernels keep the generic copy rate.
  const WorkloadGraph m = test::lowered(llama_1b("megatron"));
  for (const Task& t : m.programs[0].tasks) {
    const auto* e = std::get_if<ElementwiseShape>(&m.programs[0].ops[static_cast<std::size_t>(t.op)]);
    if (e) CHECK(e->kernel == K::kGeneric);
  }
}

TEST_CASE("pytorch framework: accumulated micro-batches widen each weight gradient, then add it in place",
          "[sim][pytorch]") {
  // Two micro-batches per step: the first's widened fp32 copy becomes .grad; the second's is added into it (an fp32
  // read-read-write) and freed. Per linear weight of n x k elements: one copy in micro-batch 0, a copy and an add in 1.
  Scenario s = llama_1b("pytorch");
  s.training.global_batch_size = 8;
  const WorkloadGraph g = test::lowered(s);
  const Program& p = g.programs[0];
  std::map<std::pair<int, ElementwiseKernel>, int> count;
  Bytes net_gradients = 0, peak_gradients = 0, live = 0;
  for (const Task& t : p.tasks) {
    for (const MemoryEffect& e : {t.at_start(), t.at_end()}) {
      if (e.kind != MemoryKind::kGradients) continue;
      live += e.bytes;
      peak_gradients = std::max(peak_gradients, live);
    }
    if (std::string(t.label) != "grad_accumulate" || t.layer != 0) continue;
    ++count[{t.microbatch, std::get<ElementwiseShape>(p.ops[static_cast<std::size_t>(t.op)]).kernel}];
  }
  net_gradients = live;
  // Layer 0 has seven linear weights (q, k, v, o, gate, up, down).
  CHECK(count[{0, ElementwiseKernel::kCastCopy}] == 7);
  CHECK(count[{0, ElementwiseKernel::kVectorized}] == 0);
  CHECK(count[{1, ElementwiseKernel::kCastCopy}] == 7);
  CHECK(count[{1, ElementwiseKernel::kVectorized}] == 7);
  CHECK(net_gradients == 0);  // every temporary freed, .grad freed by zero_grad
  CHECK(peak_gradients > 0);
}
