// `orrery calibrate import-nccl-tests LOG... --out PROFILE`: collective tables from real nccl-tests logs.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <memory>

#include "calibrate/nccl_import.h"
#include "models/error.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

struct ImportArgs {
  std::vector<std::string> logs;
  std::string out, base, gpu;
  int ranks = 0, nodes = 0;
};

void run_import(const ImportArgs& a) {
  GpuProfile profile;
  if (!a.base.empty()) {
    profile = load_gpu_profile(a.base);
  } else {
    require(!a.gpu.empty(), "--gpu", "missing", "names the GPU of a new profile (or give --profile to extend one)");
    profile.gpu = a.gpu;
    profile.source = "nccl-tests logs imported by orrery calibrate import-nccl-tests";
  }
  for (const std::string& f : a.logs) {
    const NcclTestsLog log = read_nccl_tests_log(f);
    const auto samples = collective_samples(log, a.ranks, a.nodes);
    merge_collectives(profile, samples);
    std::cout << fmt::format("{}: {} on {} ranks, {} node(s): {} sizes\n", f, to_string(*log.kind),
                             samples.empty() ? 0 : samples.front().ranks, samples.empty() ? 0 : samples.front().nodes,
                             samples.size());
  }
  std::ofstream out(a.out);
  if (!out) throw Error::io(a.out, "cannot be written");
  out << gpu_profile_json(profile).dump(1) << "\n";
  std::cout << fmt::format("wrote {} ({} collective samples)\n", a.out, profile.collectives.size());
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("calibrate", "turn measurements into profiles the cost models use");
  cmd->require_subcommand(1);
  auto a = std::make_shared<ImportArgs>();
  CLI::App* imp = cmd->add_subcommand("import-nccl-tests", "read nccl-tests logs into a profile's collective tables");
  imp->add_option("logs", a->logs, "nccl-tests output files (all_reduce_perf and friends)")->required();
  imp->add_option("--out", a->out, "profile JSON to write")->required();
  imp->add_option("--profile", a->base, "an existing profile to extend");
  imp->add_option("--gpu", a->gpu, "GPU name of a new profile (e.g. \"NVIDIA H100 SXM5 80GB\")");
  imp->add_option("--ranks", a->ranks, "ranks of the runs, when the logs do not say");
  imp->add_option("--nodes", a->nodes, "nodes of the runs, when the logs do not say");
  imp->callback([a] { run_import(*a); });
}

}  // namespace orrery::cli
