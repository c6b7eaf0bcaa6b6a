// The nccl-tests reader on real logs (tests/data/nccl-tests-logs, copied from the brief's shared data), and the
// collective model held against them: bus bandwidth at 64 MB and above within 15% of the single-node logs and 25%
// of the multi-node ones (the validation issue's bars); the error at 1 MB is printed for every log.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "calibrate/collective_fit.h"
#include "calibrate/nccl_tests_log.h"
#include "test_support.h"

using namespace orrery;

namespace {

std::filesystem::path logs() { return test::data_dir() / "nccl-tests-logs"; }

}  // namespace

TEST_CASE("the reader handles every log format in the shared set", "[calibrate][nccl-tests]") {
  // Launcher prefixes ([1,0]<stdout>:), a root column, no root column, N/A in #wrong, NCCL INFO lines.
  const NcclTestsLog h100 = read_nccl_tests_log(logs() / "01-aws-p5-h100-1x8-allreduce.txt");
  CHECK(h100.kind == CollectiveKind::kAllReduce);
  CHECK(h100.rows.size() == 32);
  CHECK(h100.rows.back().bytes == 17179869184LL);
  CHECK(to_GB_s(h100.rows.back().bus_bandwidth) == Approx(483.05));
  CHECK(to_us(h100.rows.back().time) == Approx(62239));
  const NcclTestsLog a2a = read_nccl_tests_log(logs() / "05-superbench-a100-1x8-alltoall.txt");
  CHECK(a2a.kind == CollectiveKind::kAllToAll);
  CHECK(a2a.ranks == 8);
  CHECK(a2a.nodes == 1);
  CHECK(to_GB_s(a2a.rows.back().bus_bandwidth) == Approx(224.31));  // out-of-place column
  const NcclTestsLog eight = read_nccl_tests_log(logs() / "10-h100-8x8-ib-allreduce.txt");
  CHECK(eight.ranks == 64);
  CHECK(eight.nodes == 8);
  CHECK(eight.rows.size() == 14);
  CHECK_THROWS_WITH(parse_nccl_tests_log("# nothing here\n", "empty.txt"), Catch::Contains("no result rows"));
}

TEST_CASE("collective model against the nccl-tests logs", "[calibrate][nccl-tests][accuracy]") {
  const auto samples = load_collective_samples(logs() / "manifest.json", 1 << 20);
  const NetworkParams& params = default_cost_params().network;
  std::map<std::string, double> worst_large, at_1mb;
  for (const BusBandwidthSample& s : samples) {
    const double error = 100.0 * (predicted_bus_bandwidth(s, params) / s.measured - 1.0);
    if (s.op.bytes == (1 << 20)) at_1mb[s.log] = error;
    if (s.op.bytes >= (64 << 20) && std::fabs(error) > std::fabs(worst_large[s.log])) worst_large[s.log] = error;
  }
  REQUIRE(worst_large.size() == 8);
  for (const auto& [log, error] : worst_large) {
    const bool single_node = log.find("1x8") != std::string::npos;
    INFO(log << ": worst error at >= 64 MB " << error << "%, at 1 MB " << at_1mb[log] << "%");
    CHECK(std::fabs(error) <= (single_node ? 15.0 : 25.0));
    WARN(log << ": error at 1 MB " << at_1mb[log] << "%, worst at >= 64 MB " << error << "%");
  }
}

TEST_CASE("small messages inside one node: NCCL's step latencies and the pipeline fill", "[calibrate][nccl-tests][accuracy]") {
  // From 1 KB to 1 MB a call is mostly latency; before the pipeline fill was sized by the message (a flat 51 us per
  // call, fitted on large messages only), an 8-GPU H100 all-reduce of 1 KB was predicted at 66 us against the 16 us
  // measured. Every single-node log, every size in that range, within 40% in bus bandwidth.
  const auto samples = load_collective_samples(logs() / "manifest.json", 1 << 30, 1 << 10);
  const NetworkParams& params = default_cost_params().network;
  std::map<std::string, double> worst;
  for (const BusBandwidthSample& s : samples) {
    if (s.op.placement.tier != Tier::kNvlink || s.op.bytes > (1 << 20)) continue;
    const double error = 100.0 * (predicted_bus_bandwidth(s, params) / s.measured - 1.0);
    if (std::fabs(error) > std::fabs(worst[s.log])) worst[s.log] = error;
  }
  REQUIRE(worst.size() == 5);
  for (const auto& [log, error] : worst) {
    INFO(log << ": worst error from 1 KB to 1 MB " << error << "%");
    CHECK(std::fabs(error) <= 40.0);
  }
}
