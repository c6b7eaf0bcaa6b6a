// Reads the scenario's `placement` section (sim/placement_spec.h). ARCHITECTURE.md rule 7: one parse function,
// unknown keys refused, each rule checked next to the field it governs.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "sim/placement_spec.h"

namespace orrery {

using nlohmann::json;

const char* to_string(PlacementPolicy policy) {
  for (const auto& [name, p] : kPlacementPolicyNames) {
    if (p == policy) return name;
  }
  return "?";
}

namespace {

PlacementPolicy parse_policy(const std::string& name) {
  for (const auto& [n, p] : kPlacementPolicyNames) {
    if (name == n) return p;
  }
  throw Error::invalid("placement.policy", name, "must be one of: sequential, random, optimized, explicit");
}

std::vector<int> parse_node_list(const json& value) {
  if (!value.is_array() || value.empty()) {
    throw Error::invalid("placement.rank_to_node", describe_json(value),
                         "must be a non-empty list of fabric node indices (one per job node, or one per rank)");
  }
  std::vector<int> out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& v = value[i];
    const std::string field = fmt::format("placement.rank_to_node[{}]", i);
    require(v.is_number_integer(), field, describe_json(v), "must be a whole node index");
    const std::int64_t n = v.get<std::int64_t>();
    require(n >= 0 && n < limits::kGpus, field, describe_json(v), fmt::format("must be in [0, {})", limits::kGpus));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

}  // namespace

PlacementSpec parse_placement(const json& value) {
  if (!value.is_object()) {
    throw Error::invalid("placement", describe_json(value),
                         "must be an object: {\"policy\": \"sequential\" | \"random\" | \"optimized\"} or "
                         "{\"rank_to_node\": [...]}");
  }
  FieldReader in(value, "placement");
  PlacementSpec p;
  const std::optional<std::string> policy = in.optional_string("policy");
  const json* map = in.raw("rank_to_node");
  if (policy) p.policy = parse_policy(*policy);
  if (map) {
    require(!policy || p.policy == PlacementPolicy::kExplicit, "placement.rank_to_node", "given",
            fmt::format("is an explicit map: it goes with policy \"explicit\" or no policy, not \"{}\"",
                        policy.value_or("")));  // the message is built whether or not the rule holds
    p.policy = PlacementPolicy::kExplicit;
    p.rank_to_node = parse_node_list(*map);
  }
  require(p.policy != PlacementPolicy::kExplicit || map, "placement.rank_to_node", "missing",
          "is required with policy \"explicit\"");
  if (const auto seed = in.optional_int("seed", 0, INT32_MAX)) {
    require(p.policy == PlacementPolicy::kRandom, "placement.seed", std::to_string(*seed),
            "seeds policy \"random\" only");
    p.seed = static_cast<std::uint64_t>(*seed);
  }
  p.fabric_nodes = static_cast<int>(in.int_or("fabric_nodes", 0, 0, limits::kGpus));
  for (const char* key : {"dp_weight", "pp_weight"}) {
    if (const auto w = in.optional_double(key)) {
      const std::string field = fmt::format("placement.{}", key);
      require(p.policy == PlacementPolicy::kOptimized, field, fmt::format("{}", *w),
              "weighs the optimiser's objective: it goes with policy \"optimized\" only");
      require(*w >= 0 && *w <= 1e6, field, fmt::format("{}", *w), "must be between 0 and 1e6");
      (std::string(key) == "dp_weight" ? p.dp_weight : p.pp_weight) = *w;
    }
  }
  require(p.dp_weight + p.pp_weight > 0, "placement.dp_weight", fmt::format("{}", p.dp_weight),
          "and pp_weight must not both be 0");
  in.reject_unknown();
  return p;
}

}  // namespace orrery
