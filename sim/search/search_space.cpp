#include "sim/search/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "sim/pipeline_layout.h"

namespace orrery {

namespace {

template <class T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? std::move(fallback) : given;
}

const char* short_name(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "sel";
    case Recompute::kFull: return "full";
  }
  return "?";
}

}  // namespace

SearchSpace default_space(const Scenario& base, const SearchSpace& user) {
  SearchSpace s;
  s.tp = or_default(user.tp, {1, 2, 4, 8});
  s.pp = or_default(user.pp, {1, 2, 4, 8, 16});
  s.cp = or_default(user.cp, {1, 2, 4});
  std::vector<int> eps{1};
  if (base.model.is_moe()) {
    eps.clear();
    for (int e = 1; e <= base.model.moe.num_experts; ++e) {
      if (base.model.moe.num_experts % e == 0) eps.push_back(e);
    }
  }
  s.ep = or_default(user.ep, eps);
  s.etp = or_default(user.etp, {1});
  s.vpp = user.vpp;  // empty: every divisor of the layers per stage (enumerate_candidates)
  s.micro_batch = or_default(user.micro_batch, {1, 2, 4});
  s.zero_stage = or_default(user.zero_stage, {0, 1, 3});
  s.recompute = or_default(user.recompute, {Recompute::kNone, Recompute::kSelective, Recompute::kFull});
  s.schedule = or_default(user.schedule, {Schedule::k1F1B});
  std::vector<bool> fp8{false};
  if (base.cluster.gpu.peak_fp8 > 0) fp8.push_back(true);
  s.fp8 = or_default(user.fp8, fp8);
  s.max_tp = user.max_tp > 0 ? user.max_tp : base.cluster.nvlink_domain_size;
  s.extra = user.extra;
  return s;
}

std::string candidate_key(const Candidate& c) {
  return fmt::format("tp{}-pp{}-cp{}-ep{}-etp{}-vpp{}-mb{}-{}-z{}-{}-{}{}", c.tp, c.pp, c.cp, c.ep, c.etp, c.vpp,
                     c.micro_batch, short_name(c.recompute), c.zero_stage, to_string(c.schedule),
                     c.fp8 ? "fp8" : "nofp8", c.tp > 1 && !c.sequence_parallel ? "-nosp" : "");
}

std::vector<Candidate> enumerate_candidates(const Scenario& base, const SearchSpace& space, int num_gpus) {
  std::vector<Candidate> out;
  const int layers = base.model.num_layers;
  // Layer-sized slots to split: the layers, and the embedding and loss where the base's split accounts for them.
  const int slots = layers + base.parallel.accounted_slots();
  for (int tp : space.tp) {
    if (tp > space.max_tp) continue;
    for (int pp : space.pp) {
      if (pp > layers) continue;
      // Default VPPs: the divisors of the (largest) slot count per stage, each chunk a whole share of it.
      std::vector<int> vpps = space.vpp;
      if (vpps.empty()) {
        vpps.push_back(1);
        const int per_stage = (slots + pp - 1) / pp;
        for (int v = 2; pp > 1 && v <= per_stage; ++v) {
          if (per_stage % v == 0 && pp * v <= slots) vpps.push_back(v);
        }
      }
      for (int cp : space.cp) {
        const std::int64_t dp = ParallelPlan::data_parallel_size(num_gpus, tp, pp, cp);
        if (dp == 0) continue;
        for (int ep : space.ep) {
          for (int etp : space.etp) {
            // ZeRO shards over the data-parallel ranks of a CP group (dp x cp) and, for experts, over the expert
            // data-parallel ranks (tp x cp x dp / (ep x etp)): with one of each, every stage is the same plan, and
            // only the first listed is enumerated.
            const bool one_shard =
                dp * cp == 1 && (!base.model.is_moe() || std::int64_t{tp} * cp * dp == std::int64_t{ep} * etp);
            for (int vpp : vpps) {
              if (vpp > 1 && (pp == 1 || pp * vpp > slots)) continue;
              for (int mb : space.micro_batch) {
                for (Recompute r : space.recompute) {
                  for (int zero : space.zero_stage) {
                    if (one_shard && zero != space.zero_stage.front()) continue;
                    for (Schedule schedule : space.schedule) {
                      // DualPipeV folds every rank's layers into two chunks: 2 pp virtual stages need a layer each.
                      if (schedule == Schedule::kDualPipeV && 2 * pp > layers) continue;
                      for (bool fp8 : space.fp8) {
                        out.push_back({tp, pp, cp, ep, etp, vpp, mb, zero, r, schedule, fp8, true});
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  for (const Candidate& c : space.extra) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::vector<int> balanced_layout(int layers, int stages, int first_extra, int last_extra) {
  if (stages <= 0) return {};
  std::vector<int> out(static_cast<std::size_t>(stages), 0);
  if (stages == 1) {
    out[0] = layers;
    return out;
  }
  const auto at = [&](int v) -> int& { return out[static_cast<std::size_t>(v)]; };
  // Layer-sized slots per stage, the remainder one each to the inner stages first, then the first, then the last.
  const int slots = layers + first_extra + last_extra;
  for (int& n : out) n = slots / stages;
  int extra = slots % stages;
  for (int v = 1; v + 1 < stages && extra > 0; ++v, --extra) ++at(v);
  for (int v : {0, stages - 1}) {
    if (extra > 0) ++at(v), --extra;
  }
  at(0) = std::max(0, at(0) - first_extra);
  at(stages - 1) = std::max(0, at(stages - 1) - last_extra);
  // Where an end could not give up all its extra slots, the inner stages give up layers instead, largest first.
  int surplus = std::accumulate(out.begin(), out.end(), 0) - layers;
  while (surplus > 0) {
    int v = stages > 2 ? 1 : 0;
    for (int u = 0; u < stages; ++u) {
      if (at(u) > at(v)) v = u;
    }
    --at(v);
    --surplus;
  }
  return out;
}

Job candidate_job(const JobBase& base, const Candidate& c, int num_gpus) {
  const Scenario& b = base.scenario();
  PlanChoice choice;
  choice.num_gpus = num_gpus;
  ParallelPlan& p = choice.parallel;
  p = b.parallel;
  p.tp = c.tp;
  p.pp = c.pp;
  p.cp = c.cp;
  p.dp = 0;
  p.ep = c.ep;
  p.etp = c.etp;
  p.vpp = c.vpp;
  p.num_layers_per_virtual_pipeline_stage.reset();
  p.decoder_first_pipeline_num_layers.reset();  // splits of the base plan belong to its pp
  p.decoder_last_pipeline_num_layers.reset();
  p.sequence_parallel = c.tp > 1 && c.sequence_parallel;
  p.zero_stage = c.zero_stage;
  p.schedule = c.schedule;
  // The base plan's explicit layout fits candidates with as many virtual stages; otherwise layers that do not
  // divide evenly get balanced_layout's split (unless the embedding/loss accounting keys split them).
  const int stages = virtual_stage_count(p);
  if (static_cast<int>(p.pipeline_layout.size()) != stages) {
    p.pipeline_layout.clear();
    if (p.accounted_slots() == 0 && b.model.num_layers % stages != 0) {
      // The embedding counts as a layer, as Megatron's account_for_embedding_in_pipeline_split counts it; the LM
      // head and loss as one and each multi-token-prediction depth as another, as Megatron-Bridge's DeepSeek-V3
      // layout 'Et|(tt|)*30mL' gives them stage slots of their own.
      p.pipeline_layout = balanced_layout(b.model.num_layers, stages, 1, 1 + b.model.mtp_num_layers);
    }
  }
  choice.micro_batch_size = c.micro_batch;
  choice.recompute = c.recompute;
  const Precision own = b.training.precision;
  choice.precision = c.fp8 ? Precision::kFp8 : own == Precision::kFp8 ? Precision::kBf16 : own;
  return resolve(base, choice);
}

}  // namespace orrery
