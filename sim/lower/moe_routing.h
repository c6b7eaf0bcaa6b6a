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
/// that one token's experts_per_token experts fall on. Exact when every slice holds whole routing groups or every
/// group spans whole slices (always true without group-limited routing); otherwise group limits are ignored (an
/// upper estimate). `parts` must divide num_experts. Without groups: parts (1 - C(E - E/parts, k) / C(E, k)).
double expected_parts_reached(const MoeSpec& moe, int parts);

/// Per-rank bytes of one flex dispatch (the combine moves the same in reverse) of `tokens` tokens of
/// `token_bytes` each over the EP group placed as `ep`: across domains each token goes once to every other
/// domain it needs (to the GPU of its sender's local index there), inside them once to every rank it needs that
/// is not the GPU it landed on: network = tokens x D_domains x (domains - 1) / domains x token_bytes,
/// nvlink = tokens x D_ranks x (1 - 1 / ranks_per_domain) x token_bytes.
struct FlexDispatchBytes {
  std::int64_t nvlink = 0;
  std::int64_t network = 0;
};
FlexDispatchBytes flex_dispatch_bytes(const MoeSpec& moe, const GroupPlacement& ep, std::int64_t tokens,
                                      std::int64_t token_bytes);

}  // namespace orrery
