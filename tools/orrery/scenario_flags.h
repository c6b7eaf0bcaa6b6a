#pragma once
// Command-line flags that build or override a scenario (Megatron-LM spellings accepted next to the short ones).
// Flags are written into the scenario's JSON before it is parsed, so a bad flag gets the same error, naming the
// scenario field, as a bad file.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "sim/option_table.h"

namespace orrery::cli {

/// The scenario's `model` for `--model VALUE`: {"hf_config": absolute path} when anything exists at that path (a
/// broken link included, so that the error names the file), else VALUE as a preset name.
nlohmann::json model_flag_value(const std::string& value);
/// The scenario's `cluster` for `--cluster VALUE`: the JSON object in the file at that path (a cluster description,
/// as a scenario's `cluster` object: scenarios/README.md), else {"preset": VALUE}. Errors: Error::invalid naming
/// --cluster when the file is unreadable, not JSON or not an object.
nlohmann::json cluster_flag_value(const std::string& value);

/// The flags of `orrery predict`: --model, --cluster and --num-gpus, then one flag per row of the option table
/// (sim/option_table.h: Orrery's name and Megatron-LM's), Megatron-LM's shorthands (--bf16, --fp16,
/// --recompute-activations, --use-flash-attn) and the Megatron-LM arguments that do not change the simulated time,
/// accepted so that a launch line can be pasted and named on stderr as ignored.
struct ScenarioFlags {
  std::string model, cluster;
  std::optional<int> num_gpus;
  /// Set before add_to by a command that sweeps GPU counts (`orrery plan`): --num-gpus then takes a comma-separated
  /// list into num_gpus_list, and the command sets num_gpus for each point before apply().
  bool num_gpus_is_list = false;
  std::string num_gpus_list;

  /// What was given for one row of the option table.
  struct Given {
    std::vector<std::string> values;  // the texts after the flag (a list may take several), empty if not given
    std::optional<bool> on;           // a boolean row's switch
    CLI::Option* option = nullptr;    // its CLI11 option, for how often it was given
    int occurrences = 0;              // a list row's: how often its flag was given (CLI11 counts its values)
  };
  std::map<const OptionSpec*, Given> options;       // every row, given or not (filled by add_to)
  std::map<const ShorthandFlag*, bool> shorthands;  // every shorthand, given or not
  std::vector<std::string> ignored;                 // the Megatron-LM arguments given that change nothing

  /// Registers the flags on a CLI11 (sub)command. The object must stay where it is while `app` parses.
  void add_to(CLI::App& app);
  /// True when any flag that can stand without a scenario file (--model) was given.
  bool names_model() const { return !model.empty(); }
  /// True when the flags change the scenario at all.
  bool any() const;
  /// Writes the flags into `doc` (a scenario object), overriding what it holds. Errors: Error::invalid naming the
  /// flag for a value of the wrong type (a text for an integer row, JSON text that is not an object), an empty
  /// list item, or two flags that set one key.
  void apply(nlohmann::json& doc) const;
  /// Writes one line per ignored Megatron-LM argument ("orrery: ignored --lr 3e-4 (...)") to `out`.
  void note_ignored(std::ostream& out) const;
  /// Checks that each model-shape flag given reached `parsed_model` (the parsed scenario's): a family that does not read
  /// the key (GPT-2's configs have no num_key_value_heads; a dense model no experts) would drop it silently.
  /// Errors: Error::not_modelled naming the flag, its value and the key.
  void check_model(const ModelSpec& parsed_model) const;
};

/// The built-in default: Llama-3-70B on 64 H100s, BF16, TP 8, PP 4, VPP 5 (DP 2, derived), sequence parallelism
/// and the distributed optimizer, sequence 8192, global batch 128.
nlohmann::json default_scenario();

}  // namespace orrery::cli
