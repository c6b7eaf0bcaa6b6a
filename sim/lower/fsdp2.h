#pragma once
// `training.framework: "fsdp2"`: PyTorch FSDP2 (torch.distributed.fsdp.fully_shard) as torchtitan runs it, read
// from torchtitan @ b5bcd76c66d0acb1a08b176d9639425bc55e0b2a and PyTorch's torch/distributed/fsdp/_fully_shard
// (_fsdp_collectives.py @ 8fc2039d, _fsdp_param_group.py @ 62a45b6f):
//   - units (torchtitan distributed/fsdp.py apply_fsdp_to_decoder): tok_embeddings; [norm, lm_head] as one unit,
//     not resharded after forward (reshard_after_forward = policy == "always"); each TransformerBlock, resharded
//     after forward (policy "default": not pp_enabled); the root holds no parameters of its own. `zero_stage` 3
//     is that; 2 is policy "never" (reshard_after_forward False for every unit): each unit is gathered in its
//     forward and kept unsharded until its backward ends (ZeRO-2-like), so only the forward gathers.
//   - MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32) (config/configs.py mixed_precision_param,
//     mixed_precision_reduce): the sharded parameters stay fp32 (the model is built in training.dtype float32),
//     all-gathers move bf16 (unit elements x 2 bytes), reduce-scatters fp32 (unit elements x 4 bytes), every
//     micro-batch (trainer.py train_step never disables gradient sync).
//   - all-gather (foreach_all_gather): on the copy-in stream a foreach cast of the fp32 shard into a bf16 flat
//     buffer and all_gather_copy_in's foreach copy into the output's own slot (2 launches, shard-sized), the NCCL
//     all-gather on the all-gather stream, then on the compute stream split_with_sizes_copy into the unsharded
//     parameters (1 launch, unit-sized), after which the all-gather output is freed.
//   - prefetch: forward has none explicit: a unit's pre-forward issues its own all-gather on the separate streams,
//     and the host running ahead lets it overlap the previous unit's compute; the copy-in waits for the previous
//     unit's copy-out (all_gather_state), so one gather runs ahead. Backward prefetches one unit explicitly
//     (pre_backward -> _backward_prefetch). Orrery's ZeRO-3 one-unit prefetch (sim/lower/sharded_params.h) is that.
//   - reduce-scatter (foreach_reduce): on the compute stream chunk_cat of the bf16 unsharded gradients into an fp32
//     input (1 launch, reads 2, writes 4 bytes per element), the unsharded gradients freed, then the NCCL
//     reduce-scatter on its stream; later micro-batches add the fp32 shard into .grad on that stream.
//   - the step (trainer.py): clip_grad_norm_ (foreach norm, scalar all-reduce, foreach multiply) and
//     AdamW(fused=True) on the fp32 shards: 4 + 4 + 8 = 16 resident bytes per parameter over the FSDP ranks.
// The layer bodies are the eager kernels of sim/lower/pytorch_step.h in its FSDP mode: bf16 parameters and
// activations (no autocast; HF-style RMSNorm upcasts to fp32 inside), SDPA's flash kernel, the HF-style loss;
// torchtitan's own modules differ in detail (complex RoPE, nn.RMSNorm, chunked loss): not modelled.
// Host cost profile (for the engine's host-issue timeline being added elsewhere): PyTorch eager.

#include <cstdint>

#include "models/units.h"

namespace orrery {

/// Bytes per element FSDP2 moves under torchtitan's MixedPrecisionPolicy (config/configs.py @ b5bcd76).
inline constexpr Bytes kFsdp2GatherBytes = 2;  // param_dtype bfloat16
inline constexpr Bytes kFsdp2ReduceBytes = 4;  // reduce_dtype float32

/// What one FSDP2 unit of `elements` parameters (before sharding) moves and copies over `ranks` FSDP ranks.
struct Fsdp2UnitTraffic {
  Bytes all_gather = 0;       // the all-gather, as nccl-tests sizes it (its output): elements x 2
  Bytes reduce_scatter = 0;   // the reduce-scatter (its input): elements x 4
  Bytes copy_in_read = 0, copy_in_written = 0;    // foreach cast + all_gather_copy_in on the shard
  Bytes copy_out_read = 0, copy_out_written = 0;  // split_with_sizes_copy
  Bytes rs_copy_in_read = 0, rs_copy_in_written = 0;  // chunk_cat of the bf16 gradients into fp32
};
Fsdp2UnitTraffic fsdp2_unit_traffic(std::int64_t elements, int ranks);

}  // namespace orrery
