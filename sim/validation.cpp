#include "sim/validation.h"

#include <cmath>

#include "models/model_flops.h"
#include "sim/lower/context.h"

namespace orrery {

ConventionFlops convention_flops(const Scenario& s, const std::string& convention) {
  const ModelSpec& m = s.model;
  const double B = static_cast<double>(s.training.global_batch_size);
  const double seq = static_cast<double>(s.training.seq_length);
  ConventionFlops f;
  if (convention == "megatron-sc21") {
    const double l = m.num_layers, h = static_cast<double>(m.hidden_size);
    const double V = static_cast<double>(padded_vocab_size(m.vocab_size, s.parallel.tp));
    const double model = korthikanti_model_flops_per_iteration(B, seq, l, h, V);
    const double full = sc21_flops_per_iteration(B, seq, l, h, V);
    f.tflops = full;  // SC21 quotes hardware FLOPs of its full-recompute runs
    f.mfu = model;
    switch (s.training.recompute) {
      case Recompute::kFull: f.hfu = full; break;
      case Recompute::kSelective: f.hfu = model + 12.0 * B * seq * seq * h * l; break;
      case Recompute::kNone: f.hfu = model; break;
    }
    return f;
  }
  const AttentionFlops attention =
      convention == "causal-halved" ? AttentionFlops::kCausalHalved : AttentionFlops::kFullMatrix;
  // NeMo's and Megatron-Bridge's FLOP counters use the tokenizer's vocabulary, not the padded one, and count a
  // sliding-window layer as full causal attention: Megatron-LM's num_floating_point_operations
  // (megatron/training/training.py at d98e8a64, 2026-08) never reads --window-size.
  AttentionSpan span;
  span.windows = false;
  const double model = B * training_flops_per_sequence(m, s.training.seq_length, m.vocab_size, attention, span);
  f.tflops = f.mfu = f.hfu = model;
  return f;
}

std::string source_prefix(const std::string& name) {
  for (const char* known : {"sc21-t1", "sc21-t2", "mlm-readme-2020", "mlm-moe-recipes-2607"}) {
    if (name.rfind(known, 0) == 0) return known;
  }
  // Megatron-Bridge rows group by release: "mbridge-25.11-...".
  if (name.rfind("mbridge-", 0) == 0) return name.substr(0, name.find('-', 8));
  return name.substr(0, name.find('-'));
}

namespace {

void add(RecordResult& r, const char* figure, double predicted, const std::optional<double>& published) {
  if (!published) return;
  FigureComparison c{figure, predicted, *published, 100.0 * (predicted - *published) / *published};
  r.figures.push_back(c);
  if (std::string(figure) == "iteration_time_s") r.iteration_error_pct = c.error_pct;
}

}  // namespace

RecordResult compare_with_expectations(const Prediction& p, const std::string& file) {
  const Scenario& s = p.scenario;
  const Report& rep = p.report;
  const Expectation& e = s.expect;
  RecordResult r;
  r.name = s.name;
  r.file = file;
  r.prefix = source_prefix(s.name);
  r.simulated = true;
  const std::string convention = e.flops_convention.empty() ? "full-attention" : e.flops_convention;
  const ConventionFlops f = convention_flops(s, convention);
  const double gpu_seconds = rep.iteration_time * rep.num_gpus;
  add(r, "iteration_time_s", rep.iteration_time, e.iteration_time_s);
  add(r, "tokens_per_s_per_gpu", rep.tokens_per_s_per_gpu, e.tokens_per_s_per_gpu);
  add(r, "tflops_per_gpu", to_tflops(f.tflops / gpu_seconds), e.tflops_per_gpu);
  add(r, "mfu", f.mfu / (gpu_seconds * rep.peak_flops_per_gpu), e.mfu);
  add(r, "hfu", f.hfu / (gpu_seconds * rep.peak_flops_per_gpu), e.hfu);
  add(r, "peak_memory_gib", to_GiB(rep.peak_memory), e.peak_memory_gib);
  return r;
}

ValidationSummary summarize(const std::vector<RecordResult>& results) {
  ValidationSummary s;
  double total = 0;
  std::map<std::string, double> sums;
  for (const RecordResult& r : results) {
    if (!r.simulated) {
      ++s.failed;
      continue;
    }
    if (!r.iteration_error_pct) continue;
    const double e = *r.iteration_error_pct;
    ++s.records;
    total += std::fabs(e);
    sums[r.prefix] += std::fabs(e);
    ++s.by_prefix[r.prefix].second;
    if (s.worst.empty() || std::fabs(e) > std::fabs(s.worst_error_pct)) {
      s.worst = r.name;
      s.worst_error_pct = e;
    }
  }
  s.mape = s.records > 0 ? total / s.records : 0.0;
  for (auto& [prefix, entry] : s.by_prefix) entry.first = sums[prefix] / entry.second;
  return s;
}

}  // namespace orrery
