#pragma once
// Time to train a token budget (issue 23, `orrery plan`): from a step's throughput, or from a per-GPU FLOP rate as
// Narayanan et al. estimate it ("Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC21, arXiv:2104.04473, Section 5.1, eq. (4): end-to-end training time ~ 8 T P / (n X) with
// activation recomputation, T tokens, P parameters, n GPUs, X achieved FLOP/s per GPU).

namespace orrery {

/// Seconds to train `tokens` tokens at `tokens_per_s` tokens per second (the whole job's throughput).
/// Errors: Error::invalid (models/error.h) naming the input unless tokens >= 0 and tokens_per_s > 0, both
/// finite.
double time_to_train_s(double tokens, double tokens_per_s);

/// Model FLOPs per token of a dense transformer in SC21's approximation (Section 5.1): 2 P forward and 4 P
/// backward, 6 P, and with full activation recomputation one more forward, 8 P. `parameters`: P.
/// Errors: Error::invalid (models/error.h) naming the input unless parameters > 0 and finite.
double approximate_flops_per_token(double parameters, bool full_recompute);

/// The whole job's tokens per second when each of `gpus` GPUs achieves `flops_per_gpu` FLOP/s counting
/// approximate_flops_per_token(parameters, full_recompute) per token: gpus x flops_per_gpu / that. With
/// time_to_train_s this is SC21's eq. (4). Errors: Error::invalid (models/error.h) naming the input unless
/// gpus > 0 and flops_per_gpu > 0 (finite), and as approximate_flops_per_token.
double tokens_per_s_at(double parameters, bool full_recompute, double gpus, double flops_per_gpu);

/// GPU-hours of `gpus` GPUs held for `seconds`. Errors: Error::invalid (models/error.h) naming the input for a
/// negative or non-finite one.
double gpu_hours(double gpus, double seconds);

}  // namespace orrery
