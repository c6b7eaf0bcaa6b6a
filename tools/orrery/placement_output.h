#pragma once
// The report's `placement` entry and its lines in the text summary (a scenario with a `placement` section), and the
// what-if table of `orrery predict --placement-compare`. Observers: they read finished results (ARCHITECTURE.md
// rule 14).

#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

#include "sim/placement_compare.h"

namespace orrery::cli {

/// {"policy", "job_nodes", "fabric_nodes", "block_tier", "block_nodes", "groups": {KIND: {"groups", "blocks",
/// "nodes", "tier", "link_factor"}}} for KIND in dp, pp, tp, cp, ep (sim/placement.h, KindSpread).
nlohmann::json placement_json(const PlacementSummary& summary);

/// The list of `--placement-compare`: one {"policy", "iteration_time_s", "exposed_dp_comm_s", "exposed_pp_comm_s",
/// "groups"} per placement.
nlohmann::json placement_compare_json(const std::vector<PlacementOutcome>& outcomes);

/// Two lines for the text summary: the policy and fabric, then each kind's largest spread.
void print_placement(std::ostream& out, const PlacementSummary& summary);

/// The what-if table: policy, step time, exposed DP and PP communication, largest DP and PP spread and link factor.
void print_placement_compare(std::ostream& out, const std::vector<PlacementOutcome>& outcomes);

}  // namespace orrery::cli
