#include "sim/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/error.h"
#include "models/model_flops.h"

namespace orrery {

ConventionFlops convention_flops(const Job& job, const std::string& convention) {
  const Scenario& s = job.scenario();
  const ModelSpec& m = s.model;
  const double B = static_cast<double>(s.training.global_batch_size);
  const double seq = static_cast<double>(s.training.seq_length);
  ConventionFlops f;
  if (convention == "megatron-sc21") {
    const double l = m.num_layers, h = static_cast<double>(m.hidden_size);
    const double V = static_cast<double>(job.padded_vocab());
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

// Errors: Error::invalid naming expect.FIGURE when the comparison is not a finite number (parse_expect bounds the
// published figure, so only a prediction outside the double range could do it): a report never holds NaN.
void add(RecordResult& r, const char* figure, double predicted, const std::optional<double>& published) {
  if (!published) return;
  FigureComparison c{figure, predicted, *published, 100.0 * (predicted - *published) / *published};
  if (!std::isfinite(c.predicted) || !std::isfinite(c.error_pct)) {
    throw Error::invalid(std::string("expect.") + figure, fmt::format("{}", *published),
                         fmt::format("cannot be compared: the prediction ({}) gives an error of {}%", predicted,
                                     c.error_pct));
  }
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
  const ConventionFlops f = convention_flops(p.job, convention);
  const double gpu_seconds = rep.iteration_time * rep.num_gpus;
  add(r, "iteration_time_s", rep.iteration_time, e.iteration_time_s);
  add(r, "tokens_per_s_per_gpu", rep.tokens_per_s_per_gpu, e.tokens_per_s_per_gpu);
  add(r, "tflops_per_gpu", to_tflops(f.tflops / gpu_seconds), e.tflops_per_gpu);
  add(r, "mfu", f.mfu / (gpu_seconds * rep.peak_flops_per_gpu), e.mfu);
  add(r, "hfu", f.hfu / (gpu_seconds * rep.peak_flops_per_gpu), e.hfu);
  add(r, "peak_memory_gib", to_GiB(rep.peak_memory), e.peak_memory_gib);
  if (e.iteration_time_s) r.attribution = attribute_error(rep.breakdown, rep.iteration_time, *e.iteration_time_s);
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

const char* to_string(ErrorPart part) {
  switch (part) {
    case ErrorPart::kCompute: return "compute";
    case ErrorPart::kHost: return "host";
    case ErrorPart::kCommunication: return "communication";
    case ErrorPart::kBubble: return "bubble";
  }
  return "compute";
}

// compute 0.05: the leave-one-source-out MAPE of the record fit (README, "Accuracy": 5.0% over the 50 fitted
//   records), which prices compute-dominated steps.
// host 0.30: the spread of the measured per-op CPU cost of PyTorch eager over the committed H200 traces (median
//   per model 28-35 us of forward, `orrery calibrate host`), and Megatron-Core's cost is fitted on few host-bound
//   records: an estimate.
// communication 0.15: NCCL bus bandwidth against the committed nccl-tests logs at 8 MB and above (`orrery fit
//   collectives` prints the bands); smaller messages miss by more, so an estimate of the blend.
// bubble 0.10: a bubble is the other stages' compute and transfers seen from the critical stage, so it carries
//   their uncertainty, partly averaged over the stages: an estimate.
const double kPartUncertainty[kNumErrorParts] = {0.05, 0.30, 0.15, 0.10};

ErrorAttribution attribute_error(const Breakdown& b, Seconds predicted, Seconds measured) {
  ErrorAttribution a;
  a.error = predicted - measured;
  a.seconds = {b.compute + b.optimizer, b.host,
               b.exposed_tp_comm + b.exposed_cp_comm + b.exposed_ep_comm + b.exposed_pp_comm + b.exposed_dp_comm,
               b.bubble};
  std::array<double, kNumErrorParts> variance{};
  double total = 0;
  for (int p = 0; p < kNumErrorParts; ++p) {
    const double sigma = kPartUncertainty[p] * a.seconds[static_cast<std::size_t>(p)];
    variance[static_cast<std::size_t>(p)] = sigma * sigma;
    total += sigma * sigma;
  }
  if (total <= 0) {
    a.allotted[0] = a.error;
    return a;
  }
  for (int p = 0; p < kNumErrorParts; ++p) {
    a.allotted[static_cast<std::size_t>(p)] = a.error * variance[static_cast<std::size_t>(p)] / total;
  }
  a.dominant = static_cast<ErrorPart>(std::max_element(variance.begin(), variance.end()) - variance.begin());
  return a;
}

}  // namespace orrery
