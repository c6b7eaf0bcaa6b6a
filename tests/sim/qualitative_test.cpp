// Qualitative facts the published runs show, which the model must reproduce from physics (validation issue).
#include <catch2/catch.hpp>

#include "test_support.h"

using namespace orrery;

namespace {

double iteration(const char* name) {
  return predict(load_scenario(test::validation_dir() / (std::string(name) + ".json"))).report.iteration_time;
}

}  // namespace

TEST_CASE("sequence parallelism with selective recompute beats full recompute by about the published margin",
          "[sim][qualitative][slow]") {
  // Korthikanti et al. (arXiv:2205.05198) Table 5: full recompute takes 1.29x-1.32x as long as sequence
  // parallelism with selective recompute, for 22B to 1T.
  for (const char* size : {"22b", "175b", "530b", "1t"}) {
    INFO(size);
    const std::string full = std::string("kor22-") + size + "-full-recompute";
    const std::string selective = std::string("kor22-") + size + "-seqpar-selective";
    const double published = load_scenario(test::validation_dir() / (full + ".json")).expect.iteration_time_s.value() /
                             load_scenario(test::validation_dir() / (selective + ".json")).expect.iteration_time_s.value();
    const double predicted = iteration(full.c_str()) / iteration(selective.c_str());
    CHECK(predicted > 1.15);                                  // selective + SP is clearly faster
    CHECK(predicted == Approx(published).epsilon(0.15));      // by about the published margin
  }
}

// SC21 Table 2: at 1536 GPUs and global batch 1536, PTD-P (TP 8 x PP 12) reaches 141 TFLOP/s per GPU and ZeRO-3 (DeepSpeed
// 0.3, spring 2021) 44, so ZeRO-3's iteration takes 3.2x as long. The model gets there from how that ZeRO-3 worked
// (sim/lower/sharded_params.h): per-parameter gathers after a device synchronize, and one copy launch per rank and
// chunk in torch.distributed's list-based collectives, which grows with the data-parallel size.
TEST_CASE("at 1536 GPUs PTD-P is well ahead of ZeRO-3 for GPT-3 175B (SC21 Table 2)",
          "[sim][qualitative]") {
  const double ratio = iteration("sc21-t2-zero3-175b-1536gpu") / iteration("sc21-t2-ptdp-175b-1536gpu");
  CHECK(ratio > 1.5);
}
