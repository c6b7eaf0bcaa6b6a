#pragma once
// The one table of the scenario's settings (ARCHITECTURE.md "Scenario file"): every key of the `parallel` and
// `training` sections, the cluster's GPU count and the Megatron-LM model-shape arguments, each with its Megatron-LM
// spelling, type, default and documentation. It drives:
//   - the scenario parser: a key of those sections that the table lacks is refused (check_documented_keys), and
//     a row's `file_alias` is accepted as the same key;
//   - the command-line flags of `orrery predict` (tools/orrery/scenario_flags.cpp registers one per row);
//   - the search's dimensions (rows with `search`: tools/orrery/search_command.cpp registers a list flag each);
//   - the key reference in scenarios/README.md (`orrery list options --markdown`, compared by a test).

#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "models/model_spec.h"

namespace orrery {

/// What a setting's value is, as the scenario file writes it.
enum class OptionType {
  kInteger,     // a JSON integer; on the command line a whole number
  kNumber,      // a JSON number
  kBoolean,     // true or false; on the command line a switch, `--x` and `--no-x`
  kChoice,      // one text from `choices`
  kIntegerList, // a list of integers; on the command line comma- or space-separated
  kChoiceList,  // a list of texts from `choices`, likewise
  kObject,      // a JSON object; on the command line its JSON text
};

/// The text the key reference prints for a type ("integer", "list of integers", ...).
std::string_view to_string(OptionType type);

/// One setting. All texts are static; empty means none.
struct OptionSpec {
  std::string_view section;  // "parallel", "training", "cluster" or "model"
  std::string_view key;      // the scenario key (Hugging Face config.json's for "model")
  /// Megatron-LM's argument (megatron/training/arguments.py, core_r0.13.0), e.g. "--tensor-model-parallel-size";
  /// for a boolean that Megatron only turns off, its negative form ("--no-rope-fusion").
  std::string_view megatron;
  /// Orrery's own shorter flag, e.g. "--tp" (empty: the Megatron-LM spelling, or one made from the key).
  std::string_view flag;
  OptionType type;
  std::string_view choices;  // kChoice / kChoiceList: the accepted texts, comma-separated
  std::string_view default_text;  // as the key reference shows it
  /// The default where it is one fixed value: JSON text ("1", "false"), or for a kChoice the bare text ("1f1b");
  /// empty where it is derived (from the model, the GPU count or another key). A test checks that setting it
  /// changes nothing.
  std::string_view default_json;
  std::string_view doc;
  /// A JSON object merged into a small valid scenario (Llama-3-8B, 2 layers, 8 H100s) that sets this key to a
  /// value the parser accepts, with whatever other keys it needs; a test parses each one.
  std::string_view example;
  /// Another key of the file for the same setting (Megatron's argument name with '_': "tensor_model_parallel_size"),
  /// exclusive with `key`; empty if none.
  std::string_view file_alias;
  bool search = false;      // a dimension of `orrery search` (a list flag of the same name)
};

/// Every row, in the key reference's order (section by section).
std::span<const OptionSpec> scenario_options();

/// The row of `section`.`key` (or of its Megatron file alias), or nullptr.
const OptionSpec* find_option(std::string_view section, std::string_view key);

/// The command-line names of a row, for CLI11: its own flag and Megatron-LM's, or "--" and the key with '-' for
/// '_' when it has neither; a boolean also gets the negation of each positive name ("!--no-x"), and a Megatron
/// negative form sets false.
std::string cli_names(const OptionSpec& option);

/// The primary flag of a row: `flag`, else `megatron`, else "--" and the key with '-' for '_'.
std::string primary_flag(const OptionSpec& option);

/// The value a model row's key has in a parsed model (num_hidden_layers: ModelSpec::num_layers, ...), or nullopt
/// for a key that is not a model row's.
std::optional<std::int64_t> model_key_value(std::string_view key, const ModelSpec& model);

/// A Megatron-LM argument that does not change the simulated time (learning rate, data paths, logging ...), which
/// `orrery predict` accepts so that a Megatron launch line can be pasted, and names on stderr as ignored.
struct IgnoredMegatronFlag {
  std::string_view flag;
  int values;  // how many values follow it (0 for a switch; -1 for one or more, as argparse nargs="+")
};
std::span<const IgnoredMegatronFlag> ignored_megatron_flags();

/// A Megatron-LM argument that describes the model's architecture (--swiglu, --normalization, ...), which Orrery reads
/// from the model's config instead (--model): given on the command line it is refused, naming `config_key`, rather
/// than trusted or dropped silently (a flag that contradicted the config would otherwise change nothing).
struct ArchitectureMegatronFlag {
  std::string_view flag;
  int values;                 // how many values follow it (0 for a switch)
  std::string_view config_key;  // where the model's config says it (Hugging Face config.json)
};
std::span<const ArchitectureMegatronFlag> architecture_megatron_flags();

/// A Megatron-LM switch that sets a scenario key to a value (`--bf16` is training.precision "bf16").
struct ShorthandFlag {
  std::string_view flag;
  std::string_view section, key;
  std::string_view value_json;
  std::string_view doc;
};
std::span<const ShorthandFlag> shorthand_flags();

/// The key reference of one section as a Markdown table (key, Megatron-LM, type, meaning, default), the text
/// scenarios/README.md holds between `<!-- options:SECTION -->` and `<!-- /options -->`. Errors: std::invalid_argument
/// for a section with no rows.
std::string options_markdown(std::string_view section);

/// Checks the table against the keys the parser of `section` ("parallel" or "training") asks for (every key it reads
/// or allows, given or not: FieldReader::read_keys()). Both sides must match: each such key is a row's key or file
/// alias, and each row of the section is asked for. Errors: std::logic_error naming the key and the side that lacks
/// it, on any parse, so a key added to one side only fails every test that parses a scenario.
void check_documented_keys(std::string_view section, const std::set<std::string, std::less<>>& read_keys);

}  // namespace orrery
