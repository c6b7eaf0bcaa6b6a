// Load and soak benchmark of the plan search (issue 26): the same search, on 2 threads, round after round for a
// given time, in one process. Memory must stay flat (a leak or an unbounded cache grows it round by round, since
// every round does the same work) and every round's ranking must equal a single-thread run's.
//   orrery-search-soak SCENARIO [SECONDS=600] [THREADS=2]
// Prints each round's time, plans per second and resident memory (VmRSS), and exits 1 when a ranking differs or
// the median memory of the later half of the rounds exceeds the largest of the first two by more than 10% (the
// first rounds fill the allocator's arenas and the caches every round shares). Not a test: it measures.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "models/error.h"
#include "models/process_memory.h"
#include "sim/scenario.h"
#include "sim/search/plan_search.h"
#include "sim/search/search_space.h"

namespace {

using namespace orrery;

double resident_mib() { return static_cast<double>(resident_bytes()) / (1024.0 * 1024.0); }

// What a ranking is: the order of the fitting plans and each plan's status, objective and peak memory.
std::vector<std::string> signature(const SearchResult& r) {
  std::vector<std::string> out;
  for (std::size_t i : r.ranking) out.push_back(candidate_key(r.records[i].candidate));
  for (const PlanRecord& p : r.records) {
    out.push_back(fmt::format("{} {} {:.9e} {}", candidate_key(p.candidate), to_string(p.status), p.objective,
                              p.peak_memory));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: orrery-search-soak SCENARIO [SECONDS=600] [THREADS=2]\n");
    return 2;
  }
  try {
    const Scenario base = load_scenario(argv[1]);
    const double seconds = argc > 2 ? std::stod(argv[2]) : 600.0;
    const int threads = argc > 3 ? std::stoi(argv[3]) : 2;
    const SearchSpace space = default_space(base);
    using Clock = std::chrono::steady_clock;
    const auto elapsed = [](Clock::time_point since) {
      return std::chrono::duration<double>(Clock::now() - since).count();
    };

    SearchOptions one;
    one.threads = 1;
    auto start = Clock::now();
    const SearchResult single = run_search(base, space, base.cluster.num_gpus, one);
    const std::vector<std::string> reference = signature(single);
    fmt::print("1 thread: {} candidates ({} simulated) in {:.1f} s, RSS {:.0f} MiB\n", single.records.size(),
               single.simulated, elapsed(start), resident_mib());

    SearchOptions many;
    many.threads = threads;
    std::vector<double> rss;
    bool same = true;
    std::size_t plans = 0;
    const auto soak_start = Clock::now();
    for (int round = 1; round <= 2 || elapsed(soak_start) < seconds; ++round) {
      start = Clock::now();
      const SearchResult r = run_search(base, space, base.cluster.num_gpus, many);
      const bool equal = signature(r) == reference;
      same = same && equal;
      plans += r.records.size();
      rss.push_back(resident_mib());
      fmt::print("round {:3d}: {:.1f} s, {:.1f} plans/s, RSS {:.0f} MiB{}\n", round, elapsed(start),
                 static_cast<double>(r.records.size()) / elapsed(start), rss.back(),
                 equal ? "" : ", RANKING DIFFERS from the single-thread run");
      std::fflush(stdout);
    }
    // The allocator hands memory back to the system at its own times, so one round's figure swings (here 60 to
    // 220 MiB); a leak lifts them all. Flat: the median of the later half of the rounds within 10% of the warm-up.
    const double warm = std::max(rss[0], rss[1]);
    const double largest = *std::max_element(rss.begin(), rss.end());
    std::vector<double> later(rss.begin() + static_cast<std::ptrdiff_t>(rss.size() / 2), rss.end());
    std::nth_element(later.begin(), later.begin() + static_cast<std::ptrdiff_t>(later.size() / 2), later.end());
    const double later_median = later[later.size() / 2];
    const bool flat = later_median <= 1.10 * warm;
    fmt::print("{} threads for {:.0f} s: {} rounds, {} plans, {:.1f} plans/s; RSS after the first two rounds "
               "{:.0f} MiB, median of the later half {:.0f} MiB ({:+.1f}%), largest {:.0f} MiB, last {:.0f} MiB: {}; "
               "rankings {}\n",
               threads, elapsed(soak_start), rss.size(), plans, static_cast<double>(plans) / elapsed(soak_start),
               warm, later_median, 100.0 * (later_median / warm - 1.0), largest, rss.back(), flat ? "flat" : "GROWS",
               same ? "equal to the single-thread run" : "DIFFER");
    return flat && same ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
