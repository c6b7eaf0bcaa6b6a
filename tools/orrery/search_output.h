#pragma once
// Outputs of `orrery search`: the top-plans table, every candidate as CSV and JSON, and reading that JSON back so
// that `orrery search merge` can join the shards of one search.

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "sim/search/plan_search.h"

namespace orrery::cli {

/// The search's JSON: {"num_gpus", "counts": {...}, "plans": [one object per candidate], "ranking": [keys]}.
nlohmann::json search_json(const SearchResult& result);
/// Every candidate as one CSV row (header first).
void write_search_csv(std::ostream& out, const SearchResult& result);
/// The best `top` plans as a table, then the counts.
void print_top_plans(std::ostream& out, const SearchResult& result, int top, SearchObjective objective);

/// Reads a search JSON back (a shard's output). Errors: Error::invalid naming `path` and the bad field.
SearchResult read_search_json(const nlohmann::json& doc, const std::string& path);
/// Joins shards of one search: their candidates and counts, re-ranked. Errors: Error::invalid when the shards
/// searched different GPU counts.
SearchResult merge_searches(const std::vector<SearchResult>& shards);

}  // namespace orrery::cli
