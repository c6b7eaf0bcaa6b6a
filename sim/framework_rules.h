#pragma once
// The rules of each training.framework other than megatron (`pytorch`, `deepspeed-0.3`, `fsdp2`,
// `megatron-deepspeed`): what the framework cannot run is refused with an error naming the field, the value and
// the rule; what it runs but Orrery does not lower is refused as not modelled yet.

#include "sim/scenario.h"

namespace orrery {

/// Checks the scenario against its framework's rules and sets the switches a framework fixes (megatron-deepspeed's
/// DeepSpeed defaults for Megatron's overlap switches). Errors: Error::invalid or Error::not_modelled.
void check_framework_rules(Scenario& s);

}  // namespace orrery
