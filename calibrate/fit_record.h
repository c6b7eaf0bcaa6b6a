#pragma once
// How fitted parameters are stored: their values in the cost-model preset with a note saying how they were
// fitted, and per fitted section a record {"command", "parameters", "digest"}. The digest covers the fitted values,
// so a value edited by hand no longer matches it (a test checks this): a fitted parameter changes only by
// re-running the documented fit.

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace orrery {

/// FNV-1a (64-bit) over "name=value;" of each parameter, values rounded to 4 decimals, as hex text.
std::string fitted_digest(const std::vector<std::pair<std::string, double>>& values);

/// The digest of the values a section of the preset holds now, for the parameters its fit record lists.
std::string section_digest(const nlohmann::ordered_json& section);

/// Writes `values` (rounded to 4 decimals) into cost_model[0].<section> of the preset file with `note` as their
/// source, and the section's fit record; the file is replaced whole (models/output_file.h), never left half
/// written. Errors: Error::io when the file cannot be read or written.
void write_fitted_values(const std::string& file, const std::string& section,
                         const std::vector<std::pair<std::string, double>>& values, const std::string& note,
                         const std::string& command);

}  // namespace orrery
