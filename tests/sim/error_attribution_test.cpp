// `validate --explain`'s split of a record's error over the parts of its step (sim/validation.h), by hand.
#include <catch2/catch.hpp>

#include "sim/validation.h"

using namespace orrery;

TEST_CASE("validate --explain splits an error over the parts in proportion to their variances", "[sim][validation]") {
  // 10 s of compute (sigma 5% = 0.5 s), 1 s waiting for the host (30% = 0.3 s), 2 s of exposed communication
  // (15% = 0.3 s), 1 s of bubble (10% = 0.1 s): variances 0.25, 0.09, 0.09, 0.01 (sum 0.44). A prediction 0.88 s
  // too fast gives compute -0.5 s, host and communication -0.18 s each, bubble -0.02 s; compute dominates.
  Breakdown b;
  b.compute = 9.5;
  b.optimizer = 0.5;
  b.host = 1.0;
  b.exposed_tp_comm = 1.5;
  b.exposed_dp_comm = 0.5;
  b.bubble = 1.0;
  const ErrorAttribution a = attribute_error(b, 14.0, 14.88);
  CHECK(a.error == Approx(-0.88));
  CHECK(a.allotted[0] == Approx(-0.5));
  CHECK(a.allotted[1] == Approx(-0.18));
  CHECK(a.allotted[2] == Approx(-0.18));
  CHECK(a.allotted[3] == Approx(-0.02));
  CHECK(a.dominant == ErrorPart::kCompute);
  // A host-bound step: 2 s of compute and 3 s of waiting for the host (variances 0.01 and 0.81): the host dominates.
  Breakdown host_bound;
  host_bound.compute = 2.0;
  host_bound.host = 3.0;
  const ErrorAttribution h = attribute_error(host_bound, 5.0, 6.0);
  CHECK(h.dominant == ErrorPart::kHost);
  CHECK(h.allotted[1] == Approx(-0.81 / 0.82));
}
