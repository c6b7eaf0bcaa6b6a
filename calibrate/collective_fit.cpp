#include "calibrate/collective_fit.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>

#include "calibrate/least_squares.h"
#include "models/error.h"
#include "models/json_fields.h"

namespace orrery {

namespace {

CollectiveKind parse_kind(const std::string& op, const std::string& field) {
  if (op == "all_reduce") return CollectiveKind::kAllReduce;
  if (op == "all_gather") return CollectiveKind::kAllGather;
  if (op == "reduce_scatter") return CollectiveKind::kReduceScatter;
  if (op == "all_to_all") return CollectiveKind::kAllToAll;
  if (op == "send_recv") return CollectiveKind::kSendRecv;
  throw Error::invalid(field, op, "must be all_reduce, all_gather, reduce_scatter, all_to_all or send_recv");
}

}  // namespace

std::vector<BusBandwidthSample> load_collective_samples(const std::filesystem::path& manifest, Bytes min_bytes,
                                                      Bytes min_bytes_single_node) {
  nlohmann::json doc = read_json_file(manifest, "manifest");
  std::vector<BusBandwidthSample> out;
  for (auto it = doc.at("logs").begin(); it != doc.at("logs").end(); ++it) {
    FieldReader entry(it.value(), "manifest." + it.key());
    const std::string preset = entry.require_string("cluster");
    const int nodes = static_cast<int>(entry.require_int("nodes", 1));
    const int per_node = static_cast<int>(entry.require_int("gpus_per_node", 1));
    const CollectiveKind kind = parse_kind(entry.require_string("op"), entry.field("op"));
    entry.reject_unknown();
    nlohmann::json cluster_json = {{"preset", preset}, {"num_gpus", nodes * per_node}};
    ClusterSpec cluster = parse_cluster(cluster_json, "manifest." + it.key() + ".cluster");
    std::vector<int> members;
    for (int r = 0; r < nodes * per_node; ++r) members.push_back(r);
    const GroupPlacement placement = place_members(cluster, members);
    const NcclTestsLog log = read_nccl_tests_log(manifest.parent_path() / it.key());
    const Seconds harness = harness_overhead(log, cluster, kind, placement);
    const Bytes smallest =
        placement.tier == Tier::kNvlink && min_bytes_single_node >= 0 ? min_bytes_single_node : min_bytes;
    for (const NcclTestsRow& row : log.rows) {
      if (row.bytes < smallest || row.bus_bandwidth <= 0) continue;
      out.push_back({it.key(), cluster, CollectiveOp{kind, row.bytes, placement}, row.bus_bandwidth, harness});
    }
  }
  return out;
}

Seconds harness_overhead(const NcclTestsLog& log, const ClusterSpec& cluster, CollectiveKind kind,
                         const GroupPlacement& placement) {
  if (log.gpus_per_process <= 1) return 0.0;
  for (const NcclTestsRow& row : log.rows) {
    if (row.bytes <= 0) continue;
    NetworkParams bare{.nvlink_efficiency = 1.0, .nvls_efficiency = 1.0, .nic_efficiency = 1.0};
    const CollectivePlan tiny = NcclCollectiveModel(cluster, bare).plan(CollectiveOp{kind, row.bytes, placement});
    return std::max(0.0, row.time - tiny.latency);
  }
  return 0.0;
}

BytesPerSecond predicted_bus_bandwidth(const BusBandwidthSample& s, const NetworkParams& params) {
  const CollectivePlan plan = NcclCollectiveModel(s.cluster, params).plan(s.op);
  return plan.bus_bandwidth * plan.time / (plan.time + s.harness_overhead);
}

NetworkParams fit_network_params(const std::vector<BusBandwidthSample>& samples, const NetworkParams& start) {
  std::vector<FitParameter> params = {
      {"nvlink_efficiency", start.nvlink_efficiency, 0.3, 1.0},
      {"nvls_efficiency", start.nvls_efficiency, 0.2, 1.0},
      {"nic_efficiency", start.nic_efficiency, 0.3, 1.0},
      {"pipeline_fill_us", to_us(start.pipeline_fill), 0.0, 500.0},
      {"pipeline_fill_half_MiB", static_cast<double>(start.pipeline_fill_half) / static_cast<double>(kMiB), 1.0 / 1024, 1024.0},
      {"network_call_latency_us", to_us(start.network_call_latency), 0.0, 500.0},
  };
  auto unpack = [&](const std::vector<double>& v) {
    NetworkParams p = start;
    p.nvlink_efficiency = v[0];
    p.nvls_efficiency = v[1];
    p.nic_efficiency = v[2];
    p.pipeline_fill = from_us(v[3]);
    p.pipeline_fill_half = from_MiB(v[4]);
    p.network_call_latency = from_us(v[5]);
    return p;
  };
  auto residuals = [&](const std::vector<double>& v) {
    const NetworkParams p = unpack(v);
    std::vector<double> r;
    // Errors are weighed against the acceptance bar of their kind of log: 15% inside one node, 25% across nodes
    // (multi-node runs vary more with the fabric and NCCL's choices).
    for (const BusBandwidthSample& s : samples) {
      const double bar = s.op.placement.tier == Tier::kNvlink ? 0.15 : 0.25;
      r.push_back(std::log(predicted_bus_bandwidth(s, p) / s.measured) / bar);
    }
    return r;
  };
  const FitResult fit = fit_least_squares(params, static_cast<int>(samples.size()), residuals);
  return unpack(fit.values);
}

std::vector<BandError> band_errors(const std::vector<BusBandwidthSample>& samples, const NetworkParams& params) {
  struct Band {
    const char* name;
    Bytes from, to;  // [from, to)
  };
  const Band bands[] = {{"1K-64K", 1 * kKiB, 64 * kKiB},
                        {"64K-8M", 64 * kKiB, 8 * kMiB},
                        {"8M-64M", 8 * kMiB, 64 * kMiB},
                        {">=64M", 64 * kMiB, std::numeric_limits<Bytes>::max()}};
  std::vector<BandError> out;
  for (const bool multi : {false, true}) {
    for (const Band& b : bands) {
      BandError e{b.name, multi};
      for (const BusBandwidthSample& s : samples) {
        if ((s.op.placement.tier != Tier::kNvlink) != multi || s.op.bytes < b.from || s.op.bytes >= b.to) continue;
        const double err = 100.0 * (predicted_bus_bandwidth(s, params) / s.measured - 1.0);
        ++e.rows;
        e.mean_abs_percent += std::fabs(err);
        e.mean_percent += err;
        if (std::fabs(err) > std::fabs(e.worst_percent)) e.worst_percent = err;
      }
      if (e.rows > 0) {
        e.mean_abs_percent /= e.rows;
        e.mean_percent /= e.rows;
      }
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace orrery
