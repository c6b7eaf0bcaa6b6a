#include "sim/plan/facility.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/json_fields.h"
#include "hardware/hardware_presets.h"

namespace orrery {

double host_power_W_per_node(const FacilitySpec& f, const ClusterSpec& cluster) {
  return f.host_power_W_per_node.value_or(kHostFractionOfGpuLimit * cluster.gpus_per_node * cluster.gpu.tdp_watts);
}

double network_power_W_per_node(const FacilitySpec& f, const ClusterSpec& cluster) {
  return f.network_power_W_per_node.value_or(kNetworkWattsPerNic * cluster.nics_per_node);
}

namespace {

// A node draws at most a few tens of kilowatts (a GB200 NVL72 rack about 130 kW for 18 trays); 100 kW per node
// catches a value given in the wrong unit.
constexpr double kMaxNodeWatts = 100'000.0;

std::optional<double> read_watts(FieldReader& in, const char* key) {
  const std::optional<double> w = in.optional_double(key);
  if (w) {
    require(*w >= 0 && *w <= kMaxNodeWatts, in.field(key), fmt::format("{}", *w),
            fmt::format("must lie in [0, {}] W per node", kMaxNodeWatts));
  }
  return w;
}

}  // namespace

FacilitySpec parse_energy_section(const nlohmann::json& value, const std::string& path) {
  FieldReader in(value, path);
  in.allow("source");
  FacilitySpec f;
  f.pue = in.double_or("pue", kDefaultPue);
  require(f.pue >= 1.0 && f.pue <= 3.0, in.field("pue"), fmt::format("{}", f.pue),
          "must lie in [1, 3] (facility power over IT power; 1 is no overhead)");
  f.host_power_W_per_node = read_watts(in, "host_power_W_per_node");
  f.network_power_W_per_node = read_watts(in, "network_power_W_per_node");
  in.reject_unknown();
  return f;
}

Prices PriceSpec::for_gpu(const std::string& gpu) const {
  if (by_gpu.empty()) return prices;
  const auto it = by_gpu.find(gpu);
  return it == by_gpu.end() ? Prices{} : it->second;
}

namespace {

// The three prices of one object; `r` keeps its other keys for the caller.
Prices read_prices(FieldReader& r) {
  const auto price = [&](const char* key) {
    const std::optional<double> v = r.optional_double(key);
    if (v) require(*v > 0 && *v <= 1000, r.field(key), fmt::format("{}", *v), "must lie in (0, 1000] USD per GPU-hour");
    return v;
  };
  Prices p;
  p.on_demand = price("on_demand");
  p.reserved = price("reserved");
  p.spot = price("spot");
  return p;
}

}  // namespace

PriceSpec parse_cost_section(const nlohmann::json& value, const std::string& path) {
  FieldReader in(value, path);
  in.allow("source");
  PriceSpec p;
  if (const nlohmann::json* prices = in.raw("price_per_gpu_hour_usd")) {
    FieldReader r(*prices, in.field("price_per_gpu_hour_usd"));
    r.allow("source");
    p.prices = read_prices(r);
    if (const nlohmann::json* by_gpu = r.raw("by_gpu")) {
      require(by_gpu->is_object(), r.field("by_gpu"), by_gpu->dump(), "must be an object of GPU preset name -> prices");
      require(!p.prices.any(), r.field("by_gpu"), "given beside on_demand, reserved or spot",
              "give the prices either for every GPU or by GPU, not both");
      for (const auto& [gpu, entry] : by_gpu->items()) {
        hardware_preset("gpus", gpu, r.field("by_gpu") + "." + gpu);  // a GPU preset name, or the known names
        FieldReader g(entry, r.field("by_gpu") + "." + gpu);
        g.allow("source");
        p.by_gpu[gpu] = read_prices(g);
        g.reject_unknown();
      }
    }
    r.reject_unknown();
  }
  in.reject_unknown();
  return p;
}

}  // namespace orrery
