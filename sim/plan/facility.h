#pragma once
// What a training job draws besides its GPUs, and what its GPU-hours cost (issue 23, `orrery plan`): the scenario
// sections `energy` and `cost`, read by parse_energy_section and parse_cost_section (scenarios/README.md).

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <string>

#include "hardware/cluster_spec.h"

namespace orrery {

/// Host share of a node's power besides its GPUs, as a fraction of the GPUs' board limits: the DGX H100's datasheet
/// maximum system power, 10.2 kW, less its 8 x 700 W GPUs, over those 5.6 kW (NVIDIA DGX H100 datasheet,
/// "System Power Usage ~10.2 kW max"): CPUs, memory, NVSwitches, NICs, fans, drives and power conversion at their
/// maximum, so an upper bound for a node of any GPU.
inline constexpr double kHostFractionOfGpuLimit = (10'200.0 - 8 * 700.0) / (8 * 700.0);  // 0.821
/// Network power per NIC: its optics along a two-tier fat tree: the NIC's 400 Gb/s OSFP transceiver (9 W, NVIDIA
/// MMS4X00-NS400 product specification) and half of a twin-port Class 8 switch transceiver (17 W, QM97XX user
/// manual, "Interfaces") at each of the leaf's down- and uplink and the spine's port. The switch silicon is not in
/// it (no datasheet figure at hand), so a lower bound.
inline constexpr double kNetworkWattsPerNic = 9.0 + 3 * 17.0 / 2;  // 34.5 W
/// Power usage effectiveness: facility power over IT power. Google's fleet, 1.10 (its last published figure,
/// second quarter of 2021, as CNBC reported it on 2022-04-13); the Uptime Institute's 2021 survey average of large
/// data centres is 1.57.
inline constexpr double kDefaultPue = 1.10;

/// The scenario's `energy` section: {"pue", "host_power_W_per_node", "network_power_W_per_node"}, each optional.
struct FacilitySpec {
  double pue = kDefaultPue;
  std::optional<double> host_power_W_per_node;     // default: kHostFractionOfGpuLimit x GPUs per node x tdp_W
  std::optional<double> network_power_W_per_node; // default: kNetworkWattsPerNic x NICs per node
};

/// Watts a node draws besides its GPUs, and its share of the network, for `cluster`.
double host_power_W_per_node(const FacilitySpec& f, const ClusterSpec& cluster);
double network_power_W_per_node(const FacilitySpec& f, const ClusterSpec& cluster);

/// USD per GPU-hour on demand, reserved and spot, each optional.
struct Prices {
  std::optional<double> on_demand, reserved, spot;
  bool any() const { return on_demand || reserved || spot; }
};

/// The scenario's `cost` section (no built-in default: cloud prices differ by provider and change monthly, so a
/// default would be stale; give the ones you pay): {"price_per_gpu_hour_usd": {"on_demand": 6.88, "reserved": 4.92,
/// "spot": 2.5, "by_gpu": {"b200": {"on_demand": 9.5}}}, "source": "..."}. Without `by_gpu` the prices apply to
/// every GPU; with it, a GPU preset it names gets its own, and any other GPU gets none (a sweep across GPU
/// generations must not price a B200 at an H100's rate).
struct PriceSpec {
  Prices prices;
  std::map<std::string, Prices> by_gpu;  // by GPU preset name (GpuSpec::name)
  /// The prices of GPU preset `gpu`.
  Prices for_gpu(const std::string& gpu) const;
};

/// Reads `energy`. Errors: Error::invalid naming the field for an unknown key, a PUE outside [1, 3], or a power
/// outside [0, 100 kW] per node.
FacilitySpec parse_energy_section(const nlohmann::json& value, const std::string& path);
/// Reads `cost`. Errors: Error::invalid naming the field for an unknown key or a price outside (0, 1000] USD.
PriceSpec parse_cost_section(const nlohmann::json& value, const std::string& path);

}  // namespace orrery
