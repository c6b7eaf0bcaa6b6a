#include "tools/orrery/html_report.h"

#include <fmt/format.h>

#include <cctype>
#include <string_view>
#include <vector>

#include "tools/orrery/report_figures.h"
#include "tools/orrery/report_rows.h"
#include "tools/orrery/report_summary.h"
#include "tools/orrery/web_scripts.h"

namespace orrery::cli {

using nlohmann::json;

namespace {

// Keeps every console error and warning, uncaught exception and unhandled rejection in <html data-problems>, one
// per line, before the libraries load, so that a test reading the DOM sees them (html_report.h).
constexpr std::string_view kConsoleHook = R"js(
(function () {
  var problems = [];
  function keep(kind, args) {
    var text = Array.prototype.map.call(args, function (a) {
      return a && a.stack ? String(a.stack) : String(a);
    }).join(' ');
    problems.push(kind + ': ' + text);
    document.documentElement.dataset.problems = problems.join('\n');
  }
  ['error', 'warn'].forEach(function (level) {
    var original = console[level];
    console[level] = function () { keep(level, arguments); original.apply(console, arguments); };
  });
  window.addEventListener('error', function (e) { keep('uncaught', [e.message]); });
  window.addEventListener('unhandledrejection', function (e) { keep('unhandled rejection', [e.reason]); });
})();
)js";

// Draws each figure into its container and, once all have settled, writes <body data-plots data-failed>.
constexpr std::string_view kDraw = R"js(
(function () {
  var figures = JSON.parse(document.getElementById('orrery-figures').textContent);
  var drawn = [], failed = [];
  var options = {renderer: 'svg', actions: {export: true, source: false, compiled: false, editor: false}};
  var jobs = figures.map(function (f) {
    return vegaEmbed('#plot-' + f.id, f.spec, options).then(
      function () { drawn.push(f.id); },
      function (e) { failed.push(f.id); console.error('orrery: plot ' + f.id + ' failed: ' + e); });
  });
  Promise.allSettled(jobs).then(function () {
    document.body.dataset.failed = failed.join(' ');
    document.body.dataset.plots = 'drawn:' + drawn.length + '/' + figures.length;
  });
})();
)js";

constexpr std::string_view kStyle = R"css(
body { font: 15px/1.45 system-ui, sans-serif; color: #222; max-width: 1320px; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin: 0 0 0.4em; }
.subtitle { color: #555; margin-top: 0; }
table.summary { border-collapse: collapse; margin: 0.5em 0 1em; }
table.summary td { padding: 0.25em 1.2em 0.25em 0; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
table.summary td.key { color: #888; font: 12px monospace; }
.figures { display: flex; flex-wrap: wrap; gap: 1.5em 2.5em; }
figure { margin: 0; width: 620px; }
figcaption { color: #444; font-size: 0.9em; margin: 0.3em 0; }
.missing { color: #a33; }
.warnings li { color: #a60; }
a.csv { font-size: 0.85em; }
footer { margin-top: 2em; color: #666; font-size: 0.85em; }
)css";

std::string escape_html(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON as the text of a <script> element: every '<' escaped (it occurs only inside strings in JSON), so neither
// "</script>" nor "<!--" can end or change the element.
std::string script_json(const json& value) {
  std::string out;
  for (const char c : value.dump(-1, ' ', false, json::error_handler_t::replace)) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// A data: URL of `text` (percent-encoded but for RFC 3986's unreserved characters).
std::string data_url(std::string_view media_type, std::string_view text) {
  std::string out = fmt::format("data:{};charset=utf-8,", media_type);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

// Escaped text whose `quoted` spans become <code> (the figures' reasons name JSON keys so).
std::string with_code(std::string_view text) {
  std::string out;
  bool open = false;
  for (const char c : escape_html(text)) {
    if (c == '`') {
      out += open ? "</code>" : "<code>";
      open = !open;
    } else {
      out += c;
    }
  }
  return open ? out + "</code>" : out;
}

std::string figure_html(const Figure& f) {
  std::string out = fmt::format("<figure id=\"figure-{}\">\n<h2>{}</h2>\n", f.id, escape_html(f.title));
  if (!f.missing.empty()) {
    return out + fmt::format("<p class=\"missing\">Not drawn: {}.</p>\n</figure>\n", with_code(f.missing));
  }
  std::string note;
  if (f.rows_left_out > 0) {
    note = fmt::format(" {} entr{} of the input left out (a field missing or not a number).", f.rows_left_out,
                       f.rows_left_out == 1 ? "y" : "ies");
  }
  out += fmt::format("<div class=\"plot\" id=\"plot-{}\"></div>\n", f.id);
  out += fmt::format("<figcaption>{}{}</figcaption>\n", escape_html(f.caption), escape_html(note));
  out += fmt::format("<a class=\"csv\" download=\"{}.csv\" href=\"{}\">CSV of this figure ({} rows)</a>\n", f.id,
                     data_url("text/csv", figure_csv(f)), f.rows.size());
  return out + "</figure>\n";
}

std::string summary_html(const std::vector<report::SummaryRow>& rows) {
  std::string out = "<table class=\"summary\">\n";
  for (const report::SummaryRow& r : rows) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"key\">{}</td></tr>\n", escape_html(r.label),
                       escape_html(r.value), escape_html(r.key));
  }
  return out + "</table>\n";
}

std::string warnings_html(const json& report) {
  const json* warnings = report::find(report, "warnings");
  if (!warnings || !warnings->is_array() || warnings->empty()) return "";
  std::string out = "<ul class=\"warnings\">\n";
  for (const json& w : *warnings) {
    out += "<li>" + escape_html(w.is_string() ? w.get<std::string>() : w.dump()) + "</li>\n";
  }
  return out + "</ul>\n";
}

std::string scripts_html() {
  std::string out;
  for (const WebScript& s : report_web_scripts()) {
    out += fmt::format("<script>/* {} {} */\n", s.package, s.version);
    out.append(s.text);
    out += "\n</script>\n";
  }
  return out;
}

std::string footer_html(std::string_view command) {
  std::string libraries;
  std::string licences;
  for (const WebScript& s : report_web_scripts()) {
    libraries += fmt::format("{}{} {}", libraries.empty() ? "" : ", ", s.package, s.version);
    licences += fmt::format("<h3>{} {}</h3>\n<pre>{}</pre>\n", s.package, s.version, escape_html(s.licence));
  }
  return fmt::format("<footer>\n<p>Written by <code>{}</code>. Plots drawn in the page by {}, inlined: the file "
                     "needs no network.</p>\n<details><summary>Third-party licences</summary>\n{}</details>\n"
                     "</footer>\n",
                     command, libraries, licences);
}

struct Page {
  std::string title;
  std::string subtitle;
  std::string command;      // "orrery plan"
  std::string json_name;    // download name of the input JSON
  std::string summary;      // HTML of the summary section's body
  std::vector<Figure> figures;
};

std::string page_html(const Page& page, const json& input) {
  json drawn = json::array();
  std::string skipped;
  std::string figures;
  for (const Figure& f : page.figures) {
    figures += figure_html(f);
    if (f.missing.empty()) {
      drawn.push_back({{"id", f.id}, {"spec", f.spec}});
    } else {
      skipped += (skipped.empty() ? "" : ", ") + f.title;
    }
  }
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<title>{}</title>\n<style>{}</style>\n", escape_html(page.title), kStyle);
  out += fmt::format("<script>{}</script>\n", kConsoleHook);
  out += scripts_html();
  out += "</head>\n<body>\n";
  out += fmt::format("<h1>{}</h1>\n<p class=\"subtitle\">{}</p>\n", escape_html(page.title),
                     escape_html(page.subtitle));
  out += "<section id=\"summary\">\n" + page.summary;
  if (!skipped.empty()) out += "<p class=\"missing\">Not drawn: " + escape_html(skipped) + " (reasons below).</p>\n";
  out += fmt::format("<p>Data: <a id=\"report-json\" download=\"{}\" href=\"{}\">the report's JSON</a>; each "
                     "figure's CSV below it.</p>\n</section>\n",
                     escape_html(page.json_name), data_url("application/json", input.dump(1, '\t', false,
                                                                                        json::error_handler_t::replace)));
  out += "<section class=\"figures\">\n" + figures + "</section>\n";
  out += footer_html(page.command);
  out += fmt::format("<script type=\"application/json\" id=\"orrery-report\">{}</script>\n", script_json(input));
  out += fmt::format("<script type=\"application/json\" id=\"orrery-figures\">{}</script>\n", script_json(drawn));
  out += fmt::format("<script>{}</script>\n</body>\n</html>\n", kDraw);
  return out;
}

// "llama3.1-405b · dgx-h100 · 16,384 GPUs" from whichever of the keys are strings.
std::string subtitle(const json& report, std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* key : keys) {
    if (const auto t = report::text(report, key)) out += (out.empty() ? "" : " · ") + *t;
  }
  return out;
}

}  // namespace

std::string plan_report_html(const json& plan) {
  const std::string name = report::text(plan, "scenario").value_or("plan");
  Page page{"Capacity plan: " + name, subtitle(plan, {"model", "cluster", "gpu"}), "orrery plan",
            name + "-plan.json", summary_html(report::plan_summary(plan)), plan_figures(plan)};
  return page_html(page, plan);
}

std::string predict_report_html(const json& prediction) {
  const std::string name = report::text(prediction, "name").value_or("prediction");
  Page page{"Prediction: " + name, subtitle(prediction, {"model", "cluster"}), "orrery predict",
            name + "-prediction.json",
            summary_html(report::predict_summary(prediction)) + warnings_html(prediction),
            predict_figures(prediction)};
  return page_html(page, prediction);
}

}  // namespace orrery::cli
