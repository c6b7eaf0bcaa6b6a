#pragma once
// The goodput model's stochastic process in numbers (sim/plan/goodput.h describes it): the job's segments, its
// failure rates and the downtime each failure costs. The expected value (goodput.cpp) and the Monte-Carlo run
// (goodput_monte_carlo.cpp) both read this one struct, so that they describe the same process.

#include <cstdint>
#include <vector>

#include "sim/plan/goodput.h"

namespace orrery {

struct GoodputProcess {
  double work_s = 0;                       // T, seconds of compute
  double initial_startup_s = 0;            // the first start
  std::int64_t full_segments = 0;          // segments of interval + save
  double segment_s = 0;                    // their length, seconds (compute and save)
  double last_segment_s = 0;               // the last segment, no save after it; 0 when T = 0
  double rate_per_s = 0;                   // lambda, the job's failures per second
  std::vector<double> category_rate_per_s;
  std::vector<double> downtime_s;          // per category: detection + recovery + restart start-up + load
  double recovery_s = 0;
  double load_s = 0;
  double restart_startup_s = 0;
};

GoodputProcess make_goodput_process(const FailureModel& failures, const CheckpointCost& checkpoint,
                                    const GoodputJob& job);

/// sum over categories of (lambda_c / lambda) x downtime_c; 0 when nothing fails.
double mean_downtime_s(const GoodputProcess& process);

struct ProcessExpectation {
  double time_s = 0;           // expected wall-clock seconds, start-up included
  double failures = 0;         // expected failures
  double lost_work_s = 0;      // expected seconds of segments run and lost to failures
  double completed_saves = 0;  // saves that complete (full_segments)
};

/// Each segment of length s: (1/lambda + Dbar) expm1(lambda s) seconds, expm1(lambda s) failures and
/// expm1(lambda s) / lambda - s seconds lost; s, 0 and 0 when lambda is 0.
ProcessExpectation expected_process_time(const GoodputProcess& process);

}  // namespace orrery
