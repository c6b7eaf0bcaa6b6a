#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "hardware/cluster_spec.h"
#include "hardware/hardware_presets.h"
#include "models/error.h"
#include "models/model_input.h"
#include "models/model_presets.h"
#include "models/param_count.h"
#include "models/units.h"
#include "sim/option_table.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

void list_models() {
  fmt::print("models (Hugging Face config.json presets; parameters counted from the config)\n");
  fmt::print("  {:<18} {:>6} {:>7} {:>6} {:>4} {:>7} {:>8} {:>10} {:>10}  {}\n", "name", "layers", "hidden", "heads",
             "kv", "ffn", "vocab", "params B", "active B", "type");
  for (const ModelPresetInfo& info : model_presets()) {
    const ModelSpec m = parse_model_input(nlohmann::json(info.name), ".", "model");
    const ParamCount c = count_parameters(m);
    fmt::print("  {:<18} {:>6} {:>7} {:>6} {:>4} {:>7} {:>8} {:>10.2f} {:>10}  {}{}\n", info.name, m.num_layers,
               m.hidden_size, m.num_attention_heads, m.num_kv_heads,
               m.is_moe() ? m.moe.expert_intermediate_size : m.intermediate_size, m.vocab_size,
               static_cast<double>(c.total) / kBillion,
               m.is_moe() ? fmt::format("{:.2f}", static_cast<double>(c.active) / kBillion) : "",
               m.model_type, m.is_moe() ? fmt::format(" ({} experts, top-{})", m.moe.num_experts, m.moe.experts_per_token) : "");
  }
}

void list_gpus() {
  fmt::print("GPUs (dense TFLOP/s; per-direction NVLink)\n");
  fmt::print("  {:<16} {:>8} {:>8} {:>8} {:>9} {:>8} {:>6} {:>9}  {}\n", "name", "bf16", "fp16", "fp8", "HBM GiB",
             "TB/s", "SMs", "NVL GB/s", "display name");
  for (const PresetSummary& s : gpu_presets()) {
    GpuSpec g = parse_gpu(nlohmann::json(s.name), "gpu");
    fmt::print("  {:<16} {:>8.1f} {:>8.1f} {:>8.1f} {:>9.1f} {:>8.2f} {:>6} {:>9.0f}  {}\n", g.name,
               to_tflops(g.peak_bf16), to_tflops(g.peak_fp16), to_tflops(g.peak_fp8), to_GiB(g.hbm_capacity),
               g.hbm_bandwidth / kTera, g.sm_count, to_GB_s(g.nvlink_bandwidth), g.display_name);
  }
}

void list_clusters() {
  fmt::print("clusters\n");
  fmt::print("  {:<16} {:<16} {:>9} {:>11} {:>12}  {}\n", "name", "gpu", "GPUs/node", "NVL domain", "NIC Gb/s/GPU",
             "network tiers (nodes)");
  for (const PresetSummary& s : cluster_presets()) {
    ClusterSpec c = parse_cluster(nlohmann::json(s.name), "cluster");
    std::string tiers;
    for (const NetworkTier& t : c.network) {
      tiers += fmt::format("{}{} {}", tiers.empty() ? "" : ", ", t.name, t.nodes == 0 ? std::string("any") : std::to_string(t.nodes));
    }
    fmt::print("  {:<16} {:<16} {:>9} {:>11} {:>12.0f}  {}\n", c.name, c.gpu.name, c.gpus_per_node,
               c.nvlink_domain_size, c.nic_bandwidth_per_gpu() * 8.0 / kGiga, tiers);
  }
}

// The option table (sim/option_table.h): each setting's flags, type and default; with `markdown`, one section's
// key reference as scenarios/README.md holds it.
void list_options(const std::string& markdown) {
  if (!markdown.empty()) {
    fmt::print("{}", options_markdown(markdown));
    return;
  }
  fmt::print("scenario settings and their flags (scenarios/README.md has the full reference)\n");
  std::string section;
  for (const OptionSpec& o : scenario_options()) {
    if (o.section != section) {
      section = o.section;
      fmt::print("\n{}\n", section);
    }
    std::string flags = cli_names(o);
    std::string shown;
    for (std::size_t start = 0; start <= flags.size();) {
      const std::size_t comma = std::min(flags.find(',', start), flags.size());
      const std::string name = flags.substr(start, comma - start);
      if (name[0] != '!') shown += (shown.empty() ? "" : " ") + name;
      start = comma + 1;
    }
    fmt::print("  {:<40} {:<44} {}\n", o.key, shown, o.default_text);
  }
  fmt::print("\nMegatron-LM switches: ");
  for (const ShorthandFlag& f : shorthand_flags()) fmt::print("{} ", f.flag);
  fmt::print("\nMegatron-LM arguments accepted and ignored (they do not change the simulated time):\n ");
  for (const IgnoredMegatronFlag& f : ignored_megatron_flags()) fmt::print(" {}", f.flag);
  fmt::print("\nMegatron-LM architecture arguments refused (the model's config gives them):\n ");
  for (const ArchitectureMegatronFlag& f : architecture_megatron_flags()) fmt::print(" {}", f.flag);
  fmt::print("\n");
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>("all");
  auto markdown = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "list model, GPU and cluster presets, or the scenario's settings");
  cmd->add_option("what", *what, "models, gpus, clusters, all (the three), or options")
      ->check(CLI::IsMember({"models", "gpus", "clusters", "all", "options"}));
  cmd->add_option("--markdown", *markdown,
                  "with options: print the key reference of one section (parallel, training or model) as Markdown")
      ->check(CLI::IsMember({"parallel", "training", "model"}));
  cmd->callback([what, markdown] {
    require(markdown->empty() || *what == "options", "--markdown", *markdown, "goes with `orrery list options`");
    if (*what == "options") return list_options(*markdown);
    if (*what == "models" || *what == "all") list_models();
    if (*what == "all") fmt::print("\n");
    if (*what == "gpus" || *what == "all") list_gpus();
    if (*what == "all") fmt::print("\n");
    if (*what == "clusters" || *what == "all") list_clusters();
  });
}

}  // namespace orrery::cli
