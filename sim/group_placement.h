#pragma once
// Where a plan's communication groups fall on the cluster. In a homogeneous job every group of one kind behaves
// alike except for where its members sit: a TP group of 6 on 8-GPU nodes is whole on the first node but split 2 + 4
// across the next two, and one slow group holds up the step at the next data-parallel rendezvous. So a stage's
// collectives of a kind are priced at the costliest placement among that stage's groups of the kind.

#include <vector>

#include "hardware/topology.h"
#include "sim/rank_layout.h"
#include "sim/scenario.h"

namespace orrery {

/// The costliest placement (hardware/topology.h, costlier) among the `kind` groups that hold ranks of pipeline
/// stage `stage`, each placed where the scheduler put its members (physical_gpu). For the point-to-point kinds:
/// the costliest pair. Size 1 when the stage has no such group. O(ranks of the stage) group look-ups; groups a
/// domain period apart share their domain and node counts (only their network tier is found again).
/// On a pool of a mixed cluster, `cluster` is the pool and `stage_base` the PoolAssignment's (a rank r of stage t is
/// the pool's GPU r - stage_base[t]); empty: ranks are the cluster's GPUs in order.
GroupPlacement costliest_group_placement(const ClusterSpec& cluster, const RankLayout& ranks, GroupKind kind,
                                         int stage, const std::vector<int>& stage_base = {});

/// Slurm --segment as NVIDIA's launchers set it when a cluster's NVLink domain spans several nodes
/// (Megatron-Bridge scripts/performance/utils/executors.py at 067f987d, 2026-08: for 4-GPU nodes, a job of at
/// most 18 nodes, one NVL72 rack, gets its node count; a larger one the largest divisor of its node count up to
/// 18), with 18 generalised to the cluster's nodes per domain. 0 for clusters whose domain is one node.
int default_segment_nodes(const ClusterSpec& cluster);

/// Resolves cluster.segment_nodes (the default above when not given) and checks it: at most one domain's nodes and
/// dividing the job's nodes, as Slurm requires. Then warns, for each of the TP, CP and EP groups (and expert TP),
/// when one straddles NVLink domains: its collectives cross the network. Errors name cluster.segment_nodes. Also
/// resolves the scenario's `placement` (sim/placement.h, resolve_rank_placement) and its errors.
void resolve_placement(Scenario& s);

}  // namespace orrery
