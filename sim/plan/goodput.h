#pragma once
// The goodput model of `orrery plan` (issue 23): failures by category, their detection, the recovery strategy, job
// start-up, checkpoint saving and reloading, and the expected wall-clock time and ETTR they give a job that needs
// `compute_s` seconds of fault-free training steps.
//
// The stochastic process (the one goodput_monte_carlo.h samples, and whose exact expectation expected_goodput
// returns):
//  - The job starts once (start-up, startup_s(gpus)), then runs its work in segments: ceil(T / tau) segments of tau
//    seconds of compute, each but the last followed by a checkpoint save that stalls training for save_stall_s; a save
//    is complete only at its end.
//  - Failures of category c arrive as a Poisson process of rate lambda_c = rate_per_gpu_hour_c x gpus / 3600 while
//    the job runs (computing or saving). The job's rate grows linearly with its GPU count: Kokolis et al., "Revisiting
//    Reliability in Large-Scale ML Research Clusters", arXiv:2410.21680, project a job's MTTF as 1 / (nodes x
//    per-node rate) (6.50 failures per 1000 node-days on RSC-1 gives 1.8 h at 16,384 GPUs).
//  - A failure loses the segment in progress (the work and any partial save since the last completed checkpoint) and
//    costs a downtime D_c = detection_s_c + recovery_s + startup_s(gpus) + load_s: the synchronous job restarts as a
//    whole from the last checkpoint. No failure strikes during a downtime (assumed: the downtime's machines are
//    idle or being replaced, and counting failures there would double-count the replacement).
//  - A segment of length s therefore takes (1/lambda + Dbar)(e^{lambda s} - 1) in expectation, lambda = sum lambda_c,
//    Dbar = sum (lambda_c / lambda) D_c: the number of failed attempts is geometric with mean e^{lambda s} - 1, each
//    failed attempt runs E[X | X < s] before its failure and then waits Dbar.
// ETTR is productive time over wall-clock time, T / effective time, as Kokolis et al. (arXiv:2410.21680, Section 3)
// define the effective training time ratio.

#include <optional>
#include <string>
#include <vector>

namespace orrery {

/// One failure category: its rate per GPU-hour (the job's rate is this times its GPU count) and the seconds from the
/// failure until the job is stopped for recovery.
struct FailureCategory {
  std::string name;
  double rate_per_gpu_hour = 0;  // failures per GPU per hour
  double detection_s = 0;        // seconds from the failure to the restart decision
};

/// How the job gets its machines back after a failure (ByteRobust, arXiv:2509.16293, Section 6: requeue, reschedule
/// the evicted machines, warm standby, in-place hot update).
enum class RecoveryStrategy { kRequeue, kReschedule, kWarmStandby, kHotUpdate };

/// "requeue", "reschedule", "warm_standby", "hot_update".
const char* recovery_name(RecoveryStrategy strategy);

/// Seconds from the restart decision until the job's machines are ready again, by strategy (the default of
/// FailureModel::recovery_s; each constant's source is at its definition in goodput.cpp).
double default_recovery_s(RecoveryStrategy strategy);

/// Job start-up (process launch and NCCL communicator initialisation), counted once at the start and after every
/// restart: reference_s x (gpus / reference_gpus)^exponent. Defaults: Meta's measured NCCL initialisation, 17 s at
/// 16K GPUs growing to ~200 s at 98K (FT-HSDP, arXiv:2602.00277, Figure 2, as quoted by secondary summaries): 12x for
/// 6x the GPUs, exponent ln(200/17)/ln(6) = 1.376.
struct StartupModel {
  double reference_s = 17.0;
  double reference_gpus = 16384.0;
  double exponent = 1.376;
};

/// Seconds to start a job on `gpus` GPUs. Errors: Error::invalid naming the input for gpus <= 0 or a model with a
/// non-positive reference or negative exponent.
double startup_s(const StartupModel& model, double gpus);

/// The failure side of the model.
struct FailureModel {
  std::string preset;                     // the preset it came from, or "" when given inline
  std::vector<FailureCategory> categories;
  RecoveryStrategy recovery = RecoveryStrategy::kRequeue;
  double recovery_s = 0;                  // seconds; default_recovery_s(recovery) unless given
  StartupModel startup;
};

/// How checkpoints are saved. Blocking: the job stops while every node writes its GPUs' shards to storage.
/// Asynchronous: the job stops while each GPU copies its shard to host memory over PCIe; the host persists it to
/// storage in the background (Nebula, DCP async_save, ByteCheckpoint). In memory: as asynchronous, with the copy sent
/// to a peer machine's memory instead of storage (Gemini, ByteRobust's every-step backup). Every step: in memory,
/// once per training step.
enum class CheckpointMode { kBlocking, kAsync, kInMemory, kEveryStep };

/// "blocking", "async", "in_memory", "every_step".
const char* checkpoint_mode_name(CheckpointMode mode);

/// Checkpoint inputs. Bandwidths in GB/s (1e9 bytes per second) as the scenario writes them. Defaults:
/// storage_GB_s_total 2000: Llama 3's checkpoint store (Tectonic) sustains 2 TB/s (arXiv:2407.21783, Section 3.1,
/// quoted from the paper, not re-read for this model); device_to_host 64: PCIe Gen5 x16, 128 GB/s both directions
/// (NVIDIA H100 SXM datasheet), one direction; storage per node 5 and peer network 50 (one 400 Gbit/s NIC): assumed.
struct CheckpointSpec {
  CheckpointMode mode = CheckpointMode::kAsync;
  std::optional<double> interval_s;          // seconds of compute between saves; default: the optimum (see below)
  double storage_write_GB_s_per_node = 5.0;  // each node's write bandwidth to the checkpoint store
  double storage_read_GB_s_per_node = 5.0;   // each node's read bandwidth from it, for reloads
  double storage_GB_s_total = 2000.0;        // the store's aggregate bandwidth, a cap on nodes x per-node
  double device_to_host_GB_s = 64.0;         // per GPU, PCIe Gen5 x16 per direction
  double peer_network_GB_s_per_node = 50.0;  // per node, to the peer holding its in-memory backup
  double gpus_per_node = 8.0;                // the cluster's (ClusterSpec::gpus_per_node), set by orrery plan
};

/// What one checkpoint costs at a given interval.
struct CheckpointCost {
  CheckpointMode mode = CheckpointMode::kAsync;
  double interval_s = 0;         // seconds of compute between saves
  std::string interval_rule;     // "daly", "given", "every_step"
  double save_stall_s = 0;       // seconds training stops per save
  double persist_s = 0;          // seconds the background copy takes (0 for blocking)
  double load_s = 0;             // seconds to reload after a restart
};

/// The job the model is applied to.
struct GoodputJob {
  double gpus = 0;                        // GPUs of the job
  double compute_s = 0;                   // T: seconds of fault-free training steps
  double step_s = 0;                      // seconds of one training step (every-step checkpoints; the interval's floor)
  double checkpoint_bytes_per_gpu = 0;    // bytes of model and optimizer state each GPU saves
};

/// The job's failure rate, failures per second: sum of rate_per_gpu_hour x gpus / 3600.
double job_failure_rate_per_s(const FailureModel& failures, double gpus);

/// Seconds training stops per save, and the background copy's seconds, at compute interval `interval_s`:
/// blocking: bytes x gpus_per_node / min(node write, total / nodes); async: bytes / device_to_host plus any part of
/// the background persist (same storage write) that outlasts the interval; in memory and every step: the same with the
/// peer network in place of storage. Reload: from storage (blocking, async) or from the peer (in memory, every step).
CheckpointCost checkpoint_cost(const CheckpointSpec& spec, const GoodputJob& job, double interval_s);

/// The checkpoint at the interval the spec asks for: given; one step for every-step; otherwise Daly's optimum
/// (daly_checkpoint_interval_s, sim/plan/checkpoint_interval.h) with delta the save stall and M = 1 / (job failure
/// rate), raised to the background persist time for async and in-memory saves (a save more often than the previous
/// one can be persisted only waits for it) and to one step; the whole job (T) when nothing fails.
CheckpointCost choose_checkpoint(const CheckpointSpec& spec, const GoodputJob& job, const FailureModel& failures);

/// Expected seconds lost, by cause. Sums with T to the effective time.
struct LostTime {
  double checkpoint_saves = 0;   // stalls of the completed saves
  double lost_work = 0;          // compute and partial saves redone after failures
  double detection = 0;
  double recovery = 0;           // waiting for machines (the strategy's recovery_s)
  double checkpoint_loads = 0;   // reloading the last checkpoint after each failure
  double startup = 0;            // the first start and every restart
};

struct CategoryGoodput {
  std::string name;
  double rate_per_gpu_hour = 0;
  double expected_count = 0;     // expected failures of this category over the job
  double lost_s = 0;             // expected seconds they cost: their share of lost work plus their downtimes
};

/// The expected value.
struct GoodputExpectation {
  double ettr = 1;                       // T / effective_time_to_train_s
  double effective_time_to_train_s = 0;  // expected wall-clock seconds
  double failures_expected = 0;
  double job_mtbf_s = 0;                 // 1 / job failure rate; infinity when nothing fails
  CheckpointCost checkpoint;
  LostTime lost;
  std::vector<CategoryGoodput> categories;
};

/// The exact expectation of the process described at the top of this header.
/// Errors: Error::invalid naming the input for gpus <= 0, compute_s < 0, step_s <= 0, negative bytes or rates,
/// non-positive bandwidths or a non-positive given interval.
GoodputExpectation expected_goodput(const FailureModel& failures, const CheckpointSpec& spec, const GoodputJob& job);

/// The same with the checkpoint fixed (for sweeps over the interval).
GoodputExpectation expected_goodput_at(const FailureModel& failures, const CheckpointCost& checkpoint,
                                       const GoodputJob& job);

struct IntervalPoint {
  double interval_s = 0;
  double ettr = 0;
};

/// ETTR at intervals around the chosen one (x 1/8, 1/4, 1/2, 3/4, 1, 1.5, 2, 4, 8; whole steps and at least one
/// step), in increasing order without repeats, for a plot of ETTR against the checkpoint interval.
std::vector<IntervalPoint> ettr_vs_checkpoint_interval(const FailureModel& failures, const CheckpointSpec& spec,
                                                       const GoodputJob& job);

}  // namespace orrery
