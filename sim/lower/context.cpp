#include "sim/lower/context.h"

#include <cassert>

#include "sim/group_placement.h"
#include "sim/packing.h"

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
struct StateBytes {
  Bytes param, grad, optimizer;
};

StateBytes state_bytes(Precision precision, Optimizer optimizer, bool grad_reduce_in_fp32) {
  const bool adam = optimizer == Optimizer::kAdam;
  switch (precision) {
    case Precision::kFp32: return {4, 4, adam ? 8 : 4};
    case Precision::kFp16: return {2, 2, adam ? 16 : 12};
    case Precision::kBf16:
    case Precision::kFp8:
      if (!grad_reduce_in_fp32) return {2, 2, adam ? 16 : 12};
      return {2, 4, adam ? 12 : 8};
  }
  return {2, 4, 12};
}

// FSDP2 as torchtitan runs it (sim/lower/fsdp2.h): the model is built in fp32 (torchtitan config/configs.py
// training.dtype "float32" @ b5bcd76) and fully_shard keeps fp32 sharded parameters; MixedPrecisionPolicy
// param_dtype bfloat16 gathers and computes in bf16 (mixed_precision_param), reduce_dtype float32
// (mixed_precision_reduce) reduce-scatters fp32 gradients into the fp32 sharded .grad; AdamW keeps m and v in the
// parameter dtype, fp32. So 4 + 4 + 8 = 16 resident bytes per parameter, sharded over the FSDP ranks.
constexpr Bytes kFsdp2ShardedParamBytes = 4;
StateBytes fsdp2_state_bytes() { return {2, 4, 8}; }  // gathered param, reduced grad, optimizer (m, v)

}  // namespace

LoweringContext::LoweringContext(const Scenario& s)
    : scenario(s),
      model(s.model),
      plan(s.parallel),
      training(s.training),
      cluster(s.cluster),
      layout(make_pipeline_layout(s.model, s.parallel)),
      ranks(s.parallel),
      microbatches(s.num_microbatches()) {
  tp = plan.tp;
  batch = training.micro_batch_size;
  seq = training.seq_length / plan.cp;
  tokens = batch * seq;
  tokens_sp = plan.sequence_parallel ? tokens / tp : tokens;
  padded_vocab = padded_vocab_size(model.vocab_size, tp);
  act_dtype = activation_dtype(training.precision);
  gemm_dtype = orrery::gemm_dtype(training.precision);
  fp8_recipe = training.fp8_recipe;
  act_bytes = dtype_bytes(act_dtype);
  StateBytes sb = state_bytes(training.precision, training.optimizer, training.grad_reduce_in_fp32);
  if (plan.zero_stage >= 2 || training.framework == Framework::kMegatronDeepSpeed) {
    // DeepSpeed's ZeRO-2/3 reduce gradients in the training precision and keep fp32 master weights and Adam
    // moments (ZeRO, arXiv:1910.02054 Section 3.1: 2 + 2 + K bytes per parameter, K = 12); so does DeepSpeed's
    // engine at every stage under Megatron-DeepSpeed (sim/lower/megatron_deepspeed.h).
    const bool adam = training.optimizer == Optimizer::kAdam;
    sb.grad = sb.param;
    sb.optimizer = sb.param == 4 ? (adam ? 8 : 4) : (adam ? 12 : 8);
  }
  // PyTorch's recipe keeps fp32 parameters (they are the master copy) and fp32 gradients under autocast.
  if (training.framework == Framework::kPytorch) sb = state_bytes(Precision::kFp32, training.optimizer, true);
  if (training.framework == Framework::kFsdp2) sb = fsdp2_state_bytes();
  param_bytes = sb.param;
  resident_param_bytes = training.framework == Framework::kFsdp2 ? kFsdp2ShardedParamBytes : sb.param;
  grad_bytes = sb.grad;
  optimizer_bytes = sb.optimizer;
  padded_model = model;
  padded_model.vocab_size = padded_vocab;
  if (training.packed_documents.enabled()) {
    packed_fraction = pack_documents(training.packed_documents, training.seq_length, training.global_batch_size,
                                     training.micro_batch_size, plan.dp, plan.cp)
                          .microbatch_fraction;
  }
}

const GroupPlacement& LoweringContext::placement(GroupKind kind, int stage) const {
  auto key = std::make_pair(kind, stage);
  auto it = placements_.find(key);
  if (it != placements_.end()) return it->second;
  // The stage's costliest group of the kind prices all of them (sim/group_placement.h).
  return placements_.emplace(key, costliest_group_placement(cluster, ranks, kind, stage)).first->second;
}

std::int64_t LoweringContext::local_elements(const ParamTensor& t) const {
  switch (t.sharding) {
    case ParamSharding::kReplicated: return t.elements;
    case ParamSharding::kTensorParallel: return t.elements / tp;
    case ParamSharding::kExpert: return t.elements / (plan.ep * plan.etp);
  }
  return t.elements;
}

Emitter::Emitter(const LoweringContext& ctx, ProgramBuilder& builder, int stage)
    : ctx_(ctx), builder_(builder), stage_(stage) {}

void Emitter::at(int microbatch, int chunk, int layer, Phase phase) {
  microbatch_ = microbatch;
  chunk_ = chunk;
  layer_ = layer;
  phase_ = phase;
}

Task Emitter::base(TaskKind kind, const char* label, Stream stream) const {
  Task t;
  t.kind = kind;
  t.phase = phase_;
  t.stream = stream_for(stream);
  t.chunk = static_cast<std::int16_t>(chunk_);
  t.layer = layer_;
  t.microbatch = microbatch_;
  t.label = label;
  return t;
}

TaskId Emitter::gemm(const char* label, GemmShape shape, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  if (shape.dtype == DType::kFp8) shape.fp8_scaling = fp8_scaling(ctx().fp8_recipe);
  return builder_.add(base(TaskKind::kGemm, label, Stream::kCompute), shape, deps);
}

TaskId Emitter::attention(const char* label, AttentionShape shape, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kAttention, label, Stream::kCompute), shape, deps);
}

TaskId Emitter::elementwise(const char* label, Bytes read, Bytes written, std::initializer_list<TaskId> deps) {
  return elementwise(label, ElementwiseKernel::kGeneric, read, written, deps);
}

TaskId Emitter::elementwise(const char* label, ElementwiseKernel kernel, Bytes read, Bytes written,
                            std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kElementwise, label, Stream::kCompute),
                      ElementwiseShape{read, written, 0.0, 1, kernel}, deps);
}

TaskId Emitter::elementwise(const char* label, const ElementwiseShape& shape, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kElementwise, label, Stream::kCompute), shape, deps);
}

TaskId Emitter::comm_copies(const char* label, Bytes read, Bytes written, std::int64_t kernels,
                            std::initializer_list<TaskId> deps) {
  return comm_copies_on(Stream::kCompute, label, read, written, kernels, deps);
}

TaskId Emitter::comm_copies_on(Stream stream, const char* label, Bytes read, Bytes written, std::int64_t kernels,
                               std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kCommCopy, label, stream), ElementwiseShape{read, written, 0.0, kernels}, deps);
}

TaskId Emitter::optimizer(const char* label, Bytes read, Bytes written, std::initializer_list<TaskId> deps,
                          ElementwiseKernel kernel) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kOptimizer, label, Stream::kCompute),
                      ElementwiseShape{read, written, 0.0, 1, kernel}, deps);
}

TaskId Emitter::host_sync(const char* label, std::initializer_list<TaskId> deps) {
  return host_sync_on(Stream::kCompute, label, deps);
}

TaskId Emitter::host_sync_on(Stream stream, const char* label, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kHostSync, label, stream), HostSyncShape{}, deps);
}

TaskId Emitter::collective(const char* label, Stream stream, GroupKind group, CollectiveKind kind, Bytes bytes,
                           std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  const GroupPlacement& where = ctx_.placement(group, stage_);
  if (where.size <= 1) return -1;
  Task t = base(TaskKind::kCollective, label, stream);
  t.group = group;
  return builder_.add(t, CollectiveOp{kind, bytes, where}, deps);
}

TaskId Emitter::expert_dispatch(const char* label, Bytes nvlink, Bytes network, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  const GroupPlacement& where = ctx_.placement(GroupKind::kEp, stage_);
  if (where.size <= 1) return -1;
  Task t = base(TaskKind::kCollective, label, Stream::kEp);
  t.group = GroupKind::kEp;
  CollectiveOp op{CollectiveKind::kExpertDispatch, nvlink, where};
  op.network_bytes = network;
  return builder_.add(t, op, deps);
}

TaskId Emitter::host_op(const char* label, Stream stream, HostOpShape shape, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  return builder_.add(base(TaskKind::kHostOp, label, stream), shape, deps);
}

TaskId Emitter::p2p(const char* label, Stream stream, GroupKind group, Bytes bytes, std::initializer_list<TaskId> deps) {
  if (dropped()) return -1;
  Task t = base(TaskKind::kSendRecv, label, stream);
  t.group = group;
  return builder_.add(t, CollectiveOp{CollectiveKind::kSendRecv, bytes, ctx_.placement(group, stage_)}, deps);
}

}  // namespace orrery
