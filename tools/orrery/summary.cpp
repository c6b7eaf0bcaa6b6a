#include <fmt/format.h>

#include "models/utf8.h"
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "models/param_count.h"
#include "tools/orrery/outputs.h"
#include "tools/orrery/placement_output.h"

namespace orrery::cli {

namespace {

std::string gib(Bytes b) { return fmt::format("{:7.2f}", to_GiB(b)); }

std::string percent(Seconds part, Seconds whole) { return fmt::format("{:5.1f}%", whole > 0 ? 100.0 * part / whole : 0.0); }

// A plan that does not fit in GPU memory says so on the summary's first line, before any figure a reader might take
// for a runnable plan's (issue 22); the stages over the capacity are the report's "does not fit" warnings, by the
// same test (a stage's peak above the capacity). Nothing is printed for a plan that fits.
void print_fit_line(std::ostream& out, const Report& r) {
  std::vector<int> over;
  for (const StageMemory& m : r.per_stage) {
    if (m.peak > m.capacity) over.push_back(m.stage);
  }
  if (over.empty()) return;
  // A few stages by number; many (a deep pipeline) by count, so the line stays one line.
  const std::string where =
      over.size() <= 8 ? fmt::format("pipeline stage{} {}", over.size() == 1 ? "" : "s", fmt::join(over, ", "))
                       : fmt::format("{} of {} pipeline stages", over.size(), r.per_stage.size());
  fmt::print(out, "does not fit: peak memory {:.2f} GiB of {:.1f} GiB per GPU, over in {}; the figures below are for a GPU "
                  "with that much memory\n",
             to_GiB(r.peak_memory), to_GiB(r.memory_capacity), where);
}

}  // namespace

void print_summary(std::ostream& out, const Prediction& p) {
  const Report& r = p.report;
  const Scenario& s = p.scenario;
  const ParallelPlan& pl = s.parallel;
  const ParamCount params = count_parameters(s.model);
  print_fit_line(out, r);
  fmt::print(out, "{}\n", r.name);
  const auto modules = s.training.recompute_module_names();
  const bool default_modules = modules == std::vector<std::string>{"core_attn"};
  fmt::print(out, "  model    {} ({:.2f} B parameters{}{}), seq {}, micro-batch {}, global batch {}, {}, recompute {}{}{}\n",
             s.model.name, static_cast<double>(params.total) / kBillion,
             s.model.is_moe() ? fmt::format(", {:.2f} B active", static_cast<double>(params.active) / kBillion) : "",
             s.model.mtp_num_layers > 0 ? fmt::format(", + {:.2f} B in {} multi-token prediction layer(s)",
                                                      static_cast<double>(params.mtp) / kBillion, s.model.mtp_num_layers)
                                        : "",
             s.training.seq_length, s.training.micro_batch_size, s.training.global_batch_size,
             s.training.precision == Precision::kFp8
                 ? fmt::format("fp8 ({} scaling)", to_string(s.training.fp8_recipe))
                 : std::string(to_string(s.training.precision)),
             to_string(s.training.recompute),
             s.training.recompute == Recompute::kSelective && !default_modules
                 ? fmt::format(" ({})", modules.empty() ? "no modules" : fmt::format("{}", fmt::join(modules, ", ")))
             : s.training.recompute == Recompute::kFull && s.training.recompute_method == RecomputeMethod::kBlock
                 ? fmt::format(" (block: the first {} layer(s) of each model chunk)", s.training.recompute_num_layers)
                 : "",
             s.training.framework == Framework::kMegatron ? "" : fmt::format(", framework {}", to_string(s.training.framework)));
  if (r.pools.empty()) {
    fmt::print(out, "  cluster  {} x {} ({})\n", r.num_gpus, s.cluster.gpu.display_name, s.cluster.name);
  } else {
    fmt::print(out, "  cluster  {} GPUs of a mixed cluster ({})\n", r.num_gpus, s.cluster.name);
  }
  if (!r.profile.empty()) fmt::print(out, "  profile  {} (measured tables price the ops they cover)\n", r.profile);
  // Experts: EP x ETP and how tokens reach them; DualPipe(V): the two chunks each rank runs without a VPP setting.
  const std::string experts =
      s.model.is_moe() ? fmt::format(", EP {} ETP {} ({} dispatcher{})", pl.ep, pl.etp, to_string(pl.moe_token_dispatcher_type),
                                     pl.moe_token_dispatcher_type == MoeDispatcher::kFlex
                                         ? fmt::format(", {}", to_string(pl.moe_flex_dispatcher_backend))
                                         : "")
                       : "";
  const std::string schedule = pl.vpp > 1                              ? "interleaved 1f1b"
                               : pl.schedule == Schedule::kDualPipe  ? "dualpipe (two chunks per rank)"
                               : pl.schedule == Schedule::kDualPipeV ? "dualpipev (two chunks per rank, V-shaped)"
                                                                     : to_string(pl.schedule);
  fmt::print(out, "  plan     TP {} PP {} DP {} CP {} VPP {}{}{}{}, {} micro-batches per pipeline, schedule {}\n", pl.tp,
             pl.pp, pl.dp, pl.cp, pl.vpp, experts, pl.sequence_parallel ? ", sequence parallel" : "",
             pl.zero_stage > 0 ? fmt::format(", ZeRO {}", pl.zero_stage) : "", r.microbatches, schedule);
  if (s.placement) print_placement(out, summarize_placement(s));
  fmt::print(out, "\n");
  fmt::print(out, "  iteration time     {:10.3f} s\n", r.iteration_time);
  fmt::print(out, "  throughput         {:10.0f} tokens/s ({:.1f} tokens/s per GPU)\n", r.tokens_per_s, r.tokens_per_s_per_gpu);
  fmt::print(out, "  model TFLOP/s/GPU  {:10.1f}   MFU {:.1f}% (causal-halved {:.1f}%)\n", r.model_tflops_per_gpu,
             100 * r.mfu, 100 * r.mfu_causal);
  fmt::print(out, "  hw TFLOP/s/GPU     {:10.1f}   HFU {:.1f}%\n", r.hardware_tflops_per_gpu, 100 * r.hfu);
  fmt::print(out, "  peak memory        {:10.2f} GiB of {:.1f} GiB\n", to_GiB(r.peak_memory), to_GiB(r.memory_capacity));
  fmt::print(out, "\n  time breakdown (critical stage {}, rank {})\n", r.critical_stage, r.critical_rank);
  const Breakdown& b = r.breakdown;
  const Seconds T = r.iteration_time;
  const std::pair<const char*, Seconds> parts[] = {
      {"compute", b.compute},           {"exposed TP comm", b.exposed_tp_comm}, {"exposed CP comm", b.exposed_cp_comm},
      {"exposed EP comm", b.exposed_ep_comm}, {"exposed PP comm", b.exposed_pp_comm},
      {"exposed DP comm", b.exposed_dp_comm}, {"pipeline bubble", b.bubble},   {"optimizer", b.optimizer},
      {"waiting for host", b.host},           {"other", b.other}};
  for (const auto& [name, value] : parts) {
    if (value > 0 || std::string(name) == "compute") fmt::print(out, "    {:<18} {:10.3f} s  {}\n", name, value, percent(value, T));
  }
  fmt::print(out, "\n  memory per pipeline stage (GiB, at each stage's peak)\n");
  fmt::print(out, "    stage  weights  grads    optim    activ    other    peak\n");
  for (const StageMemory& m : r.per_stage) {
    fmt::print(out, "    {:5}  {}  {}  {}  {}  {}  {}\n", m.stage, gib(m.weights), gib(m.gradients), gib(m.optimizer),
               gib(m.activations), gib(m.other), gib(m.peak));
  }
  if (!r.pools.empty()) {
    fmt::print(out, "\n  pools (cluster.pools)\n");
    fmt::print(out, "    pool              GPU              NIC         GPUs used  stages        peak TFLOP/s  memory GiB  MFU\n");
    for (const PoolReport& pool : r.pools) {
      fmt::print(out, "    {:<17} {:<16} {:<11} {:>5} {:>5}  {:<13} {:>11.0f}  {:>5.1f}/{:<5.0f} {:4.1f}%\n", pool.name, pool.gpu,
                 pool.nic_type, pool.num_gpus, pool.gpus_used, pool.stages.empty() ? "-" : fmt::format("{}", fmt::join(pool.stages, ",")),
                 to_tflops(pool.peak_flops_per_gpu), to_GiB(pool.peak_memory), to_GiB(pool.memory_capacity), 100 * pool.mfu);
    }
  }
  if (r.packing) {
    const PackedBatch& k = *r.packing;
    fmt::print(out, "\n  packed documents: {} documents in {} sequences ({} pieces after cutting at sequence ends)\n",
               k.documents, k.sequences, k.pieces);
    fmt::print(out, "    attention work vs one document per sequence  {:6.3f}\n", k.packed_over_full);
    fmt::print(out, "    DP ranks' attention work, max / mean         {:6.3f}  (busiest: DP rank {}, simulated)\n",
               k.dp_imbalance, k.critical_dp_rank);
    fmt::print(out, "    CP ranks' attention work, max / mean         {:6.3f}  (worst micro-batch)\n", k.cp_imbalance);
  }
  // Warnings quote input (an override's key): printed with its control characters escaped.
  for (const std::string& w : r.warnings) fmt::print(out, "\n  warning: {}\n", printable_utf8(w, false));
}

}  // namespace orrery::cli
