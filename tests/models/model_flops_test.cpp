// Model FLOPs from the architecture against published closed forms.
#include <catch2/catch.hpp>

#include "models/model_flops.h"
#include "models/model_input.h"
#include "models/ops.h"
#include "test_support.h"

using namespace orrery;

TEST_CASE("GPT model FLOPs equal Korthikanti's 72 B s l h^2 (1 + s/6h + V/12lh)", "[models][flops]") {
  const ModelSpec m = parse_model_input("gpt-sc21-145.6b", test::source_dir(), "model");
  const double batch = 8, s = 2048, V = 51200;
  const double ours = batch * training_flops_per_sequence(m, 2048, 51200, AttentionFlops::kFullMatrix);
  CHECK(ours == Approx(korthikanti_model_flops_per_iteration(batch, s, m.num_layers,
                                                             static_cast<double>(m.hidden_size), V))
                    .epsilon(1e-12));
}

TEST_CASE("Llama-3-8B FLOPs per token are 6 N plus attention (Chinchilla-style count)", "[models][flops]") {
  // With the full score matrix, forward+backward FLOPs per token = 6 x (non-embedding matmul weights + LM head)
  // + 12 l s (heads x head_dim) (Kaplan et al. arXiv:2001.08361 Table 1 counts 2 N + 2 l s d per token forward).
  const ModelSpec m = parse_model_input("llama3-8b", test::source_dir(), "model");
  const double h = 4096, layers = 32, s = 8192, V = 128256;
  const double per_layer_weights = h * (32 + 2 * 8) * 128 + 32 * 128 * h + 3 * h * 14336;
  const double expected = 6 * (layers * per_layer_weights + h * V) + 12 * layers * s * 32 * 128;
  CHECK(training_flops_per_sequence(m, 8192, 128256, AttentionFlops::kFullMatrix) / s == Approx(expected).epsilon(1e-12));
}

TEST_CASE("causal masks keep (s+1)/(2s) of the score matrix", "[models][ops]") {
  AttentionShape a{.batch = 1, .heads = 8, .kv_heads = 8, .q_len = 4096, .kv_len = 4096, .head_dim_qk = 128,
                   .head_dim_v = 128};
  CHECK(a.kept_fraction() == Approx(4097.0 / 8192.0));
  a.causal = false;
  CHECK(a.kept_fraction() == 1.0);
  // A sliding window of w: the first w queries see 1..w keys, the rest w each.
  AttentionShape w{.batch = 1, .heads = 8, .kv_heads = 8, .q_len = 1000, .kv_len = 1000, .head_dim_qk = 64,
                   .head_dim_v = 64, .causal = true, .window = 100};
  CHECK(w.kept_fraction() == Approx((99.0 * 100.0 / 2 + 901.0 * 100.0) / 1e6));
  // FlashAttention-2: the backward pass executes 2.5x the forward FLOPs; model FLOPs count it as 2x.
  AttentionShape b = a;
  b.backward = true;
  CHECK(b.executed_flops() == Approx(2.5 * a.executed_flops()));
  CHECK(b.model_flops() == Approx(2.0 * a.model_flops()));
}
