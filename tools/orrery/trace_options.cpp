#include "tools/orrery/trace_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "models/error.h"
#include "models/utf8.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

int parse_index(const std::string& option, const std::string& list, std::string_view item) {
  int value = 0;
  const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  require(ec == std::errc() && end == item.data() + item.size() && value >= 0, option, list,
          "must be numbers and ranges from 0, like 0,3,8-15");
  return value;
}

// "0,3,8-15" -> {0, 3, 8, ..., 15}, each below `limit` (`what` names the limit in the error).
std::vector<int> parse_list(const std::string& option, const std::string& list, int limit, const std::string& what) {
  // Marks, not a list of every value: a list of overlapping ranges ("0-1048575" a thousand times) stays one
  // mark per index below the limit.
  std::vector<bool> chosen;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item(list.data() + start, comma - start);
    const std::size_t dash = item.find('-');
    const int lo = parse_index(option, list, item.substr(0, dash));
    const int hi = dash == std::string_view::npos ? lo : parse_index(option, list, item.substr(dash + 1));
    require(lo <= hi, option, list, fmt::format("has a range {} whose end comes before its start", item));
    require(hi < limit, option, list, fmt::format("must stay below {} ({} is too large)", what, hi));
    if (chosen.size() <= static_cast<std::size_t>(hi)) chosen.resize(static_cast<std::size_t>(hi) + 1, false);
    for (int v = lo; v <= hi; ++v) chosen[static_cast<std::size_t>(v)] = true;
    start = comma + 1;
  }
  std::vector<int> out;
  for (std::size_t v = 0; v < chosen.size(); ++v) {
    if (chosen[v]) out.push_back(static_cast<int>(v));
  }
  return out;
}

double parse_seconds(const std::string& window, const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  require(ec == std::errc() && end == text.data() + text.size() && std::isfinite(value) && value >= 0,
          "--trace-window", window, "must be START_S:END_S, two times in seconds from 0 (either may be left out)");
  // The clock counts nanoseconds in 64 bits; no simulated iteration comes near 1e9 s (31 years).
  require(value <= 1e9, "--trace-window", window, fmt::format("must stay within 1e9 s ({} is beyond it)", text));
  return value;
}

}  // namespace

void TraceFlags::add_to(CLI::App& app) {
  app.add_option("--trace-ranks", ranks,
                 "trace only these ranks, e.g. 0-7,64 (without --expand-ranks a track stands for several ranks and is "
                 "named by the lowest)")
      ->type_name("LIST")
      ->check(non_empty());
  app.add_option("--trace-stages", stages, "trace only these pipeline stages, e.g. 0,3")->type_name("LIST")->check(non_empty());
  app.add_option("--trace-microbatches", microbatches,
                 "trace only these micro-batches' tasks, e.g. 0-3 (leaves out per-iteration work: optimizer, "
                 "gradient reduction)")
      ->type_name("LIST")
      ->check(non_empty());
  app.add_option("--trace-window", window, "trace only tasks that overlap START_S:END_S (seconds; e.g. 2.5:3, or 10: to the end)")
      ->type_name("START_S:END_S")
      ->check(non_empty());
  app.add_option("--trace-max-events", max_events,
                 fmt::format("most events in the trace (default {}, about 150 MB; 0: no limit); beyond it the trace "
                             "stops at the time the limit is reached and says so",
                             TraceSelection{}.max_events))
      ->type_name("N")
      ->check(whole_number(0, TraceSelection::kMostEvents, " (0: no limit; a billion events make about 150 GB)"));
}

std::string TraceFlags::first_given() const {
  if (!ranks.empty()) return "--trace-ranks";
  if (!stages.empty()) return "--trace-stages";
  if (!microbatches.empty()) return "--trace-microbatches";
  if (!window.empty()) return "--trace-window";
  return max_events ? "--trace-max-events" : "";
}

TraceSelection TraceFlags::selection(const Job& job) const {
  const Scenario& scenario = job.scenario();
  TraceSelection s;
  const int gpus = job.num_gpus();
  if (!ranks.empty()) s.ranks = parse_list("--trace-ranks", ranks, gpus, fmt::format("the job's {} ranks", gpus));
  if (!stages.empty()) {
    s.stages = parse_list("--trace-stages", stages, scenario.parallel.pp,
                          fmt::format("the plan's {} pipeline stages", scenario.parallel.pp));
  }
  if (!microbatches.empty()) {
    const int n = job.microbatches();
    s.microbatches = parse_list("--trace-microbatches", microbatches, n, fmt::format("the {} micro-batches per pipeline", n));
  }
  if (!window.empty()) {
    const std::size_t colon = window.find(':');
    require(colon != std::string::npos, "--trace-window", window, "must be START_S:END_S, two times in seconds");
    const std::string from = window.substr(0, colon), to = window.substr(colon + 1);
    if (!from.empty()) s.window_start = to_nanos(parse_seconds(window, from));
    if (!to.empty()) s.window_end = to_nanos(parse_seconds(window, to));
    require(s.window_start < s.window_end, "--trace-window", window, "must end after it starts");
  }
  if (max_events) s.max_events = *max_events;
  return s;
}

void warn_about_trace(std::ostream& err, const std::string& file, const TraceSummary& summary,
                      const TraceSelection& selection, const Prediction& p) {
  const std::string path = printable_utf8(file, false);  // as given on the command line, control characters escaped
  if (summary.left_out > 0) {
    err << fmt::format(
        "warning: --trace {}: left out {} of {} events, those from {:.6g} s on (the iteration ends at {:.6g} s), on "
        "ranks {}, to stay within --trace-max-events {}. To see them, select less with --trace-ranks, --trace-stages, "
        "--trace-microbatches or --trace-window START_S:END_S, or raise --trace-max-events (0: no limit)\n",
        path, summary.left_out, summary.events + summary.left_out, from_nanos(summary.cut), from_nanos(p.run.makespan),
        list_text(summary.ranks), selection.max_events);
  }
  if (!summary.missing_ranks.empty()) {
    err << fmt::format(
        "warning: --trace-ranks: rank(s) {} have no track of their own in {} (its tracks: {}). Without --expand-ranks "
        "one simulated rank stands for several and names the track; with it, a run of more than 20 million rank-tasks "
        "keeps the timings of only the first rank of each stage (and of stragglers)\n",
        list_text(summary.missing_ranks), path, summary.ranks.empty() ? "none" : list_text(summary.ranks));
  } else if (summary.events == 0 && summary.left_out == 0) {
    err << fmt::format("warning: --trace {}: the selection holds no task and no memory sample\n", path);
  }
}

}  // namespace orrery::cli
