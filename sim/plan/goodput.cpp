#include "sim/plan/goodput.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "models/error.h"
#include "models/units.h"
#include "sim/plan/checkpoint_interval.h"
#include "sim/plan/goodput_process.h"

namespace orrery {

namespace {

constexpr double kSecondsPerHour = 3600.0;

// Seconds from the restart decision to machines ready, by strategy.
// Source (requeue): Meta's cold recovery of a synchronous job at 16K GPUs, ~200 s of which NCCL initialisation is
// 17 s (FT-HSDP, arXiv:2602.00277, Figure 2, as quoted by secondary summaries): 183 s for requeue and allocation.
constexpr double kRequeueS = 183.0;
// Assumed (ByteRobust's Table 7 and Figure 12 were not available to this model's author): rescheduling only the
// evicted machines keeps the healthy ones, taken as half a requeue; a warm standby swaps in pre-validated machines
// whose pods are already up, 30 s; an in-place hot update restarts the processes on the same machines, 10 s.
constexpr double kRescheduleS = kRequeueS / 2.0;
constexpr double kWarmStandbyS = 30.0;
constexpr double kHotUpdateS = 10.0;

void check_positive(double value, const char* field) {
  require(std::isfinite(value) && value > 0, field, fmt::format("{}", value), "must be finite and above 0");
}

void check_non_negative(double value, const char* field) {
  require(std::isfinite(value) && value >= 0, field, fmt::format("{}", value), "must be finite and at least 0");
}

void check_job(const GoodputJob& job) {
  check_positive(job.gpus, "gpus");
  check_non_negative(job.compute_s, "compute_s");
  check_positive(job.step_s, "step_s");
  check_non_negative(job.checkpoint_bytes_per_gpu, "checkpoint_bytes_per_gpu");
}

void check_spec(const CheckpointSpec& spec) {
  check_positive(spec.storage_write_GB_s_per_node, "checkpoint.storage_write_GB_s_per_node");
  check_positive(spec.storage_read_GB_s_per_node, "checkpoint.storage_read_GB_s_per_node");
  check_positive(spec.storage_GB_s_total, "checkpoint.storage_GB_s_total");
  check_positive(spec.device_to_host_GB_s, "checkpoint.device_to_host_GB_s");
  check_positive(spec.peer_network_GB_s_per_node, "checkpoint.peer_network_GB_s_per_node");
  check_positive(spec.gpus_per_node, "checkpoint.gpus_per_node");
  if (spec.interval_s) check_positive(*spec.interval_s, "checkpoint.interval_s");
}

void check_failures(const FailureModel& failures) {
  for (const FailureCategory& c : failures.categories) {
    check_non_negative(c.rate_per_gpu_hour, fmt::format("failures.categories.{}.rate_per_gpu_hour", c.name).c_str());
    check_non_negative(c.detection_s, fmt::format("failures.categories.{}.detection_s", c.name).c_str());
  }
  check_non_negative(failures.recovery_s, "failures.recovery_s");
}

// Seconds for the job's nodes to move `bytes_per_node` each through per-node bandwidth `per_node_GB_s`, capped by the
// aggregate `total_GB_s` shared by all nodes.
double node_transfer_s(double bytes_per_node, double nodes, double per_node_GB_s, double total_GB_s) {
  const double bandwidth = from_GB_s(std::min(per_node_GB_s, total_GB_s / nodes));
  return bytes_per_node / bandwidth;
}

}  // namespace

const char* recovery_name(RecoveryStrategy strategy) {
  switch (strategy) {
    case RecoveryStrategy::kRequeue: return "requeue";
    case RecoveryStrategy::kReschedule: return "reschedule";
    case RecoveryStrategy::kWarmStandby: return "warm_standby";
    case RecoveryStrategy::kHotUpdate: return "hot_update";
  }
  return "?";
}

double default_recovery_s(RecoveryStrategy strategy) {
  switch (strategy) {
    case RecoveryStrategy::kRequeue: return kRequeueS;
    case RecoveryStrategy::kReschedule: return kRescheduleS;
    case RecoveryStrategy::kWarmStandby: return kWarmStandbyS;
    case RecoveryStrategy::kHotUpdate: return kHotUpdateS;
  }
  return kRequeueS;
}

const char* checkpoint_mode_name(CheckpointMode mode) {
  switch (mode) {
    case CheckpointMode::kBlocking: return "blocking";
    case CheckpointMode::kAsync: return "async";
    case CheckpointMode::kInMemory: return "in_memory";
    case CheckpointMode::kEveryStep: return "every_step";
  }
  return "?";
}

double startup_s(const StartupModel& model, double gpus) {
  check_positive(gpus, "gpus");
  check_positive(model.reference_s, "failures.startup.reference_s");
  check_positive(model.reference_gpus, "failures.startup.reference_gpus");
  check_non_negative(model.exponent, "failures.startup.exponent");
  return model.reference_s * std::pow(gpus / model.reference_gpus, model.exponent);
}

double job_failure_rate_per_s(const FailureModel& failures, double gpus) {
  double rate = 0;
  for (const FailureCategory& c : failures.categories) rate += c.rate_per_gpu_hour * gpus / kSecondsPerHour;
  return rate;
}

CheckpointCost checkpoint_cost(const CheckpointSpec& spec, const GoodputJob& job, double interval_s) {
  check_spec(spec);
  check_job(job);
  check_positive(interval_s, "checkpoint interval");
  const double nodes = std::max(1.0, job.gpus / spec.gpus_per_node);
  const double bytes_per_node = job.checkpoint_bytes_per_gpu * std::min(job.gpus, spec.gpus_per_node);
  const double write_s =
      node_transfer_s(bytes_per_node, nodes, spec.storage_write_GB_s_per_node, spec.storage_GB_s_total);
  const double read_s = node_transfer_s(bytes_per_node, nodes, spec.storage_read_GB_s_per_node, spec.storage_GB_s_total);
  const double snapshot_s = job.checkpoint_bytes_per_gpu / from_GB_s(spec.device_to_host_GB_s);
  const double peer_s = bytes_per_node / from_GB_s(spec.peer_network_GB_s_per_node);

  CheckpointCost cost;
  cost.mode = spec.mode;
  cost.interval_s = interval_s;
  switch (spec.mode) {
    case CheckpointMode::kBlocking:
      cost.save_stall_s = write_s;
      cost.load_s = read_s;
      break;
    case CheckpointMode::kAsync:
      cost.persist_s = write_s;
      cost.save_stall_s = snapshot_s + std::max(0.0, write_s - interval_s);
      cost.load_s = read_s;
      break;
    case CheckpointMode::kInMemory:
    case CheckpointMode::kEveryStep:
      cost.persist_s = peer_s;
      cost.save_stall_s = snapshot_s + std::max(0.0, peer_s - interval_s);
      cost.load_s = peer_s;
      break;
  }
  return cost;
}

CheckpointCost choose_checkpoint(const CheckpointSpec& spec, const GoodputJob& job, const FailureModel& failures) {
  check_failures(failures);
  const double floor_s = job.step_s;
  CheckpointCost cost;
  if (spec.mode == CheckpointMode::kEveryStep) {
    cost = checkpoint_cost(spec, job, job.step_s);
    cost.interval_rule = "every_step";
    return cost;
  }
  if (spec.interval_s) {
    cost = checkpoint_cost(spec, job, *spec.interval_s);
    cost.interval_rule = "given";
    return cost;
  }
  const double rate = job_failure_rate_per_s(failures, job.gpus);
  const CheckpointCost probe = checkpoint_cost(spec, job, std::max(floor_s, 1.0));
  double interval = std::max(job.compute_s, floor_s);
  if (rate > 0) {
    // The stall once the background copy keeps up (snapshot only, or the blocking write).
    const double delta = spec.mode == CheckpointMode::kBlocking ? probe.save_stall_s
                                                                : job.checkpoint_bytes_per_gpu /
                                                                      from_GB_s(spec.device_to_host_GB_s);
    interval = std::max({daly_checkpoint_interval_s(delta, 1.0 / rate), probe.persist_s, floor_s});
  }
  cost = checkpoint_cost(spec, job, interval);
  cost.interval_rule = "daly";
  return cost;
}

GoodputExpectation expected_goodput_at(const FailureModel& failures, const CheckpointCost& checkpoint,
                                       const GoodputJob& job) {
  check_job(job);
  check_failures(failures);
  const GoodputProcess process = make_goodput_process(failures, checkpoint, job);
  const ProcessExpectation e = expected_process_time(process);

  GoodputExpectation out;
  out.checkpoint = checkpoint;
  out.effective_time_to_train_s = e.time_s;
  out.ettr = e.time_s > 0 ? job.compute_s / e.time_s : 1.0;
  out.failures_expected = e.failures;
  out.job_mtbf_s = process.rate_per_s > 0 ? 1.0 / process.rate_per_s : std::numeric_limits<double>::infinity();
  out.lost.checkpoint_saves = e.completed_saves * checkpoint.save_stall_s;
  out.lost.lost_work = e.lost_work_s;
  out.lost.startup = process.initial_startup_s;
  for (std::size_t i = 0; i < failures.categories.size(); ++i) {
    const FailureCategory& c = failures.categories[i];
    const double share = process.rate_per_s > 0 ? process.category_rate_per_s[i] / process.rate_per_s : 0.0;
    const double count = e.failures * share;
    out.lost.detection += count * c.detection_s;
    out.lost.recovery += count * process.recovery_s;
    out.lost.checkpoint_loads += count * process.load_s;
    out.lost.startup += count * process.restart_startup_s;
    out.categories.push_back({c.name, c.rate_per_gpu_hour, count,
                              count * process.downtime_s[i] + share * e.lost_work_s});
  }
  return out;
}

GoodputExpectation expected_goodput(const FailureModel& failures, const CheckpointSpec& spec, const GoodputJob& job) {
  return expected_goodput_at(failures, choose_checkpoint(spec, job, failures), job);
}

std::vector<IntervalPoint> ettr_vs_checkpoint_interval(const FailureModel& failures, const CheckpointSpec& spec,
                                                       const GoodputJob& job) {
  const CheckpointCost chosen = choose_checkpoint(spec, job, failures);
  std::vector<IntervalPoint> points;
  for (double factor : {0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0}) {
    double interval = std::max(job.step_s, chosen.interval_s * factor);
    interval = std::max(1.0, std::round(interval / job.step_s)) * job.step_s;
    if (!points.empty() && interval <= points.back().interval_s) continue;
    points.push_back({interval, expected_goodput_at(failures, checkpoint_cost(spec, job, interval), job).ettr});
  }
  return points;
}

}  // namespace orrery
