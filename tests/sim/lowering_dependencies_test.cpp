// Dependencies of the lowering: the program builder takes only real tasks as dependencies, and a task the emitter
// skips (a one-rank group's collective, a task the weight-gradient split drops) passes its own dependencies on to
// whoever depends on it (sim/lower/maybe_task.h), so no ordering edge is lost with it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/lower/maybe_task.h"
#include "sim/task_vocabulary.h"
#include "test_support.h"

using namespace orrery;

namespace {

Task task_on(std::uint8_t stream, const char* label) {
  Task t;
  t.stream = stream;
  t.label = label;
  return t;
}

// Whether task `to` is reachable from task `from` along the program's edges (data and stream order).
bool reaches(const Program& p, std::uint32_t from, std::uint32_t to) {
  std::vector<char> seen(p.tasks.size(), 0);
  std::vector<std::uint32_t> stack{from};
  while (!stack.empty()) {
    const std::uint32_t u = stack.back();
    stack.pop_back();
    if (u == to) return true;
    auto [begin, end] = boost::out_edges(u, p.successors);
    for (auto e = begin; e != end; ++e) {
      const std::uint32_t v = boost::target(*e, p.successors);
      if (!seen[v]) {
        seen[v] = 1;
        stack.push_back(v);
      }
    }
  }
  return false;
}

// The first task of `layer` in `phase` of micro-batch 0 with `label`, by id (-1 if none).
std::int64_t first_task(const Program& p, int layer, Phase phase, const std::string& label) {
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    if (t.layer == layer && t.phase == phase && t.microbatch == 0 && label == t.label) return static_cast<std::int64_t>(i);
  }
  return -1;
}

// The message of the std::logic_error `f` throws ("" if it throws none).
template <class F>
std::string logic_error_of(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the program builder refuses a dependency that is not an earlier task, naming the task", "[sim][lowering]") {
  // Two tasks on two streams: 0 ("gemm_a"), 1 ("gemm_b" after 0). A dependency on -1 (a task never added), on the
  // task itself or on a later one is a lowering bug; the builder used to skip a negative id silently.
  ProgramBuilder b(0);
  const Op op = ElementwiseShape{8, 8};
  const auto a = b.add(task_on(0, "gemm_a"), op);
  const auto second = b.add(task_on(1, "gemm_b"), op, {a});
  CHECK(second == 1);
  CHECK_THAT(logic_error_of([&] { b.add(task_on(1, "needs_missing"), op, {-1}); }),
             Catch::Matchers::Contains("'needs_missing'") && Catch::Matchers::Contains("depends on id -1"));
  CHECK_THAT(logic_error_of([&] { b.add(task_on(1, "needs_itself"), op, {2}); }),
             Catch::Matchers::Contains("'needs_itself'") && Catch::Matchers::Contains("depends on id 2"));
  CHECK_THAT(logic_error_of([&] { b.add(task_on(1, "needs_future"), op, {a, 7}); }),
             Catch::Matchers::Contains("'needs_future'") && Catch::Matchers::Contains("depends on id 7"));
  CHECK(b.last() == 1);  // the refused tasks were not added
  CHECK_THAT(logic_error_of([&] { b.depend(second, -1); }),
             Catch::Matchers::Contains("'gemm_b'") && Catch::Matchers::Contains("depends on id -1"));
  CHECK_THAT(logic_error_of([&] { b.depend(a, second); }),
             Catch::Matchers::Contains("'gemm_a'") && Catch::Matchers::Contains("depends on id 1"));
  CHECK_THROWS_AS(b.depend(-1, a), std::logic_error);
  CHECK_THROWS_AS(b.depend(5, a), std::logic_error);
  CHECK_THROWS_AS(b.alloc_at_start(-1, MemoryKind::kActivations, 1), std::logic_error);
  CHECK_THROWS_AS(b.free_at_end(2, MemoryKind::kActivations, 1), std::logic_error);
  b.depend(second, a);  // a real one is still taken
  const Program p = b.finish();
  CHECK(p.in_degree[1] == 1);  // the two edges 0 -> 1 are one
}

TEST_CASE("a maybe-task is no task, or a task, or what a skipped task waited for", "[sim][lowering]") {
  CHECK_THROWS_AS(MaybeTask(-1), std::logic_error);
  CHECK(MaybeTask().waits().empty());
  CHECK_THROWS_AS(MaybeTask().task(), std::logic_error);
  const MaybeTask three(3);
  CHECK(three.task() == 3);
  CHECK(std::vector<TaskId>(three.waits().begin(), three.waits().end()) == std::vector<TaskId>{3});
  MaybeTask skipped = MaybeTask::skipped({1, 2});
  CHECK_FALSE(skipped.emitted());
  skipped.also_wait_for(three);
  skipped.also_wait_for(MaybeTask(1));  // already there: once
  CHECK(std::vector<TaskId>(skipped.waits().begin(), skipped.waits().end()) == std::vector<TaskId>{1, 2, 3});
  CHECK(skipped.latest() == 3);
}

TEST_CASE("a ring transfer after a one-rank all-to-all still waits for the keys and values it sends",
          "[sim][lowering][cp]") {
  // Hierarchical context parallelism with sizes [1, 2] (Megatron-Core's a2a+p2p): the all-to-all group has one
  // rank, so its cp_a2a is skipped, and the ring of 2 runs on the rank's own tokens. The ring's first transfer
  // (cp_kv) sends this rank's K and V, which the QKV projection and the rotary embedding ("rope", on the compute
  // stream) produce: it must start after rope. It is the first task on the CP stream, so only the data dependency,
  // passed through the skipped all-to-all, orders it (it used to be dropped with the skipped task's id -1).
  const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 2},
      "parallel": {"cp": 2, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": [1, 2]},
      "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 1}})");
  const WorkloadGraph g = test::lowered(s);
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) CHECK(t.group != GroupKind::kCpA2a);  // skipped, each of them
  const std::int64_t rope = first_task(p, 0, Phase::kForward, "rope");
  const std::int64_t kv = first_task(p, 0, Phase::kForward, "cp_kv");
  REQUIRE(rope >= 0);
  REQUIRE(kv > rope);
  CHECK(p.tasks[static_cast<std::size_t>(kv)].group == GroupKind::kCpP2p);
  CHECK(reaches(p, static_cast<std::uint32_t>(rope), static_cast<std::uint32_t>(kv)));
  // The backward's ring starts from the output gradient, which the attention projection's input-gradient GEMM
  // ("attention_proj", the first GEMM of that label in the backward) produces; its first transfer, cp_kv_dkv, waits
  // for it the same way.
  const std::int64_t dproj = first_task(p, 0, Phase::kBackwardInput, "attention_proj");
  const std::int64_t dkv = first_task(p, 0, Phase::kBackwardInput, "cp_kv_dkv");
  REQUIRE(dproj >= 0);
  REQUIRE(dkv > dproj);
  CHECK(reaches(p, static_cast<std::uint32_t>(dproj), static_cast<std::uint32_t>(dkv)));
}
