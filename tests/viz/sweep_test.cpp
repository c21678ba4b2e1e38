// Tests of the sweep writers: CSV, HTML and JSON, with points that did not run.
#include "ppsim/viz/sweep.hpp"

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

TEST_CASE("the sweep page's data is a panel per schedule of each figure, a style per series name",
          "[viz][sweep]") {
  std::vector<SweepPoint> points;
  for (const char* s : {"1f1b", "zb-h1"})
    for (const int m : {8, 16}) {
      SweepPoint pt;
      pt.schedule = s;
      pt.devices = 4;
      pt.microbatches = m;
      pt.bubble_rate = std::string_view(s) == "1f1b" ? 0.25 : 0.125;
      pt.peak_memory = 4;
      points.push_back(pt);
    }
  const auto doc = nlohmann::json::parse(sweep_data_json(points, "<costs>"));
  CHECK(doc["schema"] == "ppsim.sweep-report/2");
  CHECK(doc["costs"] == "<costs>");
  REQUIRE(doc["charts"].size() == 4);  // two figures, a panel per schedule
  const auto& by_m = doc["charts"][0];
  CHECK(by_m["group"] == "bubble rate against micro-batches");
  CHECK(by_m["title"] == "1f1b");
  CHECK(doc["charts"][1]["title"] == "zb-h1");
  CHECK(by_m["log_x"] == true);
  REQUIRE(by_m["series"].size() == 1);
  CHECK(by_m["series"][0]["name"] == "p=4");
  CHECK(by_m["series"][0]["joined"] == true);
  CHECK(by_m["series"][0]["points"].size() == 2);
  CHECK(by_m["series"][0]["points"][1][0] == 16);
  CHECK(by_m["series"][0]["points"][1][1] == 25.0);
  // p=4 is the same line in both panels
  CHECK(by_m["series"][0]["colour"] == doc["charts"][1]["series"][0]["colour"]);
  CHECK(by_m["series"][0]["dash"] == doc["charts"][1]["series"][0]["dash"]);
  // One point per shape: a scatter per p, not a legend entry per m.
  const auto& by_mem = doc["charts"][2];
  CHECK(by_mem["group"] == "bubble rate against peak activation memory (a curve per shape "
                           "through its memory limits)");
  REQUIRE(by_mem["series"].size() == 1);
  CHECK(by_mem["series"][0]["name"] == "p=4, one point per m (8, 16)");
  CHECK(by_mem["series"][0]["joined"] == false);
  CHECK(by_mem["series"][0]["points"].size() == 2);
  CHECK(sweep_data_json(points, "<costs>").find('<') == std::string::npos);

  // The panels of a figure share its scales: zb-h1's panel reaches 1f1b's 25 %.
  const std::vector<LineChart> charts = sweep_charts(points);
  REQUIRE(charts.size() == 4);
  CHECK(charts[1].shared_y == 25.0);
  CHECK(charts[1].shared_x == std::vector<double>{8, 16});

  std::ostringstream svg;
  write_sweep_svg(svg, points);
  CHECK(count(svg.str(), "<svg") == 1);
  CHECK(count(svg.str(), "class=\"chart lines\"") == 4);
  CHECK(count(svg.str(), "<polyline") == 2);  // the curves by m; the scatters have none
  CHECK(count(svg.str(), "<circle class=\"swatch\"") == 2);  // the scatters' legend entries
}

TEST_CASE("coinciding sweep curves are one, named for all, and a shape's limits are its curve",
          "[viz][sweep]") {
  std::vector<SweepPoint> points;
  const auto add = [&](const char* s, int m, const char* limit, double bubble, double peak) {
    SweepPoint pt;
    pt.schedule = s;
    pt.devices = 4;
    pt.microbatches = m;
    pt.mem_limit = parse_mem_limit(limit);
    pt.bubble_rate = bubble;
    pt.peak_memory = peak;
    points.push_back(pt);
  };
  // 1f1b gives the same run at both limits; zb-auto trades memory for bubble.
  for (const char* limit : {"1p", "2p"}) {
    add("1f1b", 8, limit, 0.25, 4);
    add("1f1b", 16, limit, 0.15, 4);
  }
  add("zb-auto", 8, "2p", 0.0, 7.5);
  add("zb-auto", 8, "1p", 0.1, 4);
  add("zb-auto", 16, "1p", 0, 0);
  points.back().status = SweepStatus::rejected;  // ran nowhere: no curve, no scatter entry
  const std::vector<LineChart> charts = sweep_charts(points);
  REQUIRE(charts.size() == 4);
  REQUIRE(charts[0].series.size() == 1);
  CHECK(charts[0].series[0].name == "p=4 mem=1p = p=4 mem=2p");
  REQUIRE(charts[0].series[0].tips.size() == 2);
  CHECK_THAT(charts[0].series[0].tips[0], Catch::EndsWith("(the same for p=4 mem=2p)"));
  // 1f1b's memory panel: each shape one point after its repeats are dropped.
  REQUIRE(charts[2].series.size() == 1);
  CHECK(charts[2].series[0].name == "p=4, one point per m (8, 16)");
  CHECK(charts[2].series[0].x == std::vector<double>{4, 4});
  // zb-auto's: the shape's curve through its limits, by memory.
  REQUIRE(charts[3].title == "zb-auto");
  REQUIRE(charts[3].series.size() == 1);  // not "p=4 m=16 (no points)"
  CHECK(charts[3].series[0].name == "p=4 m=8");
  CHECK(charts[3].series[0].joined);
  CHECK(charts[3].series[0].x == std::vector<double>{4, 7.5});
  CHECK(charts[3].series[0].y == std::vector<double>{10, 0});
  // A merged curve keeps the style of its first name; different names differ.
  CHECK(charts[1].series.size() == 2);
  CHECK(charts[1].series[0].name == "p=4 mem=2p");
  CHECK(charts[1].series[0].style != charts[1].series[1].style);
}

TEST_CASE("a real sweep's CSV and JSON match the approved golden files, known answers first",
          "[viz][sweep][golden]") {
  // Unit costs F = B = W = 2 (DESIGN.md's known answers): every point that ran is checked
  // against its closed form before the documents are compared byte for byte, so the goldens
  // cannot have been approved with a wrong cost in them.
  SweepGrid grid;
  grid.schedules = {"1f1b", "zb-h1", "zb-h2", "zb-auto"};
  grid.devices = {2, 4};
  grid.microbatches = {4, 8};
  grid.mem_limits = {MemLimit{}, parse_mem_limit("1p")};
  RunRequest base;
  base.costs = parse_costs("F=2,B=2,W=2");
  const std::vector<SweepPoint> points = run_sweep(grid, base);
  REQUIRE(points.size() == 32);
  int ran = 0;
  for (const SweepPoint& pt : points) {
    CAPTURE(pt.schedule, pt.devices, pt.microbatches, pt.mem_limit.text, pt.reason);
    const double p = pt.devices;
    const double ideal = 6.0 * pt.microbatches;
    const std::string_view s = pt.schedule;
    if (s == "zb-h2" && pt.microbatches < 2 * pt.devices) {
      CHECK(pt.status == SweepStatus::rejected);
      continue;
    }
    if (s == "zb-h2" && !pt.mem_limit.text.empty()) {  // peaks at (2p - 1) M_B, above p M_B
      CHECK(pt.status == SweepStatus::infeasible);
      CHECK(pt.least_mem_limit == 2 * p - 1);
      continue;
    }
    REQUIRE(pt.ok());
    ++ran;
    CHECK(pt.ideal_ms == ideal);
    if (s == "1f1b") CHECK(pt.cost_ms == ideal + (p - 1) * 6);   // (p-1)(F+B+W)
    if (s == "zb-h1") CHECK(pt.cost_ms == ideal + (p - 1) * 2);  // (p-1)(F+B-W)
    if (s == "zb-h2") CHECK(pt.cost_ms == ideal);                // (p-1)(F+B-2W) = 0
    // zb-auto's default limit is ZB-H1's peak, p M_B here (DESIGN.md): never worse than ZB-H1
    // under it, and ZB-1p's known 54 at p = 4, m = 8
    if (s == "zb-auto") CHECK(pt.cost_ms <= ideal + (p - 1) * 2);
    if (s == "zb-auto" && p == 4 && pt.microbatches == 8) CHECK(pt.cost_ms == 54);
    if (s == "zb-auto") CHECK(pt.peak_memory <= p);
    if (s == "1f1b" || s == "zb-h1") CHECK(pt.peak_memory == p);
  }
  CHECK(ran == 27);  // 2 zb-h2 points rejected (m < 2p), 3 infeasible at 1p
  std::ostringstream csv;
  write_sweep_csv(csv, points);
  check_golden("data/golden/sweep_p2-4_m4-8.csv", csv.str());
  check_golden("data/golden/sweep_p2-4_m4-8.json", sweep_json(points) + "\n");
}
