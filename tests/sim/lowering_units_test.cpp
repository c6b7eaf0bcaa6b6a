// The lowering's emitter and its unit dispatch (sim/lower/context.h, sim/lower/stage_program.cpp): a scope sets the
// emitter's position or a mode for a block and restores it after, by an exception too; and every kind of parameter
// unit (embedding, decoder layer, multi-token prediction depth, head) emits its own body in each pass, as counted
// by hand from the bodies' sources (sim/lower/embedding_head.cpp, sim/lower/mtp.cpp).
#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sim/job/job.h"
#include "sim/lower/context.h"
#include "sim/lower/sharded_params.h"
#include "test_support.h"

using namespace orrery;

namespace {

// Llama-3-8B cut to four decoder layers with one multi-token prediction depth, on a two-stage pipeline: stage 0
// holds the embedding and layers 0-1, stage 1 layers 2-3, the depth (layer 4) and the head.
Scenario llama_with_mtp(const std::string& schedule) {
  return test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4, "mtp_num_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 2}, "parallel": {"tp": 1, "pp": 2, "schedule": ")" + schedule +
                        R"("}, "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 4,
      "precision": "bf16"}})");
}

void check_start(const Emitter& emit) {
  CHECK(emit.microbatch() == -1);
  CHECK(emit.chunk() == -1);
  CHECK(emit.layer() == -1);
  CHECK(emit.phase() == Phase::kForward);
  CHECK(emit.weight_grad_mode() == WeightGradMode::kInline);
  CHECK_FALSE(emit.overlapped());
  CHECK(emit.compute_stream() == Stream::kCompute);
}

using TaskKey = std::tuple<int, int, Phase, std::string>;  // stage, layer, phase, label

// Compute tasks of micro-batch `microbatch`, counted by (stage, layer, phase, label).
std::map<TaskKey, int> compute_tasks(const WorkloadGraph& g, int microbatch) {
  std::map<TaskKey, int> out;
  for (std::size_t s = 0; s < g.programs.size(); ++s) {
    for (const Task& t : g.programs[s].tasks) {
      if (t.microbatch == microbatch && is_compute(t)) ++out[{static_cast<int>(s), t.layer, t.phase, t.label}];
    }
  }
  return out;
}

int count(const std::map<TaskKey, int>& tasks, int stage, int layer, Phase phase, const std::string& label) {
  const auto it = tasks.find({stage, layer, phase, label});
  return it == tasks.end() ? 0 : it->second;
}

// The labels of one layer's tasks in one phase.
std::map<std::string, int> labels_of(const std::map<TaskKey, int>& tasks, int stage, int layer, Phase phase) {
  std::map<std::string, int> out;
  for (const auto& [key, n] : tasks) {
    if (std::get<0>(key) == stage && std::get<1>(key) == layer && std::get<2>(key) == phase) out[std::get<3>(key)] = n;
  }
  return out;
}

}  // namespace

TEST_CASE("an emitter's scopes set its position and modes for a block and restore them after, by an exception too",
          "[sim][lowering]") {
  const Job job = resolve(llama_with_mtp("1f1b"));
  const LoweringContext ctx(job);
  ProgramBuilder builder = program_builder(0);
  Emitter emit(ctx, builder, 0);
  check_start(emit);

  SECTION("nested scopes restore the outer scope's value, then the start's") {
    {
      const PositionScope at(emit, {2, 1, 3, Phase::kBackwardInput});
      {
        const PhaseScope weight(emit, Phase::kBackwardWeight);
        CHECK(emit.phase() == Phase::kBackwardWeight);
        CHECK(emit.layer() == 3);  // a phase scope leaves the rest of the position alone
        const PositionScope inner(emit, {.phase = Phase::kOptimizer});
        CHECK(emit.microbatch() == -1);
      }
      CHECK(emit.phase() == Phase::kBackwardInput);
      CHECK(emit.microbatch() == 2);
      CHECK(emit.chunk() == 1);
      CHECK(emit.layer() == 3);
    }
    check_start(emit);
  }

  SECTION("a body that throws leaves every mode as it found it") {
    const auto body = [&] {
      const PositionScope at(emit, {3, 0, 2, Phase::kBackwardInput});
      const WeightGradScope only(emit, WeightGradMode::kOnly);
      const OverlapScope twin(emit, true);
      const ComputeStreamScope on(emit, Stream::kEp);
      const PhaseScope weight(emit, Phase::kBackwardWeight);
      REQUIRE(emit.weight_grad_mode() == WeightGradMode::kOnly);
      REQUIRE(emit.overlapped());
      REQUIRE(emit.compute_stream() == Stream::kEp);
      throw std::runtime_error("body failed");
    };
    CHECK_THROWS_AS(body(), std::runtime_error);
    check_start(emit);
  }

  SECTION("tasks carry the scopes' position and streams; the weight-gradient mode keeps or drops them") {
    const GemmShape shape{128, 128, 128, 1, DType::kBf16};
    MaybeTask overlapped, weight_only, input_only, plain;
    {
      const PositionScope at(emit, {1, 0, 2, Phase::kBackwardInput});
      {
        const OverlapScope twin(emit, true);
        overlapped = emit.gemm("overlapped", shape);
      }
      {
        const WeightGradScope only(emit, WeightGradMode::kOnly);
        CHECK_FALSE(emit.gemm("dropped_input", shape).emitted());  // kOnly keeps kBackwardWeight tasks alone
        const PhaseScope weight(emit, Phase::kBackwardWeight);
        weight_only = emit.gemm("weight", shape);
      }
      {
        const WeightGradScope skip(emit, WeightGradMode::kSkip);
        input_only = emit.gemm("input", shape);
        const PhaseScope weight(emit, Phase::kBackwardWeight);
        CHECK_FALSE(emit.gemm("dropped_weight", shape).emitted());  // kSkip drops them
      }
    }
    plain = emit.gemm("plain", shape);
    REQUIRE(overlapped.emitted());
    REQUIRE(weight_only.emitted());
    REQUIRE(input_only.emitted());
    REQUIRE(plain.emitted());
    const Program p = builder.finish();
    REQUIRE(p.tasks.size() == 4);  // the two dropped ones added nothing
    const Task& o = p.tasks[static_cast<std::size_t>(overlapped.task())];
    CHECK(o.stream == Stream::kComputeB);  // the compute stream's twin (sim/task_vocabulary.h)
    CHECK(o.microbatch == 1);
    CHECK(o.chunk == 0);
    CHECK(o.layer == 2);
    CHECK(o.phase == Phase::kBackwardInput);
    CHECK(p.tasks[static_cast<std::size_t>(weight_only.task())].phase == Phase::kBackwardWeight);
    CHECK(p.tasks[static_cast<std::size_t>(weight_only.task())].stream == Stream::kCompute);
    CHECK(p.tasks[static_cast<std::size_t>(input_only.task())].phase == Phase::kBackwardInput);
    const Task& after = p.tasks[static_cast<std::size_t>(plain.task())];
    CHECK(after.microbatch == -1);
    CHECK(after.layer == -1);
    CHECK(after.phase == Phase::kForward);
  }
}

TEST_CASE("each kind of parameter unit emits its own body in the forward, backward and weight-gradient passes",
          "[sim][lowering][mtp]") {
  const Job job = resolve(llama_with_mtp("zb-h1"));
  const LoweringContext ctx(job);
  // The classification, from the layout: the embedding opens the first stage, the depth (numbered after the
  // decoder layers) and the head close the last.
  const auto kinds = [&](int stage) {
    std::vector<UnitKind> out;
    for (const ParamUnit& u : ShardedParamsLowering(ctx, stage).units(0)) out.push_back(unit_kind(u, ctx.model));
    return out;
  };
  using K = UnitKind;
  CHECK(kinds(0) == std::vector<K>{K::kEmbedding, K::kDecoderLayer, K::kDecoderLayer});
  CHECK(kinds(1) == std::vector<K>{K::kDecoderLayer, K::kDecoderLayer, K::kMtpDepth, K::kHead});

  const WorkloadGraph g = lower(job, default_cost_params().memory);
  const auto tasks = compute_tasks(g, 0);
  constexpr int kDepth = 4;  // the depth's layer index: num_layers + 0
  SECTION("embedding: the row gather forward, the scatter-add into the table as its weight gradient") {
    CHECK(count(tasks, 0, -1, Phase::kForward, "embedding") == 1);
    CHECK(count(tasks, 0, -1, Phase::kBackwardWeight, "embedding") == 1);
    CHECK(count(tasks, 1, -1, Phase::kForward, "embedding") == 0);
  }
  SECTION("head: the main LM head and one more pass per depth through the shared head, one final norm") {
    // Megatron-Core process_mtp_loss: 1 + mtp_num_layers passes; the depth's has its own final norm (mtp_final_norm).
    CHECK(count(tasks, 1, -1, Phase::kForward, "lm_head") == 2);
    CHECK(count(tasks, 1, -1, Phase::kForward, "final_norm") == 1);
    CHECK(count(tasks, 1, -1, Phase::kBackwardInput, "lm_head") == 2);   // the dgrads, in B
    CHECK(count(tasks, 1, -1, Phase::kBackwardWeight, "lm_head") == 2);  // the wgrads, in W
    CHECK(count(tasks, 1, -1, Phase::kBackwardInput, "final_norm") == 1);
  }
  SECTION("multi-token prediction depth: eh_proj forward, its dgrad and wgrad, the gradient sum into the main one") {
    CHECK(count(tasks, 1, kDepth, Phase::kForward, "mtp_eh_proj") == 1);
    CHECK(count(tasks, 1, kDepth, Phase::kBackwardInput, "mtp_eh_proj") == 1);
    CHECK(count(tasks, 1, kDepth, Phase::kBackwardWeight, "mtp_eh_proj") == 1);
    CHECK(count(tasks, 1, kDepth, Phase::kBackwardInput, "mtp_grad_sum") == 1);
    // Its inner transformer layer is one of the last decoder layer's kind: the same tasks beside the depth's own.
    std::map<std::string, int> inner = labels_of(tasks, 1, kDepth, Phase::kForward);
    for (const auto& [label, n] : labels_of(tasks, 1, 3, Phase::kForward)) CHECK(inner[label] >= n);
  }
  SECTION("decoder layers: the same body on both stages, with no embedding, head or depth task among them") {
    for (const Phase phase : {Phase::kForward, Phase::kBackwardInput, Phase::kBackwardWeight}) {
      const auto first = labels_of(tasks, 0, 0, phase);
      CHECK_FALSE(first.empty());
      for (int layer = 0; layer < 4; ++layer) {
        const auto here = labels_of(tasks, layer < 2 ? 0 : 1, layer, phase);
        CHECK(here == first);
        for (const auto& [label, n] : here) {
          CHECK(label.rfind("mtp_", 0) == std::string::npos);
          CHECK(label != "lm_head");
          CHECK(label != "embedding");
        }
      }
    }
  }
  SECTION("ZB-H1's B and W passes together emit what 1F1B's one backward pass does") {
    const WorkloadGraph fused = lower(resolve(llama_with_mtp("1f1b")), default_cost_params().memory);
    for (int mb = 0; mb < job.microbatches(); ++mb) CHECK(compute_tasks(g, mb) == compute_tasks(fused, mb));
  }
}

TEST_CASE("the eager PyTorch framework lowers each unit kind with its own bodies", "[sim][lowering][pytorch]") {
  // Its decoder layers are Hugging Face LlamaDecoderLayer's separate projections (sim/lower/pytorch_step.h), where
  // Megatron-Core's fuse q, k and v into one GEMM (linear_qkv, labelled "qkv").
  const WorkloadGraph g = test::lowered(test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "parallel": {"tp": 1, "pp": 1},
      "training": {"framework": "pytorch", "seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 1,
      "precision": "bf16"}})"));
  const auto tasks = compute_tasks(g, 0);
  for (int layer = 0; layer < 2; ++layer) {
    CHECK(count(tasks, 0, layer, Phase::kForward, "q_proj") == 1);
    CHECK(count(tasks, 0, layer, Phase::kBackwardWeight, "q_proj") == 1);
    CHECK(count(tasks, 0, layer, Phase::kForward, "qkv") == 0);
  }
  CHECK(count(tasks, 0, -1, Phase::kForward, "lm_head") == 1);
  CHECK(count(tasks, 0, -1, Phase::kForward, "embedding") == 1);
}
