#pragma once
// The scenario's `placement` section (ARCHITECTURE.md "Scenario file"): where the job's
// ranks run on the fabric, as a policy or an explicit map. A plain struct read by parse_placement
// (sim/placement_parse.cpp) and resolved into cluster.rank_gpu by resolve_rank_placement (sim/placement.h).

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace orrery {

/// How the job's nodes are chosen among the fabric's and ordered:
/// - sequential: the fabric's first nodes in order (Megatron-LM's rank order on a scheduler that packs; today's
///   behaviour);
/// - random: `seed`ed uniform choice of the job's nodes among the fabric's, in random order (a scheduler that
///   scatters a job over whatever nodes are free);
/// - optimized: Arnold's alignment (sim/placement.h, optimize_node_order): pipeline-stage x data-parallel blocks of
///   nodes packed into the outermost tier's blocks (minipods) to minimise the weighted largest DP and PP spread;
/// - explicit: `rank_to_node`, the fabric node of each job node (or each rank).
enum class PlacementPolicy { kSequential, kRandom, kOptimized, kExplicit };

inline constexpr std::pair<const char*, PlacementPolicy> kPlacementPolicyNames[] = {
    {"sequential", PlacementPolicy::kSequential},
    {"random", PlacementPolicy::kRandom},
    {"optimized", PlacementPolicy::kOptimized},
    {"explicit", PlacementPolicy::kExplicit}};

const char* to_string(PlacementPolicy policy);

struct PlacementSpec {
  PlacementPolicy policy = PlacementPolicy::kSequential;
  std::uint64_t seed = 1;  // random only
  /// explicit only: as given, either one fabric node per job node (num_gpus / gpus_per_node entries) or one per
  /// rank (num_gpus entries, each node's ranks consecutive and whole: rank r and r + 1 on one node unless r + 1
  /// starts a node).
  std::vector<int> rank_to_node;
  /// Nodes on the fabric the scheduler chooses from (0: the job's own nodes). Fabric nodes are numbered as the
  /// cluster's network tiers group them.
  int fabric_nodes = 0;
  /// Arnold's objective weights (optimized only): cost = dp_weight x largest DP spread + pp_weight x largest PP
  /// spread, spreads in outermost-tier blocks (minipods).
  double dp_weight = 1.0;
  double pp_weight = 1.0;
};

/// Reads a scenario's `placement` value: {"policy": NAME, "seed": N, "fabric_nodes": N, "dp_weight": W,
/// "pp_weight": W} or {"rank_to_node": [...], "fabric_nodes": N}. Unknown keys, an unknown policy, a seed given
/// without policy random, rank_to_node with a policy other than explicit, negative node indices: Error::invalid
/// naming the `placement.*` field, the value and the rule. Cross-section rules (node index within the fabric, each
/// node used at most gpus_per_node times) are checked by resolve_rank_placement.
PlacementSpec parse_placement(const nlohmann::json& value);

}  // namespace orrery
