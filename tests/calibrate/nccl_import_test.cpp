// nccl-tests logs imported into a profile's collective tables, and the profiled collective model on them: a
// measured size costs what the log measured, a size between two measured ones lies between them, and a group the
// logs did not measure goes to the NCCL model.
#include <catch2/catch.hpp>

#include "calibrate/nccl_import.h"
#include "hardware/profiled_collective.h"
#include "hardware/topology.h"
#include "test_support.h"

using namespace orrery;

namespace {

NcclTestsLog log07() {
  return read_nccl_tests_log(test::data_dir() / "nccl-tests-logs" / "07-h100-2x8-ib-allreduce-default-algo.txt");
}

GroupPlacement h100_group(int gpus) {
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": )" +
                                    std::to_string(gpus) + "}}");
  std::vector<int> members;
  for (int r = 0; r < gpus; ++r) members.push_back(r);
  return place_members(s.cluster, members);
}

}  // namespace

TEST_CASE("an imported nccl-tests log prices the collectives it measured", "[calibrate][profile]") {
  const NcclTestsLog log = log07();
  GpuProfile profile;
  profile.gpu = "NVIDIA H100 SXM5 80GB";
  merge_collectives(profile, collective_samples(log));
  REQUIRE(profile.collectives.size() == log.rows.size());
  CHECK(profile.collectives.front().ranks == 16);
  CHECK(profile.collectives.front().nodes == 2);

  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16}})");
  ProfiledCollectiveModel model(profile, std::make_unique<NcclCollectiveModel>(s.cluster, default_cost_params().network));
  const GroupPlacement g16 = h100_group(16);
  for (const NcclTestsRow& row : log.rows) {
    INFO(row.bytes);
    CHECK(model.time(CollectiveOp{CollectiveKind::kAllReduce, row.bytes, g16}) == Approx(row.time));
  }
  // Between two measured sizes: between their times.
  const NcclTestsRow& a = log.rows[log.rows.size() / 2];
  const NcclTestsRow& b = log.rows[log.rows.size() / 2 + 1];
  const double t = model.time(CollectiveOp{CollectiveKind::kAllReduce, (a.bytes + b.bytes) / 2, g16});
  CHECK(t >= std::min(a.time, b.time));
  CHECK(t <= std::max(a.time, b.time));
  CHECK(model.uncovered() == 0);
  // A group the log did not measure (8 ranks on one node), and another collective: the NCCL model.
  const NcclCollectiveModel nccl(s.cluster, default_cost_params().network);
  const CollectiveOp other{CollectiveKind::kAllReduce, 1 << 26, h100_group(8)};
  CHECK(model.time(other) == nccl.time(other));
  const CollectiveOp gather{CollectiveKind::kAllGather, 1 << 26, g16};
  CHECK(model.time(gather) == nccl.time(gather));
  CHECK(model.uncovered() == 2);
}

TEST_CASE("a log that does not say its rank count needs --ranks", "[calibrate][profile][errors]") {
  const NcclTestsLog log = read_nccl_tests_log(test::data_dir() / "nccl-tests-logs" / "01-aws-p5-h100-1x8-allreduce.txt");
  CHECK_THROWS_WITH(collective_samples(log), Catch::Contains("--ranks"));
  const auto samples = collective_samples(log, 8, 1);
  REQUIRE_FALSE(samples.empty());
  CHECK(samples.front().ranks == 8);
  // Importing again replaces, not duplicates, the same sizes.
  GpuProfile p;
  merge_collectives(p, samples);
  merge_collectives(p, samples);
  CHECK(p.collectives.size() == samples.size());
}
