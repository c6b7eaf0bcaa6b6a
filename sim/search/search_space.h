#pragma once
// The plan space `orrery search` walks: values for each dimension of a Megatron-style plan (TP, PP, CP, EP, ETP,
// VPP, micro-batch, recompute, ZeRO stage, schedule, FP8), their cross product in a fixed order, and the scenario
// Job each candidate makes from a base (sim/job/job.h). Which candidates are valid is resolve()'s call, the scenario
// validator's, so search and predict can never disagree about it.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/job/job.h"
#include "sim/scenario.h"

namespace orrery {

/// One point of the space. Enumerated points have sequence parallelism on whenever TP > 1; an extra point (a
/// scenario's own plan) may have it off.
struct Candidate {
  int tp = 1, pp = 1, cp = 1, ep = 1, etp = 1, vpp = 1, micro_batch = 1, zero_stage = 0;
  Recompute recompute = Recompute::kNone;
  Schedule schedule = Schedule::k1F1B;
  bool fp8 = false;
  bool sequence_parallel = true;  // applies when tp > 1
  bool operator==(const Candidate&) const = default;
};

/// Values to try per dimension. An empty list means the default of `default_space`.
struct SearchSpace {
  std::vector<int> tp, pp, cp, ep, etp, vpp, micro_batch, zero_stage;
  std::vector<Recompute> recompute;
  std::vector<Schedule> schedule;
  std::vector<bool> fp8;
  int max_tp = 0;  // largest TP inside one NVLink domain (0: the cluster's NVLink domain size)
  std::vector<Candidate> extra;  // points added as they are (a scenario's own plan)
};

/// The default space of the search issue: TP {1, 2, 4, 8}, PP {1, 2, 4, 8, 16}, CP {1, 2, 4}, VPP every value
/// >= 2 dividing the layers per stage (and 1), micro-batch {1, 2, 4}, recompute {none, selective, full}, ZeRO
/// {0, 1, 3}, schedule 1f1b, FP8 off and on where the GPU has FP8 tensor cores; for MoE models EP over the
/// divisors of the expert count (ETP 1), else EP 1. Dimensions given in `user` replace the defaults.
SearchSpace default_space(const Scenario& base, const SearchSpace& user = {});

/// A short stable key: "tp8-pp4-cp1-ep1-etp1-vpp5-mb1-sel-z1-1f1b-fp8" ("nofp8": the scenario's own precision) ("-nosp" when TP > 1 runs without
/// sequence parallelism).
std::string candidate_key(const Candidate& c);

/// The cross product of `space` for `num_gpus` GPUs, in a fixed order (the order of the fields above), keeping only
/// points whose TP x PP x CP divides the GPU count and that leave every virtual stage a layer (PP x VPP, or 2 PP
/// with DualPipeV, at most the layers); without a VPP list, VPP runs over the divisors of the layers per stage (rounded up). The rest of
/// validity is left to the validator.
std::vector<Candidate> enumerate_candidates(const Scenario& base, const SearchSpace& space, int num_gpus);

/// `layers` over `stages` virtual stages so that each carries about the same number of layer-sized slots, the first
/// stage's work counting `first_extra` slots beyond its layers and the last's `last_extra` (the search: 1 for the
/// embedding, 1 for the LM head and loss plus 1 per multi-token-prediction depth). The slots' remainder goes one
/// each to the inner stages first, then the first, then the last; an end left with fewer slots than its extra
/// gets no layer and the inner stages give up the difference. DeepSeek-V3 (61 layers, 1 MTP depth) over 32 stages
/// gives Megatron-Bridge's [1, 2 x 30, 0]. Returns layers per stage (empty for `stages` <= 0); errors: none.
std::vector<int> balanced_layout(int layers, int stages, int first_extra, int last_extra);

/// The candidate's plan on `base` (its template plan with the candidate's sizes, schedule, ZeRO stage and sequence
/// parallelism; micro-batch, recompute and FP8 set on its training) over `num_gpus`, resolved. The base's
/// `pipeline_layout` is kept for candidates with as many virtual stages; other candidates whose virtual stages do
/// not divide the layers get balanced_layout's split (Megatron needs an explicit layout there), unless the base
/// counts the embedding or loss as layers. Errors: resolve()'s (invalid candidates).
Job candidate_job(const JobBase& base, const Candidate& c, int num_gpus);

}  // namespace orrery
