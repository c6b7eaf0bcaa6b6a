#include "calibrate/workload_export.h"

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <variant>

#include "models/error.h"

namespace orrery {

bench::WorkloadFile export_workload(const Prediction& p) {
  require(p.scenario.parallel.num_gpus() == 1, "cluster.num_gpus", std::to_string(p.scenario.parallel.num_gpus()),
          "must be 1: the reference executor runs one GPU's program");
  const Program& prog = p.graph.programs.front();
  bench::WorkloadFile w;
  for (int k = 0; k < kNumMemoryKinds; ++k) w.static_bytes[static_cast<std::size_t>(k)] = prog.static_memory[static_cast<std::size_t>(k)];
  std::vector<std::vector<int>> preds(prog.tasks.size());
  for (std::uint32_t u = 0; u < prog.tasks.size(); ++u) {
    auto [begin, end] = boost::out_edges(u, prog.successors);
    for (auto e = begin; e != end; ++e) preds[boost::target(*e, prog.successors)].push_back(static_cast<int>(u));
  }
  for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
    const Task& t = prog.tasks[i];
    bench::WorkloadTask x;
    x.id = static_cast<int>(i);
    x.stream = p.graph.streams[t.stream].name;
    x.phase = to_string(t.phase);
    x.layer = t.layer;
    x.microbatch = t.microbatch;
    x.start_kind = to_string(t.start_kind);
    x.end_kind = to_string(t.end_kind);
    x.start_bytes = t.start_bytes;
    x.end_bytes = t.end_bytes;
    x.deps = preds[i];
    x.name = task_name(prog, t);
    const Op& op = prog.ops[static_cast<std::size_t>(t.op)];
    if (const auto* g = std::get_if<GemmShape>(&op)) {
      x.op = "gemm";
      x.args = {g->m, g->n, g->k, g->batch, g->grouped ? 1 : 0};
      x.dtype = to_string(g->dtype);
    } else if (const auto* a = std::get_if<AttentionShape>(&op)) {
      x.op = "attention";
      x.args = {a->batch, a->heads, a->kv_heads, a->q_len, a->kv_len, a->head_dim_qk, a->head_dim_v, a->causal ? 1 : 0,
                a->backward ? 1 : 0};
      x.dtype = to_string(a->dtype);
    } else if (const auto* e = std::get_if<ElementwiseShape>(&op)) {
      x.op = "memory";
      x.args = {e->bytes_read, e->bytes_written};
    } else if (std::holds_alternative<HostSyncShape>(op)) {
      x.op = "sync";
    } else {
      x.op = "skip";
    }
    w.tasks.push_back(std::move(x));
  }
  return w;
}

}  // namespace orrery
