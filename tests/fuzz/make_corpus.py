#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (tests/fuzz/corpus/): small scenarios that each switch on one part of the
lowering (TP with sequence parallelism, PP with VPP, CP, MoE with EP and each dispatcher, MLA, FP8, ZeRO stages,
FSDP2, recompute, packing, stragglers, a custom cluster), small enough that one run takes milliseconds, so the
fuzzer spends its time mutating rather than simulating. The fuzzer adds what it finds to its own work corpus; this
one only changes when this script does. Run from the repository root."""
import copy
import json
import pathlib

DENSE = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
         "num_key_value_heads": 4, "intermediate_size": 1536, "vocab_size": 32000, "max_position_embeddings": 4096}
MOE = {"model_type": "qwen3_moe", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
       "num_key_value_heads": 4, "intermediate_size": 1536, "vocab_size": 32000, "num_experts": 8,
       "num_experts_per_tok": 2, "moe_intermediate_size": 256, "head_dim": 64}
MLA = {"model_type": "deepseek_v3", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
       "num_key_value_heads": 8, "intermediate_size": 1536, "vocab_size": 32000, "n_routed_experts": 8,
       "num_experts_per_tok": 2, "moe_intermediate_size": 256, "first_k_dense_replace": 1, "n_shared_experts": 1,
       "kv_lora_rank": 128, "q_lora_rank": 256, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32}
TRAINING = {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"}


def scenario(name, model=DENSE, gpus=8, parallel=None, training=None, cluster=None, **extra):
    s = {"name": name, "model": copy.deepcopy(model),
         "cluster": cluster or {"preset": "dgx-h100", "num_gpus": gpus},
         "parallel": parallel or {}, "training": {**TRAINING, **(training or {})}}
    s.update(extra)
    return s


SEEDS = [
    scenario("dense-dp"),
    scenario("dense-tp-sp", parallel={"tp": 2, "sequence_parallel": True, "tp_comm_overlap": True}),
    scenario("dense-pp-vpp", parallel={"pp": 2, "vpp": 2}, training={"global_batch_size": 16}),
    scenario("dense-pp-zb", parallel={"pp": 2, "schedule": "zb-h1"}, training={"global_batch_size": 16}),
    scenario("dense-cp", parallel={"cp": 2, "cp_comm_type": "a2a"}, training={"seq_length": 4096}),
    scenario("dense-zero3", parallel={"zero_stage": 3}),
    scenario("dense-zero1-overlap", parallel={"zero_stage": 1, "overlap_grad_reduce": True,
                                              "overlap_param_gather": True}),
    scenario("dense-fp8", training={"precision": "fp8", "fp8_recipe": "blockwise"}),
    scenario("dense-recompute-full", training={"recompute": "full"}),
    scenario("dense-recompute-selective", training={"recompute": "selective",
                                                    "recompute_modules": ["core_attn", "mlp"]}),
    scenario("dense-fsdp2", parallel={"zero_stage": 3}, training={"framework": "fsdp2"}),
    scenario("dense-pytorch-1gpu", gpus=1, training={"framework": "pytorch", "global_batch_size": 2}),
    scenario("dense-packed", training={"packed_documents": {"lengths": [128, 256, 640]}}),
    scenario("dense-straggler", stragglers=[{"rank": 1, "compute_slowdown": 1.2}]),
    scenario("dense-sliding", model={**DENSE, "model_type": "mistral", "sliding_window": 256}),
    scenario("dense-a100", cluster={"preset": "dgx-a100-80gb", "num_gpus": 8}),
    scenario("dense-custom-gpu", cluster={"gpu": {"name": "Custom GPU", "peak_tflops": {"bf16": 500, "fp8": 1000},
                                                  "hbm_capacity_GiB": 96, "hbm_bandwidth_TB_s": 4.0,
                                                  "sm_count": 120, "tdp_W": 700, "nvlink_bandwidth_GB_s": 450},
                                          "gpus_per_node": 8, "nics_per_node": 8, "nic_bandwidth_Gbit_s": 400,
                                          "num_gpus": 16}, training={"global_batch_size": 16}),
    scenario("moe-ep-alltoall", model=MOE, parallel={"ep": 4, "moe_token_dispatcher_type": "alltoall"}),
    scenario("moe-ep-flex", model=MOE, parallel={"ep": 8, "moe_token_dispatcher_type": "flex",
                                                 "moe_flex_dispatcher_backend": "deepep"}),
    scenario("moe-ep-overlap", model=MOE, parallel={"ep": 4, "pp": 2, "vpp": 2,
                                                    "overlap_moe_expert_parallel_comm": True,
                                                    "delay_wgrad_compute": True},
             training={"global_batch_size": 16}),
    scenario("moe-capacity", model=MOE, parallel={"ep": 2},
             training={"moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": True}),
    scenario("mla-mtp", model={**MLA, "num_nextn_predict_layers": 1}, parallel={"ep": 4}),
    scenario("mla-dualpipev", model=MLA, gpus=8, parallel={"pp": 2, "ep": 4, "schedule": "dualpipev"},
             training={"global_batch_size": 16}),
    scenario("expect", expect={"iteration_time_s": 0.05, "tokens_per_s_per_gpu": 20000, "tflops_per_gpu": 300,
                               "flops_convention": "causal-halved"}),
    scenario("preset-model", model="llama3.1-8b", training={"seq_length": 512}),
]

out = pathlib.Path("tests/fuzz/corpus")
out.mkdir(parents=True, exist_ok=True)
for old in out.glob("*.json"):
    old.unlink()
for s in SEEDS:
    (out / f"{s['name']}.json").write_text(json.dumps(s, separators=(",", ":")) + "\n")
print(f"wrote {len(SEEDS)} seeds to {out}")
