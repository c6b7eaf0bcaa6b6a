#include "sim/job/job.h"

#include <algorithm>
#include <utility>

#include "sim/scenario_validate.h"

namespace orrery {

std::int64_t padded_vocab_size(std::int64_t vocab, int tp, int divisible_by) {
  const std::int64_t multiple = static_cast<std::int64_t>(divisible_by) * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

namespace {

// Bytes per parameter of gradient buffer and optimizer state (before ZeRO sharding), Megatron-LM
// docs/source/api-guide/dist_optimizer.md table: bf16 params with fp32 grads 2 + 4 + 12 = 18 bytes; fp16 params
// with fp16 grads 2 + 2 + 16 (fp32 main params, main grads, Adam m and v) = 20; fp32 4 + 4 + 8 = 16. bf16 with
// grad_reduce_in_fp32 off keeps 16-bit gradients as the fp16 row does, and the same 16 bytes of optimizer state.
StateBytes megatron_state_bytes(Precision precision, Optimizer optimizer, bool grad_reduce_in_fp32) {
  const bool adam = optimizer == Optimizer::kAdam;
  switch (precision) {
    case Precision::kFp32: return {4, 4, 4, adam ? 8 : 4};
    case Precision::kFp16: return {2, 2, 2, adam ? 16 : 12};
    case Precision::kBf16:
    case Precision::kFp8:
      if (!grad_reduce_in_fp32) return {2, 2, 2, adam ? 16 : 12};
      return {2, 2, 4, adam ? 12 : 8};
  }
  return {2, 2, 4, 12};
}

// FSDP2 as torchtitan runs it (sim/lower/fsdp2.h): the model is built in fp32 (torchtitan config/configs.py
// training.dtype "float32" @ b5bcd76) and fully_shard keeps fp32 sharded parameters; MixedPrecisionPolicy
// param_dtype bfloat16 gathers and computes in bf16 (mixed_precision_param), reduce_dtype float32
// (mixed_precision_reduce) reduce-scatters fp32 gradients into the fp32 sharded .grad; AdamW keeps m and v in the
// parameter dtype, fp32. So 4 + 4 + 8 = 16 resident bytes per parameter, sharded over the FSDP ranks.
constexpr StateBytes kFsdp2StateBytes{2, 4, 4, 8};  // gathered param, fp32 shard, reduced grad, optimizer (m, v)

// Appends to `kept` the warnings of `found` it does not hold yet: resolving a resolved scenario, whose validator
// warnings are already among its own, adds none twice.
void merge_warnings(std::vector<std::string>& kept, const std::vector<std::string>& found) {
  const std::size_t before = kept.size();
  for (const std::string& w : found) {
    if (std::find(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(before), w) ==
        kept.begin() + static_cast<std::ptrdiff_t>(before)) {
      kept.push_back(w);
    }
  }
}

}  // namespace

StateBytes state_bytes(const TrainingSpec& training, int zero_stage) {
  StateBytes sb = megatron_state_bytes(training.precision, training.optimizer, training.grad_reduce_in_fp32);
  if (zero_stage >= 2 || training.framework == Framework::kMegatronDeepSpeed) {
    // DeepSpeed's ZeRO-2/3 reduce gradients in the training precision and keep fp32 master weights and Adam
    // moments (ZeRO, arXiv:1910.02054 Section 3.1: 2 + 2 + K bytes per parameter, K = 12); so does DeepSpeed's
    // engine at every stage under Megatron-DeepSpeed (sim/lower/megatron_deepspeed.h).
    const bool adam = training.optimizer == Optimizer::kAdam;
    sb.grad = sb.param;
    sb.optimizer = sb.param == 4 ? (adam ? 8 : 4) : (adam ? 12 : 8);
  }
  // PyTorch's recipe keeps fp32 parameters (they are the master copy) and fp32 gradients under autocast.
  if (training.framework == Framework::kPytorch) sb = megatron_state_bytes(Precision::kFp32, training.optimizer, true);
  if (training.framework == Framework::kFsdp2) sb = kFsdp2StateBytes;
  return sb;
}

Job::Job(Scenario validated) : scenario_(std::move(validated)), ranks_(scenario_.parallel) {
  const ParallelPlan& p = scenario_.parallel;
  const TrainingSpec& t = scenario_.training;
  ranks_per_stage_ = p.tp * p.cp * p.dp;
  data_parallel_ranks_ = p.dp * p.cp;
  expert_data_parallel_ranks_ = p.tp * p.cp * p.dp / (p.ep * p.etp);
  microbatches_ = scenario_.num_microbatches();
  microbatch_tokens_ = t.micro_batch_size * t.seq_length;
  rank_tokens_ = t.micro_batch_size * (t.seq_length / p.cp);
  tokens_per_iteration_ = static_cast<double>(t.global_batch_size * t.seq_length);
  layout_ = make_pipeline_layout(scenario_.model, p);
  pools_ = assign_pools(scenario_);
  padded_model_ = scenario_.model;
  padded_model_.vocab_size = padded_vocab_size(scenario_.model.vocab_size, p.tp);
  activation_dtype_ = orrery::activation_dtype(t.precision);
  activation_bytes_ = dtype_bytes(activation_dtype_);
  gemm_dtype_ = orrery::gemm_dtype(t.precision);
  state_bytes_ = orrery::state_bytes(t, p.zero_stage);
  if (t.packed_documents.enabled()) {
    packing_ = pack_documents(t.packed_documents, t.seq_length, t.global_batch_size, t.micro_batch_size, p.dp, p.cp);
  }
}

Job resolve(const Scenario& scenario) {
  Scenario copy = scenario;
  std::vector<std::string> warnings = std::move(copy.warnings);
  copy.warnings.clear();
  validate_scenario(copy);
  merge_warnings(warnings, copy.warnings);
  copy.warnings = std::move(warnings);
  return Job(std::move(copy));
}

JobBase resolve_base(const Scenario& scenario) {
  Scenario copy = scenario;
  validate_plan_free(copy);
  return JobBase(std::move(copy));
}

Job resolve(const JobBase& base, const PlanChoice& plan) {
  Scenario s = base.scenario();
  s.warnings.clear();
  s.parallel = plan.parallel;
  s.cluster.num_gpus = plan.num_gpus;
  s.training.micro_batch_size = plan.micro_batch_size;
  s.training.recompute = plan.recompute;
  s.training.precision = plan.precision;
  return resolve(s);
}

}  // namespace orrery
