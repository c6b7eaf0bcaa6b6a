#include "tools/orrery/scenario_flags.h"

#include <charconv>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

using nlohmann::json;

namespace {

// The first sentence of a row's documentation, for --help (the key reference has the whole text), cut at a word
// near 120 characters.
std::string short_help(const OptionSpec& o) {
  std::string_view doc = o.doc;
  for (std::string_view stop : {". ", "; "}) doc = doc.substr(0, std::min(doc.size(), doc.find(stop)));
  std::string text(doc);
  if (text.size() > 120) text = text.substr(0, text.rfind(' ', 116)) + " ...";
  return fmt::format("{} [{}.{}; default {}]", text, o.section, o.key, o.default_text);
}

// A space-separated list takes every word up to the next flag, a scenario file after it included: refused, or the
// file would be read as an item (or, for an ignored flag, silently dropped).
void refuse_swallowed_file(const std::vector<std::string>& values, const std::string& flag) {
  for (const std::string& v : values) {
    std::error_code ec;
    require(!(v.ends_with(".json") && std::filesystem::is_regular_file(v, ec)), flag, v,
            "took the scenario file as one of its values: give the scenario file before the flags");
  }
}

}  // namespace

void ScenarioFlags::add_to(CLI::App& app) {
  app.add_option("--model", model, "model preset name or path to a Hugging Face config.json")->check(non_empty());
  app.add_option("--cluster", cluster, "cluster preset name (orrery list clusters) or path to a cluster JSON object")
      ->check(non_empty());
  if (num_gpus_is_list) {
    app.add_option("--num-gpus", num_gpus_list, "numbers of GPUs, comma-separated (e.g. 4096,8192,16384)")->check(non_empty());
  } else {
    app.add_option("--num-gpus", num_gpus, "number of GPUs")->check(non_empty());
  }
  for (const OptionSpec& o : scenario_options()) {
    Given& g = options[&o];
    if (o.type == OptionType::kBoolean) {
      g.option = app.add_flag_function(cli_names(o), [&g](std::int64_t count) { g.on = count > 0; }, short_help(o));
      continue;
    }
    if (o.type == OptionType::kIntegerList || o.type == OptionType::kChoiceList) {
      // Megatron-LM's nargs lists ("--recompute-modules core_attn mlp"); commas separate items too. Each
      // occurrence is counted as it is parsed, as CLI11's count() is the number of values.
      CLI::Option* opt = app.add_option_function<std::vector<std::string>>(
                                cli_names(o),
                                [&g](const std::vector<std::string>& values) {
                                  ++g.occurrences;
                                  g.values = values;
                                },
                                short_help(o))
                             ->check(non_empty());
      opt->expected(1, CLI::detail::expected_max_vector_size)->trigger_on_parse();
      g.option = opt;
    } else {
      g.option = app.add_option(cli_names(o), g.values, short_help(o))->check(non_empty())->expected(1);
    }
  }
  for (const ShorthandFlag& f : shorthand_flags()) {
    bool& on = shorthands[&f];
    app.add_flag(std::string(f.flag), on, std::string(f.doc));
  }
  for (const IgnoredMegatronFlag& f : ignored_megatron_flags()) {
    const std::string name(f.flag);
    const std::string help = "Megatron-LM's; accepted and ignored (it does not change the simulated time)";
    if (f.values == 0) {
      app.add_flag_callback(name, [this, name] { ignored.push_back(name); }, help);
    } else {
      CLI::Option* opt = app.add_option_function<std::vector<std::string>>(
          name,
          [this, name](const std::vector<std::string>& values) {
            refuse_swallowed_file(values, name);
            std::string line = name;
            for (const std::string& v : values) line += " " + v;
            ignored.push_back(line);
          },
          help);
      opt->expected(1, f.values < 0 ? CLI::detail::expected_max_vector_size : f.values);
    }
  }
  for (const ArchitectureMegatronFlag& f : architecture_megatron_flags()) {
    const std::string name(f.flag);
    const std::string rule = fmt::format(
        "describes the model's architecture, which Orrery reads from the model's config ({}): drop it, or give "
        "--model a config.json that says it",
        f.config_key);
    const std::string help = "Megatron-LM's; refused: the model's config gives it (" + std::string(f.config_key) + ")";
    if (f.values == 0) {
      app.add_flag_callback(name, [name, rule] { require(false, name, "given", rule); }, help);
    } else {
      app.add_option_function<std::string>(
             name, [name, rule](const std::string& value) { require(false, name, value, rule); }, help)
          ->expected(1);
    }
  }
}

namespace {

// Anything at that path, a broken link included, is a file (and its error names it).
bool names_a_file(const std::string& value) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(value, ec));
}

// A value with a folder or a .json ending is meant as a file (no preset name has either): one that is not there is
// refused as a missing file, not as an unknown preset.
void refuse_missing_file(const std::string& value, const char* flag) {
  const bool path_like = value.find('/') != std::string::npos || value.ends_with(".json");
  require(!path_like || names_a_file(value), flag, value,
          "is not a file (no such path); give a config file or a preset name");
}

}  // namespace

json model_flag_value(const std::string& value) {
  if (names_a_file(value)) return {{"hf_config", std::filesystem::absolute(value).string()}};
  refuse_missing_file(value, "--model");
  return value;
}

json cluster_flag_value(const std::string& value) {
  refuse_missing_file(value, "--cluster");
  if (!names_a_file(value)) return {{"preset", value}};
  json cluster = read_json_file(value, "--cluster");
  if (!cluster.is_object()) {
    throw Error::invalid("--cluster", value, "must hold a JSON object (a cluster description: scenarios/README.md)");
  }
  return cluster;
}

namespace {

// The items of a list flag's values, each of which may hold several comma-separated ones. An empty item is refused:
// it would silently give fewer values than written.
std::vector<std::string> list_items(const std::vector<std::string>& values, const std::string& flag) {
  refuse_swallowed_file(values, flag);
  std::vector<std::string> items;
  for (const std::string& given : values) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = given.find(',', start);
      const std::string item = given.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      require(!item.empty(), flag, "\"" + given + "\"", "has an empty item (two commas in a row, or one at an end)");
      items.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return items;
}

std::int64_t integer_value(const std::string& text, const std::string& flag) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  require(ec != std::errc::result_out_of_range, flag, text, "must be a whole number of at most 64 bits");
  require(ec == std::errc() && end == text.data() + text.size(), flag, text, "must be a whole number");
  return v;
}

// The JSON value of a row's flag, of the row's type. Ranges and choices are the parser's to check, so a bad value
// gets the same error as in a file.
json flag_value(const OptionSpec& o, const ScenarioFlags::Given& g) {
  const std::string flag = primary_flag(o);
  // One occurrence per setting: a repeat, or "--x --no-x", would settle the value by a rule the user did not state.
  const bool is_list = o.type == OptionType::kIntegerList || o.type == OptionType::kChoiceList;
  require(!g.option || (is_list ? g.occurrences <= 1 : g.option->count() <= 1), flag, "given more than once",
          "sets one key: give it once (with one of its names)");
  if (o.type == OptionType::kBoolean) return *g.on;
  if (o.type == OptionType::kIntegerList || o.type == OptionType::kChoiceList) {
    json list = json::array();
    for (const std::string& item : list_items(g.values, flag)) {
      if (o.type == OptionType::kIntegerList) list.push_back(integer_value(item, flag));
      else list.push_back(item);
    }
    return list;
  }
  // CLI11 reads "[2,4]" as two values: a setting of one value takes one.
  require(g.values.size() == 1, flag, fmt::format("{} values", g.values.size()), "takes one value");
  const std::string& text = g.values.front();
  switch (o.type) {
    case OptionType::kInteger: return integer_value(text, flag);
    case OptionType::kNumber: {
      double v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      require(ec == std::errc() && end == text.data() + text.size() && std::isfinite(v), flag, text,
              "must be a finite number");
      return v;
    }
    case OptionType::kObject: {
      json value = parse_json_text(text, flag);
      require(value.is_object(), flag, text, "must be a JSON object");
      return value;
    }
    default: return text;
  }
}

// The section object `doc[section]`, made an object if absent. The model section, a preset name or absent, becomes
// {"preset": name}: Megatron's model-shape flags override the model's config keys.
json& section_of(json& doc, std::string_view section, const std::string& flag) {
  const std::string name(section);
  if (name == "model") {
    require(doc.contains("model"), flag, "given", "changes the model: give --model or a scenario file with one");
    if (doc["model"].is_string()) doc["model"] = {{"preset", doc["model"]}};
  }
  json& s = doc[name];
  if (s.is_null()) s = json::object();
  return s;
}

}  // namespace

void ScenarioFlags::apply(json& doc) const {
  if (!model.empty()) doc["model"] = model_flag_value(model);
  if (!cluster.empty()) {
    refuse_missing_file(cluster, "--cluster");
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
  const auto given = [&](std::string_view section, std::string_view key) -> const Given* {
    const OptionSpec* o = find_option(section, key);
    const Given& g = options.at(o);
    return g.on || !g.values.empty() ? &g : nullptr;
  };
  for (const auto& [o, g] : options) {
    if (!g.on && g.values.empty()) continue;
    const std::string flag = primary_flag(*o);
    json& section = section_of(doc, o->section, flag);
    require(section.is_object(), flag, "given", fmt::format("needs the scenario's {} to be an object", o->section));
    if (!o->file_alias.empty()) section.erase(std::string(o->file_alias));  // the flag wins over the file's spelling
    section[std::string(o->key)] = flag_value(*o, g);
  }
  for (const auto& [f, on] : shorthands) {
    if (!on || f->key == "precision") continue;
    require(!given(f->section, f->key), std::string(f->flag), "given",
            fmt::format("sets {}.{}, which another flag sets too; give it once", f->section, f->key));
    section_of(doc, f->section, std::string(f->flag))[std::string(f->key)] = json::parse(f->value_json);
  }
  // Megatron-LM's precision switches: --bf16 or --fp16, and --fp8-format for FP8 GEMMs (next to --bf16, which keeps
  // the rest in BF16: Orrery's fp8).
  const auto shorthand = [&](std::string_view flag) {
    for (const auto& [f, on] : shorthands) {
      if (f->flag == flag) return on;
    }
    return false;
  };
  const bool bf16 = shorthand("--bf16"), fp16 = shorthand("--fp16");
  if (!bf16 && !fp16 && !given("training", "precision") && !given("training", "fp8_format")) return;
  const Given* precision = given("training", "precision");
  const Given* fp8_format = given("training", "fp8_format");
  const Given* fp8_recipe = given("training", "fp8_recipe");
  const std::optional<std::string> named =
      precision ? std::optional<std::string>(precision->values.front()) : std::nullopt;
  if (int(bf16) + int(fp16) + int(named.has_value()) > 1) {
    throw Error::invalid("--precision", "--bf16 / --fp16", "give the precision once");
  }
  json& training = section_of(doc, "training", "--precision");
  require(training.is_object(), "--precision", "given", "needs the scenario's training to be an object");
  if (bf16 && !fp8_format) training["precision"] = "bf16";
  if (fp16) training["precision"] = "fp16";
  if (fp8_format) {
    const std::string& format = fp8_format->values.front();
    if (fp16) throw Error::not_modelled("--fp8-format", format, "FP8 with FP16 outside the GEMMs (give --bf16)");
    if (named && *named != "fp8") {
      throw Error::invalid("--fp8-format", format, "turns FP8 on, so --precision must be fp8 (it is " + *named + ")");
    }
    training["precision"] = "fp8";
  }
  // A non-FP8 precision from the command line drops the file's FP8 recipe and format, which only FP8 runs take.
  const bool not_fp8 = !fp8_format && (bf16 || fp16 || (named && *named != "fp8"));
  if (not_fp8) {
    if (!fp8_recipe) training.erase("fp8_recipe");
    training.erase("fp8_format");
  }
}

void ScenarioFlags::check_model(const ModelSpec& parsed_model) const {
  for (const auto& [o, g] : options) {
    if (o->section != "model" || g.values.empty()) continue;
    const std::int64_t given = integer_value(g.values.front(), primary_flag(*o));
    const std::optional<std::int64_t> parsed = model_key_value(o->key, parsed_model);
    if (parsed && *parsed == given) continue;
    throw Error::not_modelled(primary_flag(*o), g.values.front(),
                              fmt::format("the {} model {} does not read {} (it has {}): the flag would change nothing",
                                          parsed_model.model_type, parsed_model.name, o->key, parsed ? std::to_string(*parsed) : "none"));
  }
}

void ScenarioFlags::note_ignored(std::ostream& out) const {
  for (const std::string& line : ignored) out << "orrery: ignored " << line << " (it does not change the simulated time)\n";
}

bool ScenarioFlags::any() const {
  if (!model.empty() || !cluster.empty() || num_gpus || !num_gpus_list.empty()) return true;
  for (const auto& [o, g] : options) {
    if (g.on || !g.values.empty()) return true;
  }
  for (const auto& [f, on] : shorthands) {
    if (on) return true;
  }
  return false;
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
