#pragma once
// Observers of a finished prediction (STYLE.md rule 14): the readable summary, the JSON report of DESIGN.md, the
// Chrome-trace/Perfetto timeline and the timeline JSON. They read the Prediction and never change it.

#include <nlohmann/json.hpp>

#include <ostream>

#include "sim/predict.h"

namespace orrery::cli {

/// The report as DESIGN.md "Report" specifies it, plus model, plan and simulation details.
nlohmann::json report_json(const Prediction& prediction);

/// A readable summary of the report.
void print_summary(std::ostream& out, const Prediction& prediction);

/// Chrome trace (Trace Event Format, loadable in Perfetto): one process per rank, one thread per stream.
nlohmann::json chrome_trace(const Prediction& prediction);

/// The timeline of DESIGN.md: "tasks" with rank, stream, kind, name, stage, layer, microbatch, phase, start_s,
/// end_s, and "memory", each recorded rank's live bytes over time.
nlohmann::json timeline_json(const Prediction& prediction);

}  // namespace orrery::cli
