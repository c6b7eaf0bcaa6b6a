#include "sim/durations.h"

#include <fmt/format.h>

#include "models/error.h"
#include "models/limits.h"

namespace orrery {

namespace {

const char* op_name(const GemmShape&) { return "GEMM"; }
const char* op_name(const AttentionShape&) { return "attention kernel"; }
const char* op_name(const ElementwiseShape&) { return "memory-bound kernel"; }
const char* op_name(const CollectiveOp& c) { return to_string(c.kind); }
const char* op_name(const HostSyncShape&) { return "host synchronisation"; }
const char* op_name(const HostOpShape&) { return "host transfer"; }

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

Seconds op_duration(const Op& op, const CostModels& models) {
  return std::visit(Overloaded{
                        [&](const GemmShape& s) { return models.compute.gemm(s); },
                        [&](const AttentionShape& s) { return models.compute.attention(s); },
                        [&](const ElementwiseShape& s) { return models.compute.elementwise(s); },
                        [&](const CollectiveOp& s) { return models.network.time(s); },
                        [&](const HostSyncShape&) { return models.compute.host_sync(); },
                        [&](const HostOpShape& s) { return models.compute.host_op(s); },
                    },
                    op);
}

Durations price_graph(const WorkloadGraph& graph, const CostModels& models) {
  Durations d;
  d.op_seconds.reserve(graph.programs.size());
  for (const Program& p : graph.programs) {
    std::vector<Seconds> per_op;
    per_op.reserve(p.ops.size());
    for (const Op& op : p.ops) {
      const Seconds seconds = op_duration(op, models);
      // Durations become integer nanoseconds; beyond this the input is unphysical (a near-zero bandwidth, say).
      if (!(seconds >= 0.0 && seconds <= limits::kTaskSeconds)) {
        throw Error::invalid("cluster", fmt::format("{} s for one {}", seconds, std::visit([](const auto& o) { return op_name(o); }, op)),
                             fmt::format("is outside the simulated range (0 to {:g} s per task); check the cluster's "
                                         "bandwidths and latencies and the model's sizes", limits::kTaskSeconds));
      }
      per_op.push_back(seconds);
    }
    d.op_seconds.push_back(std::move(per_op));
  }
  return d;
}

}  // namespace orrery
