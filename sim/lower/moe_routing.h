#pragma once
// How far a routed token travels: the expected number of EP ranks and NVLink domains its top-k experts fall on,
// and from them the bytes the flex dispatcher (DeepEP's normal kernels, HybridEP) moves per rank. Routing is taken
// as uniform, as Megatron-Core's force-balanced benchmarks run it (random router logits): each token picks k
// distinct experts at random, from its groups_per_token best groups when routing is group-limited (DeepSeek-V3
// report Section 2.1.2; with random scores the groups are a random draw too).

#include <cstdint>

#include "hardware/topology.h"
#include "models/model_spec.h"

namespace orrery {

/// Expected number of the `parts` equal, contiguous slices of the experts (ranks or NVLink domains of the EP group)
/// that one token's experts_per_token experts fall on, its experts uniform among its chosen groups. Exact for that
/// model (closed forms when slices hold whole groups or groups whole slices, else enumerating the sets of chosen
/// groups). Megatron-Core's group-limited router scores a group by its best experts, so chosen groups hold more of
/// the top-k than uniform: sampling its force-balanced routing gives 2-9% more slices than this for DeepSeek-V3.
/// `parts` must divide num_experts. Without groups: parts (1 - C(E - E/parts, k) / C(E, k)).
double expected_parts_reached(const MoeSpec& moe, int parts);

/// Per-rank bytes of one flex dispatch (the combine moves the same in reverse) of `tokens` tokens of
/// `token_bytes` each over the EP group placed as `ep`, for the busiest rank receiving `load` times the average:
/// across domains each token goes once to every other domain it needs (to the GPU of its sender's local index
/// there), inside them once to every rank it needs that is not the GPU it landed on:
/// network = tokens x min(load D_domains, domains) x (domains - 1) / domains x token_bytes,
/// nvlink = tokens x min(load D_ranks, ep) x (1 - 1 / ranks_per_domain) x token_bytes (a rank gets each token at
/// most once per sender).
struct FlexDispatchBytes {
  std::int64_t nvlink = 0;
  std::int64_t network = 0;
};
FlexDispatchBytes flex_dispatch_bytes(const MoeSpec& moe, const GroupPlacement& ep, std::int64_t tokens,
                                      std::int64_t token_bytes, double load = 1.0);

}  // namespace orrery
