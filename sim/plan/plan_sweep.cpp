#include "sim/plan/plan_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/error.h"
#include "sim/plan/goodput_parse.h"
#include "sim/search/plan_search.h"

namespace orrery {

namespace {

using nlohmann::json;

// The failure model of a point: the scenario's, else Llama 3's measured rates (sim/scenario.h).
FailureModel failures_of(const Scenario& s) { return s.failures ? *s.failures : failure_preset("llama3-405b", "failures"); }

// Bytes each GPU saves in a checkpoint: the weights and optimizer state of its largest stage.
double checkpoint_bytes_per_gpu(const Report& r) {
  double most = 0;
  for (const StageMemory& m : r.per_stage) most = std::max(most, static_cast<double>(m.weights + m.optimizer));
  return most;
}

json point_document(const SweepRequest& rq, const json& cluster, int gpus, bool sweeping) {
  json doc = rq.document;
  json c = cluster.is_null() ? doc.value("cluster", json()) : cluster;
  if (c.is_string()) c = json{{"preset", c}};
  if (gpus > 0 && c.is_object()) c["num_gpus"] = gpus;
  doc["cluster"] = c;
  // Across sizes the data-parallel size follows the GPU count (Megatron-LM derives it), as does the global batch
  // when the scenario left it to micro-batch x dp.
  if (sweeping && doc.contains("parallel") && doc["parallel"].is_object()) doc["parallel"].erase("dp");
  return doc;
}

Job point_job(const SweepRequest& rq, const Scenario& scenario, int gpus) {
  if (!rq.search) return resolve(scenario);
  const JobBase base = resolve_base(scenario);
  SearchOptions options;
  options.top_k = 1;
  const SearchResult r = run_search(base, default_space(scenario), gpus, options);
  require(!r.ranking.empty(), "--search", fmt::format("{} GPUs", gpus), "found no plan that fits");
  return candidate_job(base, r.records[r.ranking.front()].candidate, gpus);
}

SweepPoint evaluate(const SweepRequest& rq, const Job& job, std::shared_ptr<const Prediction>* keep) {
  auto p = std::make_shared<const Prediction>(predict(job));
  SweepPoint s;
  s.job = job;
  s.point = plan_point(*p, rq.run);
  const Scenario& sc = job.scenario();
  const FailureModel failures = failures_of(sc);
  const GoodputJob g{static_cast<double>(s.point.num_gpus), s.point.time_to_train, s.point.iteration_time,
                     checkpoint_bytes_per_gpu(p->report)};
  s.goodput = expected_goodput(failures, sc.checkpoint, g);
  s.vs_checkpoint_interval = ettr_vs_checkpoint_interval(failures, sc.checkpoint, g);
  if (rq.monte_carlo_runs > 0) {
    s.monte_carlo = monte_carlo_goodput(failures, s.goodput.checkpoint, g, rq.seed, rq.monte_carlo_runs);
  }
  if (keep) *keep = std::move(p);
  return s;
}

}  // namespace

PlanSweep plan_sweep(const SweepRequest& rq) {
  const std::vector<json> clusters = rq.clusters.empty() ? std::vector<json>{json()} : rq.clusters;
  const std::vector<int> sizes = rq.gpu_counts.empty() ? std::vector<int>{0} : rq.gpu_counts;
  const bool sweeping = sizes.size() > 1 || clusters.size() > 1;
  const std::size_t total = clusters.size() * sizes.size();
  const Scenario own = parse_scenario(rq.document, rq.base_dir);
  PlanSweep out;
  out.scenario_name = own.name;
  std::size_t done = 0;
  for (std::size_t ci = 0; ci < clusters.size(); ++ci) {
    std::optional<std::size_t> first;  // this cluster's first point: the scaling efficiencies' base
    for (int gpus : sizes) {
      const json doc = point_document(rq, clusters[ci], gpus, sweeping);
      std::string label = fmt::format("{} GPUs", gpus);
      try {
        const Scenario scenario = parse_scenario(doc, rq.base_dir);
        label = fmt::format("{} x {}", scenario.cluster.name, scenario.cluster.num_gpus);
        const Job job = point_job(rq, scenario, scenario.cluster.num_gpus);
        const bool is_main = ci == 0 && (gpus == 0 || gpus == own.cluster.num_gpus);
        std::shared_ptr<const Prediction> kept;
        SweepPoint s = evaluate(rq, job, is_main ? &kept : nullptr);
        if (first) {
          const SweepPoint& base = out.points[*first];
          s.strong_scaling_efficiency = s.point.tokens_per_s_per_gpu / base.point.tokens_per_s_per_gpu;
          const double factor = static_cast<double>(s.point.num_gpus) / base.point.num_gpus;
          // Weak scaling: this point's plan with the first point's batch per GPU (its global batch grown by the
          // GPU ratio), against the first point; unset where that batch is not whole or does not divide.
          const double batch = static_cast<double>(base.job.training().global_batch_size) * factor;
          if (batch == std::floor(batch)) {
            Scenario grown = s.job.scenario();
            grown.training.global_batch_size = static_cast<std::int64_t>(batch);
            try {
              s.weak_scaling_efficiency = predict(grown).report.tokens_per_s_per_gpu / base.point.tokens_per_s_per_gpu;
            } catch (const Error&) {
              s.weak_scaling_efficiency = std::nullopt;
            }
          }
        } else {
          s.weak_scaling_efficiency = 1.0;
        }
        if (kept && !out.main_prediction) {
          out.main_prediction = kept;
          out.main = out.points.size();
        }
        if (!first) first = out.points.size();
        out.points.push_back(std::move(s));
      } catch (const Error& e) {
        if (!sweeping) throw;
        out.skipped.push_back({doc["cluster"].value("preset", std::string("cluster")), gpus, e.what()});
      }
      ++done;
      if (rq.progress) rq.progress(done, total, label);
    }
  }
  if (out.points.empty()) {
    throw Error::invalid("--num-gpus", fmt::format("{} points", total),
                         "none could be predicted: " + (out.skipped.empty() ? std::string() : out.skipped.front().reason));
  }
  if (!out.main_prediction) {
    out.main = 0;
    out.main_prediction = std::make_shared<const Prediction>(predict(out.points.front().job));
  }
  return out;
}

}  // namespace orrery
