#include "sim/lower/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

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

// Whether a token picks its experts from its best groups only (fewer chosen groups than groups).
bool group_limited(const MoeSpec& moe) { return moe.num_groups > 1 && moe.groups_per_token < moe.num_groups; }

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

// Megatron-Core's group-limited top-k on random normal logits (router.py group_limited_topk): the mean number of
// slices the picked experts fall on over kTokens routings from a fixed seed. Uniforms come from the 53 high bits
// of mt19937_64 and normals from Box-Muller, so the figure is the same on every platform.
double sampled_parts_reached(const MoeSpec& moe, int parts) {
  constexpr int kTokens = 4096;
  const int experts = moe.num_experts, k = moe.experts_per_token, groups = moe.num_groups;
  const int chosen = moe.groups_per_token, per_group = experts / groups, per_part = experts / parts;
  const int best = std::max(1, k / chosen);  // experts summed into a group's score
  std::mt19937_64 rng(20251130);
  const auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  std::vector<double> score(static_cast<std::size_t>(experts)), group_score(static_cast<std::size_t>(groups));
  std::vector<double> top(static_cast<std::size_t>(per_group));
  std::vector<int> group_order(static_cast<std::size_t>(groups)), candidates;
  std::vector<char> reached(static_cast<std::size_t>(parts));
  double total = 0;
  for (int t = 0; t < kTokens; ++t) {
    for (int e = 0; e < experts; e += 2) {
      const double r = std::sqrt(-2.0 * std::log(uniform())), a = 6.283185307179586 * uniform();
      const double z[2] = {r * std::cos(a), r * std::sin(a)};
      for (int i = 0; i < 2 && e + i < experts; ++i) {
        score[static_cast<std::size_t>(e + i)] = moe.router_correction_bias ? 1.0 / (1.0 + std::exp(-z[i])) : std::exp(z[i]);
      }
    }
    for (int g = 0; g < groups; ++g) {
      std::copy_n(score.begin() + g * per_group, per_group, top.begin());
      std::partial_sort(top.begin(), top.begin() + best, top.end(), std::greater<>());
      group_score[static_cast<std::size_t>(g)] = std::accumulate(top.begin(), top.begin() + best, 0.0);
    }
    std::iota(group_order.begin(), group_order.end(), 0);
    std::partial_sort(group_order.begin(), group_order.begin() + chosen, group_order.end(),
                      [&](int a, int b) { return group_score[static_cast<std::size_t>(a)] > group_score[static_cast<std::size_t>(b)]; });
    candidates.clear();
    for (int i = 0; i < chosen; ++i) {
      const int g = group_order[static_cast<std::size_t>(i)];
      for (int e = g * per_group; e < (g + 1) * per_group; ++e) candidates.push_back(e);
    }
    std::partial_sort(candidates.begin(), candidates.begin() + k, candidates.end(),
                      [&](int a, int b) { return score[static_cast<std::size_t>(a)] > score[static_cast<std::size_t>(b)]; });
    std::fill(reached.begin(), reached.end(), 0);
    for (int i = 0; i < k; ++i) reached[static_cast<std::size_t>(candidates[static_cast<std::size_t>(i)] / per_part)] = 1;
    total += static_cast<double>(std::count(reached.begin(), reached.end(), 1));
  }
  return total / kTokens;
}

}  // namespace

double expected_parts_reached(const MoeSpec& moe, int parts) {
  if (!group_limited(moe)) return uniform_parts_reached(moe, parts);
  // Sampling costs milliseconds; plans share few routings, so each (routing, slices) is drawn once per process.
  using Key = std::tuple<int, int, int, int, bool, int>;
  static std::mutex mutex;
  static std::map<Key, double> cache;
  const Key key{moe.num_experts, moe.experts_per_token, moe.num_groups, moe.groups_per_token, moe.router_correction_bias, parts};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const double value = sampled_parts_reached(moe, parts);
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, value).first->second;
}

double uniform_parts_reached(const MoeSpec& moe, int parts) {
  const std::int64_t experts = moe.num_experts;
  const int k = moe.experts_per_token;
  if (!group_limited(moe)) return parts * (1.0 - miss_all(experts, experts / parts, k));
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
  out.received = static_cast<std::int64_t>(std::llround(payload * ranks));
  out.nvlink = static_cast<std::int64_t>(std::llround(payload * ranks * (1.0 - 1.0 / per_domain)));
  if (domains > 1) {
    // The ranks on the domain holding the fewest members send the largest share across domains (an even split:
    // (domains - 1) / domains of the domains a token reaches), but never to more than the other domains.
    const double reached = std::min(expected_parts_reached(moe, domains) * load, static_cast<double>(domains));
    const double remote = 1.0 - static_cast<double>(std::max(1, ep.fewest_per_domain)) / ep.size;
    out.network = static_cast<std::int64_t>(std::llround(payload * std::min(reached * remote, domains - 1.0)));
  }
  return out;
}

}  // namespace orrery
