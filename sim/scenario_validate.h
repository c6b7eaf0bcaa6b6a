#pragma once
// The validator behind resolve() (sim/job/job.h): the cross-section rules of a scenario, applied in place to a
// scenario its caller owns. Only parse_scenario (on the scenario it is building) and resolve (on its own copy) call
// these; every other reader resolves a Job and leaves its scenario unchanged.

#include "sim/scenario.h"

namespace orrery {

/// The cross-section rules: derives dp (and the num_gpus and default global batch that follow), turns off sequence
/// parallelism at tp 1 and rope fusion with YaRN (with warnings), and checks divisibility, sizes and unmodelled
/// features, appending the validator's warnings to `s.warnings`. Errors: Error::invalid naming the field, the value
/// and the rule; Error::not_modelled ("not modelled yet: ...").
void validate_scenario(Scenario& s);

/// The rules of validate_scenario that do not depend on the parallel plan, in the same order (resolve_base).
/// Errors: as validate_scenario, for those rules.
void validate_plan_free(Scenario& s);

}  // namespace orrery
