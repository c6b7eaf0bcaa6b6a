// The cross-section rules of a scenario: GPU count, divisibility (heads, KV heads, FFN and sequence by TP, layers
// by PP x VPP, global batch by micro-batch x DP, micro-batches by PP when interleaved), stragglers, and the
// features the simulator does not model yet. Each error names the field, the value and the rule.
#include <fmt/format.h>

#include <cmath>
#include <set>

#include "models/error.h"
#include "models/limits.h"
#include "sim/framework_rules.h"
#include "sim/group_placement.h"
#include "sim/memory_budget.h"
#include "sim/overlap_switches.h"
#include "sim/pipeline_layout.h"
#include "sim/pool_assignment.h"
#include "sim/scenario.h"
#include "sim/scenario_validate.h"
#include "sim/lower/context_parallel.h"

namespace orrery {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// Model features the framework does not run (plan-free).
void reject_unmodelled_model(const Scenario& s) {
  if (s.model.mtp_num_layers > 0 && s.training.framework != Framework::kMegatron) {
    throw Error::not_modelled("model.mtp_num_layers", str(s.model.mtp_num_layers),
                              fmt::format("multi-token prediction with framework {} (set it to 0 to train without)",
                                          to_string(s.training.framework)));
  }
}

void reject_unmodelled(const Scenario& s) {
  const ParallelPlan& p = s.parallel;
  // Attention sinks (GPT-OSS) add one learned logit per head to each softmax denominator: its parameters are
  // counted, its cost (one term per query row and head) is below the attention kernel's resolution, so it lowers
  // as ordinary attention.
  const bool dualpipe = is_dualpipe(p.schedule);
  if ((p.schedule == Schedule::kZbH1 || dualpipe) && p.zero_stage >= 2) {
    throw Error::not_modelled("parallel.zero_stage", str(p.zero_stage),
                              fmt::format("ZeRO-2/3 with the {} schedule (gradient sharding per split backward step)",
                                          to_string(p.schedule)));
  }
  reject_unmodelled_model(s);
  if (dualpipe) {
    const char* name = to_string(p.schedule);
    if (s.training.cpu_offloading_num_layers > 0) {
      throw Error::not_modelled("training.cpu_offloading_num_layers", str(s.training.cpu_offloading_num_layers),
                                fmt::format("activation offload with the {} schedule", name));
    }
    // DualPipe posts each chunk's transfers as one batch and waits for its receives; Orrery runs the sends
    // without waiting for them, which blocking Megatron-style transfers would need.
    if (!p.overlap_p2p_comm) {
      throw Error::not_modelled("parallel.overlap_p2p_comm", "false",
                                fmt::format("blocking pipeline transfers with {}", name));
    }
    if (s.training.framework != Framework::kMegatron) {
      throw Error::not_modelled("training.framework", to_string(s.training.framework),
                                fmt::format("the {} schedule outside a Megatron-style framework", name));
    }
  }
}

void resolve_sizes(Scenario& s) {
  ParallelPlan& p = s.parallel;
  ClusterSpec& c = s.cluster;
  const std::int64_t mp64 = std::int64_t{p.tp} * p.pp * p.cp;
  require(mp64 <= limits::kGpus, "parallel.tp", std::to_string(p.tp),
          fmt::format("x pp ({}) x cp ({}) = {} must be at most {} GPUs", p.pp, p.cp, mp64, limits::kGpus));
  if (p.dp > 0) {
    require(mp64 * p.dp <= limits::kGpus, "parallel.dp", std::to_string(p.dp),
            fmt::format("makes tp x pp x dp x cp = {} GPUs, more than the limit {}", mp64 * p.dp, limits::kGpus));
  }
  const int mp = static_cast<int>(mp64);
  if (p.dp == 0) {
    if (c.num_gpus == 0) {
      // A mixed cluster's job uses all its pools unless it says otherwise.
      std::int64_t pooled = 0;
      for (const ClusterSpec& pool : c.pools) pooled += pool.num_gpus;
      c.num_gpus = c.has_pools() ? static_cast<int>(pooled) : mp;
    }
    const std::int64_t dp = p.data_parallel_size_for(c.num_gpus);
    require(dp > 0, "cluster.num_gpus", str(c.num_gpus),
            fmt::format("must be divisible by tp x pp x cp ({} x {} x {} = {}) to derive dp", p.tp, p.pp, p.cp, mp));
    p.dp = static_cast<int>(dp);
  } else if (c.num_gpus == 0) {
    c.num_gpus = mp * p.dp;
  } else {
    require(c.num_gpus == mp * p.dp, "cluster.num_gpus", str(c.num_gpus),
            fmt::format("must equal tp x pp x dp x cp ({} x {} x {} x {} = {})", p.tp, p.pp, p.dp, p.cp, mp * p.dp));
  }
  TrainingSpec& t = s.training;
  const std::int64_t per_step = t.micro_batch_size * p.dp;
  if (t.global_batch_size == 0) t.global_batch_size = per_step;
  require(t.global_batch_size % per_step == 0, "training.global_batch_size", str(t.global_batch_size),
          fmt::format("must be divisible by micro_batch_size x dp ({} x {} = {})", t.micro_batch_size, p.dp, per_step));
}

// RoPE fusion as Megatron-Bridge settles it: off for YaRN, whose mscale the fused kernel does not take.
void check_rope_fusion(Scenario& s) {
  std::optional<bool>& fused = s.training.apply_rope_fusion;
  // Multi-head latent attention runs its own rotary (Megatron-Core's MLA rope, fused with YaRN's mscale), and
  // Megatron-Bridge's check passes it.
  if (!s.model.rope_yarn || s.model.position != PositionKind::kRotary || s.model.is_mla()) return;
  if (fused.value_or(false)) {
    s.warnings.push_back("apply_rope_fusion (requested) is inactive with YaRN rotary scaling: Transformer Engine's fused "
                         "RoPE does not apply YaRN's mscale, so Megatron-Bridge runs the unfused RoPE");
  }
  fused = false;
}

void check_tensor_parallel(Scenario& s) {
  const ModelSpec& m = s.model;
  ParallelPlan& p = s.parallel;
  require(m.num_attention_heads % p.tp == 0, "model.num_attention_heads", str(m.num_attention_heads),
          fmt::format("must be divisible by tp ({})", p.tp));
  require(m.num_kv_heads % p.tp == 0, "model.num_key_value_heads", str(m.num_kv_heads),
          fmt::format("must be divisible by tp ({}): Megatron-Core shards whole query groups", p.tp));
  require(m.intermediate_size % p.tp == 0, "model.intermediate_size", str(m.intermediate_size),
          fmt::format("must be divisible by tp ({})", p.tp));
  if (p.sequence_parallel && p.tp == 1) {
    p.sequence_parallel = false;
    s.warnings.push_back("sequence_parallel has no effect with tp 1 and was turned off (as Megatron-LM does)");
  }
  if (p.sequence_parallel) {
    require(s.training.seq_length % p.tp == 0, "training.seq_length", str(s.training.seq_length),
            fmt::format("must be divisible by tp ({}) with sequence parallelism", p.tp));
  }
}

// Context parallelism as Megatron-Core and Transformer Engine accept it.
void check_context_parallel(const Scenario& s) {
  const ParallelPlan& p = s.parallel;
  const TrainingSpec& t = s.training;
  if (p.cp == 1) return;
  require(t.attention_backend == AttentionBackend::kFlash, "training.attention_backend", to_string(t.attention_backend),
          fmt::format("must be flash with cp ({}): context parallelism runs inside Transformer Engine's fused attention", p.cp));
  require(t.seq_length % (2 * p.cp) == 0, "training.seq_length", str(t.seq_length),
          fmt::format("must be divisible by 2 x cp ({}): the causal load balancing cuts each sequence into 2 cp chunks",
                      2 * p.cp));
  const ModelSpec& m = s.model;
  if (p.cp_comm_type == CpCommType::kA2aP2p) {
    const auto& h = p.hierarchical_context_parallel_sizes;
    require(h[0] * h[1] == p.cp, "parallel.hierarchical_context_parallel_sizes", fmt::format("[{}, {}]", h[0], h[1]),
            fmt::format("must multiply to cp ({})", p.cp));
  }
  if (p.cp_comm_type == CpCommType::kAllToAll || p.cp_comm_type == CpCommType::kA2aP2p) {
    const int a2a = p.cp_comm_type == CpCommType::kAllToAll ? p.cp : p.cp_a2a_size();
    const std::string what = p.cp_comm_type == CpCommType::kAllToAll ? "cp" : "the all-to-all group size";
    require((m.num_attention_heads / p.tp) % a2a == 0, "model.num_attention_heads", str(m.num_attention_heads),
            fmt::format("/ tp ({}) must be divisible by {} ({}) with cp_comm_type {} (heads are scattered over it)",
                        p.tp, what, a2a, to_string(p.cp_comm_type)));
    require((m.num_kv_heads / p.tp) % a2a == 0, "model.num_key_value_heads", str(m.num_kv_heads),
            fmt::format("/ tp ({}) must be divisible by {} ({}) with cp_comm_type {} (heads are scattered over it)",
                        p.tp, what, a2a, to_string(p.cp_comm_type)));
  }
  if (p.cp_comm_type == CpCommType::kP2p || (p.cp_comm_type == CpCommType::kA2aP2p && p.cp / p.cp_a2a_size() > 1)) {
    for (int layer = 0; layer < m.num_layers; ++layer) {
      const std::int64_t window = m.layer_window(layer);
      require(window == 0 || window >= s.training.seq_length, "parallel.cp_comm_type", "p2p",
              "cannot run sliding-window attention (Transformer Engine's ring attention supports only full causal "
              "masks); use a2a or allgather");
    }
  }
}

// Megatron-Core's conditions for overlap_moe_expert_parallel_comm (TransformerConfig checks: EP > 1, the alltoall
// or flex dispatcher, a virtual pipeline when pp > 1), and what Orrery does not lower with it.
void check_expert_overlap(const Scenario& s) {
  const ParallelPlan& p = s.parallel;
  const std::string field = "parallel.overlap_moe_expert_parallel_comm";
  require(p.ep > 1, field, "true", "needs ep > 1 (there is no expert all-to-all to hide)");
  require(p.moe_token_dispatcher_type != MoeDispatcher::kAllGather, field, "true",
          "needs moe_token_dispatcher_type alltoall or flex, as Megatron-Core requires");
  require(p.schedule == Schedule::k1F1B, field, "true",
          fmt::format("runs with the 1f1b schedule, not {}", to_string(p.schedule)));
  require(p.pp == 1 || p.vpp > 1, field, "true",
          fmt::format("needs vpp > 1 with pp {} (Megatron-Core merges passes only in the interleaved schedule)", p.pp));
  const TrainingSpec& t = s.training;
  require(t.precision != Precision::kFp32, "training.precision", "fp32",
          "cannot run with parallel.overlap_moe_expert_parallel_comm: Megatron-Core needs bf16 or fp16 parameters");
  require(t.recompute != Recompute::kFull, "training.recompute", "full",
          "cannot run with parallel.overlap_moe_expert_parallel_comm: Megatron-Core refuses full recompute with it");
  // The overlapped schedule calls the MoE stages directly, past MoELayer.forward's checkpoint (Megatron-Core
  // asserts "moe" is not among the recompute modules with it).
  require(!(t.recompute == Recompute::kSelective && t.recompute_modules.moe), "training.recompute_modules", "moe",
          "cannot run with parallel.overlap_moe_expert_parallel_comm: the overlapped schedule bypasses the MoE "
          "layer's checkpoint");
  if (t.cpu_offloading_num_layers > 0) {
    throw Error::not_modelled("training.cpu_offloading_num_layers", std::to_string(t.cpu_offloading_num_layers),
                              "activation offload with parallel.overlap_moe_expert_parallel_comm");
  }
  if (t.framework != Framework::kMegatron) {
    throw Error::not_modelled("training.framework", to_string(t.framework),
                              "parallel.overlap_moe_expert_parallel_comm outside Megatron-Core");
  }
}

// Megatron-Core's capacity per expert is tokens x top-k / experts x factor (moe_utils.get_capacity): at experts /
// top-k every expert holds every token of the micro-batch, and a larger factor only pads with zeros (a factor of
// 1e18 overflowed the padded token count). Plan-free.
void check_capacity_factor(const Scenario& s) {
  const ModelSpec& m = s.model;
  if (const auto& factor = s.training.moe_expert_capacity_factor; factor && m.is_moe()) {
    const double most = static_cast<double>(m.moe.num_experts) / std::max(1, m.moe.experts_per_token);
    require(*factor <= most, "training.moe_expert_capacity_factor", fmt::format("{}", *factor),
            fmt::format("must be at most num_experts / top-k = {:g}, where every expert already holds every token", most));
  }
}

// Expert parallelism as Megatron-Core accepts it (megatron/training/arguments.py, parallel_state.py).
void check_experts(Scenario& s) {
  const ModelSpec& m = s.model;
  ParallelPlan& p = s.parallel;
  require(!p.delay_wgrad_compute || p.overlap_moe_expert_parallel_comm, "parallel.delay_wgrad_compute", "true",
          "needs parallel.overlap_moe_expert_parallel_comm, as Megatron-Core requires");
  check_capacity_factor(s);
  if (!m.is_moe()) {
    require(p.ep == 1, "parallel.ep", str(p.ep), "needs a mixture-of-experts model");
    require(!p.overlap_moe_expert_parallel_comm, "parallel.overlap_moe_expert_parallel_comm", "true",
            "needs a mixture-of-experts model");
    p.etp = 1;  // no experts to shard
    return;
  }
  require(m.moe.num_experts % p.ep == 0, "parallel.ep", str(p.ep),
          fmt::format("must divide the number of experts ({})", m.moe.num_experts));
  const int stage_ranks = p.tp * p.cp * p.dp;
  require(stage_ranks % (p.ep * p.etp) == 0, "parallel.ep", str(p.ep),
          fmt::format("x etp ({}) must divide tp x cp x dp ({}): experts are laid over those ranks", p.etp, stage_ranks));
  require(m.moe.expert_intermediate_size % p.etp == 0, "parallel.etp", str(p.etp),
          fmt::format("must divide the expert intermediate size ({})", m.moe.expert_intermediate_size));
  if (p.tp > 1) {
    require(p.sequence_parallel, "parallel.sequence_parallel", "false",
            fmt::format("must be true with tp ({}) in a mixture-of-experts model (Megatron-Core requires it)", p.tp));
  }
  if (p.overlap_moe_expert_parallel_comm) check_expert_overlap(s);
  if (p.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
    // Megatron-Core asserts TP x EP > 1 for the flex dispatcher and folds expert TP into its group; Orrery prices
    // EP-only dispatch, so it needs ep > 1 and etp 1.
    require(p.ep > 1, "parallel.ep", str(p.ep), "must be above 1 with moe_token_dispatcher_type flex");
    if (p.etp > 1) {
      throw Error::not_modelled("parallel.etp", str(p.etp),
                                "expert tensor parallelism with the flex dispatcher (etp defaults to tp; set etp 1)");
    }
    if (s.training.moe_pad_expert_input_to_capacity) {
      throw Error::not_modelled("training.moe_pad_expert_input_to_capacity", "true",
                                "drop-and-pad with the flex dispatcher");
    }
  }
  const double load = s.training.moe_load_imbalance;
  require(load <= p.ep, "training.moe_load_imbalance", fmt::format("{}", load),
          fmt::format("cannot exceed ep ({}): the busiest rank gets at most all the tokens", p.ep));
}

void check_pipeline(Scenario& s) {
  ParallelPlan& p = s.parallel;
  if (p.num_layers_per_virtual_pipeline_stage) {
    const int per_chunk = *p.num_layers_per_virtual_pipeline_stage;
    // Megatron's key sets the interleaving; DualPipe and DualPipeV fix their own two chunks per rank.
    require(p.schedule == Schedule::k1F1B, "parallel.num_layers_per_virtual_pipeline_stage", std::to_string(per_chunk),
            fmt::format("sets interleaving, which only the 1f1b schedule has (schedule {}; dualpipe and dualpipev "
                        "split layers with parallel.pipeline_layout)",
                        to_string(p.schedule)));
    const int per_stage = s.model.num_layers / p.pp;
    require(s.model.num_layers % p.pp == 0 && per_stage % per_chunk == 0,
            "parallel.num_layers_per_virtual_pipeline_stage", std::to_string(per_chunk),
            fmt::format("must divide the layers per pipeline stage ({} / pp {})", s.model.num_layers, p.pp));
    p.vpp = per_stage / per_chunk;
  }
  if (p.vpp > 1) {
    require(p.pp >= 2, "parallel.vpp", str(p.vpp), "needs pp >= 2 (interleaving splits each pipeline rank's layers)");
    require(p.schedule == Schedule::k1F1B, "parallel.schedule", to_string(p.schedule),
            "must be 1f1b when vpp > 1 (the interleaved 1F1B schedule; zb-h1 has one model chunk per rank, "
            "dualpipe and dualpipev two of their own)");
    require(s.num_microbatches() % p.pp == 0, "training.global_batch_size", str(s.training.global_batch_size),
            fmt::format("gives {} micro-batches per pipeline, which the interleaved schedule needs to be a multiple "
                        "of pp ({})", s.num_microbatches(), p.pp));
  }
  if (p.schedule == Schedule::kDualPipe) {
    // DualPipe pairs rank s with rank pp-1-s and feeds half the micro-batches from each end (its step() asserts
    // an even number of ranks and an even number of micro-batches, at least twice the ranks).
    require(p.pp >= 2 && p.pp % 2 == 0, "parallel.pp", str(p.pp), "must be even (and at least 2) with dualpipe");
    const int m = s.num_microbatches();
    require(m % 2 == 0 && m >= 2 * p.pp, "training.global_batch_size", str(s.training.global_batch_size),
            fmt::format("gives {} micro-batches per pipeline; dualpipe needs an even number, at least 2 x pp ({})", m,
                        2 * p.pp));
  }
  if (p.schedule == Schedule::kDualPipeV) {
    // dualpipev.py's step() asserts num_chunks >= 2 x pp: its warm-up alone runs 2 pp - 1 forwards on rank 0.
    require(p.pp >= 2, "parallel.pp", str(p.pp), "must be at least 2 with dualpipev (one rank folds nothing)");
    const int m = s.num_microbatches();
    require(m >= 2 * p.pp, "training.global_batch_size", str(s.training.global_batch_size),
            fmt::format("gives {} micro-batches per pipeline; dualpipev needs at least 2 x pp ({})", m, 2 * p.pp));
  }
  make_pipeline_layout(s.model, p);  // throws on a bad split
}

// Keeps the simulation within memory and the clock: tokens per micro-batch, score matrices of unfused attention,
// and the number of tasks the lowering would create.
void check_size(const Scenario& s) {
  const TrainingSpec& t = s.training;
  const ParallelPlan& p = s.parallel;
  require(t.micro_batch_size * t.seq_length <= limits::kTokensPerMicroBatch, "training.micro_batch_size",
          std::to_string(t.micro_batch_size),
          fmt::format("x seq_length ({}) must stay within {} tokens per micro-batch", t.seq_length,
                      limits::kTokensPerMicroBatch));
  if (t.attention_backend == AttentionBackend::kUnfused) {
    const double scores = static_cast<double>(t.micro_batch_size) * s.model.num_attention_heads / p.tp *
                          static_cast<double>(t.seq_length / p.cp) * static_cast<double>(t.seq_length / p.cp);
    require(scores <= 1e15, "training.attention_backend", "unfused",
            fmt::format("would materialise {:.3g} attention scores per layer; use flash at this sequence length", scores));
  }
  const double tasks = estimated_tasks(s);
  require(tasks <= static_cast<double>(limits::kTasks), "training.global_batch_size", std::to_string(t.global_batch_size),
          fmt::format("gives {} micro-batches per pipeline: about {:.3g} tasks to simulate, above the limit of {:.3g}",
                      s.num_microbatches(), tasks, static_cast<double>(limits::kTasks)));
}

// The network tiers must reach every node of the job; beyond the last listed tier traffic is priced as that tier.
void check_fabric(Scenario& s) {
  const ClusterSpec& c = s.cluster;
  if (c.has_pools()) return;  // each pool's fabric holds only its own stages
  if (c.network.empty() || c.network.back().nodes == 0) return;
  if (c.num_nodes() > c.network.back().nodes) {
    s.warnings.push_back(fmt::format("the cluster's outermost network tier ({}) reaches {} nodes but the job has {}; "
                                     "traffic beyond it is priced as within it",
                                     c.network.back().name, c.network.back().nodes, c.num_nodes()));
  }
}

// Packing walks every document of the global batch: bound their expected number.
void check_packing(const Scenario& s) {
  const PackingSpec& p = s.training.packed_documents;
  if (!p.enabled()) return;
  const double tokens = static_cast<double>(s.training.seq_length) * static_cast<double>(s.training.global_batch_size);
  double mean = 0;
  if (!p.lengths.empty()) {
    for (std::int64_t l : p.lengths) mean += static_cast<double>(l);
    mean /= static_cast<double>(p.lengths.size());
  } else {
    mean = p.median * std::exp(p.sigma * p.sigma / 2);
  }
  constexpr double kMaxDocuments = 2e7;
  require(tokens / mean <= kMaxDocuments, "training.packed_documents", fmt::format("mean length {:.0f}", mean),
          fmt::format("gives about {:.3g} documents per global batch; at most {:.0e} are simulated", tokens / mean,
                      kMaxDocuments));
}

void check_offload(const Scenario& s) {
  const TrainingSpec& t = s.training;
  if (t.optimizer_cpu_offload) {
    require(s.parallel.zero_stage == 1 || s.parallel.zero_stage == 2, "training.optimizer_cpu_offload", "true",
            fmt::format("needs zero_stage 1 or 2 (Megatron requires the distributed optimizer; ZeRO-Offload runs on "
                        "ZeRO-2), not {}", s.parallel.zero_stage));
    require(s.cluster.host_memory_bandwidth > 0, "cluster.host_memory_bandwidth_GB_s", "missing",
            "is needed by training.optimizer_cpu_offload (the CPU Adam step is bound by host memory bandwidth)");
  }
  if (t.cpu_offloading_num_layers > 0) {
    const PipelineLayout layout = make_pipeline_layout(s.model, s.parallel);
    int fewest = s.model.num_layers;  // over the chunks that hold layers
    for (int stage = 0; stage < layout.pp; ++stage) {
      for (int chunk = 0; chunk < layout.vpp; ++chunk) {
        if (layout.layers_in(stage, chunk) > 0) fewest = std::min(fewest, layout.layers_in(stage, chunk));
      }
    }
    require(t.cpu_offloading_num_layers < fewest, "training.cpu_offloading_num_layers",
            std::to_string(t.cpu_offloading_num_layers),
            fmt::format("must be below the layers of every model chunk ({} at fewest), as Transformer Engine requires",
                        fewest));
  }
}

// 16-bit gradient buffers are a choice only where Megatron would otherwise keep them in fp32: the precision and
// framework parts (plan-free), then the ZeRO stage.
void check_grad_dtype_setup(const Scenario& s) {
  if (s.training.grad_reduce_in_fp32) return;
  const Precision p = s.training.precision;
  require(p == Precision::kBf16 || p == Precision::kFp8, "training.grad_reduce_in_fp32", "false",
          p == Precision::kFp16 ? "applies to bf16 and fp8 only (fp16 gradients are already 16-bit)"
                                : "applies to bf16 and fp8 only (fp32 training keeps fp32 gradients)");
  require(s.training.framework == Framework::kMegatron, "training.grad_reduce_in_fp32", "false",
          "is a Megatron-Core setting; training.framework must be megatron");
}

void check_grad_dtype(const Scenario& s) {
  check_grad_dtype_setup(s);
  if (s.training.grad_reduce_in_fp32) return;
  require(s.parallel.zero_stage <= 1, "training.grad_reduce_in_fp32", "false",
          fmt::format("applies to zero_stage 0 and 1; with stage {} the gradients already take the parameter dtype "
                      "(ZeRO's 2 + 2 + 12 bytes per parameter)", s.parallel.zero_stage));
}

// The GPU must run the FP8 recipe's GEMM scaling (GpuSpec::fp8_scaling_fraction throws otherwise).
void check_fp8_recipe(const Scenario& s) {
  if (s.training.precision == Precision::kFp8) s.cluster.gpu.fp8_scaling_fraction(fp8_scaling(s.training.fp8_recipe));
}

// Recompute modules the lowering does not apply yet to every layer kind.
void check_recompute_modules(const Scenario& s) {
  const TrainingSpec::RecomputeModules& m = s.training.recompute_modules;
  if (s.training.recompute != Recompute::kSelective) return;
  const std::string field = "training.recompute_modules";
  // Megatron-Core's TransformerConfig checks (megatron/core/transformer/transformer_config.py).
  require(!m.moe_act || s.model.is_moe(), field, "moe_act", "needs MoE layers (Megatron applies it to grouped experts only)");
  require(!m.shared_experts || (s.model.is_moe() && s.model.moe.num_shared_experts > 0), field, "shared_experts",
          "needs MoE layers with shared experts");
  require(!m.mla_up_proj || s.model.is_mla(), field, "mla_up_proj", "needs multi-head latent attention");
  require(!m.moe || s.model.is_moe(), field, "moe", "needs MoE layers");
  if (m.mla_up_proj && s.model.mla.q_lora_rank == 0) {
    throw Error::not_modelled(field, "mla_up_proj",
                              "recomputing the direct query projection of MLA without q_lora_rank is not lowered yet");
  }
  require(!(m.moe_act || m.layernorm) || s.training.precision != Precision::kFp8, field,
          m.layernorm ? "layernorm" : "moe_act",
          "cannot run with precision fp8: Megatron-Core refuses layernorm and moe_act recompute under FP8 delayed scaling");
  if (m.layernorm && s.model.is_mla()) {
    throw Error::not_modelled(field, "layernorm",
                              "the layernorm recompute of multi-head latent attention layers is not lowered yet");
  }
}

// Megatron-Core's full recompute methods the lowering builds: uniform with one layer per checkpoint, and block.
void check_recompute_method(const Scenario& s) {
  const TrainingSpec& t = s.training;
  if (t.recompute != Recompute::kFull) return;
  if (t.recompute_method == RecomputeMethod::kUniform && t.recompute_num_layers > 1) {
    throw Error::not_modelled("training.recompute_num_layers", str(t.recompute_num_layers),
                              "uniform full recompute with more than one layer per checkpoint (each group's layers "
                              "run again together before its backward); use 1, or recompute_method \"block\"");
  }
  if (t.recompute_method == RecomputeMethod::kBlock && t.framework != Framework::kMegatron) {
    throw Error::not_modelled("training.recompute_method", "block",
                              fmt::format("block recompute with framework {}", to_string(t.framework)));
  }
}

void check_fp16(const Scenario& s) {
  if (s.training.precision == Precision::kFp16 && s.cluster.gpu.peak_fp16 <= 0) {
    throw Error::invalid("training.precision", "fp16", "is not supported by the GPU " + s.cluster.gpu.name);
  }
}

void check_stragglers(const Scenario& s) {
  std::set<int> seen;
  for (std::size_t i = 0; i < s.stragglers.size(); ++i) {
    const Straggler& st = s.stragglers[i];
    const std::string field = fmt::format("stragglers[{}].rank", i);
    require(st.rank < s.cluster.num_gpus, field, str(st.rank),
            fmt::format("must be below num_gpus ({})", s.cluster.num_gpus));
    require(seen.insert(st.rank).second, field, str(st.rank), "is listed twice");
  }
}

}  // namespace

void validate_scenario(Scenario& s) {
  reject_unmodelled(s);
  resolve_sizes(s);
  resolve_pools(s);
  check_tensor_parallel(s);
  check_context_parallel(s);
  check_experts(s);
  check_pipeline(s);
  check_size(s);
  check_fabric(s);
  check_stragglers(s);
  check_packing(s);
  check_offload(s);
  check_grad_dtype(s);
  check_framework_rules(s);
  check_recompute_modules(s);
  check_recompute_method(s);
  check_rope_fusion(s);
  s.cluster.gpu.peak_for(gemm_dtype(s.training.precision));  // the GPU must have the precision's GEMM path
  check_fp8_recipe(s);
  warn_inactive_overlaps(s);
  resolve_placement(s);
  check_fp16(s);
}

void validate_plan_free(Scenario& s) {
  reject_unmodelled_model(s);
  check_capacity_factor(s);
  check_packing(s);
  check_grad_dtype_setup(s);
  check_recompute_modules(s);
  check_recompute_method(s);
  check_rope_fusion(s);
  s.cluster.gpu.peak_for(gemm_dtype(s.training.precision));  // the GPU must have the precision's GEMM path
  check_fp8_recipe(s);
  check_fp16(s);
}

}  // namespace orrery
