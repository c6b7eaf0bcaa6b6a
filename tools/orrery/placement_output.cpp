#include "tools/orrery/placement_output.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace orrery::cli {

using nlohmann::json;

namespace {

json groups_json(const PlacementSummary& s) {
  json out = json::object();
  for (const KindSpread& k : s.kinds) {
    out[k.kind] = {{"groups", k.groups}, {"blocks", k.blocks}, {"nodes", k.nodes}, {"tier", k.tier},
                   {"link_factor", k.link_factor}};
  }
  return out;
}

const KindSpread& kind(const PlacementSummary& s, const char* name) {
  for (const KindSpread& k : s.kinds) {
    if (k.kind == name) return k;
  }
  return s.kinds.front();
}

}  // namespace

json placement_json(const PlacementSummary& s) {
  return {{"policy", s.policy},           {"job_nodes", s.job_nodes},     {"fabric_nodes", s.fabric_nodes},
          {"block_tier", s.block_tier},   {"block_nodes", s.block_nodes}, {"groups", groups_json(s)}};
}

json placement_compare_json(const std::vector<PlacementOutcome>& outcomes) {
  json out = json::array();
  for (const PlacementOutcome& o : outcomes) {
    out.push_back({{"policy", o.summary.policy},
                   {"iteration_time_s", o.iteration_time},
                   {"exposed_dp_comm_s", o.exposed_dp_comm},
                   {"exposed_pp_comm_s", o.exposed_pp_comm},
                   {"groups", groups_json(o.summary)}});
  }
  return out;
}

void print_placement(std::ostream& out, const PlacementSummary& s) {
  fmt::print(out, "  placement {} on {} of {} fabric nodes; spread = {} blocks of {} nodes (and nodes) the widest group spans\n",
             s.policy, s.job_nodes, s.fabric_nodes, s.block_tier, s.block_nodes);
  std::string line;
  for (const KindSpread& k : s.kinds) {
    if (k.groups == 0) continue;
    line += fmt::format("{}{} {} ({} nodes, via {}, uplink share x{:.2f})", line.empty() ? "" : "; ", k.kind, k.blocks,
                        k.nodes, k.tier, k.link_factor);
  }
  fmt::print(out, "            {}\n", line.empty() ? "no multi-rank groups" : line);
}

void print_placement_compare(std::ostream& out, const std::vector<PlacementOutcome>& outcomes) {
  if (outcomes.empty()) return;
  const PlacementSummary& first = outcomes.front().summary;
  fmt::print(out, "\n  placement what-if on {} of {} fabric nodes (spread in {} blocks of {} nodes)\n", first.job_nodes,
             first.fabric_nodes, first.block_tier, first.block_nodes);
  fmt::print(out, "    {:<11} {:>10} {:>10} {:>10}  {:>9} {:>9}  {:>9} {:>9}\n", "policy", "step s", "exp. DP s",
             "exp. PP s", "DP spread", "DP share", "PP spread", "PP share");
  for (const PlacementOutcome& o : outcomes) {
    const KindSpread& dp = kind(o.summary, "dp");
    const KindSpread& pp = kind(o.summary, "pp");
    fmt::print(out, "    {:<11} {:10.3f} {:10.3f} {:10.3f}  {:9} {:>9}  {:9} {:>9}\n", o.summary.policy, o.iteration_time,
               o.exposed_dp_comm, o.exposed_pp_comm, dp.blocks, fmt::format("x{:.2f}", dp.link_factor), pp.blocks,
               fmt::format("x{:.2f}", pp.link_factor));
  }
}

}  // namespace orrery::cli
