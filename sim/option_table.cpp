// The option table's rows. Each row's doc is the key reference's text (scenarios/README.md is made from it);
// Megatron-LM spellings are those of megatron/training/arguments.py (core_r0.13.0).
#include "sim/option_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

namespace orrery {

namespace {

using T = OptionType;

// Builders that keep the rows readable: one per kind of row.
constexpr OptionSpec row(std::string_view section, std::string_view key, std::string_view megatron,
                         std::string_view flag, T type, std::string_view default_text, std::string_view default_json,
                         std::string_view doc, std::string_view example) {
  return OptionSpec{section, key, megatron, flag, type, {}, default_text, default_json, doc, example, {}, false};
}
constexpr OptionSpec choice(std::string_view section, std::string_view key, std::string_view megatron,
                            std::string_view flag, std::string_view choices, std::string_view default_text,
                            std::string_view doc, std::string_view example, T type = T::kChoice) {
  return OptionSpec{section, key, megatron, flag, type, choices, default_text,
                    type == T::kChoice ? default_text : std::string_view{}, doc, example, {}, false};
}
constexpr OptionSpec aliased(std::string_view alias, OptionSpec o) {
  o.file_alias = alias;
  return o;
}
constexpr OptionSpec searched(OptionSpec o) {
  o.search = true;
  return o;
}

constexpr std::string_view kOverlapDoc =
    "Megatron's overlap switch; on by default as the Megatron-Core training recipes (NeMo, Megatron-Bridge) set it. "
    "A switch that cannot act where it would change the time is named in the report's `warnings`, on by default or "
    "requested: `tp_comm_overlap` at TP > 1 without sequence parallelism, `overlap_param_gather` requested with "
    "ZeRO 0 or without `overlap_grad_reduce` (both refused by Megatron-LM, priced as given), either switch turned off "
    "with ZeRO-3 (whose gathers always prefetch)";

constexpr std::string_view kTpOverlapDoc =
    "overlap TP communication with the GEMMs (Transformer Engine's userbuffers); needs sequence parallelism. On by "
    "default as the Megatron-Core training recipes set it; at TP > 1 without sequence parallelism it cannot act, "
    "which the report's `warnings` say";

constexpr std::array kOptions = {
    // ---- parallel ----
    searched(aliased("tensor_model_parallel_size", row("parallel", "tp", "--tensor-model-parallel-size", "--tp", T::kInteger, "1", "1",
                         "tensor-parallel size", R"({"parallel": {"tp": 2}})"))),
    searched(aliased("pipeline_model_parallel_size", row("parallel", "pp", "--pipeline-model-parallel-size", "--pp", T::kInteger, "1", "1",
                         "pipeline-parallel size", R"({"parallel": {"pp": 2}})"))),
    aliased("data_parallel_size",
            row("parallel", "dp", "", "--dp,--data-parallel-size", T::kInteger, "`num_gpus` / (tp × pp × cp)", "",
                "data-parallel size (Megatron-LM derives it)", R"({"parallel": {"dp": 8}})")),
    searched(aliased("context_parallel_size", row("parallel", "cp", "--context-parallel-size", "--cp", T::kInteger, "1", "1",
                         "context-parallel size", R"({"parallel": {"cp": 2}})"))),
    searched(aliased("expert_model_parallel_size", row("parallel", "ep", "--expert-model-parallel-size", "--ep", T::kInteger, "1", "1",
                         "expert-parallel size (MoE models)",
                         R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2}, "parallel": {"ep": 2}})"))),
    searched(aliased("expert_tensor_parallel_size", row("parallel", "etp", "--expert-tensor-parallel-size", "--etp", T::kInteger, "`tp`", "",
                         "expert tensor-parallel size (Megatron-Core: expert TP defaults to TP)",
                         R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
                             "parallel": {"tp": 2, "ep": 2, "etp": 1, "sequence_parallel": true}})"))),
    searched(aliased("virtual_pipeline_model_parallel_size", row("parallel", "vpp", "--virtual-pipeline-model-parallel-size", "--vpp", T::kInteger, "1", "1",
                         "virtual pipeline stages (model chunks) per pipeline rank; > 1 selects interleaved 1F1B",
                         R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4}, "parallel": {"pp": 2, "vpp": 2}})"))),
    row("parallel", "num_layers_per_virtual_pipeline_stage", "--num-layers-per-virtual-pipeline-stage", "",
        T::kInteger, "none", "",
        "Megatron's other way to set `vpp`: layers per virtual stage (vpp = layers per pipeline stage / this); not "
        "with `vpp`",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4},
            "parallel": {"pp": 2, "num_layers_per_virtual_pipeline_stage": 1}})"),
    row("parallel", "sequence_parallel", "--sequence-parallel", "", T::kBoolean, "false", "false",
        "Megatron sequence parallelism (ignored with a warning at tp 1)",
        R"({"parallel": {"tp": 2, "sequence_parallel": true}})"),
    searched(row("parallel", "zero_stage", "", "--zero-stage", T::kInteger, "0", "0",
                 "ZeRO stage (0 none, 1 Megatron's distributed optimizer, 2 gradients too, 3 FSDP)",
                 R"({"parallel": {"zero_stage": 3}})")),
    row("parallel", "use_distributed_optimizer", "--use-distributed-optimizer", "", T::kBoolean, "false", "false",
        "Megatron's distributed optimizer: ZeRO stage 1 (with `zero_stage` too, the two must agree)",
        R"({"parallel": {"use_distributed_optimizer": true}})"),
    searched(choice(
        "parallel", "schedule", "", "--schedule", "1f1b, gpipe, zb-h1, dualpipe, dualpipev", "1f1b",
        "pipeline schedule: `1f1b` (interleaved when `vpp` > 1), `gpipe`, or `zb-h1` (zero-bubble H1, Qi et al. "
        "arXiv:2401.10241: backward split into input- and weight-gradient passes, stage i holding back i "
        "weight-gradient passes for the cool-down; vpp 1, ZeRO ≤ 1), or `dualpipe` (DeepSeek-V3, arXiv:2412.19437 "
        "Section 3.2.1: rank s holds model stage s and a copy of stage pp-1-s, half the micro-batches enter at each "
        "end, forward and backward chunks of the two directions run as overlapped pairs, each model stage's two "
        "copies sum their gradient shards over ranks s and pp-1-s as soon as both are ready; so every rank holds two "
        "stages' weights, gradients and optimizer state. `pipeline_layout` and the "
        "`decoder_first/last_pipeline_num_layers` keys split the model into pp stages, rank s running entries s and "
        "pp-1-s. pp even, vpp 1, an even number of micro-batches of at least 2 pp, ZeRO ≤ 1, `overlap_p2p_comm` true; "
        "activation offload and non-Megatron frameworks are not modelled with it); or `dualpipev` (DualPipe cut in "
        "half, github.com/deepseek-ai/DualPipe `dualpipev.py`: the model folded in a V over 2 pp virtual stages, rank "
        "s holding virtual stages s and 2 pp - 1 - s; every micro-batch enters at rank 0, runs down to the last rank "
        "and back up, rank 0 also holding the LM head and loss; pp ≥ 2, at least 2 pp micro-batches, vpp 1)",
        R"({"parallel": {"pp": 2, "schedule": "gpipe"}})")),
    row("parallel", "overlap_grad_reduce", "--overlap-grad-reduce", "", T::kBoolean, "true", "true",
        kOverlapDoc, R"({"parallel": {"overlap_grad_reduce": false}})"),
    row("parallel", "overlap_param_gather", "--overlap-param-gather", "", T::kBoolean, "true", "true",
        kOverlapDoc, R"({"parallel": {"overlap_param_gather": false}})"),
    row("parallel", "tp_comm_overlap", "--tp-comm-overlap", "", T::kBoolean, "true", "true",
        kTpOverlapDoc,
        R"({"parallel": {"tp_comm_overlap": false}})"),
    row("parallel", "overlap_p2p_comm", "--no-overlap-p2p-communication", "--overlap-p2p-comm,--overlap-p2p-communication", T::kBoolean, "true",
        "true", kOverlapDoc, R"({"parallel": {"overlap_p2p_comm": false}})"),
    row("parallel", "overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm", "", T::kBoolean,
        "false", "false",
        "Megatron-Core's expert-parallel overlap (Megatron-Bridge's `moe_a2a_overlap`): in the steady state each "
        "backward pass runs merged with another micro-batch's forward, its kernels interleaved with the forward's on "
        "the one GPU, so each pass's all-to-alls hide behind the other's compute (without a pipeline: each backward "
        "with the next forward). Needs a MoE model, ep > 1, the `alltoall` or `flex` dispatcher, vpp > 1 when pp > 1, "
        "the 1f1b schedule, bf16/fp16 parameters (fp8 GEMMs allowed) and no full recompute, as Megatron-Core does; not "
        "lowered with activation offload or outside the megatron framework. The merged passes share the GPU and each "
        "communication stream, one task at a time, alternating when both are ready (Megatron-Core fixes that order "
        "layer by layer)",
        R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
            "parallel": {"ep": 2, "overlap_moe_expert_parallel_comm": true}})"),
    row("parallel", "delay_wgrad_compute", "--delay-wgrad-compute", "", T::kBoolean, "false", "false",
        "Megatron-Core's delayed weight gradients (Megatron-Bridge sets it with `moe_a2a_overlap`, in "
        "`moe_a2a_1f1b_overrides`): with `overlap_moe_expert_parallel_comm`, the routed experts' two weight-gradient "
        "GEMMs run after their input gradients have gone to the dispatch's backward all-to-all, which then overlaps "
        "them instead of waiting for them. The attention's delayed weight gradients and the shared experts' are not "
        "moved (they stay inline). Needs `overlap_moe_expert_parallel_comm`",
        R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
            "parallel": {"ep": 2, "overlap_moe_expert_parallel_comm": true, "delay_wgrad_compute": true}})"),
    row("parallel", "decoder_first_pipeline_num_layers", "--decoder-first-pipeline-num-layers", "", T::kInteger,
        "even split", "", "layers on the first pipeline stage; the rest divide evenly over the others",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 3},
            "parallel": {"pp": 2, "decoder_first_pipeline_num_layers": 1}})"),
    row("parallel", "decoder_last_pipeline_num_layers", "--decoder-last-pipeline-num-layers", "", T::kInteger,
        "even split", "", "layers on the last pipeline stage; the rest divide evenly over the others",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 3},
            "parallel": {"pp": 2, "decoder_last_pipeline_num_layers": 1}})"),
    row("parallel", "account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split", "",
        T::kBoolean, "false", "false", "the embedding counts as one layer when layers are divided",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 3},
            "parallel": {"pp": 2, "account_for_embedding_in_pipeline_split": true}})"),
    row("parallel", "account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split", "", T::kBoolean,
        "false", "false", "the loss counts as one layer when layers are divided",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 3},
            "parallel": {"pp": 2, "account_for_loss_in_pipeline_split": true}})"),
    row("parallel", "pipeline_layout", "", "--pipeline-layout", T::kIntegerList, "even split", "",
        "transformer layers of each virtual stage, in virtual-stage order (chunk × pp + stage); Megatron-LM's "
        "`--pipeline-model-parallel-layout` string is not read",
        R"({"parallel": {"pp": 2, "pipeline_layout": [1, 1]}})"),
    row("parallel", "pipeline_stage_pools", "", "--pipeline-stage-pools", T::kIntegerList, "stages fill the pools in order", "",
        "with `cluster.pools`: the pool (its index in `cluster.pools`) each pipeline stage runs on, one entry per "
        "stage; each stage's tp × cp × dp ranks lie on one pool. Without it, ranks fill the pools in the order "
        "listed, and a stage that would straddle two pools is an error. Balance the stages of slower GPUs with "
        "`pipeline_layout`",
        R"({"cluster": {"preset": null, "num_gpus": null, "pools": [{"name": "fast", "preset": "dgx-h100", "num_gpus": 8},
                                    {"name": "slow", "preset": "dgx-a100-80gb", "num_gpus": 8}]},
            "parallel": {"pp": 2, "tp": 8, "pipeline_stage_pools": [1, 0]}})"),
    choice("parallel", "cp_comm_type", "--cp-comm-type", "", "p2p, a2a, allgather, a2a+p2p", "p2p",
           "context-parallel exchange: `p2p` (ring attention, load-balanced causal chunks), `a2a` (Ulysses), "
           "`allgather`; `a2a+p2p` (hierarchical: all-to-all inside groups of the first "
           "`hierarchical_context_parallel_sizes` entry, consecutive CP ranks, and a ring across the groups)",
           R"({"parallel": {"cp": 2, "cp_comm_type": "a2a"}})"),
    row("parallel", "hierarchical_context_parallel_sizes", "--hierarchical-context-parallel-sizes", "",
        T::kIntegerList, "none", "",
        "with `cp_comm_type` `a2a+p2p`: [all-to-all group size, ring size], their product `cp`; required with "
        "`a2a+p2p` and refused with the other types",
        R"({"parallel": {"cp": 4, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": [2, 2]}})"),
    choice("parallel", "moe_token_dispatcher_type", "--moe-token-dispatcher-type", "", "alltoall, allgather, flex",
           "alltoall",
           "MoE token dispatch: `alltoall` (all-to-all over the EP group, with the per-expert count exchange and its "
           "host synchronisation), `allgather`, or `flex` (Megatron-Core's MoEFlexTokenDispatcher: DeepEP's or "
           "HybridEP's fused kernels, which send each token once per destination NVLink domain over the network and "
           "once per destination rank over NVLink, with the count exchange and host synchronisation too; the expected "
           "fan-out of uniform top-k routing, group-limited with the model's `n_group`/`topk_group`; ETP 1 and "
           "dropless only)",
           R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
               "parallel": {"ep": 2, "moe_token_dispatcher_type": "allgather"}})"),
    choice("parallel", "moe_flex_dispatcher_backend", "", "", "deepep, hybridep", "deepep",
           "with `flex`: `deepep` or `hybridep`, priced alike (two-level transfer at `expert_dispatch_nvlink_efficiency` "
           "and `expert_dispatch_nic_efficiency` of the NVLink and NIC rates, `hardware/presets/cost_model.json`; the "
           "dispatch waits for the host to read the token counts; group-limited fan-out as Megatron-Core's router "
           "picks experts: groups ranked by the sum of their best experts' scores, the top k from the best groups, "
           "sampled once from a fixed seed)",
           R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
               "parallel": {"ep": 2, "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep"}})"),

    // ---- training ----
    row("training", "seq_length", "--seq-length", "", T::kInteger, "min(`max_position_embeddings`, 8192)", "",
        "tokens per sequence", R"({"training": {"seq_length": 2048}})"),
    searched(row("training", "micro_batch_size", "--micro-batch-size", "", T::kInteger, "1", "1",
                 "sequences per micro-batch", R"({"training": {"micro_batch_size": 2}})")),
    row("training", "global_batch_size", "--global-batch-size", "", T::kInteger, "micro-batch × dp", "",
        "sequences per iteration; must be a multiple of micro-batch × dp", R"({"training": {"global_batch_size": 32}})"),
    choice("training", "precision", "", "--precision", "bf16, fp16, fp32, fp8", "bf16",
           "`bf16`, `fp16`, `fp32`, `fp8` (Transformer Engine: FP8 linear layers with their casts and scaling "
           "bookkeeping, BF16 elsewhere). Megatron-LM's `--bf16`, `--fp16` and `--fp8-format` set it too",
           R"({"training": {"precision": "fp8"}})"),
    choice("training", "fp8_recipe", "--fp8-recipe", "", "delayed, tensorwise, blockwise, mxfp8", "delayed",
           "with `fp8`: `delayed` (amax history, per-chunk amax all-reduce), `tensorwise` (current scaling: an amax "
           "pass per cast, all-reduced over the TP group for a sequence-parallel shard), `blockwise` (128-element "
           "scales; Hopper and Blackwell), `mxfp8` (32-element scales; Blackwell); see `sim/lower/fp8.h`",
           R"({"training": {"precision": "fp8", "fp8_recipe": "tensorwise"}})"),
    choice("training", "fp8_format", "--fp8-format", "", "hybrid, e4m3", "hybrid",
           "with `fp8` (on the command line it turns FP8 on, as in Megatron-LM): `hybrid` (E4M3 forward, E5M2 "
           "gradients) or `e4m3`; read and checked, priced the same (the tensor cores run both at one FP8 rate)",
           R"({"training": {"precision": "fp8", "fp8_format": "e4m3"}})"),
    searched(choice("training", "recompute", "--recompute-granularity", "--recompute", "none, selective, full", "none",
                    "`none`, `selective` (the modules of `recompute_modules`; by default the attention core, "
                    "Korthikanti et al.), `full` (whole layers, as `recompute_method` and `recompute_num_layers` "
                    "choose them)",
                    R"({"training": {"recompute": "full"}})")),
    choice("training", "recompute_modules", "--recompute-modules", "",
           "core_attn, layernorm, moe_act, mlp, shared_experts, mla_up_proj, moe", "`[\"core_attn\"]`",
           "with `recompute` `selective`: Megatron-Core's submodules whose outputs are dropped in the forward and "
           "recomputed in the backward, any of `core_attn` (the attention core), `layernorm` (the input and pre-MLP "
           "norms' outputs), `moe_act` (the routed experts' activation outputs), `mlp` (a dense layer's MLP, its input "
           "kept), `shared_experts` (the MoE layers' shared-expert MLP), `mla_up_proj` (MLA's up projections and "
           "rotary), `moe` (the whole MoE layer, dispatch and combine included); the list replaces the default. As "
           "Megatron-Core's TransformerConfig checks: `moe_act`, `shared_experts` and `moe` need MoE layers (shared "
           "experts for the second), `mla_up_proj` multi-head latent attention, and `layernorm` and `moe_act` are "
           "refused under FP8",
           R"({"training": {"recompute": "selective", "recompute_modules": ["core_attn", "mlp"]}})", T::kChoiceList),
    choice("training", "recompute_method", "--recompute-method", "", "uniform, block", "uniform",
           "with `recompute` `full`: Megatron-Core's `uniform` (the layers of each model chunk checkpointed in groups "
           "of `recompute_num_layers`, each group run again from its input in the backward) or `block` (only the "
           "first `recompute_num_layers` layers of each model chunk recomputed, the others keeping their "
           "activations)",
           R"({"training": {"recompute": "full", "recompute_method": "block", "recompute_num_layers": 1}})"),
    row("training", "recompute_num_layers", "--recompute-num-layers", "", T::kInteger, "1", "1",
        "with `recompute` `full`: layers per checkpoint (`uniform`; only 1 is modelled yet) or recomputed layers of "
        "each model chunk (`block`; 0 recomputes none, as many as the chunk's layers or more all of them, as in "
        "Megatron-Core). The search's `full` candidates keep the scenario's method and count",
        R"({"training": {"recompute": "full", "recompute_method": "block", "recompute_num_layers": 0}})"),
    choice("training", "optimizer", "--optimizer", "", "adam, adamw, sgd", "adam",
           "`adam` / `adamw` (fp32 master weights and moments), `sgd` (momentum)", R"({"training": {"optimizer": "sgd"}})"),
    row("training", "grad_reduce_in_fp32", "--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-fp32",
        T::kBoolean, "true", "true",
        "Megatron-Core's `ddp.grad_reduce_in_fp32`: the gradient buffer and its data-parallel reduction in fp32. "
        "`false` keeps them in bf16, as the NeMo and Megatron-Bridge performance recipes run (2 bytes per parameter "
        "instead of 4, half the reduction bytes; the optimizer then holds 16 bytes of fp32 state per parameter, "
        "Megatron's fp16 row; counting its fp32 main gradients as always resident is pessimistic, Megatron-Core frees "
        "them between steps). bf16 and fp8, framework `megatron`, ZeRO stage 0 or 1 only",
        R"({"training": {"grad_reduce_in_fp32": false}})"),
    choice("training", "attention_backend", "--attention-backend", "", "flash, fused, auto, unfused", "flash",
           "`flash` (fused kernel; Megatron-LM's `fused` and `auto`, Transformer Engine's fused attention, are the "
           "same) or `unfused` (materialised score matrix, Megatron before 2022)",
           R"({"training": {"attention_backend": "unfused"}})"),
    choice("training", "framework", "", "--framework", "megatron, pytorch, deepspeed-0.3, fsdp2, megatron-deepspeed",
           "megatron",
           "`megatron` (Megatron-LM/Megatron-Core: fused kernels, bf16 parameters with fp32 master weights); `pytorch` "
           "(eager PyTorch on a Hugging Face Llama-style model: fp32 parameters, `torch.autocast` bf16, unfused "
           "elementwise kernels, fp32 logits, `AdamW(fused=True)`; one GPU; the recipe of `tools/pytorch_train_step.py`, "
           "documented in `sim/lower/pytorch_step.h`); `deepspeed-0.3` (Megatron-DeepSpeed with DeepSpeed 0.3's "
           "per-parameter, unoverlapped ZeRO-3, as SC21 compared against; `sim/lower/sharded_params.h`); `fsdp2` "
           "(PyTorch FSDP2 as torchtitan runs it, `sim/lower/fsdp2.h`: one unit per transformer block, the embedding "
           "one, the final norm with the LM head one (kept unsharded from its forward to its backward); each unit "
           "all-gathered in bf16 before its forward and again before its backward, one unit ahead, with FSDP2's "
           "copy-in and copy-out kernels, and its gradients reduce-scattered in fp32 every micro-batch; fp32 sharded "
           "parameters, gradients and Adam moments (16 bytes per parameter over the FSDP ranks); the eager layer "
           "bodies of `pytorch` with bf16 parameters and activations; gradient clipping and `AdamW(fused=True)` on the "
           "shards. `zero_stage` 3 is torchtitan's default resharding; 2 is its `fsdp_reshard_after_forward: "
           "\"never\"` (every unit kept unsharded from its forward to its backward, so only the forward gathers). "
           "Needs `zero_stage` 2 or 3 (3 when the scenario names no stage) and dp ≥ 2 with tp, pp, cp and ep 1, a "
           "dense untied Llama-style model, bf16, no recompute; Megatron's `tp_comm_overlap` is refused, and so is "
           "turning `overlap_grad_reduce` or `overlap_param_gather` off); `megatron-deepspeed` (Megatron's legacy "
           "layers on DeepSpeed's engine, `sim/lower/megatron_deepspeed.h`: gradients reduced in the 16-bit parameter "
           "dtype in DeepSpeed's 5e8-element buckets (ZeRO 0: all-reduced at the end of the step; ZeRO 1: "
           "reduce-scattered at the end of the step, then one all-gather of the parameters after it; ZeRO 2: "
           "reduce-scattered in every micro-batch's backward), on the compute stream unless `overlap_grad_reduce` is "
           "set (DeepSpeed's `overlap_comm`, stages 1 and 2); ZeRO 3 (pp 1) per layer unit with DeepSpeed's defaults: "
           "1e5-element persistence threshold, the first 5e7 elements (`stage3_prefetch_bucket_size`) of the next unit "
           "prefetched, units within `stage3_max_reuse_distance` (1e9) kept gathered to their backward, gradients "
           "reduce-scattered in 5e8-element buckets with `overlap_comm` on; the pipeline engine's blocking send and "
           "receive with one model chunk per stage. Refused: `vpp` > 1, ZeRO 2 or 3 with pp > 1 (DeepSpeed's pipeline "
           "engine asserts it), a schedule other than `1f1b`, requesting `tp_comm_overlap`, `overlap_p2p_comm` or "
           "`overlap_param_gather`; not modelled: cp > 1, MoE, FP8, CPU offload). Each cites the framework's code at a "
           "named commit",
           R"({"parallel": {"zero_stage": 3}, "training": {"framework": "fsdp2"}})"),
    row("training", "moe_load_imbalance", "", "", T::kNumber, "1", "1",
        "tokens the busiest EP rank receives over the balanced share (1 = balanced, as Megatron's force-balanced "
        "benchmarks run); every all-to-all waits for that rank",
        R"({"training": {"moe_load_imbalance": 1.2}})"),
    row("training", "moe_expert_capacity_factor", "--moe-expert-capacity-factor", "", T::kNumber, "none (dropless)", "",
        "Megatron's capacity factor: tokens beyond it are dropped, capping the load",
        R"({"training": {"moe_expert_capacity_factor": 1.0}})"),
    row("training", "moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity", "", T::kBoolean,
        "false", "false",
        "pad every expert's input to the capacity (needs the factor); the splits are then static, so the token-count "
        "exchange and its host synchronisation are skipped (Megatron-Bridge's \"token drop\" is factor 1.0 with "
        "padding)",
        R"({"training": {"moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": true}})"),
    row("training", "packed_documents", "", "", T::kObject, "none (one document per sequence)", "",
        "variable-length documents packed into the sequences (Megatron's GPT dataset cuts them at sequence ends; "
        "packed-sequence attention keeps each token within its document piece): `{\"lengths\": [4096, 120, ...]}` "
        "(repeated until the global batch is full) or `{\"distribution\": \"lognormal\", \"median\": 1024, \"sigma\": "
        "1.0, \"seed\": 1}`. Attention then costs l (l + 1) / 2 pairs per piece; the DP rank with the most attention "
        "work (Megatron's sampler order) is the one simulated, and the report's `packing` section gives the DP and CP "
        "imbalance. On the command line: the object's JSON text",
        R"({"training": {"packed_documents": {"lengths": [512, 256, 256]}}})"),
    row("training", "optimizer_cpu_offload", "--optimizer-cpu-offload", "", T::kBoolean, "false", "false",
        "ZeRO-Offload: master weights and Adam moments in host memory; each step copies the gradient shard to the "
        "host over PCIe, runs Adam there (bound by host memory bandwidth) and copies the parameters back. Needs ZeRO "
        "1 or 2",
        R"({"parallel": {"zero_stage": 1}, "training": {"optimizer_cpu_offload": true}})"),
    row("training", "cpu_offloading_num_layers", "", "", T::kInteger, "0", "0",
        "Transformer Engine's activation CPU offload: the saved activations of the first N layers of each model chunk "
        "go to the host after their forward and come back (one layer ahead) before their backward; must be below the "
        "layers of every chunk",
        R"({"training": {"cpu_offloading_num_layers": 1}})"),
    row("training", "apply_rope_fusion", "--no-rope-fusion", "--rope-fusion", T::kBoolean, "true; false with YaRN", "",
        "Megatron-Core's `apply_rope_fusion`: Transformer Engine's fused RoPE kernel, or Megatron-Core's unfused "
        "PyTorch RoPE (six full and six small kernels per tensor forward, five backward). With the model's "
        "`rope_scaling` of type `yarn` it is off, as Megatron-Bridge's `validate_rope_fusion_compatibility` sets it "
        "(the fused kernel does not apply YaRN's mscale); asking for it then warns",
        R"({"training": {"apply_rope_fusion": false}})"),

    // ---- model: Megatron-LM's model-shape arguments, written as the Hugging Face key they override ----
    row("model", "num_hidden_layers", "--num-layers", "", T::kInteger, "the model's", "", "transformer layers",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4}})"),
    row("model", "hidden_size", "--hidden-size", "", T::kInteger, "the model's", "", "hidden size",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "hidden_size": 2048}})"),
    row("model", "intermediate_size", "--ffn-hidden-size", "", T::kInteger, "the model's", "",
        "dense MLP width (per expert in Mixtral and GPT-OSS, as their configs write it)",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "intermediate_size": 8192}})"),
    row("model", "num_attention_heads", "--num-attention-heads", "", T::kInteger, "the model's", "",
        "attention heads", R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "num_attention_heads": 16}})"),
    row("model", "num_key_value_heads", "--num-query-groups", "", T::kInteger, "the model's", "",
        "key-value heads (grouped-query attention; Megatron-LM's `--group-query-attention` is then implied)",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "num_key_value_heads": 4}})"),
    row("model", "head_dim", "--kv-channels", "", T::kInteger, "hidden size / heads", "", "channels per attention head",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "head_dim": 64}})"),
    row("model", "max_position_embeddings", "--max-position-embeddings", "", T::kInteger, "the model's", "",
        "position table length (the default sequence length's cap)",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "max_position_embeddings": 4096}})"),
    row("model", "vocab_size", "--vocab-size", "", T::kInteger, "the model's", "",
        "vocabulary before padding (padded to a multiple of 128 × tp, as Megatron-LM pads it)",
        R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "vocab_size": 32000}})"),
    row("model", "num_local_experts", "--num-experts", "", T::kInteger, "the model's", "", "routed experts (MoE)",
        R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2, "num_local_experts": 4}})"),
    row("model", "num_experts_per_tok", "--moe-router-topk", "", T::kInteger, "the model's", "",
        "experts each token is routed to",
        R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2, "num_experts_per_tok": 1}})"),
    row("model", "moe_intermediate_size", "--moe-ffn-hidden-size", "", T::kInteger, "the model's", "",
        "routed experts' MLP width (families with a separate expert width: Qwen MoE, DeepSeek)",
        R"({"model": {"preset": "qwen3-30b-a3b", "num_hidden_layers": 2, "moe_intermediate_size": 512}})"),
    row("model", "mtp_num_layers", "--mtp-num-layers", "", T::kInteger, "the model's `num_nextn_predict_layers`", "",
        "multi-token prediction depths, on the last pipeline stage (0: none)",
        R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 2, "mtp_num_layers": 0}})"),
};

constexpr std::array kIgnored = {
    // Optimiser hyper-parameters: the same kernels whatever their values.
    IgnoredMegatronFlag{"--lr", 1}, IgnoredMegatronFlag{"--min-lr", 1}, IgnoredMegatronFlag{"--lr-decay-style", 1},
    IgnoredMegatronFlag{"--lr-decay-iters", 1}, IgnoredMegatronFlag{"--lr-decay-samples", 1},
    IgnoredMegatronFlag{"--lr-warmup-iters", 1}, IgnoredMegatronFlag{"--lr-warmup-samples", 1},
    IgnoredMegatronFlag{"--lr-warmup-fraction", 1}, IgnoredMegatronFlag{"--weight-decay", 1},
    IgnoredMegatronFlag{"--adam-beta1", 1}, IgnoredMegatronFlag{"--adam-beta2", 1}, IgnoredMegatronFlag{"--adam-eps", 1},
    IgnoredMegatronFlag{"--init-method-std", 1}, IgnoredMegatronFlag{"--seed", 1},
    // Run length, data, checkpoints and logging: outside one iteration.
    IgnoredMegatronFlag{"--train-iters", 1}, IgnoredMegatronFlag{"--train-samples", 1},
    IgnoredMegatronFlag{"--eval-iters", 1}, IgnoredMegatronFlag{"--eval-interval", 1},
    IgnoredMegatronFlag{"--save", 1}, IgnoredMegatronFlag{"--load", 1}, IgnoredMegatronFlag{"--save-interval", 1},
    IgnoredMegatronFlag{"--log-interval", 1}, IgnoredMegatronFlag{"--data-path", -1}, IgnoredMegatronFlag{"--split", 1},
    IgnoredMegatronFlag{"--tokenizer-type", 1}, IgnoredMegatronFlag{"--tokenizer-model", 1},
    IgnoredMegatronFlag{"--vocab-file", 1}, IgnoredMegatronFlag{"--merge-file", 1},
    IgnoredMegatronFlag{"--tensorboard-dir", 1}, IgnoredMegatronFlag{"--wandb-project", 1},
    IgnoredMegatronFlag{"--distributed-backend", 1},
    // Switches Orrery always assumes: Megatron-Core models with Transformer Engine layers.
    IgnoredMegatronFlag{"--use-mcore-models", 0}, IgnoredMegatronFlag{"--transformer-impl", 1},
    IgnoredMegatronFlag{"--group-query-attention", 0},
    // FP8 bookkeeping and numerics that change no kernel's time in the cost model.
    IgnoredMegatronFlag{"--fp8-amax-history-len", 1}, IgnoredMegatronFlag{"--fp8-amax-compute-algo", 1},
    IgnoredMegatronFlag{"--rotary-base", 1}, IgnoredMegatronFlag{"--rampup-batch-size", 3},
    IgnoredMegatronFlag{"--log-throughput", 0},
    // Gradient clipping's threshold (the norm is computed either way), data-loader workers (off the GPU) and the
    // norms' epsilon.
    IgnoredMegatronFlag{"--clip-grad", 1}, IgnoredMegatronFlag{"--num-workers", 1},
    IgnoredMegatronFlag{"--norm-epsilon", 1},
};

// Megatron-LM's architecture arguments (megatron/training/arguments.py), each with the config.json key that gives
// the same fact.
constexpr std::array kArchitecture = {
    ArchitectureMegatronFlag{"--swiglu", 0, "hidden_act (silu with a gated MLP)"},
    ArchitectureMegatronFlag{"--normalization", 1, "rms_norm_eps or layer_norm_epsilon"},
    ArchitectureMegatronFlag{"--position-embedding-type", 1, "rope_theta or n_positions"},
    ArchitectureMegatronFlag{"--untie-embeddings-and-output-weights", 0, "tie_word_embeddings"},
    ArchitectureMegatronFlag{"--disable-bias-linear", 0, "attention_bias and mlp_bias"},
    ArchitectureMegatronFlag{"--add-qkv-bias", 0, "attention_bias"},
    ArchitectureMegatronFlag{"--attention-dropout", 1, "attention_dropout (attn_pdrop)"},
    ArchitectureMegatronFlag{"--hidden-dropout", 1, "hidden_dropout (resid_pdrop)"},
    ArchitectureMegatronFlag{"--make-vocab-size-divisible-by", 1,
                             "vocab_size (Orrery pads it as Megatron-LM's default, to a multiple of 128 x tp)"},
};

constexpr std::array kShorthands = {
    ShorthandFlag{"--bf16", "training", "precision", "\"bf16\"", "same as --precision bf16"},
    ShorthandFlag{"--fp16", "training", "precision", "\"fp16\"", "same as --precision fp16"},
    ShorthandFlag{"--recompute-activations", "training", "recompute", "\"selective\"",
                  "Megatron's flag for selective recompute (same as --recompute selective)"},
    ShorthandFlag{"--use-flash-attn", "training", "attention_backend", "\"flash\"", "same as --attention-backend flash"},
};

std::string dashed(std::string_view key) {
  std::string out(key);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

std::string pipe_safe(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

}  // namespace

std::string_view to_string(OptionType type) {
  switch (type) {
    case T::kInteger: return "integer";
    case T::kNumber: return "number";
    case T::kBoolean: return "boolean";
    case T::kChoice: return "text";
    case T::kIntegerList: return "list of integers";
    case T::kChoiceList: return "list of texts";
    case T::kObject: return "object";
  }
  return "?";
}

std::optional<std::int64_t> model_key_value(std::string_view key, const ModelSpec& m) {
  if (key == "num_hidden_layers") return m.num_layers;
  if (key == "hidden_size") return m.hidden_size;
  if (key == "intermediate_size") return m.intermediate_size;
  if (key == "num_attention_heads") return m.num_attention_heads;
  if (key == "num_key_value_heads") return m.num_kv_heads;
  if (key == "head_dim") return m.head_dim;
  if (key == "max_position_embeddings") return m.max_position_embeddings;
  if (key == "vocab_size") return m.vocab_size;
  if (key == "num_local_experts") return m.moe.num_experts;
  if (key == "num_experts_per_tok") return m.moe.experts_per_token;
  if (key == "moe_intermediate_size") return m.moe.expert_intermediate_size;
  if (key == "mtp_num_layers") return m.mtp_num_layers;
  return std::nullopt;
}

std::span<const OptionSpec> scenario_options() { return kOptions; }
std::span<const IgnoredMegatronFlag> ignored_megatron_flags() { return kIgnored; }
std::span<const ArchitectureMegatronFlag> architecture_megatron_flags() { return kArchitecture; }
std::span<const ShorthandFlag> shorthand_flags() { return kShorthands; }

const OptionSpec* find_option(std::string_view section, std::string_view key) {
  for (const OptionSpec& o : kOptions) {
    if (o.section == section && (o.key == key || (!o.file_alias.empty() && o.file_alias == key))) return &o;
  }
  return nullptr;
}

std::string primary_flag(const OptionSpec& option) {
  if (!option.flag.empty()) return std::string(option.flag.substr(0, option.flag.find(',')));
  if (!option.megatron.empty()) return std::string(option.megatron);
  return "--" + dashed(option.key);
}

std::string cli_names(const OptionSpec& option) {
  std::vector<std::string> positive, negative;
  const auto add = [&](std::string_view names) {
    while (!names.empty()) {
      const auto comma = names.find(',');
      const std::string_view name = names.substr(0, comma);
      (option.type == T::kBoolean && name.starts_with("--no-") ? negative : positive).emplace_back(name);
      names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
    }
  };
  add(option.flag);
  add(option.megatron);
  if (positive.empty() && negative.empty()) positive.push_back("--" + dashed(option.key));
  if (option.type == T::kBoolean) {
    // Each positive name gets its "--no-" form; a Megatron negative-only name has no positive one.
    for (const std::string& p : positive) negative.push_back("--no-" + p.substr(2));
  }
  std::string out;
  for (const std::string& p : positive) out += (out.empty() ? "" : ",") + p;
  for (std::size_t i = 0; i < negative.size(); ++i) {
    if (std::find(negative.begin(), negative.begin() + static_cast<std::ptrdiff_t>(i), negative[i]) !=
        negative.begin() + static_cast<std::ptrdiff_t>(i)) {
      continue;  // one name once
    }
    out += (out.empty() ? "!" : ",!") + negative[i];
  }
  return out;
}

std::string options_markdown(std::string_view section) {
  std::string out = "| key | Megatron-LM | type | meaning | default |\n|---|---|---|---|---|\n";
  int rows = 0;
  for (const OptionSpec& o : kOptions) {
    if (o.section != section) continue;
    ++rows;
    std::string megatron = o.megatron.empty() ? "" : fmt::format("`{}`", o.megatron);
    if (!o.file_alias.empty()) megatron += fmt::format("{}file key `{}` too", megatron.empty() ? "" : "; ", o.file_alias);
    std::string type(to_string(o.type));
    if (!o.choices.empty()) type += ": " + std::string(o.choices);
    const bool quoted = o.type == T::kChoice && !o.default_json.empty();
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", o.key, megatron, pipe_safe(type), pipe_safe(o.doc),
                       quoted ? fmt::format("`{}`", o.default_text) : std::string(o.default_text));
  }
  if (rows == 0) throw std::invalid_argument(fmt::format("the option table has no section \"{}\"", section));
  return out;
}

void check_documented_keys(std::string_view section, const std::set<std::string, std::less<>>& read_keys) {
  for (const std::string& key : read_keys) {
    if (!find_option(section, key)) {
      throw std::logic_error(fmt::format("the {} parser reads \"{}\", which the option table (sim/option_table.cpp) "
                                         "lacks: add its row",
                                         section, key));
    }
  }
  for (const OptionSpec& o : kOptions) {
    if (o.section != section) continue;
    if (!read_keys.contains(o.key) || (!o.file_alias.empty() && !read_keys.contains(o.file_alias))) {
      throw std::logic_error(fmt::format("the option table (sim/option_table.cpp) has {}.{}, which the scenario "
                                         "parser does not read",
                                         section, o.key));
    }
  }
}

}  // namespace orrery
