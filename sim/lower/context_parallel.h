#pragma once
// The attention core under context parallelism (CP), as Megatron-Core runs it through Transformer Engine
// (`--context-parallel-size`, `--cp-comm-type`). Each CP rank holds s / cp tokens of every sequence; every other
// op of the layer is token-wise and runs on those tokens unchanged. Only attention needs the other ranks' keys
// and values:
//
// - p2p (ring attention; Liu et al. arXiv:2310.01889, TE's AttnFuncWithCPAndKVP2P): cp steps; at step i a rank
//   computes its queries against the key/value block of rank (r - i) mod cp while it passes the block it holds to
//   the next rank, so the transfer of step i + 1 hides behind the compute of step i. With the causal mask the
//   sequence is cut into 2 cp chunks and rank r holds chunks r and 2 cp - 1 - r (load balancing): step 0 is a
//   causal block of 2c x 2c (c = s / 2 cp), every other step a block of which exactly half is unmasked. The
//   backward pass runs the ring again, sending the key/value block and the accumulated dK/dV.
// - a2a (Ulysses; Jacobs et al. arXiv:2309.14509): an all-to-all turns (s / cp tokens, all heads) into (s
//   tokens, heads / cp) for Q, K and V, attention runs on whole sequences, and an all-to-all turns the output
//   back; the backward pass mirrors it.
// - allgather: K and V are all-gathered over CP, local queries attend the whole sequence (the causal mask keeps
//   the same pairs as the ring), and the backward pass reduce-scatters dK and dV.
// - a2a+p2p (hierarchical; Megatron-Core --hierarchical-context-parallel-sizes [a2a, p2p], TE's
//   AttnFuncWithCPAndKVP2P with a cp_group list): an all-to-all inside each group of a2a consecutive CP ranks
//   (usually one NVLink domain) turns (s / cp tokens, all heads) into (a2a s / cp tokens, heads / a2a), ring
//   attention runs over the p2p ranks that share a position in their groups, and an all-to-all turns the output
//   back; the backward pass mirrors it.
//
// Communication runs on the CP stream, so the engine decides how much of it the attention compute hides.

#include "sim/lower/context.h"

namespace orrery {

/// Emits the context-parallel attention forward of one layer after `qkv` and returns the task producing the
/// attention output. `local` is the attention of the rank's own tokens without CP (q = kv = s / cp, TP-local
/// heads).
MaybeTask emit_cp_attention_forward(Emitter& emit, const AttentionShape& local, MaybeTask qkv);

/// Emits the context-parallel attention backward after `grad` (the output gradient) and returns the task
/// producing dQ, dK, dV.
MaybeTask emit_cp_attention_backward(Emitter& emit, const AttentionShape& local, MaybeTask grad);

/// Upper estimate of the extra tasks one layer's attention emits per forward or backward step under CP.
int cp_extra_tasks_per_layer(const ParallelPlan& plan);

}  // namespace orrery
