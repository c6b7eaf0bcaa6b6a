#pragma once
// The summary table at the top of the HTML reports (tools/orrery/html_report.h): the key numbers of a plan or a
// prediction, formatted for reading (days, GiB, MWh, US dollars), each with the JSON key it comes from.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace orrery::cli::report {

struct SummaryRow {
  std::string label;  // "time to train"
  std::string value;  // "54.2 days"
  std::string key;    // the JSON key shown: "time_to_train_s"
};

/// The rows for `orrery plan`'s JSON, in reading order; keys absent or not of their type are left out.
std::vector<SummaryRow> plan_summary(const nlohmann::json& plan);

/// The rows for one prediction's JSON report.
std::vector<SummaryRow> predict_summary(const nlohmann::json& prediction);

/// A number with an SI prefix and unit, three significant digits: (2.95e13, "Wh") -> "29.5 TWh"; (512, "W") ->
/// "512 W". Magnitudes outside 1e-3..1e18 are printed in exponent form.
std::string si(double value, const std::string& unit);

}  // namespace orrery::cli::report
