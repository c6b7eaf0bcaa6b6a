#include "sim/plan/goodput_process.h"

#include <cmath>

namespace orrery {

namespace {

constexpr double kSecondsPerHour = 3600.0;

struct SegmentExpectation {
  double time_s = 0;
  double failures = 0;
  double lost_s = 0;
};

// A segment of s seconds under failures of rate lambda, each followed by a mean downtime dbar (goodput.h derives it).
SegmentExpectation segment_expectation(double s, double lambda, double dbar) {
  if (lambda <= 0) return {s, 0, 0};
  const double failures = std::expm1(lambda * s);
  return {(1.0 / lambda + dbar) * failures, failures, failures / lambda - s};
}

}  // namespace

GoodputProcess make_goodput_process(const FailureModel& failures, const CheckpointCost& checkpoint,
                                    const GoodputJob& job) {
  GoodputProcess p;
  p.work_s = job.compute_s;
  p.restart_startup_s = startup_s(failures.startup, job.gpus);
  p.initial_startup_s = p.restart_startup_s;
  p.recovery_s = failures.recovery_s;
  p.load_s = checkpoint.load_s;
  for (const FailureCategory& c : failures.categories) {
    const double rate = c.rate_per_gpu_hour * job.gpus / kSecondsPerHour;
    p.category_rate_per_s.push_back(rate);
    p.rate_per_s += rate;
    p.downtime_s.push_back(c.detection_s + p.recovery_s + p.restart_startup_s + p.load_s);
  }
  if (job.compute_s > 0) {
    const auto segments = static_cast<std::int64_t>(std::ceil(job.compute_s / checkpoint.interval_s));
    const std::int64_t count = segments < 1 ? 1 : segments;
    p.full_segments = count - 1;
    p.segment_s = checkpoint.interval_s + checkpoint.save_stall_s;
    p.last_segment_s = job.compute_s - static_cast<double>(p.full_segments) * checkpoint.interval_s;
  }
  return p;
}

double mean_downtime_s(const GoodputProcess& process) {
  if (process.rate_per_s <= 0) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < process.downtime_s.size(); ++i)
    sum += process.category_rate_per_s[i] / process.rate_per_s * process.downtime_s[i];
  return sum;
}

ProcessExpectation expected_process_time(const GoodputProcess& process) {
  const double dbar = mean_downtime_s(process);
  const double n = static_cast<double>(process.full_segments);
  const SegmentExpectation full = segment_expectation(process.segment_s, process.rate_per_s, dbar);
  const SegmentExpectation last = segment_expectation(process.last_segment_s, process.rate_per_s, dbar);
  ProcessExpectation e;
  e.time_s = process.initial_startup_s + n * full.time_s + last.time_s;
  e.failures = n * full.failures + last.failures;
  e.lost_work_s = n * full.lost_s + last.lost_s;
  e.completed_saves = n;
  return e;
}

}  // namespace orrery
