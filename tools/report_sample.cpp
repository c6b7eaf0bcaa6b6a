// orrery-report-sample KIND INPUT.json OUTPUT.html [CSV_DIR]: writes the HTML report of a plan's (KIND `plan`) or a
// prediction's (KIND `predict`) JSON as `orrery plan --report` and `orrery predict --report` do, and with CSV_DIR
// each drawn figure's CSV there as ID.csv. For the report's browser test (tests/tools/report_browser_test.py) and
// for looking at a report's page without running a plan. Exit 2 on bad arguments or unreadable input.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "tools/orrery/html_report.h"
#include "tools/orrery/report_figures.h"

namespace {

int usage(const std::string& why) {
  std::cerr << "orrery-report-sample: " << why << "\nusage: orrery-report-sample plan|predict INPUT.json OUTPUT.html [CSV_DIR]\n";
  return 2;
}

bool write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) return usage("expected 3 or 4 arguments");
  const std::string kind = argv[1];
  if (kind != "plan" && kind != "predict") return usage("KIND must be plan or predict, not " + kind);
  std::ifstream in(argv[2]);
  const nlohmann::json input = nlohmann::json::parse(in, nullptr, false);
  if (!in || input.is_discarded()) return usage(std::string("cannot read JSON from ") + argv[2]);
  const bool plan = kind == "plan";
  if (!write(argv[3], plan ? orrery::cli::plan_report_html(input) : orrery::cli::predict_report_html(input))) {
    return usage(std::string("cannot write ") + argv[3]);
  }
  if (argc == 5) {
    const std::filesystem::path dir = argv[4];
    std::filesystem::create_directories(dir);
    for (const auto& f : plan ? orrery::cli::plan_figures(input) : orrery::cli::predict_figures(input)) {
      if (f.missing.empty() && !write(dir / (f.id + ".csv"), orrery::cli::figure_csv(f))) {
        return usage("cannot write " + (dir / (f.id + ".csv")).string());
      }
    }
  }
  return 0;
}
