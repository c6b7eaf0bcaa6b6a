#pragma once
// What the engine simulates of the programs: instances, each running one program (a pipeline stage's) for one or
// more ranks, and the rendezvous groups they meet in. sim/instances.h builds it from the parallel plan; the engine
// reads it and knows nothing of how ranks were grouped.

#include <cstdint>
#include <vector>

#include "sim/engine/workload_graph.h"

namespace orrery {

struct Instance {
  int program = 0;                 // pipeline stage
  int representative_rank = 0;     // lowest global rank it stands for
  int rank_count = 1;              // ranks it stands for
  double compute_slowdown = 1.0;   // multiplies its compute durations (tasks on a StreamInfo::compute stream)
  /// Multiplies the durations of its tasks that demand the network port (a role of the "port_fair_share" resource
  /// model: transfers that leave its NVLink domain), whether or not that model is enabled; 1: none. A rendezvous
  /// takes as long as its slowest member, so a slow port slows its whole group, as the slowest link paces a ring.
  double network_slowdown = 1.0;
  /// Seconds after time 0 at which its host begins issuing its program (with no host timeline: at which its first
  /// tasks become ready); 0: at once. A host stall before the step (a late launch, a garbage-collection pause).
  Seconds start_delay = 0;
  /// Whether any of its per-instance factors departs from the identity.
  bool perturbed() const { return compute_slowdown != 1.0 || network_slowdown != 1.0 || start_delay != 0; }
};

/// Instances and their rendezvous groups. group_of[i * group_kinds + kind] is the group id instance i uses for
/// tasks of group kind `kind` (WorkloadGraph::group_kinds' index; -1: none); group_size[g] counts the instances in
/// group g.
struct Instantiation {
  std::vector<Instance> instances;
  int group_kinds = 0;  // must equal WorkloadGraph::group_kinds.size()
  std::vector<std::int32_t> group_of;
  std::vector<std::int32_t> group_size;

  std::int32_t group(std::size_t instance, std::uint8_t kind) const {
    return group_of[instance * static_cast<std::size_t>(group_kinds) + kind];
  }
};

}  // namespace orrery
