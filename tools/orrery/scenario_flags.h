#pragma once
// Command-line flags that build or override a scenario (Megatron-LM spellings accepted next to the short ones).
// Flags are written into the scenario's JSON before it is parsed, so a bad flag gets the same error, naming the
// scenario field, as a bad file.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace orrery::cli {

/// The scenario's `model` for `--model VALUE`: {"hf_config": absolute path} when anything exists at that path (a
/// broken link included, so that the error names the file), else VALUE as a preset name.
nlohmann::json model_flag_value(const std::string& value);
/// The scenario's `cluster` for `--cluster VALUE`: the JSON object in the file at that path (a cluster description,
/// as a scenario's `cluster` object: scenarios/README.md), else {"preset": VALUE}. Errors: Error::invalid naming
/// --cluster when the file is unreadable, not JSON or not an object.
nlohmann::json cluster_flag_value(const std::string& value);

struct ScenarioFlags {
  std::string model, cluster;
  std::optional<int> num_gpus, tp, pp, dp, cp, ep, etp, vpp, layers_per_virtual_stage, zero_stage;
  std::optional<int> decoder_first, decoder_last;
  std::optional<bool> sequence_parallel, distributed_optimizer, overlap_grad_reduce, overlap_param_gather,
      tp_comm_overlap, overlap_p2p_comm, account_for_embedding, account_for_loss, grad_reduce_in_fp32, overlap_moe_ep_comm,
      delay_wgrad_compute;
  std::optional<std::string> schedule, cp_comm_type, precision, fp8_recipe, fp8_format, recompute, attention_backend;
  std::optional<std::int64_t> seq_length, micro_batch_size, global_batch_size;
  bool bf16 = false, fp16 = false, recompute_activations = false;
  std::vector<std::string> recompute_modules;

  /// Registers the flags on a CLI11 (sub)command.
  void add_to(CLI::App& app);
  /// True when any flag that can stand without a scenario file (--model) was given.
  bool names_model() const { return !model.empty(); }
  /// True when the flags change the scenario at all.
  bool any() const;
  /// Writes the flags into `doc` (a scenario object), overriding what it holds.
  void apply(nlohmann::json& doc) const;
};

/// The built-in default: Llama-3-70B on 64 H100s, BF16, TP 8, PP 4, VPP 5 (DP 2, derived), sequence parallelism
/// and the distributed optimizer, sequence 8192, global batch 128.
nlohmann::json default_scenario();

}  // namespace orrery::cli
