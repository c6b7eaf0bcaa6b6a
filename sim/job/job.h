#pragma once
// The resolved plan (ARCHITECTURE.md "Data flow"): a scenario validated once, on a copy, with every size, layout,
// placement and byte count its readers need derived once. The lowering (sim/lower/context.h), the report
// (sim/report.h), the search and its bounds (sim/search/) and predict (sim/predict.h) read these facts here and
// derive none of them again; tests/tools/architecture_test.py refuses a reader that builds a PipelineLayout or a
// RankLayout, pads the vocabulary or counts micro-batches itself.
//
// A JobBase is the part of a job that does not depend on the parallel plan (model, cluster, sequence, global batch,
// precision): the search resolves it once and makes one Job per candidate plan from it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/ops.h"
#include "models/units.h"
#include "sim/packing.h"
#include "sim/pipeline_layout.h"
#include "sim/pool_assignment.h"
#include "sim/rank_layout.h"
#include "sim/scenario.h"

namespace orrery {

/// Megatron-LM's vocabulary padding: the next multiple of make_vocab_size_divisible_by (128) x tp
/// (megatron/training/tokenizer: _vocab_size_with_padding). The formula's one home; readers take Job::padded_vocab().
/// Errors: none (vocab >= 0, tp >= 1, divisible_by >= 1).
std::int64_t padded_vocab_size(std::int64_t vocab, int tp, int divisible_by = 128);

/// Bytes per element of the model state a rank holds, before any ZeRO sharding.
struct StateBytes {
  Bytes param = 2;           // a parameter as gathered and computed with
  Bytes resident_param = 2;  // the copy that stays resident (sharded under ZeRO-3): param, except FSDP2's fp32 shards
  Bytes grad = 4;            // a gradient element in the reduction buffer
  Bytes optimizer = 12;      // optimizer state per parameter (fp32 master weights and moments)
  bool operator==(const StateBytes&) const = default;
};

/// The state bytes of a training setup: Megatron-LM's distributed-optimizer table (docs/source/api-guide/
/// dist_optimizer.md), DeepSpeed's ZeRO-2/3 and Megatron-DeepSpeed (ZeRO, arXiv:1910.02054 Section 3.1), PyTorch's
/// fp32 recipe and FSDP2 as torchtitan runs it; job.cpp gives each row's source. Errors: none.
StateBytes state_bytes(const TrainingSpec& training, int zero_stage);

/// A validated scenario and the facts derived from it. Immutable: only const accessors; a Job is made by resolve()
/// (or is the empty Job, made by its default constructor, which only serves to be assigned over).
class Job {
 public:
  /// The empty Job: a default scenario, nothing resolved. Errors: none.
  Job() = default;

  /// The validated scenario: dp, the GPU count and the global batch derived, inactive switches turned off (e.g.
  /// sequence parallelism at tp 1), the validator's warnings appended to its own.
  const Scenario& scenario() const { return scenario_; }
  const ModelSpec& model() const { return scenario_.model; }
  const ClusterSpec& cluster() const { return scenario_.cluster; }
  const ParallelPlan& plan() const { return scenario_.parallel; }
  const TrainingSpec& training() const { return scenario_.training; }
  /// Accepted but noteworthy input, the parser's and the validator's, in the order found.
  const std::vector<std::string>& warnings() const { return scenario_.warnings; }

  /// GPUs of the job: tp x pp x dp x cp.
  int num_gpus() const { return scenario_.cluster.num_gpus; }
  /// Data-parallel size: num_gpus / (tp x pp x cp), or as the plan gave it.
  int dp() const { return scenario_.parallel.dp; }
  /// Ranks of one pipeline stage: tp x cp x dp (every one runs the stage's program).
  int ranks_per_stage() const { return ranks_per_stage_; }
  /// Ranks that share (and so shard under ZeRO) the dense gradients: dp x cp.
  int data_parallel_ranks() const { return data_parallel_ranks_; }
  /// Ranks that share the routed-expert gradients: tp x cp x dp / (ep x etp).
  int expert_data_parallel_ranks() const { return expert_data_parallel_ranks_; }
  /// Micro-batches per pipeline per iteration: global batch / (micro-batch x dp).
  int microbatches() const { return microbatches_; }
  /// Tokens of one micro-batch: micro-batch size x sequence length.
  std::int64_t microbatch_tokens() const { return microbatch_tokens_; }
  /// Tokens one rank processes per micro-batch (the rows of its GEMMs): micro-batch size x sequence length / cp.
  std::int64_t rank_tokens() const { return rank_tokens_; }
  /// Tokens of one iteration, the whole job: global batch x sequence length.
  double tokens_per_iteration() const { return tokens_per_iteration_; }

  /// Layers per pipeline stage and chunk (sim/pipeline_layout.h).
  const PipelineLayout& layout() const { return layout_; }
  /// Global rank numbering and communication groups (sim/rank_layout.h).
  const RankLayout& ranks() const { return ranks_; }

  /// A mixed cluster's stage-to-pool assignment (sim/pool_assignment.h); empty for a homogeneous cluster.
  const PoolAssignment& pools() const { return pools_; }
  /// The cluster pipeline stage `stage` runs on: its pool as the job uses it, or the cluster itself.
  const ClusterSpec& stage_cluster(int stage) const {
    return pools_.stage_pool.empty() ? scenario_.cluster
                                     : pools_.pools[static_cast<std::size_t>(pools_.stage_pool[static_cast<std::size_t>(stage)])];
  }

  /// Megatron-padded vocabulary (padded_vocab_size of the model's vocabulary at the plan's tp).
  std::int64_t padded_vocab() const { return padded_model_.vocab_size; }
  /// The model with the padded vocabulary: what the ranks really hold.
  const ModelSpec& padded_model() const { return padded_model_; }

  /// Data type and bytes of activations and of the parameters in compute (activation_dtype of the precision).
  DType activation_dtype() const { return activation_dtype_; }
  Bytes activation_bytes() const { return activation_bytes_; }
  /// Data type of the GEMMs (gemm_dtype of the precision).
  DType gemm_dtype() const { return gemm_dtype_; }
  /// Bytes per parameter, gradient and optimizer state (state_bytes of the training setup and ZeRO stage).
  const StateBytes& state_bytes() const { return state_bytes_; }

  /// Documents packed into the global batch (sim/packing.h); empty without training.packed_documents.
  const std::optional<PackedBatch>& packing() const { return packing_; }

 private:
  friend Job resolve(const Scenario& scenario);
  explicit Job(Scenario validated);

  Scenario scenario_;
  int ranks_per_stage_ = 0, data_parallel_ranks_ = 0, expert_data_parallel_ranks_ = 0, microbatches_ = 0;
  std::int64_t microbatch_tokens_ = 0, rank_tokens_ = 0;
  double tokens_per_iteration_ = 0;
  PipelineLayout layout_;
  RankLayout ranks_{ParallelPlan{}};
  PoolAssignment pools_;
  ModelSpec padded_model_;
  DType activation_dtype_ = DType::kBf16, gemm_dtype_ = DType::kBf16;
  Bytes activation_bytes_ = 2;
  StateBytes state_bytes_;
  std::optional<PackedBatch> packing_;
};

/// Validates a copy of `scenario` (parse_scenario's cross-section rules: dp and the default global batch derived,
/// divisibility, sizes, unmodelled features) and derives the Job's facts from it; `scenario` is left as it was.
/// Resolving a resolved scenario again gives the same Job (its warnings are not repeated).
/// Errors: Error::invalid naming the field, the value and the rule; Error::not_modelled ("not modelled yet: ...").
Job resolve(const Scenario& scenario);

/// The plan-free part of a job: model, cluster, sequence, global batch, precision and the other training settings,
/// with the rules that do not depend on the parallel plan checked. Its scenario's `parallel` is the template the
/// plans start from (settings a plan does not choose, such as overlap switches and communication types, are kept).
class JobBase {
 public:
  /// The base scenario: rope fusion settled, its plan not validated (dp, micro-batch and GPU count may be unset).
  const Scenario& scenario() const { return scenario_; }

 private:
  friend JobBase resolve_base(const Scenario& scenario);
  explicit JobBase(Scenario checked) : scenario_(std::move(checked)) {}
  Scenario scenario_;
};

/// Checks the rules of `scenario` that do not depend on its parallel plan (unmodelled model features of the
/// framework, MoE capacity, packing, recompute modules, rope fusion, the GPU's GEMM path, FP8 recipe and fp16
/// support), on a copy. `scenario` need not be validated (read_scenario), nor its plan valid.
/// Errors: Error::invalid / Error::not_modelled as resolve(), for those rules.
JobBase resolve_base(const Scenario& scenario);

/// What one plan sets on a base: the parallel plan, the GPU count and the per-plan training choices.
struct PlanChoice {
  ParallelPlan parallel;
  int num_gpus = 0;  // 0: tp x pp x dp x cp
  std::int64_t micro_batch_size = 1;
  Recompute recompute = Recompute::kNone;
  Precision precision = Precision::kBf16;
};

/// The Job of `base` run with `plan`: the base scenario with the plan's settings (its warnings dropped: the plan's
/// own are found afresh), resolved. Errors: resolve()'s (an invalid plan).
Job resolve(const JobBase& base, const PlanChoice& plan);

}  // namespace orrery
