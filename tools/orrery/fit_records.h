#pragma once
// `orrery fit records`: the global fit of the compute-side efficiencies to published training runs.

#include <string>
#include <vector>

namespace orrery::cli {

/// Fits, prints the fitted parameters and the in-sample and left-out errors, and writes them when `write` is set.
/// Returns the process exit status.
int fit_records(const std::vector<std::string>& paths, const std::vector<std::string>& exclude_prefixes,
                const std::vector<std::string>& skip, const std::string& write);

/// For each source prefix: fit without it, then score its records (the leave-one-source-out MAPE).
int leave_one_source_out(const std::vector<std::string>& paths, const std::vector<std::string>& skip);

/// The same per GPU generation (GpuSpec::architecture: ampere, hopper, blackwell): how the fit carries to a
/// generation it did not see.
int leave_one_generation_out(const std::vector<std::string>& paths, const std::vector<std::string>& skip);

}  // namespace orrery::cli
