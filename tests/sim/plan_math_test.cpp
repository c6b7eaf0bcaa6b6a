// Capacity planning's closed forms (sim/plan/): time to train against Narayanan et al.'s published estimates
// (SC21, arXiv:2104.04473, Section 5.1), and the optimum checkpoint interval against Young's formula by hand and
// Daly's published figures (FGCS 22(3), 2006, Figures 3-5).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "models/error.h"
#include "sim/plan/checkpoint_interval.h"
#include "sim/plan/time_to_train.h"

using namespace orrery;

TEST_CASE("time to train at a published per-GPU rate is SC21's 8TP/(nX)", "[sim][plan]") {
  constexpr double kDay = 86400.0;
  // GPT-3 175B, 300 billion tokens on 1,024 A100s at 140 TFLOP/s each, with recomputation: "about 34 days".
  const double gpt3 = time_to_train_s(300e9, tokens_per_s_at(175e9, true, 1024, 140e12));
  CHECK(gpt3 == Approx(8.0 * 300e9 * 175e9 / (1024 * 140e12)));
  CHECK(gpt3 / kDay == Approx(33.9).margin(0.05));
  // The 1-trillion-parameter model (Table 1: 1,008 billion), 450 billion tokens on 3,072 A100s at 163 TFLOP/s:
  // "about 84 days".
  const double trillion = time_to_train_s(450e9, tokens_per_s_at(1008e9, true, 3072, 163e12));
  CHECK(trillion / kDay == Approx(83.9).margin(0.05));
  // Without recomputation a token costs 6P, so the same rate trains in three quarters of the time.
  CHECK(time_to_train_s(300e9, tokens_per_s_at(175e9, false, 1024, 140e12)) == Approx(0.75 * gpt3));
  CHECK(gpu_hours(1024, gpt3) == Approx(1024 * gpt3 / 3600));
}

TEST_CASE("the optimum checkpoint interval is Young's sqrt(2 delta M) to first order and Daly's figures to higher",
          "[sim][plan]") {
  // Young by hand: a 60 s checkpoint and a 3-hour MTBF give sqrt(2 x 60 x 10800) = 1138.4 s.
  CHECK(young_checkpoint_interval_s(60, 10800) == Approx(std::sqrt(2.0 * 60 * 10800)));
  CHECK(young_checkpoint_interval_s(60, 10800) == Approx(1138.4).margin(0.1));
  // Daly's Figures 3, 4 and 5: delta 5 min with M 24 h, 6 h and 15 min: 117, 57 and 9.1 minutes.
  CHECK(daly_checkpoint_interval_s(300, 24 * 3600) / 60 == Approx(117).margin(0.5));
  CHECK(daly_checkpoint_interval_s(300, 6 * 3600) / 60 == Approx(57).margin(0.5));
  CHECK(daly_checkpoint_interval_s(300, 15 * 60) / 60 == Approx(9.1).margin(0.05));
  // Daly's is below Young's once the checkpoint costs something (it subtracts delta, adds less), and is M once the
  // checkpoint takes two failure intervals or more.
  CHECK(daly_checkpoint_interval_s(300, 24 * 3600) < young_checkpoint_interval_s(300, 24 * 3600));
  CHECK(daly_checkpoint_interval_s(7200, 3600) == 3600);
  CHECK(daly_checkpoint_interval_s(0, 3600) == 0);
}

TEST_CASE("planning inputs outside their ranges are refused with the value", "[sim][plan][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(time_to_train_s(1e12, 0), Catch::Contains("tokens_per_s (0") && Catch::Contains("above 0"));
  CHECK_THROWS_AS(time_to_train_s(nan, 1e6), Error);
  CHECK_THROWS_AS(time_to_train_s(-1, 1e6), Error);
  CHECK_THROWS_WITH(tokens_per_s_at(-5, true, 8, 1e15), Catch::Contains("parameters (-5"));
  CHECK_THROWS_AS(tokens_per_s_at(1e9, true, 0, 1e15), Error);
  CHECK_THROWS_WITH(young_checkpoint_interval_s(60, 0), Catch::Contains("mean time between failures"));
  CHECK_THROWS_AS(daly_checkpoint_interval_s(-1, 3600), Error);
  CHECK_THROWS_AS(daly_checkpoint_interval_s(60, std::numeric_limits<double>::infinity()), Error);
  CHECK_THROWS_AS(gpu_hours(8, nan), Error);
}
