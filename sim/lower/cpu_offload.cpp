#include "sim/lower/cpu_offload.h"

#include <algorithm>


namespace orrery {

namespace {

bool decoder(const LoweringContext& ctx, const ParamUnit& u) { return unit_kind(u, ctx.model) == UnitKind::kDecoderLayer; }

}  // namespace

bool offloaded(const LoweringContext& ctx, const std::vector<ParamUnit>& units, std::size_t i) {
  const int n = ctx.training.cpu_offloading_num_layers;
  if (n == 0 || !decoder(ctx, units[i])) return false;
  int before = 0;
  for (std::size_t j = 0; j < i; ++j) before += decoder(ctx, units[j]) ? 1 : 0;
  return before < n;
}

std::vector<int> offload_windows(const LoweringContext& ctx, const std::vector<ParamUnit>& units) {
  const int layers =
      static_cast<int>(std::count_if(units.begin(), units.end(), [&](const ParamUnit& u) { return decoder(ctx, u); }));
  const int k = std::min(ctx.training.cpu_offloading_num_layers, layers);
  std::vector<int> windows;
  for (int j = 0; j < k; ++j) windows.push_back((layers / k) * (j + 1) - 1 + std::min(j + 1, layers % k));
  return windows;
}

}  // namespace orrery
