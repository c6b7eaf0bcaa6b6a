// Megatron-DeepSpeed at ZeRO 3 (sim/lower/megatron_deepspeed.h): DeepSpeed's stage 3 at the granularity of
// Orrery's units (a layer, the embedding, the head).
#include <algorithm>

#include "sim/lower/megatron_deepspeed.h"
#include "sim/lower/sharded_params.h"

namespace orrery {

void ShardedParamsLowering::ds3_mark_kept(std::vector<ParamUnit>& units) const {
  // partitioned_param_coordinator.py __params_to_release @ edaa722: after its forward a module's parameters stay
  // gathered when they recur within max_reuse_distance elements of the trace. Between a unit's forward and its
  // backward the trace runs every later unit forward, then backward: twice their elements.
  std::int64_t later = 0;
  for (std::size_t i = units.size(); i-- > 0;) {
    units[i].ds_kept = 2 * later < kDeepSpeedMaxReuseDistance;
    later += units[i].elements;
  }
}

MaybeTask ShardedParamsLowering::ds3_gather(Emitter& emit, std::int64_t elements) {
  // fetch_sub_module: one all_gather_coalesced of the 16-bit partitions on the all-gather stream, issued when the
  // host reaches it (after the compute issued so far).
  if (elements <= 0) return {};  // only persistent parameters (a tied head's final norm)
  const Bytes bytes = elements * ctx_.param_bytes;
  const MaybeTask ag = emit.collective("param_gather", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllGather, bytes,
                                       {emit.last_compute()});
  emit.allocate(ag, MemoryKind::kWeights, bytes);  // none with one DP rank: nothing gathered
  return ag;
}

void ShardedParamsLowering::ds3_reduce(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done) {
  release_params(emit, unit);
  PhaseScope scope(emit, Phase::kBackwardWeight);
  // stage3.py reduce_independent_p_g_buckets_and_remove_grads: reduce the ipg bucket (reduce_bucket_size, 5e8)
  // before gradients that would overflow it are added; overlap_comm (on by default at stage 3) runs it on the
  // reduction stream. The bucket's gradients are held until its reduce-scatter.
  const std::int64_t e = sharded_dense(unit);
  if (ds_open_ > 0 && ds_open_ + e > kDeepSpeedBucketElements) ds3_flush(emit);
  ds_open_ += e;
  ds_last_grads_ = grads_done;
  // The backward ends at the embedding (pp 1): the rest is reduced there (independent_gradient_partition_epilogue).
  if (unit.layer < 0 && !unit.head) ds3_flush(emit);
}

void ShardedParamsLowering::ds3_flush(Emitter& emit) {
  if (ds_open_ == 0) return;
  const Bytes bytes = ds_open_ * ctx_.grad_bytes;
  MaybeTask rs = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kDp, CollectiveKind::kReduceScatter,
                                 bytes,
                                 {ds_last_grads_});
  emit.deallocate(rs, MemoryKind::kGradients, bytes);
  // Without overlap_comm the reduction runs on the compute stream, which waits for it.
  if (!ctx_.plan.overlap_grad_reduce) rs = emit.elementwise("grad_reduce_wait", 0, 0, {rs});
  reductions_.push_back(rs);  // skipped (one DP rank): the step waits for the gradients instead
  ds_open_ = 0;
}

}  // namespace orrery
