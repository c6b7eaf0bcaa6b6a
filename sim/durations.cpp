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

Seconds HostIssue::of(TaskKind kind, Phase phase) const {
  if (kind == TaskKind::kCommCopy) return library;
  switch (phase) {
    case Phase::kForward: case Phase::kRecompute: return forward;
    case Phase::kBackwardInput: case Phase::kBackwardWeight: return backward;
    case Phase::kOptimizer: return optimizer;
  }
  return forward;
}

HostIssue host_issue_costs(const HostIssueCosts& costs, Framework framework) {
  switch (framework) {
    case Framework::kPytorch: case Framework::kFsdp2:
      return {costs.pytorch_forward, costs.pytorch_backward, costs.pytorch_optimizer, costs.library};
    case Framework::kMegatron: case Framework::kDeepSpeed03: case Framework::kMegatronDeepSpeed: break;
  }
  // Megatron's lower bound (HostIssueCosts): the launch call alone.
  return {costs.library, costs.library, costs.library, costs.library};
}

std::int64_t host_launches(const Op& op) {
  return std::visit(Overloaded{
                        [](const GemmShape& s) -> std::int64_t {
                          if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return 0;
                          return s.grouped ? s.batch : 1;
                        },
                        [](const AttentionShape& s) -> std::int64_t { return s.batch > 0 && s.heads > 0 && s.q_len > 0; },
                        [](const ElementwiseShape& s) -> std::int64_t { return s.bytes() > 0 ? s.kernels : 0; },
                        [](const CollectiveOp& s) -> std::int64_t { return s.bytes > 0; },
                        [](const HostSyncShape&) -> std::int64_t { return 1; },
                        [](const HostOpShape& s) -> std::int64_t { return s.bytes > 0; },
                    },
                    op);
}

Durations price_graph(const WorkloadGraph& graph, const CostModels& models, const HostIssue& host) {
  return price_graph(graph, std::vector<CostModels>(graph.programs.size(), models), host);
}

Durations price_graph(const WorkloadGraph& graph, const std::vector<CostModels>& per_program, const HostIssue& host) {
  Durations d;
  d.op_seconds.reserve(graph.programs.size());
  for (std::size_t i = 0; i < graph.programs.size(); ++i) {
    const Program& p = graph.programs[i];
    const CostModels& models = per_program.at(i);
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
    if (!host.any()) continue;
    std::vector<std::int64_t> launches;
    launches.reserve(p.ops.size());
    for (const Op& op : p.ops) launches.push_back(host_launches(op));
    std::vector<Seconds> issue;
    issue.reserve(p.tasks.size());
    for (const Task& t : p.tasks) {
      issue.push_back(t.op < 0 ? 0.0 : static_cast<double>(launches[static_cast<std::size_t>(t.op)]) * host.of(t.kind, t.phase));
    }
    d.issue_seconds.push_back(std::move(issue));
  }
  return d;
}

}  // namespace orrery
