#pragma once
// analyze(Timeline) -> Report (ARCHITECTURE.md "Report", the stable output contract): iteration time, throughput,
// MFU/HFU, per-stage peak memory with its composition at the peak, and the time breakdown of the critical stage.

#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/instances.h"
#include "sim/job/job.h"
#include "sim/packing.h"
#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

struct StageMemory {
  int stage = 0;
  Bytes weights = 0, gradients = 0, optimizer = 0, activations = 0, other = 0;  // at the instant of the peak
  Bytes peak = 0;
  Bytes capacity = 0;  // the memory of the stage's GPU (its pool's, on a mixed cluster)
};

/// One pool of a mixed cluster as the job used it (report key `pools`).
struct PoolReport {
  std::string name;
  std::string gpu;             // the GPU's preset name
  std::string nic_type;        // NicTransport's name
  int num_gpus = 0;            // the pool's GPUs
  int gpus_used = 0;           // those the job runs on
  std::vector<int> stages;     // the pipeline stages it runs
  FlopsPerSecond peak_flops_per_gpu = 0;  // dense peak at the job's GEMM precision
  Bytes memory_capacity = 0;
  Bytes peak_memory = 0;       // largest over its stages
  /// The pool's share of the model FLOPs (its stages' layers' share of the graph's FLOPs) over what its used GPUs
  /// could do in the iteration at their peak: the pool's own MFU.
  double mfu = 0;
};

/// Seconds of the iteration on the critical stage's rank, by what it was doing; the parts sum to the iteration
/// time. Compute wins over communication; communication counts as exposed only while no compute runs (waiting at
/// a rendezvous for a slower peer included); idle time waiting for a pipeline receive is bubble.
struct Breakdown {
  Seconds compute = 0, exposed_tp_comm = 0, exposed_cp_comm = 0, exposed_ep_comm = 0, exposed_pp_comm = 0,
          exposed_dp_comm = 0, bubble = 0, optimizer = 0, other = 0;
  /// The GPU idle because its host had not yet issued the next compute kernel (sim/engine/engine.h's host timeline).
  Seconds host = 0;
  Seconds total() const;
};

struct Report {
  std::string name;
  int num_gpus = 0;
  int microbatches = 0;
  Seconds iteration_time = 0;
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0;
  double model_flops = 0, hardware_flops = 0;  // per iteration, whole job
  double model_tflops_per_gpu = 0, hardware_tflops_per_gpu = 0;
  double mfu = 0, mfu_causal = 0, hfu = 0;
  /// Dense peak at the GEMM precision per GPU; on a mixed cluster the mean over the job's GPUs, so that MFU is the
  /// model FLOPs over the sum of every GPU's peak.
  FlopsPerSecond peak_flops_per_gpu = 0;
  Bytes peak_memory = 0;
  /// The GPU's memory; on a mixed cluster the smallest of the pools the job uses (each stage's own is in per_stage).
  Bytes memory_capacity = 0;
  std::vector<StageMemory> per_stage;
  int critical_stage = 0;
  int critical_rank = 0;
  Breakdown breakdown;
  std::vector<std::string> warnings;
  std::string profile;  // the measured GPU profile that priced ops ("" when the default models did)
  /// Attention work of packed documents across DP and CP ranks (training.packed_documents); none without packing.
  std::optional<PackedBatch> packing;
  /// A mixed cluster's pools, in cluster.pools order; empty for a homogeneous cluster.
  std::vector<PoolReport> pools;
};

/// Hardware FLOPs of one iteration counted from the graph: GEMMs and attention (full score matrix) of every task,
/// recompute included, times the ranks each program stands for.
double graph_flops_per_iteration(const WorkloadGraph& graph, const ParallelPlan& plan);

/// The report of a finished run of `job`'s graph. Errors: none.
Report analyze(const Job& job, const WorkloadGraph& graph, const Instantiation& instances, const RunResult& run);

/// The breakdown of one recorded instance of `program` (one of `graph`'s) over [0, until]; its communication counts
/// under the category `graph` declares for each group kind (GroupKindInfo::category), compute is what runs on its
/// compute streams (StreamInfo::compute).
Breakdown breakdown_of(const WorkloadGraph& graph, const Program& program, const InstanceRun& run, Nanoseconds until);

}  // namespace orrery
