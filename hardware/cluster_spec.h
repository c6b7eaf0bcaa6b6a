#pragma once
// A GPU cluster: nodes of GPUs on an NVLink (or Infinity Fabric) domain, NICs, and a rail-optimised fat tree of
// network tiers (hardware/presets/clusters.json gives each number with its source).

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hardware/gpu_spec.h"
#include "models/units.h"

namespace orrery {

struct GpuProfile;  // hardware/gpu_profile.h

struct NetworkTier {
  std::string name;               // "leaf", "spine", ...
  int nodes = 0;                  // nodes reachable within this tier; 0 = unbounded
  Seconds latency = 0;            // one hop through this tier's switches
  double oversubscription = 1.0;  // down:up bandwidth ratio at this tier (1 = non-blocking)
};

/// How a node's NICs carry traffic between nodes: InfiniBand or RoCE (RDMA with GPUDirect: NCCL's IB transport), or
/// plain Ethernet (TCP sockets: NCCL's socket transport). Two nodes have a common RDMA path only when both are
/// InfiniBand or both RoCE: an InfiniBand HCA and a RoCE NIC speak different link layers (Holmes, arXiv:2312.03549,
/// Section 2), so such a pair, or any pair with an Ethernet-only side, falls back to TCP.
enum class NicTransport { kInfiniband, kRoce, kEthernet };
inline constexpr std::pair<const char*, NicTransport> kNicTransportNames[] = {
    {"infiniband", NicTransport::kInfiniband}, {"roce", NicTransport::kRoce}, {"ethernet", NicTransport::kEthernet}};
const char* to_string(NicTransport transport);

struct ClusterSpec {
  /// The cluster's name; for one of `pools`, the pool's name (unique within the cluster).
  std::string name;
  std::string display_name;
  GpuSpec gpu;
  int num_gpus = 0;             // 0 until the scenario fixes it (it may be derived from the plan)
  int gpus_per_node = 8;
  int nvlink_domain_size = 8;   // GPUs on one NVLink/NVSwitch fabric (72 on NVL72)
  bool nvls = false;            // NVLink SHARP in-switch reduction
  int nics_per_node = 8;
  BytesPerSecond nic_bandwidth = 0;  // one NIC's line rate
  Seconds nvlink_latency = 0;        // one NVLink hop as NCCL's tuning model charges it
  Seconds nic_latency = 0;           // one network hop as NCCL's tuning model charges it
  BytesPerSecond host_memory_bandwidth = 0;  // the node's CPU DRAM bandwidth, all sockets (0: unknown)
  std::vector<NetworkTier> network;  // innermost first
  /// The NICs' transport (`nic_type`); InfiniBand unless the description says otherwise.
  NicTransport nic_transport = NicTransport::kInfiniband;
  /// A mixed cluster (`cluster.pools`): one description per pool of like GPUs, nodes and NICs, in the order the
  /// scenario lists them, each with its name and its GPU count (num_gpus). Empty for a homogeneous cluster. When
  /// given, the fields above are pool 0's (so that readers of one GPU see a real one), `name` is the cluster's,
  /// and num_gpus the job's; sim/job/job.h says which pool runs each pipeline stage.
  std::vector<ClusterSpec> pools;
  /// Slurm's --segment: the job's nodes come in blocks of this many, each block inside one NVLink domain, as
  /// NVIDIA's launchers allocate NVL72 racks (hardware/topology.h, physical_gpu). 0: ranks fill the domains in
  /// order; kSegmentDefault until the scenario resolves it (sim/scenario_validate.cpp, default_segment_nodes).
  int segment_nodes = kSegmentDefault;
  static constexpr int kSegmentDefault = -1;
  /// Where the scheduler put the job's ranks, from the scenario's `placement` (sim/placement.h): entry r is the
  /// physical GPU of global rank r, fabric node x gpus_per_node + slot. Fabric nodes are numbered as `network`
  /// groups them (fabric node f sits in block f / tier.nodes of each tier) and as NVLink domains do (f /
  /// nodes_per_domain()). Empty: the job's nodes are the fabric's first ones, in rank order (physical_gpu with
  /// segment_nodes). Non-empty, it replaces segment_nodes and has num_gpus entries.
  std::vector<int> rank_gpu;
  /// True when concurrent collectives share the uplinks they cross (sim/link_sharing.h) instead of each paying its
  /// outermost tier's fixed oversubscription (hardware/collective_cost.h): set by a scenario's `placement` section,
  /// so a scenario without one keeps the fixed factor.
  bool shared_links = false;
  /// A measured GPU profile the cluster names ("profile": a built-in name or a file), used where `--profile` is not
  /// given; nullptr when none.
  std::shared_ptr<const GpuProfile> profile;

  bool has_pools() const { return !pools.empty(); }
  int num_nodes() const { return (num_gpus + gpus_per_node - 1) / gpus_per_node; }
  /// Nodes on one NVLink domain (18 compute trays on an NVL72 rack, 1 on an 8-GPU HGX node).
  int nodes_per_domain() const { return nvlink_domain_size / gpus_per_node; }
  /// A GPU's share of its node's NIC bandwidth.
  BytesPerSecond nic_bandwidth_per_gpu() const {
    return nic_bandwidth * static_cast<double>(nics_per_node) / static_cast<double>(gpus_per_node);
  }
};

/// Parses a scenario's cluster value: a preset name, {"preset": NAME, "num_gpus": N, ...overrides}, or a full
/// inline description. Unknown keys are errors. Errors name `path` ("cluster"). A "profile" value names a built-in
/// profile (hardware/profiles/NAME.json) or a profile file, relative to `base_dir` (the scenario's folder).
ClusterSpec parse_cluster(const nlohmann::json& value, const std::string& path,
                          const std::filesystem::path& base_dir = {});

struct PresetSummary {
  std::string name;
  std::string display_name;
};
std::vector<PresetSummary> gpu_presets();
std::vector<PresetSummary> cluster_presets();

}  // namespace orrery
