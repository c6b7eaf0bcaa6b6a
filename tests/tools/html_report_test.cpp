// The HTML report's figures, CSV and page (tools/orrery/html_report.h, report_figures.h): CSV by RFC 4180, bad or
// missing JSON leaving figures out with a reason instead of throwing, and page text that cannot break out of its
// elements. Whether the page draws is tests/tools/report_browser_test.py's job (a browser).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "tools/orrery/html_report.h"
#include "tools/orrery/report_figures.h"
#include "tools/orrery/report_summary.h"

using nlohmann::json;
using orrery::cli::Figure;

namespace {

// A copy: the callers pass the figures as a temporary.
Figure figure(const std::vector<Figure>& figures, const std::string& id) {
  for (const Figure& f : figures) {
    if (f.id == id) return f;
  }
  FAIL("no figure " << id);
  return {};
}

}  // namespace

TEST_CASE("a figure's CSV follows RFC 4180: header, CRLF, quoted commas and quotes, empty absent fields",
          "[tools][report]") {
  Figure f;
  f.columns = {"name", "x"};
  f.rows = json::array({{{"name", "a,b"}, {"x", 1.5}}, {{"name", "say \"hi\""}, {"x", 4096}}, {{"name", "c"}}});
  // Written by hand from RFC 4180 sections 2.1-2.7; 4096 keeps its integer form, 1.5 its shortest form.
  CHECK(orrery::cli::figure_csv(f) == "name,x\r\n\"a,b\",1.5\r\n\"say \"\"hi\"\"\",4096\r\nc,\r\n");
}

TEST_CASE("no plan figure is drawn from an empty or non-object report, and the page still renders",
          "[tools][report]") {
  const json empty = json::object();
  for (const json& bad : {empty, json::array(), json(3.5), json(nullptr), json("plan")}) {
    const std::vector<Figure> figures = orrery::cli::plan_figures(bad);
    REQUIRE(figures.size() == 9);
    for (const Figure& f : figures) {
      INFO(f.id << " of " << bad.dump());
      CHECK_FALSE(f.missing.empty());
      CHECK(f.spec.is_null());
    }
    CHECK_NOTHROW(orrery::cli::plan_report_html(bad));
    CHECK_NOTHROW(orrery::cli::predict_report_html(bad));
  }
  // The sweep figures say what adds a sweep.
  CHECK(figure(orrery::cli::plan_figures(empty), "cost").missing.find("--num-gpus") != std::string::npos);
}

TEST_CASE("sweep points without a usable field are left out and counted while the rest are drawn", "[tools][report]") {
  json plan = {{"gpu", "H100"}};
  plan["sweep"] = json::array({{{"num_gpus", 4096}, {"cost_usd", 1e8}},                    // kept, gpu from the top
                               {{"cost_usd", 2e8}},                                        // no num_gpus
                               {{"num_gpus", "many"}, {"cost_usd", 3e8}},                  // not a number
                               {{"num_gpus", 8192}, {"cost_usd", std::nan("")}},           // not finite
                               {{"num_gpus", 16384}, {"cost_usd", 4e8}, {"gpu", "B200"}},  // kept
                               "a string"});                                               // not an object
  const Figure cost = figure(orrery::cli::plan_figures(plan), "cost");
  CHECK(cost.missing.empty());
  CHECK(cost.rows_left_out == 4);
  REQUIRE(cost.rows.size() == 2);
  CHECK(cost.rows[0]["gpu"] == "H100");
  CHECK(cost.rows[1]["gpu"] == "B200");
  CHECK(cost.spec["data"]["values"] == cost.rows);
  // A sweep where no point is usable is not drawn, and says how many entries it had.
  plan["sweep"] = json::array({{{"cost_usd", 1.0}}, {{"num_gpus", 8}}});
  const Figure none = figure(orrery::cli::plan_figures(plan), "cost");
  CHECK(none.spec.is_null());
  CHECK(none.missing.find("none of the 2 entries of `sweep`") != std::string::npos);
}

TEST_CASE("the memory figure draws the GPU's capacity as a rule only when the report gives it", "[tools][report]") {
  json report;
  report["memory"]["per_stage"] = json::array({{{"stage", 0}, {"weights", 1e9}, {"activations", 2e9}}});
  CHECK(figure(orrery::cli::predict_figures(report), "memory").spec["layer"].size() == 1);
  report["memory"]["capacity_bytes"] = 85899345920.0;
  const json with = figure(orrery::cli::predict_figures(report), "memory").spec;
  REQUIRE(with["layer"].size() == 2);
  // 85,899,345,920 bytes is 80 GiB exactly (80 x 2^30).
  CHECK(with["layer"][1]["data"]["values"][0]["GiB"].get<double>() == 80.0);
}

TEST_CASE("text from the report cannot end the page's elements", "[tools][report]") {
  const json plan = {{"scenario", "</script><script>alert(1)</script><!--"}, {"model", "<b>m</b> & \"q\""}};
  const std::string page = orrery::cli::plan_report_html(plan);
  CHECK(page.find("<script>alert(1)") == std::string::npos);
  CHECK(page.find("<b>m</b>") == std::string::npos);
  CHECK(page.find("&lt;b&gt;m&lt;/b&gt; &amp; &quot;q&quot;") != std::string::npos);
  // In the embedded JSON every '<' is the JSON escape \u003c.
  CHECK(page.find("\\u003c/script>\\u003cscript>alert(1)") != std::string::npos);
}

TEST_CASE("summary numbers take an SI prefix with three significant digits", "[tools][report]") {
  using orrery::cli::report::si;
  CHECK(si(2.95e13, "Wh") == "29.5 TWh");
  CHECK(si(512, "W") == "512 W");
  CHECK(si(999.96, "W") == "1 kW");  // rounds up into the next prefix
  CHECK(si(1.08e8, "") == "108 M");
  CHECK(si(0.25, "J") == "250 mJ");
  CHECK(si(7, "") == "7");
}

TEST_CASE("fields a figure only shows are not required: a stage with its power alone is drawn", "[tools][report]") {
  json report;
  report["energy"]["per_stage"] = json::array({{{"stage", 0}, {"average_gpu_power_W", 560}}});
  const Figure power = figure(orrery::cli::predict_figures(report), "power_per_stage");
  CHECK(power.missing.empty());
  CHECK(power.rows == json::array({{{"stage", 0}, {"average_gpu_power_W", 560}}}));
  CHECK(power.rows_left_out == 0);
}
