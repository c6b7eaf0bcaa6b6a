#include "calibrate/calibration_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <variant>

#include "hardware/cost_params.h"
#include "sim/lowering.h"

namespace orrery {

namespace {

template <class T>
void add_once(std::vector<T>& list, const T& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

}  // namespace

bench::BenchPlan calibration_plan(const std::vector<Scenario>& scenarios, const CalibrationPlanOptions& options,
                                  std::vector<std::string>* notes) {
  bench::BenchPlan plan;
  std::int64_t unmeasured_attention = 0, batched_gemms = 0;
  // (heads, kv_heads, head_dim, causal, dtype) of every self-attention the scenarios lower.
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, std::string>> head_shapes;
  std::vector<bench::PlanAttention> lowered_attention;
  for (const Scenario& scenario : scenarios) {
    const WorkloadGraph graph = lower(scenario, default_cost_params().memory);
    for (const Program& program : graph.programs) {
      for (const Op& op : program.ops) {
        if (const auto* g = std::get_if<GemmShape>(&op)) {
          if ((g->batch != 1 && !g->grouped) || g->dtype == DType::kFp32) {
            ++batched_gemms;
            continue;
          }
          add_once(plan.gemm, bench::PlanGemm{g->m, g->n, g->k, to_string(g->dtype)});
        } else if (const auto* a = std::get_if<AttentionShape>(&op)) {
          if (a->backward) continue;
          if (a->q_len != a->kv_len || a->window || a->half_block || a->packed_fraction != 1.0 ||
              a->head_dim_qk != a->head_dim_v || (a->dtype != DType::kBf16 && a->dtype != DType::kFp16)) {
            ++unmeasured_attention;
            continue;
          }
          const std::string dtype = to_string(a->dtype);
          head_shapes.emplace(a->heads, a->kv_heads, a->head_dim_qk, a->causal, dtype);
          add_once(lowered_attention,
                   bench::PlanAttention{a->batch, a->heads, a->kv_heads, a->q_len, a->head_dim_qk, a->causal, dtype});
        }
      }
    }
  }
  if (options.grid) {
    for (const std::string& dtype : options.gemm_grid_dtypes) {
      for (std::int64_t m : options.gemm_grid) {
        for (std::int64_t n : options.gemm_grid) {
          for (std::int64_t k : options.gemm_grid) add_once(plan.gemm, bench::PlanGemm{m, n, k, dtype});
        }
      }
    }
  }
  for (const char* kind : {"copy", "elementwise", "reduction"}) {
    for (std::int64_t bytes = 32768; bytes <= (std::int64_t{32} << 30); bytes *= 4) plan.memory.push_back({kind, bytes});
  }
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"}) {
    for (std::int64_t bytes = 1024; bytes <= (std::int64_t{1} << 30); bytes *= 4) plan.collectives.push_back({op, bytes});
  }
  plan.attention = lowered_attention;
  if (options.grid) {
    for (const auto& [heads, kv_heads, head_dim, causal, dtype] : head_shapes) {
      for (std::int64_t seq : options.attention_seqs) {
        const std::int64_t batch = std::max<std::int64_t>(1, options.attention_tokens / seq);
        add_once(plan.attention, bench::PlanAttention{batch, heads, kv_heads, seq, head_dim, causal, dtype});
      }
    }
  }
  plan.launch = true;
  if (notes && unmeasured_attention > 0) {
    notes->push_back(fmt::format("{} attention shapes are not measured (MLA's unequal head sizes, sliding windows, "
                                 "context-parallel blocks, packed documents or FP8): the default model prices them",
                                 unmeasured_attention));
  }
  if (notes && batched_gemms > 0) {
    notes->push_back(fmt::format("{} strided-batched or FP32 GEMM shapes are not measured: the default model prices "
                                 "them", batched_gemms));
  }
  return plan;
}

}  // namespace orrery
