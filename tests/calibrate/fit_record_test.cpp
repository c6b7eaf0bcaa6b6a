// Fitted cost-model parameters change only by re-running the documented fit: every fitted section of the preset
// carries the digest of its fitted values, written by `orrery fit`, and the values must still match it.
#include <catch2/catch.hpp>

#include <fstream>

#include "calibrate/fit_record.h"
#include "test_support.h"

using namespace orrery;

TEST_CASE("fitted parameters in the cost-model preset match the digest their fit wrote", "[calibrate][fit]") {
  std::ifstream in(test::source_dir() / "hardware" / "presets" / "cost_model.json");
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  int fitted_sections = 0;
  for (const char* section : {"compute", "network"}) {
    const auto& s = doc.at("cost_model").at(0).at(section);
    if (!s.contains("fit")) continue;
    ++fitted_sections;
    INFO(section << ": " << s.at("fit").at("command").get<std::string>());
    CHECK(section_digest(s) == s.at("fit").at("digest").get<std::string>());
    for (const auto& name : s.at("fit").at("parameters")) {
      // Each fitted value says in its source that, and how, it was fitted.
      CHECK_THAT(s.at(name.get<std::string>()).at("source").get<std::string>(), Catch::Contains("orrery fit"));
    }
  }
  CHECK(fitted_sections == 2);
}

TEST_CASE("the digest changes when any fitted value changes", "[calibrate][fit]") {
  const std::string base = fitted_digest({{"a", 0.7029}, {"b", 12.5}});
  CHECK(fitted_digest({{"a", 0.7029}, {"b", 12.5}}) == base);
  CHECK(fitted_digest({{"a", 0.7030}, {"b", 12.5}}) != base);
  CHECK(fitted_digest({{"b", 12.5}, {"a", 0.7029}}) != base);
}
