#include "sim/plan/plan_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/error.h"
#include "hardware/gpu_power.h"
#include "sim/plan/goodput_parse.h"
#include "sim/search/plan_search.h"

namespace orrery {

namespace {

using nlohmann::json;

// The failure model of a point: the scenario's, else Llama 3's measured rates (sim/scenario.h).
FailureModel failures_of(const Scenario& s) { return s.failures ? *s.failures : failure_preset("llama3-405b", "failures"); }

// Bytes each GPU saves in a checkpoint: its share of the unique model state of its largest stage. Megatron-Core's
// distributed checkpoint writes each shard once (a tensor's data-parallel replicas carry a replica id and only
// replica 0 saves it: megatron/core/dist_checkpointing, ShardedTensor.replica_id), so weights replicated over the
// data-parallel ranks (ZeRO below 3) and an optimizer state not sharded over them (ZeRO 0) count 1/dp per GPU.
double checkpoint_bytes_per_gpu(const Report& r, const Job& job) {
  const double dp = std::max(1, job.data_parallel_ranks());
  const int zero = job.plan().zero_stage;
  double most = 0;
  for (const StageMemory& m : r.per_stage) {
    const double weights = static_cast<double>(m.weights) / (zero >= 3 ? 1.0 : dp);
    const double optimizer = static_cast<double>(m.optimizer) / (zero >= 1 ? 1.0 : dp);
    most = std::max(most, weights + optimizer);
  }
  return most;
}

// A run longer than this (3,000 years) is a mistake in the inputs, and its failure sampling would not end.
constexpr double kMaxEffectiveSeconds = 1e11;
// Failure arrivals the Monte-Carlo may sample over all its runs (about a second of work per ten million).
constexpr double kMaxSampledFailures = 5e7;

// The scenario's cluster (or `cluster`), on `gpus` GPUs (0: the scenario's own count).
json point_document(const SweepRequest& rq, const json& cluster, int gpus, bool sweeping, int own_gpus) {
  json doc = rq.document;
  json c = cluster.is_null() ? doc.value("cluster", json()) : cluster;
  if (c.is_string()) c = json{{"preset", c}};
  if (gpus <= 0) gpus = own_gpus;
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

// Facility energy of the run with its failures: work redone at the steps' power, and the time the job stands
// (checkpoint stalls, detection, recovery, reloads, start-ups) at the GPUs' idle power plus hosts and network.
double effective_energy_J(const SweepPoint& s, const Prediction& p) {
  const PlanPoint& pt = s.point;
  const LostTime& lost = s.goodput.lost;
  const ClusterSpec& cluster = p.job.cluster();
  const FacilitySpec& facility = p.job.scenario().energy;
  const double busy = pt.time_to_train > 0 ? (pt.time_to_train + lost.lost_work) / pt.time_to_train : 1.0;
  const double standing_s = lost.checkpoint_saves + lost.detection + lost.recovery + lost.checkpoint_loads + lost.startup;
  const double standing_W = pt.num_gpus * gpu_power(cluster.gpu).idle_W +
                            cluster.num_nodes() * (host_power_W_per_node(facility, cluster) +
                                                   network_power_W_per_node(facility, cluster));
  return pt.energy.facility_J * busy + standing_s * standing_W * pt.energy.pue;
}

SweepPoint evaluate(const SweepRequest& rq, const Job& job, std::shared_ptr<const Prediction>* keep) {
  auto p = std::make_shared<const Prediction>(predict(job));
  SweepPoint s;
  s.job = job;
  s.point = plan_point(*p, rq.run);
  const Scenario& sc = job.scenario();
  const FailureModel failures = failures_of(sc);
  const GoodputJob g{static_cast<double>(s.point.num_gpus), s.point.time_to_train, s.point.iteration_time,
                     checkpoint_bytes_per_gpu(p->report, job)};
  if (sc.checkpoint.interval_s) {
    require(*sc.checkpoint.interval_s >= s.point.iteration_time, "checkpoint.interval_s",
            fmt::format("{}", *sc.checkpoint.interval_s),
            fmt::format("must be at least one training step ({:.3f} s): checkpoints are taken between steps",
                        s.point.iteration_time));
  }
  CheckpointSpec checkpoint = sc.checkpoint;
  checkpoint.gpus_per_node = job.cluster().gpus_per_node;  // the nodes that share storage and peer bandwidth
  s.goodput = expected_goodput(failures, checkpoint, g);
  const double effective = s.goodput.effective_time_to_train_s;
  if (!(std::isfinite(effective) && effective <= kMaxEffectiveSeconds)) {
    if (sc.checkpoint.interval_s) {
      throw Error::invalid("checkpoint.interval_s", fmt::format("{}", *sc.checkpoint.interval_s),
                           fmt::format("is too long for the job's failures (mean time between them {:.0f} s): the run "
                                       "would almost never reach a checkpoint", s.goodput.job_mtbf_s));
    }
    throw Error::invalid(rq.run.tokens > 0 ? "--tokens" : "--steps",
                         fmt::format("{}", rq.run.tokens > 0 ? rq.run.tokens : rq.run.steps),
                         fmt::format("gives an expected time to train above {:g} s (3,000 years)", kMaxEffectiveSeconds));
  }
  s.vs_checkpoint_interval = ettr_vs_checkpoint_interval(failures, checkpoint, g);
  if (rq.monte_carlo_runs > 0) {
    const double sampled = (s.goodput.failures_expected + 1) * rq.monte_carlo_runs;
    require(sampled <= kMaxSampledFailures, "--monte-carlo-runs", fmt::format("{}", rq.monte_carlo_runs),
            fmt::format("would sample about {:.3g} failure arrivals ({:.0f} expected per run); at most {:g}: give "
                        "fewer runs", sampled, s.goodput.failures_expected, kMaxSampledFailures));
    s.monte_carlo = monte_carlo_goodput(failures, s.goodput.checkpoint, g, rq.seed, rq.monte_carlo_runs);
  }
  s.effective_energy_J = effective_energy_J(s, *p);
  if (p->report.memory_capacity > 0 && p->report.peak_memory > p->report.memory_capacity) {
    s.fits = false;
    s.fit_note = fmt::format("does not fit: peak memory {:.1f} GiB of the GPU's {:.1f} GiB",
                             to_GiB(p->report.peak_memory), to_GiB(p->report.memory_capacity));
  }
  if (keep) *keep = std::move(p);
  return s;
}

}  // namespace

PlanSweep plan_sweep(const SweepRequest& rq) {
  const std::vector<json> clusters = rq.clusters.empty() ? std::vector<json>{json()} : rq.clusters;
  const std::vector<int> sizes = rq.gpu_counts.empty() ? std::vector<int>{0} : rq.gpu_counts;
  const bool sweeping = sizes.size() > 1 || clusters.size() > 1;
  // A cluster that cannot be read is a typo in --clusters: refused before any point runs.
  for (const json& c : rq.clusters) {
    json probe = c.is_string() ? json{{"preset", c}} : c;
    if (probe.is_object() && !probe.contains("num_gpus")) probe["num_gpus"] = 8;
    try {
      parse_cluster(probe, "cluster", rq.base_dir);
    } catch (const Error& e) {
      throw e.in("--clusters");
    }
  }
  const std::size_t total = clusters.size() * sizes.size();
  // The scenario's own GPU count and name. In a sweep its data-parallel size gives way to each point's GPUs, so a
  // plan flag that no longer matches the scenario's own dp (--pp 1 on a file with dp 2) is checked per point.
  int own_gpus = 0;
  PlanSweep out;
  try {
    const Scenario own = parse_scenario(rq.document, rq.base_dir);
    own_gpus = own.cluster.num_gpus;
    out.scenario_name = own.name;
  } catch (const Error&) {
    if (!sweeping) throw;
    const json& c = rq.document.contains("cluster") ? rq.document["cluster"] : json();
    own_gpus = c.is_object() && c.contains("num_gpus") && c["num_gpus"].is_number_integer() ? c["num_gpus"].get<int>() : 0;
    out.scenario_name = rq.document.value("name", std::string("plan"));
  }
  if (const auto c = rq.document.find("cluster"); c != rq.document.end() && c->is_object() && c->contains("pools")) {
    // Sweeps resize one GPU type, and prices and the idle floor are per GPU type.
    throw Error::not_modelled("cluster.pools", fmt::format("{} pools", (*c)["pools"].size()),
                              "capacity planning (orrery plan) of a mixed cluster; orrery predict reports its step "
                              "and its energy");
  }
  std::size_t done = 0;
  for (std::size_t ci = 0; ci < clusters.size(); ++ci) {
    std::optional<std::size_t> first;  // this cluster's first point: the scaling efficiencies' base
    for (int gpus : sizes) {
      const json doc = point_document(rq, clusters[ci], gpus, sweeping, own_gpus);
      std::string label = fmt::format("{} GPUs", gpus);
      try {
        const Scenario scenario = parse_scenario(doc, rq.base_dir);
        label = fmt::format("{} x {}", scenario.cluster.name, scenario.cluster.num_gpus);
        const Job job = point_job(rq, scenario, scenario.cluster.num_gpus);
        const bool is_main = ci == 0 && (gpus == 0 || gpus == own_gpus);
        std::shared_ptr<const Prediction> kept;
        SweepPoint s = evaluate(rq, job, is_main ? &kept : nullptr);
        // A plan over the GPU's memory cannot train: in a sweep it is skipped, alone it stays with the report's
        // warning (as orrery predict shows it).
        if (sweeping && !s.fits) {
          throw Error::invalid("--num-gpus", fmt::format("{}", s.point.num_gpus), s.fit_note);
        }
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
