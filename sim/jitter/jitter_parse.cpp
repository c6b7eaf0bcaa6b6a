// parse_jitter: the scenario's `jitter` section, read strictly (unknown keys refused, every value in its range).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/physical_bounds.h"
#include "sim/jitter/jitter_spec.h"

namespace orrery {

namespace {

using nlohmann::json;

// Ranges. They bound what the sampler and the engine are asked to do; they are not published figures (the
// README's "jitter" section gives those). Each limit says why it is there.
constexpr int kMostIterations = 100'000;  // a million-rank job's 1e5 runs already take days; the cost check is finer
constexpr bounds::Range kFraction{0.0, 1.0, "", "a fraction of the ranks"};
constexpr bounds::Range kSigma{0.0, 1.0, "",
                               "sigma of the log of a rank's compute slowdown; at 1 a third of the ranks would run "
                               "over 2.7x slow, beyond any measured spread"};
constexpr bounds::Range kClockFactor{0.1, 1.0, "", "a throttled clock over the nominal one, above a tenth"};
constexpr bounds::Range kNetworkSlowdown{1.0, limits::kSlowdown, "x", "how many times as long a transfer takes"};
constexpr bounds::Range kDelayS{0.0, 10.0, "s", "a host delay per iteration of up to 10 s"};
constexpr bounds::Range kGcRate{0.0, 100.0, "per s", "up to 100 collections a second"};
constexpr bounds::Range kGcPauseS{0.0, 60.0, "s", "a pause of up to a minute"};

const json* section(FieldReader& in, const char* key) {
  const json* value = in.raw(key);
  if (value) require(value->is_object(), in.field(key), describe_json(*value), "must be an object");
  return value;
}

}  // namespace

JitterSpec parse_jitter(const json& value, const std::string& field) {
  require(value.is_object(), field, describe_json(value), "must be an object");
  FieldReader in(value, field);
  JitterSpec j;
  j.seed = static_cast<std::uint64_t>(in.int_or("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  j.iterations = static_cast<int>(in.int_or("iterations", j.iterations, 1, kMostIterations));
  if (const json* c = section(in, "compute")) {
    FieldReader r(*c, in.field("compute"));
    j.compute_sigma = r.require_double("sigma", kSigma);
    r.reject_unknown();
  }
  if (const json* t = section(in, "thermal")) {
    FieldReader r(*t, in.field("thermal"));
    j.thermal_fraction = r.require_double("fraction", kFraction);
    j.thermal_clock_factor = r.require_double("clock_factor", kClockFactor);
    r.reject_unknown();
  }
  if (const json* n = section(in, "network")) {
    FieldReader r(*n, in.field("network"));
    j.network_fraction = r.require_double("fraction", kFraction);
    j.network_slowdown = r.require_double("slowdown", kNetworkSlowdown);
    r.reject_unknown();
  }
  if (const json* l = section(in, "launch")) {
    FieldReader r(*l, in.field("launch"));
    j.launch_delay_mean = r.require_double("mean_delay_s", kDelayS);
    r.reject_unknown();
  }
  if (const json* g = section(in, "gc")) {
    FieldReader r(*g, in.field("gc"));
    j.gc_rate_per_s = r.require_double("rate_per_s", kGcRate);
    j.gc_pause = r.require_double("pause_s", kGcPauseS);
    r.reject_unknown();
  }
  in.reject_unknown();
  return j;
}

}  // namespace orrery
