#include "sim/lower/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <functional>

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

// C(n, r) as a double.
double choose(int n, int r) {
  if (r < 0 || r > n) return 0.0;
  double c = 1.0;
  for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
  return c;
}

// Experts of the contiguous run [a0, a1) that also lie in [b0, b1).
std::int64_t overlap(std::int64_t a0, std::int64_t a1, std::int64_t b0, std::int64_t b1) {
  return std::max<std::int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

// Expected slices reached, averaged over every equally likely set of chosen groups (enumerated).
double enumerate_groups(std::int64_t experts, int k, int parts, int groups, int chosen) {
  const std::int64_t per_group = experts / groups, per_part = experts / parts;
  double total = 0;
  long sets = 0;
  std::vector<int> pick;
  std::function<void(int)> visit = [&](int from) {
    if (static_cast<int>(pick.size()) == chosen) {
      for (int s = 0; s < parts; ++s) {
        std::int64_t m = 0;  // the slice's experts inside the chosen groups
        for (int g : pick) m += overlap(s * per_part, (s + 1) * per_part, g * per_group, (g + 1) * per_group);
        total += 1.0 - miss_all(per_group * chosen, m, k);
      }
      ++sets;
      return;
    }
    for (int g = from; g < groups; ++g) {
      pick.push_back(g);
      visit(g + 1);
      pick.pop_back();
    }
  };
  visit(0);
  return total / static_cast<double>(sets);
}

}  // namespace

double expected_parts_reached(const MoeSpec& moe, int parts) {
  const std::int64_t experts = moe.num_experts;
  const int k = moe.experts_per_token;
  const bool grouped = moe.num_groups > 1 && moe.groups_per_token < moe.num_groups;
  if (!grouped) return parts * (1.0 - miss_all(experts, experts / parts, k));
  const int groups = moe.num_groups, chosen = moe.groups_per_token;
  const std::int64_t per_group = experts / groups;
  const std::int64_t candidates = per_group * chosen;  // experts a token picks from
  if (groups % parts == 0) {
    // Each slice holds g whole groups; j of them are among the token's chosen groups (hypergeometric).
    const int g = groups / parts;
    double reached = 0;
    for (int j = 1; j <= std::min(g, chosen); ++j) {
      const double p_j = choose(g, j) * choose(groups - g, chosen - j) / choose(groups, chosen);
      reached += p_j * (1.0 - miss_all(candidates, j * per_group, k));
    }
    return parts * reached;
  }
  if (parts % groups == 0) {
    // Each group spans whole slices: the slice's group must be chosen, then one of its experts picked.
    return parts * static_cast<double>(chosen) / groups * (1.0 - miss_all(candidates, experts / parts, k));
  }
  // Slices and groups cut across each other: enumerate the chosen groups (C(groups, chosen) sets, few for real
  // routers: DeepSeek-V2 has C(8, 3) = 56).
  if (choose(groups, chosen) <= 1e5) return enumerate_groups(experts, k, parts, groups, chosen);
  return parts * (1.0 - miss_all(experts, experts / parts, k));  // group limits ignored: an upper estimate
}

FlexDispatchBytes flex_dispatch_bytes(const MoeSpec& moe, const GroupPlacement& ep, std::int64_t tokens,
                                      std::int64_t token_bytes, double load) {
  FlexDispatchBytes out;
  if (ep.size <= 1) return out;
  const int per_domain = std::max(1, ep.ranks_per_domain);
  const int domains = std::max(1, ep.domains);
  const double payload = static_cast<double>(tokens) * static_cast<double>(token_bytes);
  // The busiest rank receives `load` times the average, but each token at most once per sender, so at most the
  // whole group's tokens: the scaled fan-out is capped at the group (and domain) count.
  const double ranks = std::min(expected_parts_reached(moe, ep.size) * load, static_cast<double>(ep.size));
  out.nvlink = static_cast<std::int64_t>(std::llround(payload * ranks * (1.0 - 1.0 / per_domain)));
  if (domains > 1) {
    const double reached = std::min(expected_parts_reached(moe, domains) * load, static_cast<double>(domains));
    out.network = static_cast<std::int64_t>(std::llround(payload * reached * (domains - 1.0) / domains));
  }
  return out;
}

}  // namespace orrery
