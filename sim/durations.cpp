#include "sim/durations.h"

namespace orrery {

namespace {

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
                    },
                    op);
}

Durations price_graph(const WorkloadGraph& graph, const CostModels& models) {
  Durations d;
  d.op_seconds.reserve(graph.programs.size());
  for (const Program& p : graph.programs) {
    std::vector<Seconds> per_op;
    per_op.reserve(p.ops.size());
    for (const Op& op : p.ops) per_op.push_back(op_duration(op, models));
    d.op_seconds.push_back(std::move(per_op));
  }
  return d;
}

}  // namespace orrery
