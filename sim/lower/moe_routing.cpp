#include "sim/lower/moe_routing.h"

#include <algorithm>
#include <cmath>

namespace orrery {

namespace {

// The chance that none of k picks (uniform, without replacement) from `candidates` experts lands among `m` given
// ones: C(candidates - m, k) / C(candidates, k).
double miss_all(std::int64_t candidates, std::int64_t m, int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) {
    const double left = static_cast<double>(candidates - m - i);
    if (left <= 0) return 0.0;
    p *= left / static_cast<double>(candidates - i);
  }
  return p;
}

// C(n, r) as a double (small n: routing groups).
double choose(int n, int r) {
  if (r < 0 || r > n) return 0.0;
  double c = 1.0;
  for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
  return c;
}

}  // namespace

double expected_parts_reached(const MoeSpec& moe, int parts) {
  const std::int64_t experts = moe.num_experts;
  const int k = moe.experts_per_token;
  const bool grouped = moe.num_groups > 1 && moe.groups_per_token < moe.num_groups;
  const int groups = grouped ? moe.num_groups : 1;
  const int chosen = grouped ? moe.groups_per_token : 1;
  const std::int64_t per_group = experts / groups;
  const std::int64_t candidates = per_group * chosen;  // experts a token picks from
  double reached = 0;                                  // probability one slice is reached
  if (groups % parts == 0) {
    // Each slice holds g whole groups; j of them are among the token's chosen groups (hypergeometric).
    const int g = groups / parts;
    for (int j = 1; j <= std::min(g, chosen); ++j) {
      const double p_j = choose(g, j) * choose(groups - g, chosen - j) / choose(groups, chosen);
      reached += p_j * (1.0 - miss_all(candidates, j * per_group, k));
    }
  } else if (parts % groups == 0) {
    // Each group spans whole slices: the slice's group must be chosen, then one of its experts picked.
    reached = static_cast<double>(chosen) / groups * (1.0 - miss_all(candidates, experts / parts, k));
  } else {
    reached = 1.0 - miss_all(experts, experts / parts, k);
  }
  return parts * reached;
}

FlexDispatchBytes flex_dispatch_bytes(const MoeSpec& moe, const GroupPlacement& ep, std::int64_t tokens,
                                      std::int64_t token_bytes) {
  FlexDispatchBytes out;
  if (ep.size <= 1) return out;
  const int per_domain = std::max(1, ep.ranks_per_domain);
  const int domains = std::max(1, ep.size / per_domain);
  const double payload = static_cast<double>(tokens) * static_cast<double>(token_bytes);
  const double ranks = expected_parts_reached(moe, ep.size);
  out.nvlink = static_cast<std::int64_t>(std::llround(payload * ranks * (1.0 - 1.0 / per_domain)));
  if (domains > 1) {
    const double reached = expected_parts_reached(moe, domains);
    out.network = static_cast<std::int64_t>(std::llround(payload * reached * (domains - 1.0) / domains));
  }
  return out;
}

}  // namespace orrery
