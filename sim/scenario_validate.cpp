// The cross-section rules of a scenario: GPU count, divisibility (heads, KV heads, FFN and sequence by TP, layers
// by PP x VPP, global batch by micro-batch x DP, micro-batches by PP when interleaved), stragglers, and the
// features the simulator does not model yet. Each error names the field, the value and the rule.
#include <fmt/format.h>

#include <set>

#include "models/error.h"
#include "sim/pipeline_layout.h"
#include "sim/scenario.h"

namespace orrery {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void reject_unmodelled(const Scenario& s) {
  const ModelSpec& m = s.model;
  const ParallelPlan& p = s.parallel;
  if (m.is_moe()) {
    throw Error::not_modelled("model", m.name,
                              fmt::format("has mixture-of-experts layers ({} experts, top-{}); parameters are counted "
                                          "(`orrery list`), expert lowering comes with the modern-parallelism work",
                                          m.moe.num_experts, m.moe.experts_per_token));
  }
  if (m.is_mla()) throw Error::not_modelled("model", m.name, "uses multi-head latent attention (MLA)");
  if (m.attention_sinks) throw Error::not_modelled("model", m.name, "uses attention sinks");
  if (p.cp > 1) throw Error::not_modelled("parallel.cp", str(p.cp), "context parallelism (cp > 1)");
  if (p.ep > 1) throw Error::not_modelled("parallel.ep", str(p.ep), "expert parallelism (ep > 1)");
  if (s.training.precision == Precision::kFp8) throw Error::not_modelled("training.precision", "fp8", "FP8 training");
  if (p.zero_stage >= 2) {
    throw Error::not_modelled("parallel.zero_stage", str(p.zero_stage), "ZeRO stage 2 and 3 / FSDP sharding");
  }
  if (p.schedule == Schedule::kZbH1 || p.schedule == Schedule::kDualPipe) {
    throw Error::not_modelled("parallel.schedule", to_string(p.schedule), "zero-bubble schedules");
  }
}

void resolve_sizes(Scenario& s) {
  ParallelPlan& p = s.parallel;
  ClusterSpec& c = s.cluster;
  const int mp = p.tp * p.pp * p.cp;
  if (p.dp == 0) {
    if (c.num_gpus == 0) {
      c.num_gpus = mp;
    }
    require(c.num_gpus % mp == 0, "cluster.num_gpus", str(c.num_gpus),
            fmt::format("must be divisible by tp x pp x cp ({} x {} x {} = {}) to derive dp", p.tp, p.pp, p.cp, mp));
    p.dp = c.num_gpus / mp;
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

void check_pipeline(Scenario& s) {
  ParallelPlan& p = s.parallel;
  if (p.num_layers_per_virtual_pipeline_stage) {
    const int per_chunk = *p.num_layers_per_virtual_pipeline_stage;
    const int per_stage = s.model.num_layers / p.pp;
    require(s.model.num_layers % p.pp == 0 && per_stage % per_chunk == 0,
            "parallel.num_layers_per_virtual_pipeline_stage", std::to_string(per_chunk),
            fmt::format("must divide the layers per pipeline stage ({} / pp {})", s.model.num_layers, p.pp));
    p.vpp = per_stage / per_chunk;
  }
  if (p.vpp > 1) {
    require(p.pp >= 2, "parallel.vpp", str(p.vpp), "needs pp >= 2 (interleaving splits each pipeline rank's layers)");
    require(p.schedule == Schedule::k1F1B, "parallel.schedule", to_string(p.schedule),
            "must be 1f1b when vpp > 1 (the interleaved 1F1B schedule)");
    require(s.num_microbatches() % p.pp == 0, "training.global_batch_size", str(s.training.global_batch_size),
            fmt::format("gives {} micro-batches per pipeline, which the interleaved schedule needs to be a multiple "
                        "of pp ({})", s.num_microbatches(), p.pp));
  }
  make_pipeline_layout(s.model, p);  // throws on a bad split
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
  check_tensor_parallel(s);
  check_pipeline(s);
  check_stragglers(s);
  s.cluster.gpu.peak_for(gemm_dtype(s.training.precision));  // the GPU must have the precision's GEMM path
  if (s.training.precision == Precision::kFp16 && s.cluster.gpu.peak_fp16 <= 0) {
    throw Error::invalid("training.precision", "fp16", "is not supported by the GPU " + s.cluster.gpu.name);
  }
}

}  // namespace orrery
