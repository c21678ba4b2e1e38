// Tests of the sweep writers: CSV, HTML and JSON, with points that did not run.
#include "viz/sweep.hpp"

#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace ppsim;
using namespace ppsim::test;

TEST_CASE("the sweep CSV has a header and one row per point, failures included", "[viz][sweep]") {
  std::vector<SweepPoint> points(2);
  points[0] = {"zb-h2", 4, 8, 0, MemLimit{}, SweepStatus::ok, "", 1, 96, 27, 24, 24, 0, 0, 7, -1};
  points[1].schedule = "zb-h2";
  points[1].devices = 4;
  points[1].microbatches = 4;
  points[1].status = SweepStatus::rejected;
  points[1].reason = "zb-h2: needs microbatches >= 2*devices (got microbatches=4, devices=4)";
  std::ostringstream os;
  write_sweep_csv(os, points);
  const auto lines = lines_of(os.str());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "schedule,p,m,v,mem_limit,status,tasks,makespan_ms,cost_ms,ideal_ms,"
                    "bubble_rate,bubble_over_ideal,peak_memory,reason,least_mem_limit");
  // v is the chunks the schedule used (no 0 for "the default" next to them)
  CHECK(lines[1] == "zb-h2,4,8,1,,ok,96,27,24,24,0,0,7,,");
  CHECK(lines[2] == "zb-h2,4,4,,,rejected,,,,,,,,\"zb-h2: needs microbatches >= 2*devices (got "
                    "microbatches=4, devices=4)\",");
  std::ostringstream html;
  write_sweep_html(html, points, "--costs F=1");
  CHECK_THAT(html.str(), Catch::Contains(sweep_data_json(points, "--costs F=1")));
  CHECK_THAT(html.str(), Catch::Contains("status-bad\">rejected</td>"));
  CHECK_THAT(html.str(), Catch::Contains("<table class=\"sweep sortable static\">"));
  CHECK_THAT(sweep_json(points), Catch::Contains("\"status\": \"rejected\""));
}

TEST_CASE("an infeasible sweep point names the least limit that works", "[viz][sweep]") {
  std::vector<SweepPoint> points(1);
  points[0].schedule = "zb-h2";
  points[0].devices = 4;
  points[0].microbatches = 8;
  points[0].mem_limit = parse_mem_limit("1p");
  points[0].status = SweepStatus::infeasible;
  points[0].reason = "zb-h2: device 0 peaks at 7 M_B, above --mem-limit 1p (4 M_B)";
  points[0].least_mem_limit = 7;
  std::ostringstream csv, table, html;
  write_sweep_csv(csv, points);
  CHECK(lines_of(csv.str())[1] == "zb-h2,4,8,,1p,infeasible,,,,,,,,\"zb-h2: device 0 peaks at 7 "
                                  "M_B, above --mem-limit 1p (4 M_B)\",7");
  write_sweep_table(table, points);
  CHECK_THAT(table.str(), Catch::EndsWith("(4 M_B); the least limit that works: 7 M_B\n"));
  write_sweep_html(html, points, "--costs F=1");
  CHECK_THAT(html.str(), Catch::Contains("; the least limit that works: 7 M_B</td>"));
  CHECK_THAT(sweep_json(points), Catch::Contains("\"least_mem_limit\": 7.0"));
}

TEST_CASE("the sweep page's data has both charts, a style per series and every point",
          "[viz][sweep]") {
  std::vector<SweepPoint> points;
  for (const char* s : {"1f1b", "zb-h1"})
    for (const int m : {8, 16}) {
      SweepPoint pt;
      pt.schedule = s;
      pt.devices = 4;
      pt.microbatches = m;
      pt.bubble_rate = 0.25;
      pt.peak_memory = 4;
      points.push_back(pt);
    }
  const auto doc = nlohmann::json::parse(sweep_data_json(points, "<costs>"));
  CHECK(doc["schema"] == "ppsim.sweep-report/1");
  CHECK(doc["costs"] == "<costs>");
  REQUIRE(doc["charts"].size() == 2);
  const auto& by_m = doc["charts"][0];
  CHECK(by_m["log_x"] == true);
  REQUIRE(by_m["series"].size() == 2);
  CHECK(by_m["series"][0]["name"] == "1f1b p=4");
  CHECK(by_m["series"][0]["points"].size() == 2);
  CHECK(by_m["series"][0]["points"][1][0] == 16);
  CHECK(by_m["series"][0]["points"][1][1] == 25.0);
  CHECK(by_m["series"][0]["colour"] != by_m["series"][1]["colour"]);
  CHECK(by_m["series"][1]["dash"] == series_style(1).dash);
  CHECK(doc["charts"][1]["series"].size() == 4);  // one per schedule and m
  CHECK(sweep_data_json(points, "<costs>").find('<') == std::string::npos);

  std::ostringstream svg;
  write_sweep_svg(svg, points);
  CHECK(count(svg.str(), "<svg") == 1);
  CHECK(count(svg.str(), "class=\"chart lines\"") == 2);
  CHECK(count(svg.str(), "<polyline") == 2);  // by m: two curves of two points; by memory: single points
}
