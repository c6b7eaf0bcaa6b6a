#include "sim/lower/context_parallel.h"

namespace orrery {

namespace {

struct Sizes {
  Bytes q = 0, kv = 0, o = 0;  // the rank's local Q, K and V together, and O, in the activation precision
  Bytes o_fp32 = 0;            // O accumulated in fp32 across ring steps
};

Sizes sizes(const AttentionShape& a) {
  const Bytes e = dtype_bytes(a.dtype);
  Sizes s;
  s.q = a.batch * a.q_len * a.heads * a.head_dim_qk * e;
  s.kv = a.batch * a.kv_len * a.kv_heads * (a.head_dim_qk + a.head_dim_v) * e;
  s.o = a.batch * a.q_len * a.heads * a.head_dim_v * e;
  s.o_fp32 = s.o / e * 4;
  return s;
}

// A ring step's block: the local queries against another rank's keys and values, half of it unmasked.
AttentionShape half_block(const AttentionShape& local) {
  AttentionShape a = local;
  a.causal = false;
  a.window = 0;
  a.half_block = true;
  return a;
}

// Ring attention over the `cp` ranks of `group`.
MaybeTask ring_forward(Emitter& emit, const AttentionShape& local, MaybeTask qkv, int cp, GroupKind group) {
  const Sizes z = sizes(local);
  MaybeTask out = emit.attention("attention", local, {qkv});
  MaybeTask block = qkv;  // the key/value block this rank passes on next
  for (int step = 1; step < cp; ++step) {
    block = emit.collective("cp_kv", Stream::kCp, group, CollectiveKind::kSendRecv, z.kv, {block});
    out = emit.attention("attention", half_block(local), {block});
    // TE rescales the running output with each block's log-sum-exp (flash_attn_fwd_out_correction).
    out = emit.elementwise("cp_out_correction", z.o + z.o_fp32, z.o_fp32, {out});
  }
  return out;
}

MaybeTask ring_backward(Emitter& emit, const AttentionShape& local, MaybeTask grad, int cp, GroupKind group) {
  const Sizes z = sizes(local);
  AttentionShape diagonal = local;
  diagonal.backward = true;
  AttentionShape half = half_block(local);
  half.backward = true;
  MaybeTask computed = emit.attention("attention", diagonal, {grad});
  MaybeTask block = grad;
  for (int step = 1; step < cp; ++step) {
    // The key/value block travels on with the dK/dV accumulated for it so far.
    block = emit.collective("cp_kv_dkv", Stream::kCp, group, CollectiveKind::kSendRecv, 2 * z.kv, {block, computed});
    computed = emit.attention("attention", half, {block});
  }
  // The last dK/dV go home to the rank that owns those tokens.
  return emit.collective("cp_dkv", Stream::kCp, group, CollectiveKind::kSendRecv, z.kv, {computed});
}

// Ulysses: the attention of whole sequences with heads / cp of them on each rank.
AttentionShape whole_sequences(const AttentionShape& local, int cp) {
  AttentionShape a = local;
  a.heads /= cp;
  a.kv_heads /= cp;
  a.q_len *= cp;
  a.kv_len *= cp;
  return a;
}

MaybeTask a2a_forward(Emitter& emit, const AttentionShape& local, MaybeTask qkv) {
  const int cp = emit.ctx().plan.cp;
  const Sizes z = sizes(local);
  MaybeTask in = emit.collective("cp_a2a", Stream::kCp, GroupKind::kCp, CollectiveKind::kAllToAll, z.q + z.kv, {qkv});
  MaybeTask a = emit.attention("attention", whole_sequences(local, cp), {in});
  return emit.collective("cp_a2a", Stream::kCp, GroupKind::kCp, CollectiveKind::kAllToAll, z.o, {a});
}

MaybeTask a2a_backward(Emitter& emit, const AttentionShape& local, MaybeTask grad) {
  const int cp = emit.ctx().plan.cp;
  const Sizes z = sizes(local);
  AttentionShape whole = whole_sequences(local, cp);
  whole.backward = true;
  MaybeTask in = emit.collective("cp_a2a", Stream::kCp, GroupKind::kCp, CollectiveKind::kAllToAll, z.o, {grad});
  MaybeTask a = emit.attention("attention", whole, {in});
  return emit.collective("cp_a2a", Stream::kCp, GroupKind::kCp, CollectiveKind::kAllToAll, z.q + z.kv, {a});
}

// Hierarchical: an all-to-all inside the a2a group gives each rank a2a x its tokens for heads / a2a, which then go
// round the ring of the p2p group; the output comes back by the reverse all-to-all.
MaybeTask hierarchical_forward(Emitter& emit, const AttentionShape& local, MaybeTask qkv) {
  const ParallelPlan& p = emit.ctx().plan;
  const int a2a = p.cp_a2a_size(), ring = p.cp / a2a;
  const Sizes z = sizes(local);
  MaybeTask in = emit.collective("cp_a2a", Stream::kCp, GroupKind::kCpA2a, CollectiveKind::kAllToAll, z.q + z.kv,
                                 {qkv});
  MaybeTask a = ring_forward(emit, whole_sequences(local, a2a), in, ring, GroupKind::kCpP2p);
  return emit.collective("cp_a2a", Stream::kCp, GroupKind::kCpA2a, CollectiveKind::kAllToAll, z.o, {a});
}

MaybeTask hierarchical_backward(Emitter& emit, const AttentionShape& local, MaybeTask grad) {
  const ParallelPlan& p = emit.ctx().plan;
  const int a2a = p.cp_a2a_size(), ring = p.cp / a2a;
  const Sizes z = sizes(local);
  MaybeTask in = emit.collective("cp_a2a", Stream::kCp, GroupKind::kCpA2a, CollectiveKind::kAllToAll, z.o, {grad});
  MaybeTask a = ring_backward(emit, whole_sequences(local, a2a), in, ring, GroupKind::kCpP2p);
  return emit.collective("cp_a2a", Stream::kCp, GroupKind::kCpA2a, CollectiveKind::kAllToAll, z.q + z.kv, {a});
}

// All-gather: local queries against the whole sequence's keys; the load-balanced causal mask keeps half of it. A
// sliding window shorter than the sequence keeps only the window before each query: each local query sees w keys
// (priced as queries at the end of the keys, which the first chunk's earliest w queries are not).
AttentionShape against_all_keys(const AttentionShape& local, int cp) {
  const std::int64_t keys = local.kv_len * cp;
  if (local.window > 0 && local.window < keys) {
    AttentionShape a = local;
    a.kv_len = keys;
    return a;
  }
  AttentionShape a = half_block(local);
  a.kv_len = keys;
  return a;
}

MaybeTask allgather_forward(Emitter& emit, const AttentionShape& local, MaybeTask qkv) {
  const int cp = emit.ctx().plan.cp;
  const Sizes z = sizes(local);
  MaybeTask kv = emit.collective("cp_allgather", Stream::kCp, GroupKind::kCp, CollectiveKind::kAllGather, z.kv * cp, {qkv});
  return emit.attention("attention", against_all_keys(local, cp), {kv});
}

MaybeTask allgather_backward(Emitter& emit, const AttentionShape& local, MaybeTask grad) {
  const int cp = emit.ctx().plan.cp;
  const Sizes z = sizes(local);
  AttentionShape a = against_all_keys(local, cp);
  a.backward = true;
  // TE gathers K and V again rather than keeping the whole sequence's from the forward pass.
  MaybeTask kv = emit.collective("cp_allgather", Stream::kCp, GroupKind::kCp, CollectiveKind::kAllGather, z.kv * cp, {grad});
  MaybeTask d = emit.attention("attention", a, {kv});
  return emit.collective("cp_reduce_scatter", Stream::kCp, GroupKind::kCp, CollectiveKind::kReduceScatter,
                         z.kv * cp, {d});
}

}  // namespace

MaybeTask emit_cp_attention_forward(Emitter& emit, const AttentionShape& local, MaybeTask qkv) {
  switch (emit.ctx().plan.cp_comm_type) {
    case CpCommType::kP2p: return ring_forward(emit, local, qkv, emit.ctx().plan.cp, GroupKind::kCp);
    case CpCommType::kA2aP2p: return hierarchical_forward(emit, local, qkv);
    case CpCommType::kAllToAll: return a2a_forward(emit, local, qkv);
    case CpCommType::kAllGather: return allgather_forward(emit, local, qkv);
  }
  return qkv;
}

MaybeTask emit_cp_attention_backward(Emitter& emit, const AttentionShape& local, MaybeTask grad) {
  switch (emit.ctx().plan.cp_comm_type) {
    case CpCommType::kP2p: return ring_backward(emit, local, grad, emit.ctx().plan.cp, GroupKind::kCp);
    case CpCommType::kA2aP2p: return hierarchical_backward(emit, local, grad);
    case CpCommType::kAllToAll: return a2a_backward(emit, local, grad);
    case CpCommType::kAllGather: return allgather_backward(emit, local, grad);
  }
  return grad;
}

int cp_extra_tasks_per_layer(const ParallelPlan& plan) { return plan.cp > 1 ? 3 * plan.cp + 4 : 0; }

}  // namespace orrery
