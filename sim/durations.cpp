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

Seconds task_duration(const Task& task, const CostModels& models) {
  return std::visit(Overloaded{
                        [&](const GemmShape& s) { return models.compute.gemm(s); },
                        [&](const AttentionShape& s) { return models.compute.attention(s); },
                        [&](const ElementwiseShape& s) { return models.compute.elementwise(s); },
                        [&](const CollectiveOp& s) { return models.network.time(s); },
                    },
                    task.op);
}

Durations price_graph(const WorkloadGraph& graph, const CostModels& models) {
  Durations d;
  d.per_program.reserve(graph.programs.size());
  for (const Program& p : graph.programs) {
    std::vector<Seconds> per_task;
    per_task.reserve(p.tasks.size());
    for (const Task& t : p.tasks) per_task.push_back(task_duration(t, models));
    d.per_program.push_back(std::move(per_task));
  }
  return d;
}

}  // namespace orrery
