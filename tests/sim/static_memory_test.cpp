// Weights, gradients and optimizer state per rank against Megatron-LM's distributed-optimizer table
// (docs/source/api-guide/dist_optimizer.md): bf16 params with fp32 grads 18 bytes/param, or 6 + 12/d with the
// distributed optimizer; fp16 params and grads 20 bytes/param, or 4 + 16/d.
#include <catch2/catch.hpp>

#include "models/param_count.h"
#include "sim/lower/context.h"
#include "test_support.h"

using namespace orrery;

namespace {

struct Static {
  double bytes;
  double params;
};

// Static state of the single pipeline stage of Llama-3-8B at tp 1, per rank.
Static state(const char* precision, int zero, int dp, const std::string& training_extra = "") {
  const Scenario s = test::scenario(std::string(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": )") +
                                    std::to_string(dp) + R"(}, "parallel": {"zero_stage": )" + std::to_string(zero) +
                                    R"(}, "training": {"seq_length": 1024, "precision": ")" + precision + R"(")" +
                                    training_extra + "}}");
  const WorkloadGraph g = test::lowered(s);
  const auto& m = g.programs[0].static_memory;
  const double bytes = static_cast<double>(m[0] + m[1] + m[2]);  // weights, gradients, optimizer
  // tp 1: the rank holds every parameter (the padded vocabulary at tp 1 is 128256: no padding).
  return {bytes, static_cast<double>(count_parameters(s.model).total)};
}

}  // namespace

TEST_CASE("bytes per parameter follow Megatron's distributed-optimizer table", "[sim][memory]") {
  const Static bf16 = state("bf16", 0, 8);
  CHECK(bf16.bytes / bf16.params == Approx(18));
  const Static bf16_dist = state("bf16", 1, 8);
  CHECK(bf16_dist.bytes / bf16_dist.params == Approx(6 + 12.0 / 8));
  const Static fp16 = state("fp16", 0, 8);
  CHECK(fp16.bytes / fp16.params == Approx(20));
  const Static fp16_dist = state("fp16", 1, 4);
  CHECK(fp16_dist.bytes / fp16_dist.params == Approx(4 + 16.0 / 4));
}

TEST_CASE("bf16 gradients (grad_reduce_in_fp32 false) take the fp16 row's 2 + 2 + 16 bytes", "[sim][memory]") {
  // 16-bit gradient buffer; the optimizer keeps fp32 main params, main grads of its shard and Adam's two moments.
  const Static plain = state("bf16", 0, 8, R"(, "grad_reduce_in_fp32": false)");
  CHECK(plain.bytes / plain.params == Approx(20));
  const Static dist = state("bf16", 1, 8, R"(, "grad_reduce_in_fp32": false)");
  CHECK(dist.bytes / dist.params == Approx(4 + 16.0 / 8));
  // FP8 adds the same weight caches either way: the two layouts differ by (4 - 2) - (16 - 12) / d bytes.
  const Static fp8 = state("fp8", 1, 8), fp8_bf16_grads = state("fp8", 1, 8, R"(, "grad_reduce_in_fp32": false)");
  CHECK((fp8.bytes - fp8_bf16_grads.bytes) / fp8.params == Approx(2 - 4.0 / 8));
}

TEST_CASE("grad_reduce_in_fp32 false is refused where gradients are not fp32 by default", "[sim][memory][errors]") {
  const auto error = [](const char* precision) {
    return test::scenario_error(std::string(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
        "training": {"seq_length": 1024, "precision": ")") + precision + R"(", "grad_reduce_in_fp32": false}})");
  };
  CHECK_THAT(error("fp32"), Catch::Contains("training.grad_reduce_in_fp32") && Catch::Contains("fp32 gradients"));
  CHECK_THAT(error("fp16"), Catch::Contains("training.grad_reduce_in_fp32") && Catch::Contains("already 16-bit"));
  const std::string bf16 = R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "training": {"seq_length": 1024, "grad_reduce_in_fp32": false)";
  CHECK_THAT(test::scenario_error(bf16 + R"(, "framework": "pytorch"}})"), Catch::Contains("Megatron-Core setting"));
  CHECK_THAT(test::scenario_error(bf16 + R"(}, "parallel": {"zero_stage": 3}})"),
             Catch::Contains("training.grad_reduce_in_fp32") && Catch::Contains("zero_stage 0 and 1"));
}

TEST_CASE("bf16 gradient buffers halve the data-parallel gradient reduction", "[sim][memory]") {
  const auto reduced = [](const std::string& extra) {
    const WorkloadGraph g = test::lowered(test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100",
        "num_gpus": 8}, "parallel": {"zero_stage": 1}, "training": {"seq_length": 1024)" + extra + "}}"));
    double bytes = 0;
    const Program& p = g.programs[0];
    for (const Task& t : p.tasks) {
      if (t.stream != Stream::kDpReduce) continue;
      if (const auto* c = std::get_if<CollectiveOp>(&p.ops[static_cast<std::size_t>(t.op)])) bytes += static_cast<double>(c->bytes);
    }
    return bytes;
  };
  const double fp32 = reduced(""), bf16 = reduced(R"(, "grad_reduce_in_fp32": false)");
  REQUIRE(fp32 > 0);
  CHECK(bf16 == Approx(fp32 / 2));
}
