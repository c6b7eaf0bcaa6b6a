#include "hardware/cost_params.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hardware/hardware_presets.h"
#include "models/error.h"
#include "models/json_fields.h"

namespace orrery {

using nlohmann::json;

CostParams parse_cost_params(const json& value, const std::string& path) {
  FieldReader in(value, path);
  in.allow("name");
  in.allow("source");
  in.allow("notes");
  CostParams p;
  const json* compute = in.raw("compute");
  const json* network = in.raw("network");
  const json* memory = in.raw("memory");
  if (!compute || !network || !memory) {
    throw Error::invalid(path, "incomplete", "needs \"compute\", \"network\" and \"memory\"");
  }

  FieldReader c(*compute, in.field("compute"));
  c.allow("fit");  // the record of how the fitted values were produced (calibrate/fit_record.h)
  p.compute.gemm_peak_fraction = c.require_double("gemm_peak_fraction", true);
  p.compute.gemm_fp8_peak_fraction = c.require_double("gemm_fp8_peak_fraction", true);
  p.compute.gemm_k_half = c.require_double("gemm_k_half", true);
  p.compute.gemm_wave_tail = c.require_double("gemm_wave_tail");
  require(p.compute.gemm_wave_tail >= 0 && p.compute.gemm_wave_tail <= 1, c.field("gemm_wave_tail"),
          std::to_string(p.compute.gemm_wave_tail), "must be between 0 and 1");
  p.compute.attention_forward_peak_fraction = c.require_double("attention_forward_peak_fraction", true);
  p.compute.attention_backward_peak_fraction = c.require_double("attention_backward_peak_fraction", true);
  p.compute.hbm_efficiency = c.require_double("hbm_efficiency", true);
  p.compute.launch_gap = from_us(c.require_double("launch_gap_us"));
  p.compute.overlap_slowdown = c.require_double("overlap_slowdown");
  p.compute.host.pytorch_forward = from_us(c.require_double("pytorch_forward_host_issue_us"));
  p.compute.host.pytorch_backward = from_us(c.require_double("pytorch_backward_host_issue_us"));
  p.compute.host.pytorch_optimizer = from_us(c.require_double("pytorch_optimizer_host_issue_us"));
  p.compute.host.library = from_us(c.require_double("library_host_issue_us"));
  p.compute.pcie_efficiency = c.require_double("pcie_efficiency", true);
  p.compute.host_memory_efficiency = c.require_double("host_memory_efficiency", true);
  if (const json* tiles = c.raw("gemm_tiles")) {
    for (std::size_t i = 0; i < tiles->size(); ++i) {
      FieldReader t((*tiles)[i], fmt::format("{}.gemm_tiles[{}]", c.path(), i));
      GemmTile tile;
      tile.m = static_cast<int>(t.require_int("m", 1));
      tile.n = static_cast<int>(t.require_int("n", 1));
      tile.relative_efficiency = t.require_double("relative_efficiency", true);
      t.reject_unknown();
      p.compute.gemm_tiles.push_back(tile);
    }
  }
  require(!p.compute.gemm_tiles.empty(), c.field("gemm_tiles"), "[]", "needs at least one tile");
  c.reject_unknown();

  FieldReader n(*network, in.field("network"));
  n.allow("fit");
  p.network.nvlink_efficiency = n.require_double("nvlink_efficiency", true);
  p.network.nvls_efficiency = n.require_double("nvls_efficiency", true);
  p.network.nic_efficiency = n.require_double("nic_efficiency", true);
  p.network.expert_dispatch_nvlink_efficiency = n.require_double("expert_dispatch_nvlink_efficiency", true);
  p.network.expert_dispatch_nic_efficiency = n.require_double("expert_dispatch_nic_efficiency", true);
  p.network.tcp_efficiency = n.require_double("tcp_efficiency", true);
  p.network.pipeline_fill = from_us(n.require_double("pipeline_fill_us"));
  p.network.pipeline_fill_half = from_MiB(n.require_double("pipeline_fill_half_MiB"));
  p.network.network_call_latency = from_us(n.require_double("network_call_latency_us"));
  n.reject_unknown();

  FieldReader mem(*memory, in.field("memory"));
  p.memory.workspace = from_MiB(mem.require_double("workspace_MiB"));
  p.memory.nccl_buffer_per_communicator = from_MiB(mem.require_double("nccl_buffer_MiB_per_communicator"));
  p.memory.framework_overhead = from_GiB(mem.require_double("framework_overhead_GiB"));
  mem.reject_unknown();
  in.reject_unknown();
  return p;
}

const CostParams& default_cost_params() {
  static const CostParams params = [] {
    const auto& list = hardware_presets("cost_model");
    if (list.empty()) throw Error::io("hardware/presets/cost_model.json", "is missing from the build");
    return parse_cost_params(list.front(), "cost_model");
  }();
  return params;
}

}  // namespace orrery
