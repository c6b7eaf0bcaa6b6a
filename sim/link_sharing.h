#pragma once
// Concurrent collectives sharing the fabric's uplinks (ARCHITECTURE.md "Cost models"), the model a scenario's
// `placement` section turns on (ClusterSpec::shared_links) in place of each tier's fixed oversubscription.
//
// The fabric: tier i of cluster.network groups fabric nodes into blocks of network[i].nodes (0: one block of all).
// Its `oversubscription` o_i is the down:up ratio of the links that carry traffic from the blocks one tier in
// (single nodes for i = 0) up into tier i: a child block of c nodes has c x node NIC bandwidth / o_i of uplink
// (a fat tree with o_i:1 tapering, as in Leiserson's fat trees and the leaf/spine/minipod fabrics of Arnold,
// arXiv:2509.15940, Section 2).
//
// The traffic: NCCL's ring moves a collective from each member node to the next in communicator (rank) order,
// each node sending at its ring rate (the members it holds x its NIC share per GPU, the rate the collective cost
// model gives the ring, hardware/collective_cost.h) on every hop; a point-to-point pair sends one hop. A hop whose
// ends lie in different child blocks of tier i leaves the first one through its uplinks. All groups of one kind in
// the job run at once (the steady state of a pipeline sends on every stage together, and the data-parallel
// reductions of all stages overlap at the end of the step, one micro-batch's backward apart); other kinds are not
// counted against them.
//
// The share: the uplinks of a child block are split in proportion to demand, so each hop leaving it is slowed by
// max(1, demand / capacity), demand = the ring rates of the kind's hops leaving it; a group runs at the rate of its
// worst hop, so its effective oversubscription is the largest such factor over the blocks it leaves (1 when it is the
// only one leaving; o_i when every node of the block sends out).

#include <vector>

#include "hardware/topology.h"
#include "sim/rank_layout.h"

namespace orrery {

/// Uplink capacity, bytes/s, of one child block of tier `tier` (cluster.network index): child nodes x node NIC
/// bandwidth / oversubscription. Child nodes: 1 for tier 0, else network[tier - 1].nodes. 0 when the child tier is
/// unbounded (no traffic can leave it).
BytesPerSecond uplink_capacity(const ClusterSpec& cluster, int tier);

/// The slowdown of a flow through links of `capacity` bytes/s that carry `demand` bytes/s in all, shared in
/// proportion to demand: max(1, demand / capacity); 1 for no demand or no capacity limit (capacity 0 = none).
double share_factor(BytesPerSecond demand, BytesPerSecond capacity);

/// The uplink load of one kind of group over the whole job: for each tier, the demand (bytes/s) on the uplinks of
/// each child block, indexed by fabric node / child nodes.
struct UplinkLoad {
  std::vector<std::vector<BytesPerSecond>> demand;  // [tier][child block]
};

/// Sums the hops of every `kind` group of the job (ranks.group_members, placed by physical_gpu) into UplinkLoad.
UplinkLoad uplink_load(const ClusterSpec& cluster, const RankLayout& ranks, GroupKind kind);

/// The effective oversubscription of the group `members` (group order) under `load`: the largest share_factor over
/// the child blocks its hops leave, at every tier; 1 when it never leaves a node.
double group_share_factor(const ClusterSpec& cluster, const UplinkLoad& load, const std::vector<int>& members,
                          bool pair);

/// costliest_group_placement (sim/group_placement.h) under a cluster.rank_gpu or shared links: every group of
/// `kind` holding ranks of `stage` placed with place_members, its oversubscription replaced by its share factor
/// when the cluster shares links, the worst kept: the lowest network bandwidth per member node's share
/// (oversubscription / ranks per node) among groups that cross the network, else hardware/topology.h's costlier.
/// O(ranks x group size) per call.
GroupPlacement shared_costliest_placement(const ClusterSpec& cluster, const RankLayout& ranks, GroupKind kind,
                                          int stage);

}  // namespace orrery
