#pragma once
// The browser builds of the plotting library that the HTML reports inline (tools/orrery/html_report.h), compiled
// into the binary from tools/report-web/node_modules by cmake/EmbedWeb.cmake, so a report opens with no network.

#include <span>
#include <string_view>

namespace orrery::cli {

/// One embedded script: its npm package name, the version pinned in tools/report-web/package-lock.json, its
/// minified text (without the source-map comment) and its licence text.
struct WebScript {
  std::string_view package;
  std::string_view version;
  std::string_view text;
  std::string_view licence;
};

/// Vega, Vega-Lite and vega-embed, in the order a page loads them (each needs the ones before it).
std::span<const WebScript> report_web_scripts();

}  // namespace orrery::cli
