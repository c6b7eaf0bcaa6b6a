#include "sim/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "hardware/topology.h"
#include "models/error.h"
#include "sim/link_sharing.h"
#include "sim/xoshiro256.h"
#include "sim/rank_layout.h"

namespace orrery {

namespace {

// Nodes per block of the outermost network tier that has a node count (0: none has).
int outermost_block(const ClusterSpec& c, std::string* name = nullptr) {
  for (auto it = c.network.rbegin(); it != c.network.rend(); ++it) {
    if (it->nodes > 0) {
      if (name) *name = it->name;
      return it->nodes;
    }
  }
  return 0;
}

std::vector<int> explicit_rank_gpus(const ClusterSpec& c, const std::vector<int>& map, int fabric) {
  const int gpn = c.gpus_per_node;
  const int job = c.num_nodes();
  const bool per_node = static_cast<int>(map.size()) == job;
  require(per_node || static_cast<int>(map.size()) == c.num_gpus, "placement.rank_to_node",
          fmt::format("a list of {}", map.size()),
          fmt::format("must hold one fabric node per job node ({}) or one per rank ({})", job, c.num_gpus));
  std::vector<int> used(static_cast<std::size_t>(fabric), 0);
  std::vector<int> out(static_cast<std::size_t>(c.num_gpus));
  for (std::size_t i = 0; i < map.size(); ++i) {
    const int node = map[i];
    const std::string field = fmt::format("placement.rank_to_node[{}]", i);
    require(node < fabric, field, std::to_string(node),
            fmt::format("must be a fabric node below {} (placement.fabric_nodes; default: the job's nodes)", fabric));
    int& n = used[static_cast<std::size_t>(node)];
    if (per_node) {
      require(n == 0, field, std::to_string(node),
              fmt::format("names a fabric node already given: each job node takes a whole node of {} GPUs", gpn));
      n = gpn;
      for (int g = 0; g < gpn && static_cast<int>(i) * gpn + g < c.num_gpus; ++g) {
        out[i * static_cast<std::size_t>(gpn) + static_cast<std::size_t>(g)] = node * gpn + g;
      }
    } else {
      require(n < gpn, field, std::to_string(node),
              fmt::format("fills fabric node {} beyond its {} GPUs (gpus_per_node)", node, gpn));
      out[i] = node * gpn + n++;
    }
  }
  return out;
}

}  // namespace

std::vector<int> random_node_order(int job_nodes, int fabric_nodes, std::uint64_t seed) {
  std::vector<int> nodes(static_cast<std::size_t>(fabric_nodes));
  std::iota(nodes.begin(), nodes.end(), 0);
  std::uint64_t state = seed;
  // Fisher-Yates, the first job_nodes positions only: a uniform ordered sample (Knuth, TAOCP vol. 2, 3.4.2 P).
  for (int i = 0; i < job_nodes; ++i) {
    const std::uint64_t left = static_cast<std::uint64_t>(fabric_nodes - i);
    const int j = i + static_cast<int>(splitmix64(state) % left);
    std::swap(nodes[static_cast<std::size_t>(i)], nodes[static_cast<std::size_t>(j)]);
  }
  nodes.resize(static_cast<std::size_t>(job_nodes));
  return nodes;
}

std::vector<int> optimize_node_order(const ClusterSpec& c, const ParallelPlan& plan, int fabric, double w_dp,
                                     double w_pp) {
  const int job = c.num_nodes();
  std::vector<int> order(static_cast<std::size_t>(job));
  std::iota(order.begin(), order.end(), 0);
  const int block = outermost_block(c);
  const int gpn = c.gpus_per_node, q = plan.tp * plan.cp;
  if (block <= 0 || job <= block || c.num_gpus % gpn != 0) return order;
  // The grid: rows are pipeline stages, columns the DP blocks of a stage; a cell is m whole nodes.
  int m = 0, cols = 0;
  if (q % gpn == 0) {
    m = q / gpn;
    cols = plan.dp;
  } else if (gpn % q == 0 && plan.dp % (gpn / q) == 0) {
    m = 1;
    cols = plan.dp / (gpn / q);
  } else {
    return order;
  }
  const int rows = plan.pp;
  const int blocks = fabric / block;
  auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  int best_a = 0, best_b = 0, best_tiles = 0;
  double best_cost = 0;
  for (int b = 1; b <= rows; ++b) {
    for (int a = 1; a <= cols && a * b * m <= block; ++a) {
      const int tiles = ceil_div(cols, a) * ceil_div(rows, b);
      if (tiles > blocks) continue;
      const double cost = w_dp * ceil_div(cols, a) + w_pp * ceil_div(rows, b);
      const bool better = best_a == 0 || cost < best_cost ||
                          (cost == best_cost && (tiles < best_tiles || (tiles == best_tiles && a > best_a)));
      if (better) best_a = a, best_b = b, best_tiles = tiles, best_cost = cost;
    }
  }
  if (best_a == 0) return order;
  const int across = ceil_div(cols, best_a);
  for (int j = 0; j < job; ++j) {
    const int cell = j / m, k = j % m;
    const int d = cell % cols, s = cell / cols;
    const int tile = (s / best_b) * across + d / best_a;
    const int local = ((s % best_b) * best_a + d % best_a) * m + k;
    order[static_cast<std::size_t>(j)] = tile * block + local;
  }
  return order;
}

void resolve_rank_placement(Scenario& s) {
  ClusterSpec& c = s.cluster;
  c.rank_gpu.clear();
  c.shared_links = false;
  if (!s.placement) return;
  const PlacementSpec& p = *s.placement;
  c.shared_links = true;
  const int job = c.num_nodes();
  const int fabric = p.fabric_nodes > 0 ? p.fabric_nodes : job;
  require(fabric >= job, "placement.fabric_nodes", std::to_string(p.fabric_nodes),
          fmt::format("must be at least the job's nodes ({} of {} GPUs)", job, c.gpus_per_node));
  std::vector<int> nodes;
  switch (p.policy) {
    case PlacementPolicy::kSequential: return;
    case PlacementPolicy::kRandom: nodes = random_node_order(job, fabric, p.seed); break;
    case PlacementPolicy::kOptimized:
      nodes = optimize_node_order(c, s.parallel, fabric, p.dp_weight, p.pp_weight);
      break;
    case PlacementPolicy::kExplicit: c.rank_gpu = explicit_rank_gpus(c, p.rank_to_node, fabric); return;
  }
  c.rank_gpu.resize(static_cast<std::size_t>(c.num_gpus));
  for (int r = 0; r < c.num_gpus; ++r) {
    c.rank_gpu[static_cast<std::size_t>(r)] = nodes[static_cast<std::size_t>(r / c.gpus_per_node)] * c.gpus_per_node +
                                              r % c.gpus_per_node;
  }
}

namespace {

// The outermost tier a set of fabric nodes (lowest and highest) crosses, and the domain test.
std::string tier_crossed(const ClusterSpec& c, int first_gpu, int last_gpu) {
  if (first_gpu / c.gpus_per_node == last_gpu / c.gpus_per_node) return "node";
  if (first_gpu / c.nvlink_domain_size == last_gpu / c.nvlink_domain_size) return "nvlink";
  const int a = first_gpu / c.gpus_per_node, b = last_gpu / c.gpus_per_node;
  for (const NetworkTier& t : c.network) {
    if (t.nodes == 0 || a / t.nodes == b / t.nodes) return t.name;
  }
  return c.network.empty() ? "network" : c.network.back().name;
}

// Rank of a tier name in crossing order, for keeping the outermost.
int tier_rank(const ClusterSpec& c, const std::string& name) {
  if (name == "node") return 0;
  if (name == "nvlink") return 1;
  for (std::size_t i = 0; i < c.network.size(); ++i) {
    if (c.network[i].name == name) return 2 + static_cast<int>(i);
  }
  return 2 + static_cast<int>(c.network.size());
}

void add_group(const ClusterSpec& c, int block, const std::vector<int>& members, KindSpread& k) {
  if (members.size() < 2) return;
  ++k.groups;
  std::vector<int> gpus;
  for (int r : members) gpus.push_back(physical_gpu(c, r));
  std::sort(gpus.begin(), gpus.end());
  std::set<int> nodes, blocks;
  for (int g : gpus) {
    nodes.insert(g / c.gpus_per_node);
    blocks.insert(block > 0 ? g / c.gpus_per_node / block : 0);
  }
  k.nodes = std::max(k.nodes, static_cast<int>(nodes.size()));
  k.blocks = std::max(k.blocks, static_cast<int>(blocks.size()));
  const std::string t = tier_crossed(c, gpus.front(), gpus.back());
  if (tier_rank(c, t) > tier_rank(c, k.tier)) k.tier = t;
}

KindSpread spread_of(const Scenario& s, const RankLayout& ranks, const char* name, GroupKind kind, int block) {
  const ClusterSpec& c = s.cluster;
  KindSpread k{name, 0, 1, 1, "node", 1.0};
  const bool pipeline = kind == GroupKind::kPpForwardSend;
  UplinkLoad load;
  if (c.shared_links) load = uplink_load(c, ranks, kind);
  const int per_stage = ranks.num_ranks() / ranks.pp();
  for (int r = 0; r < ranks.num_ranks(); ++r) {
    if (pipeline) {
      if (r < per_stage && ranks.pp() > 1) {  // the whole pipeline through rank r of the first stage
        std::vector<int> members;
        for (int st = 0; st < ranks.pp(); ++st) members.push_back(r + st * per_stage);
        add_group(c, block, members, k);
      }
      if (c.shared_links && ranks.pp() > 1 && r / per_stage + 1 < ranks.pp()) {
        k.link_factor = std::max(k.link_factor, group_share_factor(c, load, ranks.group_members(kind, r), true));
      }
      continue;
    }
    if (ranks.group_leader(kind, r) != r) continue;
    const std::vector<int> members = ranks.group_members(kind, r);
    add_group(c, block, members, k);
    if (c.shared_links && members.size() > 1) {
      k.link_factor = std::max(k.link_factor, group_share_factor(c, load, members, false));
    }
  }
  return k;
}

}  // namespace

PlacementSummary summarize_placement(const Scenario& s) {
  const ClusterSpec& c = s.cluster;
  PlacementSummary out;
  out.policy = s.placement ? to_string(s.placement->policy) : "sequential";
  out.job_nodes = c.num_nodes();
  out.fabric_nodes = s.placement && s.placement->fabric_nodes > 0 ? s.placement->fabric_nodes : out.job_nodes;
  out.block_nodes = outermost_block(c, &out.block_tier);
  if (out.block_tier.empty()) out.block_tier = c.network.empty() ? "network" : c.network.back().name;
  const RankLayout ranks(s.parallel);
  const std::pair<const char*, GroupKind> kinds[] = {{"dp", GroupKind::kDp},
                                                     {"pp", GroupKind::kPpForwardSend},
                                                     {"tp", GroupKind::kTp},
                                                     {"cp", GroupKind::kCp},
                                                     {"ep", GroupKind::kEp}};
  for (const auto& [name, kind] : kinds) out.kinds.push_back(spread_of(s, ranks, name, kind, out.block_nodes));
  return out;
}

}  // namespace orrery
