#pragma once
// `training.framework: "megatron-deepspeed"`: Megatron-DeepSpeed (github.com/deepspeedai/Megatron-DeepSpeed), i.e.
// Megatron-LM's legacy transformer layers (fused kernels, priced as the megatron framework prices them) run by
// DeepSpeed's engine. What DeepSpeed changes, read from DeepSpeed 0.19.6 (github.com/deepspeedai/DeepSpeed @
// edaa7221267243c7be7fb49c5d5f5c4fb97b4641):
//   - ZeRO 0 (fp16/fp32): the engine all-reduces the gradients at the gradient-accumulation boundary in buckets of
//     MEMORY_OPT_ALLREDUCE_SIZE = 5e8 elements (runtime/engine.py, allreduce_gradients -> buffered_allreduce_fallback
//     -> allreduce_no_retain: a bucket closes once its elements exceed 5e8), in parameter (forward) order.
//   - ZeRO 0 in bf16: gradients accumulate in the model dtype (engine.py get_data_types: grad_accum_dtype
//     defaults to it), all-reduced as above; with a pipeline the engine picks BF16_Optimizer
//     (_do_optimizer_sanity_check; runtime/bf16_optimizer.py), which partitions the fp32 master weights and
//     moments over DP and all-gathers the bf16 weights after the step (all_gather_dp_groups): 2 + 2 + 12 / N
//     bytes per parameter; without one, DDP_BFLOAT16's unpartitioned fp32 state, 2 + 2 + 12.
//   - ZeRO 1: DeepSpeedZeroOptimizer (runtime/zero/stage_1_and_2.py) reduces at the boundary (reduce_gradients, in
//     parameter order) through its contiguous buckets of reduce_bucket_size = 5e8 elements (runtime/zero/config.py):
//     a bucket is reduced before the parameter that would overflow it is added
//     (reduce_independent_p_g_buckets_and_remove_grads); each bucket is divided by the DP size on the compute
//     stream, then its slices are reduced to their owners (average_tensor, priced as one reduce-scatter of the
//     bucket). After the step the owners' updated 16-bit parameters are all-gathered: one all_gather_into_tensor
//     of the flat group (runtime/utils.py all_gather_dp_groups; allgather_bucket_size only applies without it).
//   - ZeRO 2: the same buckets, filled and reduced by the gradient hooks in every micro-batch's backward. ZeRO 1
//     and 2 step on an fp32 copy of the owned gradient shard (single_partition_of_fp32_groups[i].grad).
//   - ZeRO 3 (pp 1), at the granularity of Orrery's units (a layer, the embedding, the head;
//     sim/lower/deepspeed_zero3.cpp): parameters of at most stage3_param_persistence_threshold = 1e5 elements
//     stay whole; a unit's 16-bit partitions are all-gathered (all_gather_coalesced) in its forward and backward;
//     the first stage3_prefetch_bucket_size = 5e7 elements are prefetched while the unit before it runs
//     (partitioned_param_coordinator.py fetch_sub_module), the rest fetched as it starts and overlapping it;
//     after its forward a unit stays gathered when it recurs within stage3_max_reuse_distance = 1e9 elements of
//     the trace (__params_to_release: twice the later units' elements); gradients fill reduce_bucket_size
//     buckets in backward order, reduce-scattered before one would overflow (stage3.py), every micro-batch, on
//     the reduction stream (overlap_comm). stage3_max_live_parameters (1e9) does not bind with one unit ahead;
//     the ipg buffers and the per-module fetch order within a layer are not modelled.
//   - overlap_comm defaults to false for stages 0-2 (config.py overlap_comm_valid: true only for stage 3): the
//     reductions run on the compute stream, so nothing overlaps them; `parallel.overlap_grad_reduce: true` is
//     DeepSpeed's overlap_comm. Gradients are reduced in the 16-bit parameter dtype (communication_data_type
//     unset), so ZeRO's 2 + 2 + 12 bytes per parameter.
//   - the pipeline engine (runtime/pipe/engine.py, schedule.py TrainSchedule, p2p.py): one model chunk per stage
//     (no interleaving), the 1F1B order (num_pipe_buffers = min(stages - stage_id, micro_batches)), and
//     blocking dist.send / dist.recv of whole activations (p2p.py asserts async_op False): compute does not
//     overlap a transfer. It refuses ZeRO 2 and 3 ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
//     parallelism", engine.py). The engine sends each step's output at the start of the next step, before that
//     step's receive; Orrery posts them together and waits for both (Megatron's blocking p2p), the same stall.
//   - with tp > 1 the pipeline engine partitions what it sends over the TP group (pipe_partitioned and
//     grad_partitioned, runtime/config.py: true): 1/tp of each activation or gradient per rank, and after the
//     receive an all-gather over TP rebuilds it (PartitionedTensor.full(), engine.py), before the compute.
// Not modelled: the weight-decay split
// of the parameter groups (buckets run over all parameters in one order), the engine's input clone per forward.
// Host cost profile (for the engine's host-issue timeline being added elsewhere): Megatron legacy Python modules.

#include <cstdint>
#include <vector>

namespace orrery {

/// DeepSpeed's default reduce_bucket_size and the engine's MEMORY_OPT_ALLREDUCE_SIZE, in elements
/// (runtime/zero/config.py, runtime/engine.py @ edaa722).
inline constexpr std::int64_t kDeepSpeedBucketElements = 500'000'000;

/// How a DeepSpeed reduction closes its buckets.
enum class DeepSpeedBucketRule {
  kFlushBeforeOverflow,  // ZeRO 1/2 ipg buckets: reduce before adding a tensor that would exceed the size
  kCloseAfterExceeding,  // engine allreduce_no_retain (ZeRO 0): close once the elements exceed the size
};

/// Splits tensors of `elements` (in reduction order) into DeepSpeed's buckets of `bucket` elements; returns the
/// indexes of each bucket's tensors, in order. A tensor larger than a bucket is a bucket of its own (kFlush...).
std::vector<std::vector<std::size_t>> deepspeed_buckets(const std::vector<std::int64_t>& elements, std::int64_t bucket,
                                                        DeepSpeedBucketRule rule);

}  // namespace orrery

namespace orrery {

/// DeepSpeed ZeRO-3 defaults, in elements (runtime/zero/config.py @ edaa722): stage3_prefetch_bucket_size and
/// stage3_max_reuse_distance. (stage3_max_live_parameters, 1e9, is not reached with one unit prefetched.)
inline constexpr std::int64_t kDeepSpeedPrefetchElements = 50'000'000;
inline constexpr std::int64_t kDeepSpeedMaxReuseDistance = 1'000'000'000;

}  // namespace orrery
