#pragma once
// `orrery fit records`: the global fit of the compute-side efficiencies to published training runs.

#include <string>
#include <vector>

namespace orrery::cli {

/// Fits, prints the fitted parameters and the in-sample and left-out errors, and writes them when `write` is set.
/// Returns the process exit status.
int fit_records(const std::vector<std::string>& paths, const std::vector<std::string>& exclude_prefixes,
                const std::string& write);

}  // namespace orrery::cli
