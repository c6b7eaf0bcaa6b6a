// The per-framework rules of a scenario (sim/framework_rules.h).
#include "sim/framework_rules.h"

#include <fmt/format.h>

#include "models/error.h"

namespace orrery {

namespace {

// The model and training settings the eager PyTorch layer bodies (sim/lower/pytorch_step.h) lower: a dense
// Llama-style model in bf16, SDPA flash attention, AdamW, no recompute, packing or offload.
void check_eager_model(const Scenario& s) {
  const ModelSpec& m = s.model;
  const std::string rule = fmt::format("training.framework \"{}\" ", to_string(s.training.framework));
  const auto refuse = [&](bool bad, const std::string& field, const std::string& value, const std::string& why) {
    if (bad) throw Error::not_modelled(field, value, rule + why);
  };
  refuse(s.parallel.schedule != Schedule::k1F1B, "parallel.schedule", "not 1f1b", "runs one plain forward and backward");
  refuse(s.training.precision != Precision::kBf16, "training.precision",
         s.training.precision == Precision::kFp8 ? "fp8" : s.training.precision == Precision::kFp16 ? "fp16" : "fp32",
         s.training.framework == Framework::kPytorch
             ? "is torch.autocast(bfloat16) over fp32 parameters: precision must be bf16"
             : "is MixedPrecisionPolicy(param_dtype=bfloat16) over fp32 shards: precision must be bf16");
  refuse(s.training.recompute != Recompute::kNone, "training.recompute",
         s.training.recompute == Recompute::kFull ? "full" : "selective", "runs without activation checkpointing");
  refuse(s.training.attention_backend != AttentionBackend::kFlash, "training.attention_backend", "unfused",
         "uses scaled_dot_product_attention (flash)");
  refuse(s.training.optimizer != Optimizer::kAdam, "training.optimizer", "sgd", "uses AdamW(fused=True)");
  refuse(m.is_moe() || m.is_mla(), "model", m.name, "lowers dense Llama-style models only (no MoE, no MLA)");
  refuse(m.norm != NormKind::kRmsNorm || !m.gated_mlp || m.position != PositionKind::kRotary || m.qkv_bias ||
             m.attention_output_bias || m.mlp_bias || m.qk_norm || m.embedding_norm || m.sliding_window > 0 || m.hidden_dropout > 0 ||
             m.attention_dropout > 0,
         "model", m.name, "lowers Llama-style models only: RMSNorm, SwiGLU, RoPE, no biases, qk-norm, sliding window or dropout");
  refuse(s.training.packed_documents.enabled() || s.training.optimizer_cpu_offload ||
             s.training.cpu_offloading_num_layers > 0,
         "training", "packing or offload", "runs without document packing or CPU offload");
}

// training.framework "fsdp2": FSDP2 over the data-parallel ranks as torchtitan runs it (sim/lower/fsdp2.h).
void check_fsdp2(const Scenario& s) {
  const ParallelPlan& p = s.parallel;
  const std::string rule = "training.framework \"fsdp2\" ";
  require(p.zero_stage == 3 || p.zero_stage == 2, "parallel.zero_stage", std::to_string(p.zero_stage),
          "must be 3 (fully_shard, resharding each block after its forward) or 2 (fsdp_reshard_after_forward "
          "\"never\") with training.framework \"fsdp2\"; torchtitan shards every parameter (use_distributed_optimizer is "
          "stage 1; leave both out for stage 3)");
  if (p.tp * p.pp * p.cp * p.ep != 1) {
    throw Error::not_modelled("parallel", fmt::format("tp {} pp {} cp {} ep {}", p.tp, p.pp, p.cp, p.ep),
                              rule + "lowers FSDP over the data-parallel ranks only (tp, pp, cp and ep 1)");
  }
  if (p.dp < 2) throw Error::not_modelled("parallel.dp", "1", rule + "needs dp >= 2 (use framework pytorch on one GPU)");
  // Megatron's switches: FSDP2 always runs its gathers and reduce-scatters on their own streams, and has no
  // Transformer Engine userbuffers path.
  require(!(p.overlap_requested.tp_comm && p.tp_comm_overlap), "parallel.tp_comm_overlap", "true",
          "is Megatron/Transformer Engine's TP overlap; " + rule + "has no such path");
  require(!(p.overlap_requested.grad_reduce && !p.overlap_grad_reduce), "parallel.overlap_grad_reduce", "false",
          "cannot be turned off with " + rule + "(its reduce-scatters always run on their own stream)");
  require(!(p.overlap_requested.param_gather && !p.overlap_param_gather), "parallel.overlap_param_gather", "false",
          "cannot be turned off with " + rule + "(its all-gathers always prefetch one unit)");
  if (s.model.tie_word_embeddings) {
    throw Error::not_modelled("model.tie_word_embeddings", "true",
                              rule + "with tied embeddings (torchtitan's one [tok_embeddings, norm, lm_head] unit)");
  }
  check_eager_model(s);
}

// training.framework "megatron-deepspeed": DeepSpeed's engine, ZeRO 0-3 and pipeline engine
// (sim/lower/megatron_deepspeed.h). Turns Megatron's overlap switches to DeepSpeed's defaults.
void check_megatron_deepspeed(Scenario& s) {
  ParallelPlan& p = s.parallel;
  const std::string rule = "training.framework \"megatron-deepspeed\" ";
  require(p.zero_stage < 2 || p.pp == 1, "parallel.zero_stage", std::to_string(p.zero_stage),
          fmt::format("cannot run with pp {} under training.framework \"megatron-deepspeed\": DeepSpeed's pipeline "
                      "engine asserts ZeRO stage < 2 (runtime/pipe/engine.py)", p.pp));
  require(p.vpp == 1, "parallel.vpp", std::to_string(p.vpp),
          "must be 1 with " + rule + "(DeepSpeed's pipeline engine holds one model chunk per stage)");
  require(p.schedule == Schedule::k1F1B, "parallel.schedule", to_string(p.schedule),
          "must be 1f1b with " + rule + "(DeepSpeed's TrainSchedule)");
  require(!(p.overlap_requested.tp_comm && p.tp_comm_overlap), "parallel.tp_comm_overlap", "true",
          "cannot run with " + rule + "(Megatron's legacy layers have no Transformer Engine TP overlap)");
  require(!(p.overlap_requested.p2p && p.overlap_p2p_comm), "parallel.overlap_p2p_comm", "true",
          "cannot run with " + rule + "(the pipeline engine's send and recv block: runtime/pipe/p2p.py)");
  require(!(p.overlap_requested.param_gather && p.overlap_param_gather), "parallel.overlap_param_gather", "true",
          "cannot run with " + rule + "(DeepSpeed gathers the updated parameters after the step)");
  require(!(p.overlap_requested.grad_reduce && p.overlap_grad_reduce && p.zero_stage == 0),
          "parallel.overlap_grad_reduce", "true",
          "needs zero_stage 1 or 2 with " + rule + "(it is DeepSpeed's ZeRO overlap_comm; ZeRO 0 reduces at the end)");
  const auto refuse = [&](bool bad, const std::string& field, const std::string& value, const std::string& why) {
    if (bad) throw Error::not_modelled(field, value, rule + why);
  };
  refuse(p.cp != 1, "parallel.cp", std::to_string(p.cp), "with context parallelism (its own is DeepSpeed-Ulysses)");
  refuse(s.model.is_moe(), "model", s.model.name, "lowers dense models only");
  refuse(s.training.precision == Precision::kFp8, "training.precision", "fp8", "with FP8 (no Transformer Engine layers)");
  refuse(s.training.cpu_offloading_num_layers > 0 || s.training.optimizer_cpu_offload, "training", "CPU offload",
         "with CPU offload");
  // DeepSpeed's defaults (runtime/zero/config.py overlap_comm_valid: on at stage 3 only).
  if (!p.overlap_requested.grad_reduce) p.overlap_grad_reduce = p.zero_stage == 3;
  p.overlap_param_gather = false;
  p.tp_comm_overlap = false;
  p.overlap_p2p_comm = false;
}

// training.framework "pytorch" is the single-GPU recipe of tools/pytorch_train_step.py on a Llama-style model.
void check_framework(Scenario& s) {
  if (s.training.framework == Framework::kFsdp2) check_fsdp2(s);
  if (s.training.framework == Framework::kMegatronDeepSpeed) check_megatron_deepspeed(s);
  if (s.training.framework != Framework::kPytorch) return;
  const ParallelPlan& p = s.parallel;
  const auto refuse = [](bool bad, const std::string& field, const std::string& value, const std::string& why) {
    if (bad) throw Error::not_modelled(field, value, "training.framework \"pytorch\" " + why);
  };
  refuse(p.tp * p.pp * p.cp * p.ep * p.dp != 1, "parallel", fmt::format("tp {} pp {} cp {} ep {} dp {}", p.tp, p.pp, p.cp, p.ep, p.dp),
         "covers one GPU (tp, pp, cp, ep and dp all 1); DDP and FSDP are not lowered");
  refuse(p.zero_stage != 0, "parallel.zero_stage", std::to_string(p.zero_stage), "runs without ZeRO");
  check_eager_model(s);
}

// training.framework "deepspeed-0.3" is Megatron-DeepSpeed with DeepSpeed 0.3's ZeRO-3 (sim/lower/sharded_params.h).
void check_deepspeed(const Scenario& s) {
  if (s.training.framework != Framework::kDeepSpeed03) return;
  const ParallelPlan& p = s.parallel;
  const std::string rule = "training.framework \"deepspeed-0.3\" ";
  if (p.zero_stage != 3) {
    throw Error::not_modelled("parallel.zero_stage", std::to_string(p.zero_stage),
                              rule + "lowers DeepSpeed 0.3's ZeRO stage 3 only; use framework megatron for stages 0-2");
  }
  // DeepSpeed's PipelineEngine asserts ZeRO stage < 2 (deepspeed/runtime/pipe/engine.py).
  require(p.pp == 1, "parallel.pp", std::to_string(p.pp), rule + "with ZeRO-3 needs pp 1: DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3");
  const auto refuse = [&](bool bad, const std::string& field, const std::string& value, const std::string& why) {
    if (bad) throw Error::not_modelled(field, value, rule + why);
  };
  refuse(p.cp != 1, "parallel.cp", std::to_string(p.cp), "has no context parallelism");
  refuse(s.model.is_moe(), "model", s.model.name, "lowers dense models only");
  refuse(s.training.precision == Precision::kFp8, "training.precision", "fp8", "predates FP8 training");
  refuse(p.schedule != Schedule::k1F1B, "parallel.schedule", "not 1f1b", "runs a plain forward and backward per micro-batch");
  // What came after spring 2021: sequence parallelism (2022), FlashAttention (2022), TE's activation offload.
  refuse(p.sequence_parallel, "parallel.sequence_parallel", "true", "predates sequence parallelism");
  refuse(s.training.attention_backend == AttentionBackend::kFlash, "training.attention_backend", "flash",
         "predates fused flash attention: use \"unfused\"");
  refuse(s.training.cpu_offloading_num_layers > 0 || s.training.optimizer_cpu_offload, "training", "CPU offload",
         "models ZeRO-3 without offload");
}

}  // namespace

void check_framework_rules(Scenario& s) {
  check_framework(s);
  check_deepspeed(s);
}

}  // namespace orrery
