#include "tools/orrery/scenario_flags.h"

#include <filesystem>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

using nlohmann::json;

namespace {

// A boolean switch that stays unset unless given ("--x" sets true, "--no-x" false), so the scenario's own
// value or default applies otherwise.
void add_switch(CLI::App& app, const std::string& names, std::optional<bool>& target, const std::string& help) {
  app.add_flag_function(names, [&target](std::int64_t count) { target = count > 0; }, help);
}

}  // namespace

void ScenarioFlags::add_to(CLI::App& app) {
  app.add_option("--model", model, "model preset name or path to a Hugging Face config.json")->check(non_empty());
  app.add_option("--cluster", cluster, "cluster preset name (orrery list clusters) or path to a cluster JSON object")
      ->check(non_empty());
  app.add_option("--num-gpus", num_gpus, "number of GPUs")->check(non_empty());
  app.add_option("--tp,--tensor-model-parallel-size", tp, "tensor-parallel size")->check(non_empty());
  app.add_option("--pp,--pipeline-model-parallel-size", pp, "pipeline-parallel size")->check(non_empty());
  app.add_option("--dp,--data-parallel-size", dp, "data-parallel size (default: derived from --num-gpus)")->check(non_empty());
  app.add_option("--cp,--context-parallel-size", cp, "context-parallel size")->check(non_empty());
  app.add_option("--cp-comm-type", cp_comm_type, "context-parallel exchange: p2p (ring), a2a or allgather")->check(non_empty());
  app.add_option("--ep,--expert-model-parallel-size", ep, "expert-parallel size")->check(non_empty());
  app.add_option("--etp,--expert-tensor-parallel-size", etp, "expert tensor-parallel size")->check(non_empty());
  app.add_option("--vpp,--virtual-pipeline-model-parallel-size", vpp, "virtual pipeline stages per pipeline rank")->check(non_empty());
  app.add_option("--num-layers-per-virtual-pipeline-stage", layers_per_virtual_stage,
                 "Megatron's way to set vpp: layers per virtual stage")
      ->check(non_empty());
  add_switch(app, "--sequence-parallel,!--no-sequence-parallel", sequence_parallel, "sequence parallelism");
  app.add_option("--zero-stage", zero_stage, "ZeRO stage (1 = Megatron's distributed optimizer)")->check(non_empty());
  add_switch(app, "--use-distributed-optimizer", distributed_optimizer, "ZeRO stage 1");
  app.add_option("--schedule", schedule, "pipeline schedule: 1f1b (interleaved when vpp > 1), gpipe, zb-h1, dualpipe or dualpipev")->check(non_empty());
  add_switch(app, "--overlap-grad-reduce,!--no-overlap-grad-reduce", overlap_grad_reduce, "overlap DP gradient reduction");
  add_switch(app, "--overlap-param-gather,!--no-overlap-param-gather", overlap_param_gather, "overlap ZeRO-1 param gather");
  add_switch(app, "--tp-comm-overlap,!--no-tp-comm-overlap", tp_comm_overlap, "overlap TP communication with GEMMs");
  add_switch(app, "--overlap-p2p-comm,!--no-overlap-p2p-comm", overlap_p2p_comm, "overlap pipeline send/recv");
  add_switch(app, "--overlap-moe-expert-parallel-comm,!--no-overlap-moe-expert-parallel-comm", overlap_moe_ep_comm,
             "merge each backward with another micro-batch's forward to hide expert all-to-alls");
  add_switch(app, "--delay-wgrad-compute,!--no-delay-wgrad-compute", delay_wgrad_compute,
             "with the expert overlap: expert weight gradients after the dispatch's backward all-to-all is issued");
  app.add_option("--decoder-first-pipeline-num-layers", decoder_first, "layers on the first pipeline stage")->check(non_empty());
  app.add_option("--decoder-last-pipeline-num-layers", decoder_last, "layers on the last pipeline stage")->check(non_empty());
  add_switch(app, "--account-for-embedding-in-pipeline-split", account_for_embedding, "the embedding counts as a layer");
  add_switch(app, "--account-for-loss-in-pipeline-split", account_for_loss, "the loss counts as a layer");
  app.add_option("--seq-length", seq_length, "sequence length")->check(whole_number(1, limits::kSequence));
  app.add_option("--micro-batch-size", micro_batch_size, "micro-batch size")->check(whole_number(1, limits::kMicroBatch));
  app.add_option("--global-batch-size", global_batch_size, "global batch size")->check(whole_number(1, limits::kGlobalBatch));
  app.add_option("--precision", precision, "bf16, fp16, fp32 or fp8")->check(non_empty());
  app.add_option("--fp8-recipe", fp8_recipe, "with fp8: delayed, tensorwise, blockwise or mxfp8")->check(non_empty());
  app.add_option("--fp8-format", fp8_format,
                 "hybrid or e4m3: FP8 GEMMs (with --bf16, as Megatron-LM takes it: BF16 elsewhere); same rate either way")
      ->check(non_empty());
  app.add_flag("--bf16", bf16, "same as --precision bf16");
  app.add_flag("--fp16", fp16, "same as --precision fp16");
  app.add_option("--recompute,--recompute-granularity", recompute, "none, selective or full")->check(non_empty());
  app.add_flag("--recompute-activations", recompute_activations, "Megatron's flag for selective recompute");
  app.add_option("--recompute-modules", recompute_modules,
                 "with selective recompute: core_attn, layernorm, moe_act, mlp, shared_experts, mla_up_proj, moe "
                 "(Megatron-Core's names), comma-separated")
      ->allow_extra_args(false)
      ->check(non_empty());
  app.add_option("--attention-backend", attention_backend, "flash or unfused")->check(non_empty());
  add_switch(app, "--grad-reduce-in-fp32,--accumulate-allreduce-grads-in-fp32,!--no-grad-reduce-in-fp32",
             grad_reduce_in_fp32, "gradient buffer and DP reduction in fp32 (--no-...: bf16)");
}

namespace {

// Sets `section.key`, dropping a Megatron-spelled alias the file may hold so the two cannot clash.
template <typename T>
void set(json& doc, const char* section, const char* key, const std::optional<T>& value, const char* alias = nullptr) {
  if (!value) return;
  json& s = doc[section];
  if (!s.is_object()) s = json::object();
  if (alias) s.erase(alias);
  s[key] = *value;
}

}  // namespace

namespace {

// Anything at that path, a broken link included, is a file (and its error names it).
bool names_a_file(const std::string& value) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(value, ec));
}

}  // namespace

json model_flag_value(const std::string& value) {
  if (names_a_file(value)) return {{"hf_config", std::filesystem::absolute(value).string()}};
  return value;
}

json cluster_flag_value(const std::string& value) {
  if (!names_a_file(value)) return {{"preset", value}};
  json cluster = read_json_file(value, "--cluster");
  if (!cluster.is_object()) {
    throw Error::invalid("--cluster", value, "must hold a JSON object (a cluster description: scenarios/README.md)");
  }
  return cluster;
}

void ScenarioFlags::apply(json& doc) const {
  if (!model.empty()) doc["model"] = model_flag_value(model);
  if (!cluster.empty()) {
    if (names_a_file(cluster)) {
      doc["cluster"] = cluster_flag_value(cluster);
    } else if (doc.contains("cluster") && doc["cluster"].is_object()) {
      doc["cluster"]["preset"] = cluster;
    } else {
      doc["cluster"] = cluster;
    }
  }
  if (num_gpus) {
    if (!doc.contains("cluster")) doc["cluster"] = "dgx-h100";
    if (doc["cluster"].is_string()) doc["cluster"] = {{"preset", doc["cluster"]}};
    doc["cluster"]["num_gpus"] = *num_gpus;
  }
  set(doc, "parallel", "tp", tp, "tensor_model_parallel_size");
  set(doc, "parallel", "pp", pp, "pipeline_model_parallel_size");
  set(doc, "parallel", "dp", dp, "data_parallel_size");
  set(doc, "parallel", "cp", cp, "context_parallel_size");
  set(doc, "parallel", "cp_comm_type", cp_comm_type);
  set(doc, "parallel", "ep", ep, "expert_model_parallel_size");
  set(doc, "parallel", "etp", etp, "expert_tensor_parallel_size");
  set(doc, "parallel", "vpp", vpp, "virtual_pipeline_model_parallel_size");
  if (layers_per_virtual_stage) {
    // Megatron: vpp = layers per pipeline stage / layers per virtual stage; resolved after the model is known.
    doc["parallel"]["num_layers_per_virtual_pipeline_stage"] = *layers_per_virtual_stage;
  }
  set(doc, "parallel", "sequence_parallel", sequence_parallel);
  set(doc, "parallel", "zero_stage", zero_stage);
  // Both given: the scenario parser checks that they agree, as it does for a file.
  if (distributed_optimizer && *distributed_optimizer) set(doc, "parallel", "use_distributed_optimizer", distributed_optimizer);
  set(doc, "parallel", "schedule", schedule);
  set(doc, "parallel", "overlap_grad_reduce", overlap_grad_reduce);
  set(doc, "parallel", "overlap_param_gather", overlap_param_gather);
  set(doc, "parallel", "tp_comm_overlap", tp_comm_overlap);
  set(doc, "parallel", "overlap_p2p_comm", overlap_p2p_comm);
  set(doc, "parallel", "overlap_moe_expert_parallel_comm", overlap_moe_ep_comm);
  set(doc, "parallel", "delay_wgrad_compute", delay_wgrad_compute);
  set(doc, "parallel", "decoder_first_pipeline_num_layers", decoder_first);
  set(doc, "parallel", "decoder_last_pipeline_num_layers", decoder_last);
  set(doc, "parallel", "account_for_embedding_in_pipeline_split", account_for_embedding);
  set(doc, "parallel", "account_for_loss_in_pipeline_split", account_for_loss);
  set(doc, "training", "seq_length", seq_length);
  set(doc, "training", "micro_batch_size", micro_batch_size);
  set(doc, "training", "global_batch_size", global_batch_size);
  if (int(bf16) + int(fp16) + int(precision.has_value()) > 1) {
    throw Error::invalid("--precision", "--bf16 / --fp16", "give the precision once");
  }
  set(doc, "training", "precision", precision);
  set(doc, "training", "fp8_recipe", fp8_recipe);
  if (bf16 && !fp8_format) set(doc, "training", "precision", std::optional<std::string>("bf16"));
  if (fp16) set(doc, "training", "precision", std::optional<std::string>("fp16"));
  // Megatron-LM turns FP8 on with --fp8-format (next to --bf16, which keeps the rest in BF16: Orrery's fp8).
  if (fp8_format) {
    if (fp16) throw Error::not_modelled("--fp8-format", *fp8_format, "FP8 with FP16 outside the GEMMs (give --bf16)");
    if (precision && *precision != "fp8") {
      throw Error::invalid("--fp8-format", *fp8_format, "turns FP8 on, so --precision must be fp8 (it is " + *precision + ")");
    }
    set(doc, "training", "precision", std::optional<std::string>("fp8"));
    set(doc, "training", "fp8_format", fp8_format);
  }
  // A non-FP8 precision from the command line drops the file's FP8 recipe and format, which only FP8 runs take.
  const bool not_fp8 = !fp8_format && (bf16 || fp16 || (precision && *precision != "fp8"));
  if (not_fp8 && doc.contains("training") && doc["training"].is_object()) {
    if (!fp8_recipe) doc["training"].erase("fp8_recipe");
    doc["training"].erase("fp8_format");
  }
  if (recompute && recompute_activations) throw Error::invalid("--recompute-activations", "and --recompute", "give the policy once");
  set(doc, "training", "recompute", recompute);
  if (recompute_activations) set(doc, "training", "recompute", std::optional<std::string>("selective"));
  if (!recompute_modules.empty()) {
    // Split here, not by CLI11, whose delimiter drops an empty item ("mlp,,core_attn") without a word.
    json names = json::array();
    for (const std::string& given : recompute_modules) {
      std::size_t start = 0;
      for (std::size_t comma = given.find(','); start <= given.size(); comma = given.find(',', start)) {
        const std::string name = given.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        require(!name.empty(), "--recompute-modules", "\"" + given + "\"",
                "has an empty item (two commas in a row, or one at an end)");
        names.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    doc["training"]["recompute_modules"] = names;
  }
  set(doc, "training", "attention_backend", attention_backend);
  set(doc, "training", "grad_reduce_in_fp32", grad_reduce_in_fp32);
}

bool ScenarioFlags::any() const {
  return !model.empty() || !cluster.empty() || num_gpus || tp || pp || dp || cp || ep || etp || vpp ||
         layers_per_virtual_stage || zero_stage || decoder_first || decoder_last || sequence_parallel ||
         distributed_optimizer || overlap_grad_reduce || overlap_param_gather || tp_comm_overlap || overlap_p2p_comm || overlap_moe_ep_comm || delay_wgrad_compute ||
         account_for_embedding || account_for_loss || schedule || cp_comm_type || precision || fp8_recipe || fp8_format || recompute || !recompute_modules.empty() || attention_backend || grad_reduce_in_fp32 ||
         seq_length || micro_batch_size || global_batch_size || bf16 || fp16 || recompute_activations;
}

json default_scenario() {
  return json::parse(R"json({
    "name": "default: llama3-70b on 64 H100 (TP8 PP4 VPP5 DP2, BF16)",
    "source": "built-in default scenario of orrery predict",
    "model": "llama3-70b",
    "cluster": {"preset": "dgx-h100", "num_gpus": 64},
    "parallel": {"tp": 8, "pp": 4, "vpp": 5, "sequence_parallel": true, "zero_stage": 1},
    "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128, "precision": "bf16"}
  })json");
}

}  // namespace orrery::cli
