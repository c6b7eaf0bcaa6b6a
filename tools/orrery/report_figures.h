#pragma once
// The figures of the HTML reports (tools/orrery/html_report.h): each a table of rows taken from a finished plan's or
// prediction's JSON, the Vega-Lite spec that draws it (the rows inline) and its CSV. An observer of finished results
// (ARCHITECTURE.md rule 14): it reads the JSON and computes nothing the JSON does not hold, but unit changes for
// display (seconds to days, bytes to GiB), which the specs do, so the CSV keeps the JSON's units.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace orrery::cli {

/// One figure of a report.
struct Figure {
  std::string id;       // HTML id and CSV file stem: lower case, digits and '_' ("time_to_train")
  std::string title;    // heading shown above the plot
  std::string caption;  // what the plot shows and where its numbers come from
  /// CSV columns, in order: the JSON's own key names and units (`num_gpus`, `time_to_train_s`, bytes, watts).
  std::vector<std::string> columns;
  /// The rows (an array of objects keyed by `columns`; a number, a string, or absent), in the JSON's order.
  nlohmann::json rows = nlohmann::json::array();
  /// A Vega-Lite 6 spec with `rows` inline; null when the figure is not drawn.
  nlohmann::json spec;
  /// Why the figure is not drawn (its data is absent or unusable); empty when it is drawn.
  std::string missing;
  /// Rows of the input left out because a field the figure needs is absent, not a finite number or not a string.
  int rows_left_out = 0;
};

/// The figures of `orrery plan`'s page, in page order, drawn or not: time to train and cost against GPU count,
/// strong and weak scaling efficiency and ETTR against GPU count (all from "sweep", coloured by "gpu"), ETTR against
/// the checkpoint interval ("goodput.vs_checkpoint_interval", with "goodput.checkpoint.interval_s" marked), the
/// step's time breakdown ("breakdown_s"), memory per pipeline stage ("memory.per_stage", the GPU's capacity
/// "gpu_memory_bytes" as a rule) and power per stage and by state ("energy.per_stage", "energy.power_by_state_W").
/// Input: the plan JSON (keys as `orrery plan --json` writes them; seconds, bytes, watts, US dollars). A key that is
/// absent or of the wrong type leaves its figure undrawn with the reason in `missing`, or its row out; never throws
/// on the JSON's content.
std::vector<Figure> plan_figures(const nlohmann::json& plan);

/// The figures of `orrery predict --report`'s page: the breakdown, memory per stage (capacity
/// "memory.capacity_bytes") and the two power figures, read as plan_figures reads them.
std::vector<Figure> predict_figures(const nlohmann::json& prediction);

/// The figure's rows as CSV (RFC 4180: a header of `columns`, one line per row, "\r\n" line ends, a field quoted
/// when it holds a comma, a quote or a line end; numbers in their shortest exact form, absent fields empty).
std::string figure_csv(const Figure& figure);

}  // namespace orrery::cli
