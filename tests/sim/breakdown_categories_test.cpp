// The report's breakdown puts each group kind's exposed time under its own parallelism, by hand: one task per
// kind, back to back on one rank, so each category must hold exactly its tasks' milliseconds.
#include <catch2/catch.hpp>

#include "sim/report.h"

using namespace orrery;

namespace {

Task comm(GroupKind group, Stream stream) {
  Task t;
  t.kind = TaskKind::kCollective;
  t.stream = stream;
  t.group = group;
  return t;
}

}  // namespace

TEST_CASE("each group kind's exposed time lands in its own category of the breakdown", "[sim][report]") {
  Program p;
  Task gemm;
  gemm.kind = TaskKind::kGemm;
  p.tasks = {gemm,
             comm(GroupKind::kTp, Stream::kTp),
             comm(GroupKind::kCp, Stream::kCp),
             comm(GroupKind::kCpA2a, Stream::kCp),  // hierarchical CP's all-to-all: context parallelism, not TP
             comm(GroupKind::kCpP2p, Stream::kCp),  // ... and its ring
             comm(GroupKind::kEp, Stream::kEp),
             comm(GroupKind::kExpertTp, Stream::kTp),  // expert tensor parallelism: inside the MoE layer
             comm(GroupKind::kDp, Stream::kDpReduce)};
  InstanceRun run;
  run.recorded = true;
  constexpr Nanoseconds ms = 1'000'000;
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const auto at = static_cast<Nanoseconds>(i) * ms;
    run.timings.push_back({at, 0, at, at + ms});
  }
  WorkloadGraph g;
  declare_vocabulary(g);
  const Breakdown b = breakdown_of(g, p, run, static_cast<Nanoseconds>(p.tasks.size()) * ms);
  CHECK(b.compute == Approx(1e-3));
  CHECK(b.exposed_tp_comm == Approx(1e-3));
  CHECK(b.exposed_cp_comm == Approx(3e-3));
  CHECK(b.exposed_ep_comm == Approx(2e-3));
  CHECK(b.exposed_dp_comm == Approx(1e-3));
  CHECK(b.exposed_pp_comm == 0);
  CHECK(b.bubble == 0);
  CHECK(b.total() == Approx(8e-3));
}
