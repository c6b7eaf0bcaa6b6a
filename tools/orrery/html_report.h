#pragma once
// The self-contained HTML reports of `orrery plan --report FILE.html` and `orrery predict --report FILE.html`: one
// page with a summary table, the figures of tools/orrery/report_figures.h drawn by Vega-Lite (inlined from
// tools/orrery/web_scripts.h, so the page opens with no network), each with its caption and a CSV download, and the
// whole input JSON embedded and offered for download. An observer of finished results (ARCHITECTURE.md rule 14).
//
// The page reports whether it drew: once every plot has settled, <body> carries data-plots="drawn:N/M" (M: the
// figures with data) and data-failed (the ids of plots that threw, space-separated); every console error or
// warning, uncaught exception and unhandled rejection is also kept in <html data-problems="..."> (tests read both,
// tests/tools/report_browser_test.py).

#include <nlohmann/json.hpp>

#include <string>

namespace orrery::cli {

/// The page for `orrery plan`'s JSON (keys as report_figures.h's plan_figures reads them, plus the summary's:
/// scenario, model, cluster, gpu, num_gpus, plan, tokens, steps, iteration_time_s, tokens_per_s, mfu,
/// time_to_train_s, effective_time_to_train_s, ettr, gpu_hours, energy_J, energy.average_power_W, cost.*_usd).
/// Absent or mistyped keys leave their summary row or figure out, the page saying which figures are not drawn and
/// why; never throws on the JSON's content. Returns UTF-8 HTML of about 900 kB (the inlined library).
std::string plan_report_html(const nlohmann::json& plan);

/// The page for one prediction (`orrery predict`'s JSON report, ARCHITECTURE.md "Report", with an optional "energy"):
/// its summary, the breakdown, memory per stage and the power figures. Same guarantees as plan_report_html.
std::string predict_report_html(const nlohmann::json& prediction);

}  // namespace orrery::cli
