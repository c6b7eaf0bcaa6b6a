#pragma once
// Outputs of `orrery search`: the top-plans table, every candidate as CSV and JSON, and reading that JSON back so
// that `orrery search merge` can join the shards of one search.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
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

/// The search's progress on a terminal. After each simulated block `update` redraws one line,
///   [##########                              ] 2,400/13,608  41 plans/s  at most 4m33s left
/// (candidates settled of all; the rate and what is left from the blocks since the first, "at most" because the
/// time bound may end the search before the last candidate), and `finish` replaces it with what happened, whether
/// the bar reached its end or the bound pruned the rest at once:
///   simulated 1,556 of 13,608 candidates in 45.2 s, 34 plans/s (1,242 invalid, 5,226 pruned by memory, 5,584 by
///   the time bound, the last 8,024 at once)
/// Its counts are the result's, the same as the JSON's `counts`.
class SearchProgress {
 public:
  explicit SearchProgress(std::ostream& out) : out_(out) {}
  /// Starts the clock of one search (the next `update` and `finish` count from here).
  void start();
  void update(std::size_t settled, std::size_t total);
  void finish(const SearchResult& result);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  Clock::time_point started_, first_;
  std::size_t first_settled_ = 0, last_settled_ = 0, drawn_ = 0;
  bool updated_ = false;
};

/// Reads a search JSON back (a shard's output). Errors: Error::invalid naming `path` and the bad field.
SearchResult read_search_json(const nlohmann::json& doc, const std::string& path);
/// Joins shards of one search: their candidates and counts, re-ranked. Errors: Error::invalid when the shards
/// searched different GPU counts.
SearchResult merge_searches(const std::vector<SearchResult>& shards);

}  // namespace orrery::cli
