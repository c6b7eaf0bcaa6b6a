#include "hardware/gpu_power.h"

#include <algorithm>

namespace orrery {

double GpuPower::watts(GpuActivity a) const {
  const double sum = (a.tensor ? tensor_fraction : 0.0) + (a.memory ? memory_fraction : 0.0) +
                     (a.communication ? communication_fraction : 0.0);
  return idle_W + (limit_W - idle_W) * std::clamp(sum, 0.0, 1.0);
}

GpuPower gpu_power(const GpuSpec& gpu) {
  GpuPower p;
  p.limit_W = gpu.tdp_watts;
  p.idle_W = gpu.power_idle_W > 0 ? gpu.power_idle_W : kIdleFractionOfLimit * gpu.tdp_watts;
  if (gpu.power_tensor_fraction > 0) p.tensor_fraction = gpu.power_tensor_fraction;
  if (gpu.power_memory_fraction > 0) p.memory_fraction = gpu.power_memory_fraction;
  if (gpu.power_communication_fraction > 0) p.communication_fraction = gpu.power_communication_fraction;
  return p;
}

}  // namespace orrery
