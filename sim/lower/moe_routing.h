#pragma once
// How far a routed token travels: the expected number of EP ranks and NVLink domains its top-k experts fall on,
// and from them the bytes the flex dispatcher (DeepEP's normal kernels, HybridEP) moves per rank. Routing is taken as
// Megatron-Core's force-balanced benchmarks run it: random normal router logits, so without group limits each token
// picks k distinct experts uniformly; with group-limited routing (DeepSeek-V3 report Section 2.1.2) Megatron-Core's
// router scores each group by the sum of its best k / groups_per_token expert scores, keeps the best
// groups_per_token groups and picks the top k experts among them.

#include <cstdint>

#include "hardware/topology.h"
#include "models/model_spec.h"

namespace orrery {

/// Expected number of the `parts` equal, contiguous slices of the experts (ranks or NVLink domains of the EP group)
/// that one token's experts_per_token experts fall on. Without group limits, exactly parts (1 - C(E - E/parts, k) /
/// C(E, k)). With them, the mean over 4096 routings of Megatron-Core's group-limited top-k drawn from a fixed seed
/// (scores sigmoid(logit) for DeepSeek-V3's noaux_tc router, exp(logit) for softmax routers; standard error about
/// 0.5%), cached per routing and slice count. `parts` must divide num_experts.
double expected_parts_reached(const MoeSpec& moe, int parts);

/// The same with each token's experts uniform among its chosen groups (the groups themselves a uniform draw):
/// exact, by closed forms when slices hold whole groups or groups whole slices, else by enumerating the sets of
/// chosen groups. Megatron-Core's router concentrates the top-k in the groups it picks, so its fan-out is 2-9% above
/// this for DeepSeek-V3 routing.
double uniform_parts_reached(const MoeSpec& moe, int parts);

/// Per-rank bytes of one flex dispatch (the combine moves the same in reverse) of `tokens` tokens of
/// `token_bytes` each over the EP group placed as `ep`, for the busiest rank receiving `load` times the average:
/// across domains each token goes once to every other domain it needs (to the GPU of its sender's local index
/// there), inside them once to every rank it needs that is not the GPU it landed on:
/// network = tokens x min(min(load D_domains, domains) x (1 - fewest_per_domain / ep), domains - 1) x token_bytes
/// (the busiest sender is on the domain with the fewest members; (domains - 1) / domains for an even split),
/// nvlink = tokens x min(load D_ranks, ep) x (1 - 1 / ranks_per_domain) x token_bytes (a rank gets each token at
/// most once per sender); received = tokens x min(load D_ranks, ep) x token_bytes, one copy per (token, rank) pair
/// the busiest rank holds, which it expands into expert copies and sums back. All bytes; all 0 when ep has 1 rank.
struct FlexDispatchBytes {
  std::int64_t nvlink = 0;
  std::int64_t network = 0;
  std::int64_t received = 0;
};
FlexDispatchBytes flex_dispatch_bytes(const MoeSpec& moe, const GroupPlacement& ep, std::int64_t tokens,
                                      std::int64_t token_bytes, double load = 1.0);

}  // namespace orrery
