#pragma once
// Where the job's ranks run on the fabric (the scenario's `placement`, sim/placement_spec.h): the scheduler
// policies, Arnold's placement optimiser, and each kind of group's spread for the report.
//
// Arnold (He, Jiang et al., "Efficient Pre-Training of LLMs via Topology-Aware Communication Alignment on More
// Than 9600 GPUs", NeurIPS 2025, arXiv:2509.15940; ByteDance's scheduler): a job's data-parallel and pipeline
// groups should span as few minipods (the blocks under the outermost, oversubscribed tier) as possible, and since
// every GPU is in one DP and one PP group both cannot be minimal at once; Arnold minimises a weighted sum of the
// largest DP spread and the largest PP spread (reported: up to 1.67x smaller largest spread in simulation, +10.6%
// end to end in production on more than 9,600 GPUs).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace orrery {

/// Resolves s.placement (absent: nothing changes) into s.cluster.rank_gpu and turns on shared links
/// (ClusterSpec::shared_links, sim/link_sharing.h). Needs num_gpus and the plan resolved. Policy sequential keeps
/// rank_gpu empty (ranks fill the fabric's first nodes in order, segment_nodes as before).
/// Errors (Error::invalid): placement.fabric_nodes below the job's nodes; placement.rank_to_node of the wrong
/// length (neither one entry per job node nor one per rank), naming a node at or beyond the fabric's nodes, or
/// filling a node with more than gpus_per_node ranks.
void resolve_rank_placement(Scenario& s);

/// A scheduler that scatters the job: `job_nodes` distinct fabric nodes of [0, fabric_nodes), drawn uniformly in a
/// uniformly random order by a Fisher-Yates shuffle driven by SplitMix64 from `seed` (same seed, same order, on
/// every platform). Requires job_nodes <= fabric_nodes.
std::vector<int> random_node_order(int job_nodes, int fabric_nodes, std::uint64_t seed);

/// Arnold's alignment, made exact over aligned tilings: the job's nodes form a grid of pipeline stages (rows) by
/// data-parallel blocks (columns: the nodes of one stage's DP index, tp x cp ranks, or the DP indices sharing one
/// node); a tile of a columns x b rows goes to one outermost-tier block (minipod) of B nodes (a b x nodes per cell
/// <= B, tiles <= fabric_nodes / B). Every tile shape is tried and the one minimising dp_weight x ceil(cols / a) +
/// pp_weight x ceil(rows / b) (the largest DP and PP spreads in minipods) wins; ties go to fewer tiles, then to
/// wider tiles. Inside a tile, nodes run DP index fastest, so a DP group's members share the inner tiers too.
/// Returns the fabric node of each job node; the sequential order (0, 1, ...) when there is no bounded tier, the
/// job fits in one block, the tp x cp ranks neither fill whole nodes nor divide one, or no tiling fits.
std::vector<int> optimize_node_order(const ClusterSpec& cluster, const ParallelPlan& plan, int fabric_nodes,
                                     double dp_weight, double pp_weight);

/// One kind of group's spread over the fabric: the largest over the job's groups of that kind.
struct KindSpread {
  std::string kind;         // dp, pp (a whole pipeline: one rank of each stage), tp, cp, ep
  int groups = 0;           // groups of the kind with more than one member
  int blocks = 1;           // outermost-tier blocks (minipods) the most spread group spans
  int nodes = 1;            // nodes the most spread group spans
  std::string tier;         // the outermost tier any group crosses: "node", "nvlink" or a network tier's name
  double link_factor = 1;   // the largest effective oversubscription (sim/link_sharing.h) of the kind's groups
                            // (pp: of its forward sends); 1 without shared links
};

struct PlacementSummary {
  std::string policy;       // sequential, random, optimized, explicit
  int job_nodes = 0;
  int fabric_nodes = 0;
  std::string block_tier;   // the tier whose blocks `blocks` counts (the outermost with a node count)
  int block_nodes = 0;      // its nodes per block (0: one block holds everything)
  std::vector<KindSpread> kinds;  // dp, pp, tp, cp, ep, in that order
};

/// The placement's spreads for the report. `s` validated (parse_scenario or resolve). O(ranks x log).
PlacementSummary summarize_placement(const Scenario& s);

}  // namespace orrery
