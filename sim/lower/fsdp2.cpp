#include "sim/lower/fsdp2.h"

#include "sim/lower/sharded_params.h"

namespace orrery {

Fsdp2UnitTraffic fsdp2_unit_traffic(std::int64_t elements, int ranks) {
  const std::int64_t shard = elements / ranks;
  Fsdp2UnitTraffic t;
  t.all_gather = elements * kFsdp2GatherBytes;
  t.reduce_scatter = elements * kFsdp2ReduceBytes;
  // _get_param_all_gather_inputs: fp32 shard -> bf16 flat buffer; all_gather_copy_in: -> the output's slot.
  t.copy_in_read = shard * (4 + kFsdp2GatherBytes);
  t.copy_in_written = shard * 2 * kFsdp2GatherBytes;
  t.copy_out_read = t.copy_out_written = elements * kFsdp2GatherBytes;
  t.rs_copy_in_read = elements * kFsdp2GatherBytes;  // the bf16 unsharded gradients
  t.rs_copy_in_written = elements * kFsdp2ReduceBytes;
  return t;
}

MaybeTask ShardedParamsLowering::fsdp2_issue_gather(Emitter& emit, const ParamUnit& unit) {
  const Fsdp2UnitTraffic t = fsdp2_unit_traffic(sharded_dense(unit), ctx_.data_parallel_ranks());
  // The copy-in runs on its own stream (priced with the DP stream it feeds), after the compute issued so far; the
  // all-gather output (unit-sized, bf16) lives from it to the copy-out.
  const MaybeTask in = emit.comm_copies_on(Stream::kDp, "fsdp_all_gather_copy_in", t.copy_in_read, t.copy_in_written, 2,
                                           {emit.last_compute()});
  emit.allocate(in, MemoryKind::kWeights, t.all_gather);
  return emit.collective("param_gather", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllGather, t.all_gather, {in});
}

MaybeTask ShardedParamsLowering::fsdp2_copy_out(Emitter& emit, const ParamUnit& unit, MaybeTask gathered) {
  const Fsdp2UnitTraffic t = fsdp2_unit_traffic(sharded_dense(unit), ctx_.data_parallel_ranks());
  const MaybeTask out = emit.comm_copies("fsdp_all_gather_copy_out", t.copy_out_read, t.copy_out_written, 1,
                                         {gathered});
  emit.allocate(out, MemoryKind::kWeights, t.copy_out_written);  // the unsharded bf16 parameters
  emit.deallocate(out, MemoryKind::kWeights, t.all_gather);      // the all-gather output
  return out;
}

void ShardedParamsLowering::fsdp2_reduce(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done) {
  const Fsdp2UnitTraffic t = fsdp2_unit_traffic(sharded_dense(unit), ctx_.data_parallel_ranks());
  // Reshard after backward, then foreach_reduce: chunk_cat into the fp32 input frees the bf16 gradients.
  release_params(emit, unit);
  PhaseScope scope(emit, Phase::kBackwardWeight);
  const MaybeTask in = emit.comm_copies("fsdp_reduce_scatter_copy_in", t.rs_copy_in_read, t.rs_copy_in_written, 1,
                                        {grads_done});
  emit.allocate(in, MemoryKind::kGradients, t.rs_copy_in_written);
  emit.deallocate(in, MemoryKind::kGradients, t.rs_copy_in_read);
  MaybeTask rs = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kDp, CollectiveKind::kReduceScatter,
                                 t.reduce_scatter, {in});
  emit.deallocate(rs, MemoryKind::kGradients, t.rs_copy_in_written);
  if (emit.microbatch() > 0) {
    // sharded_param.grad._local_tensor += new_sharded_grad, on the reduce-scatter stream.
    const Bytes shard = t.reduce_scatter / ctx_.data_parallel_ranks();
    rs = emit.comm_copies_on(Stream::kDpReduce, "fsdp_grad_accumulate", 2 * shard, shard, 1, {rs});
  }
  reductions_.push_back(rs);  // skipped (one DP rank): the step waits for the copy-in instead
}

}  // namespace orrery
