// `orrery collective`: the predicted time and bus bandwidth of one collective on a cluster, optionally held
// against a real nccl-tests log.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "calibrate/collective_fit.h"
#include "calibrate/nccl_tests_log.h"
#include "hardware/collective_cost.h"
#include "hardware/cost_params.h"
#include "models/error.h"
#include "models/limits.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

struct CollectiveArgs {
  std::string cluster = "dgx-h100";
  std::optional<int> num_gpus;
  std::string op;  // empty: the log's collective, else all_reduce
  std::vector<std::string> bytes;
  std::string log;
};

CollectiveKind parse_op(const std::string& op) {
  if (op == "all_reduce") return CollectiveKind::kAllReduce;
  if (op == "all_gather") return CollectiveKind::kAllGather;
  if (op == "reduce_scatter") return CollectiveKind::kReduceScatter;
  if (op == "all_to_all") return CollectiveKind::kAllToAll;
  if (op == "send_recv") return CollectiveKind::kSendRecv;
  throw Error::invalid("--op", op, "must be all_reduce, all_gather, reduce_scatter, all_to_all or send_recv");
}

}  // namespace

Bytes parse_bytes(const std::string& text, const std::string& field) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    throw Error::invalid(field, text, "must be a size such as 1048576, 64M or 1G");
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K" || unit == "KiB") scale = static_cast<double>(kKiB);
  else if (unit == "M" || unit == "MiB") scale = static_cast<double>(kMiB);
  else if (unit == "G" || unit == "GiB") scale = static_cast<double>(kGiB);
  else if (!unit.empty() && unit != "B") throw Error::invalid(field, text, "has an unknown unit (use K, M or G: powers of 1024, as nccl-tests counts)");
  if (!(value > 0)) throw Error::invalid(field, text, "must be a positive number of bytes");
  // Past 2^63 the conversion to Bytes would wrap; no message or threshold comes near a pebibyte.
  constexpr double kMaxBytes = 1125899906842624.0;  // 2^50
  if (!(value * scale <= kMaxBytes)) throw Error::invalid(field, text, "must be at most 1048576G (2^50 bytes)");
  // Bytes are whole: 0.4 would price an empty message (a bandwidth of NaN), 1.5 would be cut to 1.
  const double bytes = value * scale;
  if (bytes != std::floor(bytes)) throw Error::invalid(field, text, "must be a whole number of bytes");
  return static_cast<Bytes>(bytes);
}

namespace {

void run_collective(const CollectiveArgs& a) {
  nlohmann::json cluster_json = {{"preset", a.cluster}};
  ClusterSpec cluster = parse_cluster(cluster_json, "--cluster");
  std::optional<NcclTestsLog> log;
  if (!a.log.empty()) log = read_nccl_tests_log(a.log);
  // Against a log, the group and the collective are the log's: a flag that contradicts them is refused.
  if (log && a.num_gpus && log->ranks > 0 && *a.num_gpus != log->ranks) {
    throw Error::invalid("--num-gpus", std::to_string(*a.num_gpus),
                         fmt::format("contradicts the --log, which ran on {} ranks", log->ranks));
  }
  int n = a.num_gpus.value_or(log && log->ranks > 0 ? log->ranks : cluster.gpus_per_node);
  require(n >= 2 && n <= limits::kGpus, "--num-gpus", std::to_string(n),
          fmt::format("must be from 2 to {} (limits::kGpus, the most GPUs of one job)", limits::kGpus));
  cluster.num_gpus = n;
  CollectiveKind kind = parse_op(a.op.empty() ? "all_reduce" : a.op);
  if (log && log->kind) {
    if (!a.op.empty() && kind != *log->kind) {
      throw Error::invalid("--op", a.op, fmt::format("contradicts the --log, which measured {}", to_string(*log->kind)));
    }
    kind = *log->kind;
  }
  std::vector<int> members;
  for (int r = 0; r < n; ++r) members.push_back(r);
  const GroupPlacement placement = place_members(cluster, members);
  const NcclCollectiveModel model(cluster, default_cost_params().network);
  // Sizes are read before anything is printed, so a bad one leaves only its error.
  std::vector<Bytes> sizes;
  if (!log) require(!a.bytes.empty(), "--bytes", "missing", "is required (or give --log)");
  for (const std::string& b : a.bytes) sizes.push_back(parse_bytes(b, "--bytes"));
  // With a log, --bytes picks its rows: each size must be one the log measured.
  if (log) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const bool measured = std::any_of(log->rows.begin(), log->rows.end(),
                                        [&](const NcclTestsRow& r) { return r.bytes == sizes[i]; });
      require(measured, "--bytes", a.bytes[i], "is not a size the --log measured");
    }
  }
  fmt::print("{} on {} x {} ({} node(s), tier {})\n", to_string(kind), n, cluster.gpu.display_name,
             (n + cluster.gpus_per_node - 1) / cluster.gpus_per_node, to_string(placement.tier));
  // A log of one process driving several GPUs (nccl-tests -g N) pays its own launch cost per call; the comparison
  // adds it to each prediction, as `orrery fit collectives` does.
  const Seconds harness = log ? harness_overhead(*log, cluster, kind, placement) : 0.0;
  if (harness > 0) {
    fmt::print("the log's harness drives {} GPUs from one process: {:.1f} us per call added to each prediction\n",
               log->gpus_per_process, to_us(harness));
  }
  fmt::print("{:>14} {:>12} {:>12} {:>16}", "bytes", "time us", "busbw GB/s", "algorithm");
  if (log) fmt::print(" {:>12} {:>8}", "measured", "error");
  fmt::print("\n");
  auto row = [&](Bytes bytes, std::optional<BytesPerSecond> measured) {
    const CollectivePlan plan = model.plan(CollectiveOp{kind, bytes, placement});
    const Seconds time = plan.time + harness;
    const BytesPerSecond bus = plan.bus_bandwidth * plan.time / time;
    fmt::print("{:>14} {:>12.1f} {:>12.2f} {:>16}", bytes, to_us(time), to_GB_s(bus),
               fmt::format("{}/{}", plan.algorithm, plan.protocol));
    if (measured) fmt::print(" {:>12.2f} {:>+7.1f}%", to_GB_s(*measured), 100.0 * (bus - *measured) / *measured);
    fmt::print("\n");
  };
  if (log) {
    for (const NcclTestsRow& r : log->rows) {
      if (r.bytes <= 0 || (!sizes.empty() && std::find(sizes.begin(), sizes.end(), r.bytes) == sizes.end())) continue;
      row(r.bytes, r.bus_bandwidth > 0 ? std::optional<BytesPerSecond>(r.bus_bandwidth) : std::nullopt);
    }
  } else {
    for (Bytes b : sizes) row(b, std::nullopt);
  }
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto args = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand("collective", "predict one collective's time and bus bandwidth");
  cmd->add_option("--cluster", args->cluster, "cluster preset (default dgx-h100; a log does not name its GPUs' preset: give it)")
      ->check(non_empty());
  cmd->add_option("--num-gpus", args->num_gpus, "ranks in the group, laid on consecutive GPUs (default: one node)");
  cmd->add_option("--op", args->op, "all_reduce, all_gather, reduce_scatter, all_to_all or send_recv (default: the --log's, else all_reduce)")
      ->check(non_empty());
  cmd->add_option("--bytes", args->bytes, "message sizes as nccl-tests counts them (1048576, 64M, 1G)")->delimiter(',');
  cmd->add_option("--log", args->log, "an nccl-tests output to compare with, size by size (--bytes: only those sizes)")
      ->check(non_empty_file());
  cmd->callback([args] { run_collective(*args); });
}

}  // namespace orrery::cli
