#include <fmt/format.h>

#include "models/param_count.h"
#include "tools/orrery/outputs.h"
#include "tools/orrery/placement_output.h"

namespace orrery::cli {

using nlohmann::json;

json report_json(const Prediction& p) {
  const Report& r = p.report;
  const Scenario& s = p.scenario;
  json out;
  out["name"] = r.name;
  out["num_gpus"] = r.num_gpus;
  out["iteration_time_s"] = r.iteration_time;
  out["tokens_per_s"] = r.tokens_per_s;
  out["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  out["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  out["hardware_tflops_per_gpu"] = r.hardware_tflops_per_gpu;
  out["mfu"] = r.mfu;
  out["mfu_causal"] = r.mfu_causal;
  out["hfu"] = r.hfu;
  out["peak_memory_bytes"] = r.peak_memory;
  json stages = json::array();
  for (const StageMemory& m : r.per_stage) {
    stages.push_back({{"stage", m.stage},
                      {"weights", m.weights},
                      {"gradients", m.gradients},
                      {"optimizer", m.optimizer},
                      {"activations", m.activations},
                      {"other", m.other},
                      {"peak", m.peak}});
  }
  out["memory"] = {{"capacity_bytes", r.memory_capacity}, {"per_stage", stages}};
  const Breakdown& b = r.breakdown;
  out["breakdown_s"] = {{"compute", b.compute},
                        {"exposed_tp_comm", b.exposed_tp_comm},
                        {"exposed_cp_comm", b.exposed_cp_comm},
                        {"exposed_ep_comm", b.exposed_ep_comm},
                        {"exposed_pp_comm", b.exposed_pp_comm},
                        {"exposed_dp_comm", b.exposed_dp_comm},
                        {"bubble", b.bubble},
                        {"optimizer", b.optimizer},
                        {"host", b.host},
                        {"other", b.other}};
  out["critical_stage"] = r.critical_stage;
  out["critical_rank"] = r.critical_rank;
  out["warnings"] = r.warnings;
  if (!r.profile.empty()) out["profile"] = r.profile;
  if (!r.pools.empty()) {
    json pools = json::array();
    for (const PoolReport& pool : r.pools) {
      pools.push_back({{"name", pool.name},
                       {"gpu", pool.gpu},
                       {"nic_type", pool.nic_type},
                       {"num_gpus", pool.num_gpus},
                       {"gpus_used", pool.gpus_used},
                       {"stages", pool.stages},
                       {"peak_tflops_per_gpu", to_tflops(pool.peak_flops_per_gpu)},
                       {"memory_capacity_bytes", pool.memory_capacity},
                       {"peak_memory_bytes", pool.peak_memory},
                       {"mfu", pool.mfu}});
    }
    out["pools"] = pools;
  }
  if (s.placement) out["placement"] = placement_json(summarize_placement(s));
  if (r.packing) {
    const PackedBatch& k = *r.packing;
    out["packing"] = {{"documents", k.documents},
                      {"pieces", k.pieces},
                      {"sequences", k.sequences},
                      {"attention_work_vs_unpacked", k.packed_over_full},
                      {"dp_attention_imbalance", k.dp_imbalance},
                      {"critical_dp_rank", k.critical_dp_rank},
                      {"cp_attention_imbalance", k.cp_imbalance},
                      {"dp_attention_work", k.dp_work}};
  }
  const ParamCount params = count_parameters(s.model);
  out["model"] = {{"name", s.model.name},
                  {"parameters", params.total},
                  {"active_parameters", params.active},
                  {"mtp_num_layers", s.model.mtp_num_layers},
                  {"mtp_parameters", params.mtp},
                  {"model_flops_per_iteration", r.model_flops},
                  {"hardware_flops_per_iteration", r.hardware_flops}};
  const ParallelPlan& pl = s.parallel;
  out["plan"] = {{"tp", pl.tp},
                 {"pp", pl.pp},
                 {"dp", pl.dp},
                 {"cp", pl.cp},
                 {"cp_comm_type", to_string(pl.cp_comm_type)},
                 {"ep", pl.ep},
                 {"etp", pl.etp},
                 {"moe_token_dispatcher_type", to_string(pl.moe_token_dispatcher_type)},
                 {"moe_flex_dispatcher_backend", pl.moe_token_dispatcher_type == MoeDispatcher::kFlex
                                                     ? nlohmann::json(to_string(pl.moe_flex_dispatcher_backend))
                                                     : nlohmann::json(nullptr)},
                 {"vpp", pl.vpp},
                 {"sequence_parallel", pl.sequence_parallel},
                 {"zero_stage", pl.zero_stage},
                 {"schedule", to_string(pl.schedule)},
                 {"microbatches", r.microbatches},
                 {"micro_batch_size", s.training.micro_batch_size},
                 {"global_batch_size", s.training.global_batch_size},
                 {"seq_length", s.training.seq_length},
                 {"precision", to_string(s.training.precision)},
                 {"fp8_recipe", s.training.precision == Precision::kFp8
                                    ? nlohmann::json(to_string(s.training.fp8_recipe))
                                    : nlohmann::json(nullptr)},
                 {"recompute", to_string(s.training.recompute)},
                 {"recompute_modules", s.training.recompute_module_names()},
                 {"framework", to_string(s.training.framework)}};
  if (s.training.recompute == Recompute::kFull) {
    // Megatron-Core's full-recompute method (training.recompute_method, recompute_num_layers).
    out["plan"]["recompute_method"] = s.training.recompute_method == RecomputeMethod::kBlock ? "block" : "uniform";
    out["plan"]["recompute_num_layers"] = s.training.recompute_num_layers;
  }
  out["simulation"] = {{"instances", p.instances.instances.size()},
                       {"tasks_per_iteration", p.graph.num_tasks()},
                       {"events", p.run.events}};
  return out;
}

}  // namespace orrery::cli
