// parse_gpu and parse_cluster: the strict readers of GPU and cluster objects (presets and scenario overrides).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "hardware/cluster_spec.h"
#include "hardware/gpu_profile.h"
#include "hardware/hardware_presets.h"
#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/physical_bounds.h"

namespace orrery {

using nlohmann::json;

namespace {

// The smallest fp8_block_scaling_gemm_fraction a GPU description may give: a tenth of the per-tensor rate, well
// below Transformer Engine's measured ratios (0.81 on Hopper, 0.95 on Blackwell; hardware/presets/gpus.json).
constexpr double kMinFp8BlockScalingFraction = 0.1;

// Keys of `overrides` replace those of `base`; an object over an object (peak_tflops, attention_peak_fraction,
// fp8_block_scaling_gemm_fraction) merges key by key, so an override keeps the preset's other entries.
json merge(json base, const json& overrides) {
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    if (it.key() == "preset") continue;
    const auto existing = base.find(it.key());
    if (it->is_object() && existing != base.end() && existing->is_object() && !existing->contains("value")) {
      *existing = merge(*existing, *it);
    } else {
      base[it.key()] = it.value();
    }
  }
  return base;
}

// Resolves a preset reference: a name, or an object with "preset" and overrides, or a full object.
json resolve(const json& value, const std::string& list, const std::string& path) {
  if (value.is_string()) return hardware_preset(list, value.get<std::string>(), path);
  if (!value.is_object()) throw Error::invalid(path, describe_json(value), "must be a preset name or a JSON object");
  if (auto it = value.find("preset"); it != value.end()) {
    if (!it->is_string()) throw Error::invalid(join_path(path, "preset"), describe_json(*it), "must be a string");
    return merge(hardware_preset(list, it->get<std::string>(), join_path(path, "preset")), value);
  }
  return value;
}

void read_common_labels(FieldReader& in) {
  for (const char* key : {"source", "notes", "vendor", "architecture"}) in.allow(key);
}

}  // namespace

FlopsPerSecond GpuSpec::peak_for(DType dtype) const {
  FlopsPerSecond peak = 0;
  switch (dtype) {
    case DType::kFp32: peak = peak_fp32; break;
    case DType::kTf32: peak = peak_tf32; break;
    case DType::kFp16: peak = peak_fp16; break;
    case DType::kBf16: peak = peak_bf16; break;
    case DType::kFp8: peak = peak_fp8; break;
  }
  if (peak <= 0) {
    throw Error::invalid("training.precision", to_string(dtype), fmt::format("is not supported by the GPU {}", name));
  }
  return peak;
}

double GpuSpec::sustained_clock_fraction() const {
  if (sustained_clock_MHz <= 0 || peak_clock_MHz <= 0) return 1.0;
  const double headroom = (tdp_watts - idle_power_W) / (sustained_clock_power_W - idle_power_W);
  const double clock = std::min(max_clock_MHz, sustained_clock_MHz * std::cbrt(headroom));
  return std::min(1.0, clock / peak_clock_MHz);
}

double GpuSpec::measured_clock_fraction() const {
  if (sustained_clock_MHz <= 0 || peak_clock_MHz <= 0) return 1.0;
  return std::min(1.0, sustained_clock_MHz / peak_clock_MHz);
}

double GpuSpec::fp8_scaling_fraction(Fp8Scaling scaling) const {
  if (scaling == Fp8Scaling::kTensor) return 1.0;
  const bool block = scaling == Fp8Scaling::kBlock128;
  const double fraction = block ? fp8_blockwise_gemm_fraction : mxfp8_gemm_fraction;
  if (fraction <= 0) {
    throw Error::invalid("training.fp8_recipe", block ? "\"blockwise\"" : "\"mxfp8\"",
                         fmt::format("is not supported by the GPU {} ({}; its description gives no "
                                     "fp8_block_scaling_gemm_fraction.{})",
                                     name,
                                     block ? "Transformer Engine runs 128-element block scaling on NVIDIA Hopper and "
                                             "later, and no block-scaled GEMM rate is known for this GPU"
                                           : "MXFP8 needs Blackwell tensor cores",
                                     block ? "blockwise" : "mxfp8"));
  }
  return fraction;
}

GpuSpec parse_gpu(const json& value, const std::string& path) {
  json resolved = resolve(value, "gpus", path);
  FieldReader in(resolved, path);
  read_common_labels(in);
  GpuSpec g;
  g.name = in.optional_string("name").value_or("custom-gpu");
  g.display_name = in.optional_string("display_name").value_or(g.name);
  g.architecture = in.optional_string("architecture").value_or("");
  g.vendor = in.optional_string("vendor").value_or("");
  const json* peaks = in.raw("peak_tflops");
  if (!peaks) throw Error::invalid(in.field("peak_tflops"), "missing", "is required");
  FieldReader p(*peaks, in.field("peak_tflops"));
  // A precision the GPU lacks is left out; a given peak must lie in the physical range.
  g.peak_fp32 = from_tflops(p.double_or("fp32", 0.0, bounds::kPeakTflops));
  g.peak_tf32 = from_tflops(p.double_or("tf32", 0.0, bounds::kPeakTflops));
  g.peak_fp16 = from_tflops(p.double_or("fp16", 0.0, bounds::kPeakTflops));
  g.peak_bf16 = from_tflops(p.double_or("bf16", 0.0, bounds::kPeakTflops));
  g.peak_fp8 = from_tflops(p.double_or("fp8", 0.0, bounds::kPeakTflops));
  p.reject_unknown();
  require(g.peak_fp16 > 0 || g.peak_bf16 > 0, in.field("peak_tflops"), "{}", "needs fp16 or bf16 tensor throughput");
  g.hbm_capacity = from_GiB(in.require_double("hbm_capacity_GiB", bounds::kHbmCapacityGiB));
  g.hbm_bandwidth = from_TB_s(in.require_double("hbm_bandwidth_TB_s", bounds::kHbmBandwidthTBs));
  g.sm_count = static_cast<int>(in.require_int("sm_count", 1, 1 << 16));
  g.l2_cache = from_MiB(in.double_or("l2_cache_MiB", 40.0, bounds::kL2CacheMiB));
  // 0 says the board has no NVLink: its GPUs reach each other over PCIe (GpuSpec::intra_node_bandwidth).
  constexpr bounds::Range kNvlinkOrNone{0.0, bounds::kNvlinkGBs.max, bounds::kNvlinkGBs.unit, bounds::kNvlinkGBs.why};
  g.nvlink_bandwidth = from_GB_s(in.require_double("nvlink_bandwidth_GB_s", kNvlinkOrNone));
  require(g.nvlink_bandwidth == 0 || g.nvlink_bandwidth >= from_GB_s(bounds::kNvlinkGBs.min), in.field("nvlink_bandwidth_GB_s"),
          fmt::format("{}", to_GB_s(g.nvlink_bandwidth)),
          fmt::format("must be 0 (no NVLink) or lie in [{}, {}] GB/s", bounds::kNvlinkGBs.min, bounds::kNvlinkGBs.max));
  in.optional_int("nvlink_links", 0, 1 << 16);
  g.pcie_bandwidth = from_GB_s(in.double_or("pcie_bandwidth_GB_s", 32.0, bounds::kHostLinkGBs));
  g.tdp_watts = in.double_or("tdp_W", 700.0, bounds::kBoardPowerW);
  if (const json* attention = in.raw("attention_peak_fraction")) {
    FieldReader a(*attention, in.field("attention_peak_fraction"));
    g.attention_forward_fraction = a.double_or("forward", 0.0, bounds::kAttentionPeakFraction);
    g.attention_backward_fraction = a.double_or("backward", 0.0, bounds::kAttentionPeakFraction);
    if (const json* d64 = a.raw("head_dim_64")) {
      FieldReader r(*d64, a.field("head_dim_64"));
      g.attention_head_dim_64_forward = r.double_or("forward", 0.0, bounds::kHeadDim64Ratio);
      g.attention_head_dim_64_backward = r.double_or("backward", 0.0, bounds::kHeadDim64Ratio);
      r.reject_unknown();
    }
    a.reject_unknown();
  }
  if (const json* block = in.raw("fp8_block_scaling_gemm_fraction")) {
    FieldReader b(*block, in.field("fp8_block_scaling_gemm_fraction"));
    g.fp8_blockwise_gemm_fraction = b.double_or("blockwise", 0.0, true);
    g.mxfp8_gemm_fraction = b.double_or("mxfp8", 0.0, true);
    b.reject_unknown();
    for (const auto& [key, fraction] : {std::pair{"blockwise", g.fp8_blockwise_gemm_fraction},
                                        std::pair{"mxfp8", g.mxfp8_gemm_fraction}}) {
      if (fraction > 1.0) {
        throw Error::invalid(b.field(key), fmt::format("{}", fraction),
                             "must be at most 1 (block scales cost GEMM time, they do not save it)");
      }
      // An absent key is 0 (the GPU cannot run the recipe); a given one far below the measured 0.81 (Hopper) and
      // 0.95 (Blackwell) is a typo, and would stretch every FP8 GEMM beyond the event clock's range.
      if (b.raw(key) && fraction < kMinFp8BlockScalingFraction) {
        throw Error::invalid(b.field(key), fmt::format("{}", fraction),
                             fmt::format("must be at least {} of the per-tensor FP8 rate", kMinFp8BlockScalingFraction));
      }
    }
    if (g.peak_fp8 <= 0) {
      throw Error::invalid(in.field("fp8_block_scaling_gemm_fraction"), "given",
                           "needs an fp8 peak (peak_tflops.fp8)");
    }
  }
  if (const json* clock = in.raw("sustained_gemm_clock"); clock && !clock->is_null()) {
    FieldReader c(*clock, in.field("sustained_gemm_clock"));
    c.allow("source");
    g.sustained_clock_MHz = c.require_double("MHz", bounds::kClockMHz);
    g.sustained_clock_power_W = c.require_double("power_W", bounds::kBoardPowerW);
    g.idle_power_W = c.double_or("idle_W", 0.0, bounds::kIdlePowerW);
    g.peak_clock_MHz = c.require_double("peak_clock_MHz", bounds::kClockMHz);
    g.max_clock_MHz = c.require_double("max_clock_MHz", bounds::kClockMHz);
    c.reject_unknown();
    require(g.sustained_clock_MHz > 0 && g.sustained_clock_MHz <= g.max_clock_MHz, c.field("MHz"),
            fmt::format("{}", g.sustained_clock_MHz), fmt::format("must lie in (0, max_clock_MHz ({})]", g.max_clock_MHz));
    require(g.peak_clock_MHz > 0 && g.peak_clock_MHz <= g.max_clock_MHz, c.field("peak_clock_MHz"),
            fmt::format("{}", g.peak_clock_MHz), fmt::format("must lie in (0, max_clock_MHz ({})]", g.max_clock_MHz));
    require(g.idle_power_W < g.sustained_clock_power_W, c.field("idle_W"), fmt::format("{}", g.idle_power_W),
            fmt::format("must be below power_W ({})", g.sustained_clock_power_W));
    // nvidia-smi's minimum power limit on an H100 SXM is 200 W of 700 W: a board cannot be capped much lower.
    require(g.tdp_watts > g.idle_power_W && g.tdp_watts >= 0.25 * g.sustained_clock_power_W, in.field("tdp_W"),
            fmt::format("{}", g.tdp_watts),
            fmt::format("must exceed the idle power ({} W) and be at least a quarter of the measured limit ({} W), as "
                        "boards allow (nvidia-smi's minimum power limit on an H100 SXM is 200 W of 700 W)",
                        g.idle_power_W, g.sustained_clock_power_W));
  }
  if (const json* power = in.raw("board_power"); power && !power->is_null()) {
    FieldReader b(*power, in.field("board_power"));
    b.allow("source");
    g.power_idle_W = b.require_double("idle_W", bounds::kIdlePowerW);
    require(g.power_idle_W > 0 && g.power_idle_W < g.tdp_watts, b.field("idle_W"), fmt::format("{}", g.power_idle_W),
            fmt::format("must lie in (0, tdp_W ({}))", g.tdp_watts));
    const auto fraction = [&](const char* key) {
      const double f = b.require_double(key, true);
      require(f <= 1.0, b.field(key), fmt::format("{}", f), "must lie in (0, 1]: a fraction of the headroom to tdp_W");
      return f;
    };
    g.power_tensor_fraction = fraction("tensor_fraction");
    g.power_memory_fraction = fraction("memory_fraction");
    g.power_communication_fraction = fraction("communication_fraction");
    b.reject_unknown();
  }
  in.reject_unknown();
  return g;
}

namespace {

std::shared_ptr<const GpuProfile> cluster_profile(const std::string& value, const std::string& field,
                                                  const std::filesystem::path& base_dir) {
  if (auto builtin = builtin_gpu_profile(value)) return builtin;
  std::filesystem::path file(value);
  if (file.is_relative() && !base_dir.empty()) file = base_dir / file;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    const std::vector<std::string> names = builtin_gpu_profile_names();
    throw Error::invalid(field, value,
                         fmt::format("must name a built-in GPU profile ({}) or a profile file (orrery calibrate fit); "
                                     "no file {}",
                                     names.empty() ? "none in this build" : fmt::format("{}", fmt::join(names, ", ")),
                                     file.string()));
  }
  auto p = std::make_shared<GpuProfile>(parse_gpu_profile(read_json_file(file, field), file.string()));
  p->file = file.string();
  return p;
}

}  // namespace

const char* to_string(NicTransport transport) {
  for (const auto& [name, t] : kNicTransportNames) {
    if (t == transport) return name;
  }
  return "?";
}

namespace {

// The largest number of pools one cluster may list: far more than any published mixed cluster (HETHUB's has 3 kinds
// of accelerator, HexiScale's 4 GPU types), small enough that per-pool tables stay small.
constexpr std::size_t kMaxPools = 64;

NicTransport parse_nic_transport(FieldReader& in) {
  const std::optional<std::string> text = in.optional_string("nic_type");
  if (!text) return NicTransport::kInfiniband;
  std::string known;
  for (const auto& [name, t] : kNicTransportNames) {
    if (*text == name) return t;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw Error::invalid(in.field("nic_type"), fmt::format("\"{}\"", *text), "must be one of: " + known);
}

// A mixed cluster: {"name", "display_name", "num_gpus", "source", "notes", "pools": [pool, ...]}, each pool a
// cluster value (a preset with overrides, or a full description) with its own "name" and "num_gpus".
ClusterSpec parse_pooled_cluster(const json& value, const std::string& path, const std::filesystem::path& base_dir) {
  FieldReader in(value, path);
  in.allow("source");
  in.allow("notes");
  for (const char* key : {"preset", "gpu"}) {
    if (in.has(key)) {
      throw Error::invalid(in.field(key), describe_json(value.at(key)),
                           "is not allowed beside cluster.pools: each pool names its own preset or GPU");
    }
  }
  const json& list = *in.raw("pools");
  const std::string field = in.field("pools");
  if (!list.is_array() || list.empty() || list.size() > kMaxPools) {
    throw Error::invalid(field, describe_json(list), fmt::format("must be a list of 1 to {} pools", kMaxPools));
  }
  std::vector<ClusterSpec> pools;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", field, i);
    const json& item = list[i];
    if (!item.is_object()) throw Error::invalid(at, describe_json(item), "must be a cluster object with a name and num_gpus");
    if (item.contains("pools")) throw Error::invalid(join_path(at, "pools"), "given", "a pool cannot hold pools");
    for (const char* key : {"name", "num_gpus"}) {
      if (!item.contains(key)) {
        throw Error::invalid(join_path(at, key), "missing", "is required for each pool (its name and its GPUs)");
      }
    }
    ClusterSpec pool = parse_cluster(item, at, base_dir);
    for (const ClusterSpec& other : pools) {
      if (other.name == pool.name) {
        throw Error::invalid(join_path(at, "name"), fmt::format("\"{}\"", pool.name), "must be unique among the pools");
      }
    }
    total += pool.num_gpus;
    pools.push_back(std::move(pool));
  }
  require(total <= limits::kGpus, field, std::to_string(total),
          fmt::format("holds more GPUs than one job may use ({})", limits::kGpus));
  ClusterSpec c = pools.front();
  c.name = in.optional_string("name").value_or("mixed-cluster");
  std::string display;
  for (const ClusterSpec& p : pools) display += fmt::format("{}{} x {}", display.empty() ? "" : " + ", p.num_gpus, p.gpu.display_name);
  c.display_name = in.optional_string("display_name").value_or(display);
  c.num_gpus = static_cast<int>(in.int_or("num_gpus", 0, 1, total));
  c.pools = std::move(pools);
  in.reject_unknown();
  return c;
}

}  // namespace

ClusterSpec parse_cluster(const json& value, const std::string& path, const std::filesystem::path& base_dir) {
  if (value.is_object() && value.contains("pools")) return parse_pooled_cluster(value, path, base_dir);
  json resolved = resolve(value, "clusters", path);
  FieldReader in(resolved, path);
  in.allow("source");
  in.allow("notes");
  ClusterSpec c;
  c.name = in.optional_string("name").value_or("custom-cluster");
  c.display_name = in.optional_string("display_name").value_or(c.name);
  const json* gpu = in.raw("gpu");
  if (!gpu) throw Error::invalid(in.field("gpu"), "missing", "is required (a GPU preset name or object)");
  c.gpu = parse_gpu(*gpu, in.field("gpu"));
  c.num_gpus = static_cast<int>(in.int_or("num_gpus", 0, 1, limits::kGpus));
  c.gpus_per_node = static_cast<int>(in.require_int("gpus_per_node", 1, limits::kGpusPerNode));
  c.nvlink_domain_size = static_cast<int>(in.int_or("nvlink_domain_size", c.gpus_per_node, 1, limits::kGpus));
  c.nvls = in.bool_or("nvls", false);
  c.nics_per_node = static_cast<int>(in.require_int("nics_per_node", 1, limits::kGpusPerNode));
  c.nic_bandwidth = from_Gbit_s(in.require_double("nic_bandwidth_Gbit_s", bounds::kNicGbits));
  c.nvlink_latency = from_us(in.double_or("nvlink_latency_us", 0.6, bounds::kLatencyUs));
  c.nic_latency = from_us(in.double_or("nic_latency_us", 5.0, bounds::kLatencyUs));
  if (auto v = in.optional_double("host_memory_bandwidth_GB_s", bounds::kHostMemoryGBs)) {
    c.host_memory_bandwidth = from_GB_s(*v);
  }
  if (auto v = in.optional_string("profile")) c.profile = cluster_profile(*v, in.field("profile"), base_dir);
  if (auto v = in.optional_int("segment_nodes", 0, limits::kGpus)) c.segment_nodes = static_cast<int>(*v);
  c.nic_transport = parse_nic_transport(in);
  if (const json* tiers = in.raw("network")) {
    if (!tiers->is_array()) throw Error::invalid(in.field("network"), describe_json(*tiers), "must be a list of tiers");
    for (std::size_t i = 0; i < tiers->size(); ++i) {
      FieldReader t((*tiers)[i], fmt::format("{}[{}]", in.field("network"), i));
      NetworkTier tier;
      tier.name = t.require_string("tier");
      tier.nodes = static_cast<int>(t.int_or("nodes", 0, 0, limits::kGpus));
      tier.latency = from_us(t.double_or("latency_us", 1.0, bounds::kLatencyUs));
      tier.oversubscription = t.double_or("oversubscription", 1.0, bounds::kOversubscription);
      t.reject_unknown();
      c.network.push_back(tier);
    }
  }
  in.reject_unknown();
  if (c.gpu.nvlink_bandwidth <= 0) {
    // Without NVLink a node's GPUs share its PCIe fabric and nothing reaches beyond the node.
    require(c.nvlink_domain_size == c.gpus_per_node, in.field("nvlink_domain_size"), std::to_string(c.nvlink_domain_size),
            fmt::format("must equal gpus_per_node ({}) for a GPU without NVLink (nvlink_bandwidth_GB_s 0)", c.gpus_per_node));
    require(!c.nvls, in.field("nvls"), "true", "needs NVLink switches (the GPU's nvlink_bandwidth_GB_s is 0)");
  }
  require(c.nvlink_domain_size >= c.gpus_per_node && c.nvlink_domain_size % c.gpus_per_node == 0,
          in.field("nvlink_domain_size"), std::to_string(c.nvlink_domain_size),
          fmt::format("must be a multiple of gpus_per_node ({})", c.gpus_per_node));
  for (std::size_t i = 1; i < c.network.size(); ++i) {
    const auto& inner = c.network[i - 1];
    const auto& outer = c.network[i];
    require(outer.nodes == 0 || (inner.nodes > 0 && outer.nodes >= inner.nodes), in.field("network"),
            outer.name, "tiers must be listed innermost first, each reaching at least as many nodes as the one before");
  }
  return c;
}

std::vector<PresetSummary> gpu_presets() {
  std::vector<PresetSummary> out;
  for (const json& p : hardware_presets("gpus")) out.push_back({p.at("name"), p.value("display_name", "")});
  return out;
}

std::vector<PresetSummary> cluster_presets() {
  std::vector<PresetSummary> out;
  for (const json& p : hardware_presets("clusters")) out.push_back({p.at("name"), p.value("display_name", "")});
  return out;
}

}  // namespace orrery
