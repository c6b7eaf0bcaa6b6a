#pragma once
// nccl-tests logs into a GPU profile's collective tables (`orrery calibrate import-nccl-tests`): each out-of-place
// row becomes a sample of its collective on the log's rank and node count, so that multi-node clusters are
// calibrated from the logs their operators already have, without running our code.

#include "calibrate/nccl_tests_log.h"
#include "hardware/gpu_profile.h"

namespace orrery {

/// The samples of one log. `ranks`/`nodes` override what the log says (0: from its "Rank N ... on HOST" lines).
/// Errors: Error::invalid naming the file when the collective or the rank count cannot be told.
std::vector<CollectiveSample> collective_samples(const NcclTestsLog& log, int ranks = 0, int nodes = 0);

/// Adds samples to `profile`, replacing any of the same collective, ranks, nodes and size.
void merge_collectives(GpuProfile& profile, const std::vector<CollectiveSample>& samples);

}  // namespace orrery
