// Tests of the HTML report: one self-contained page, the data and the script inside it, the
// static table for readers without JavaScript, escaping, determinism.
#include "ppsim/viz/html_report.hpp"

#include "ppsim/viz/page_assets.hpp"
#include "ppsim/viz/report_data.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ppsim;
using namespace ppsim::test;

std::string report(const std::vector<Run>& runs) {
  std::ostringstream os;
  write_html_report(os, runs);
  return os.str();
}

// The text of the page's <script type="application/json" id="ppsim-data"> element.
std::string data_in(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"ppsim-data\">";
  const auto b = html.find(open);
  REQUIRE(b != std::string::npos);
  const auto e = html.find("</script>", b);
  return html.substr(b + open.size(), e - b - open.size());
}

} // namespace

TEST_CASE("the report is one self-contained page with the runs' data and the script",
          "[viz][html]") {
  const std::vector<Run> runs = {make_run("1f1b", 4, 8, "F=2,B=2,W=2"),
                                 make_run("zb-h1", 4, 8, "F=2,B=2,W=2"),
                                 make_run("zb-v", 4, 8, "F=2,B=2,W=2")};
  const std::string html = report(runs);
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(html.ends_with("</body>\n</html>\n"));
  CHECK(count(html, "<style>") == 1);
  CHECK(count(html, "<script>") == 1);  // the drawing script
  CHECK(count(html, "<script type=\"application/json\" id=\"ppsim-data\">") == 1);
  CHECK(count(html, "</script>") == 2);
  // Nothing is fetched: no external scripts, styles, images or links.
  CHECK(count(html, " src=") == 0);
  CHECK(count(html, " href=") == 0);
  CHECK(count(html, "https://") == 0);
  CHECK(count(html, "http://") == count(html, "http://www.w3.org/2000/svg"));
  CHECK_THAT(html, Catch::Contains(std::string(report_script())));
  CHECK(data_in(html) == report_data_json(std::span<const Run>(runs), "ppsim report"));
  // Every task is in the data, once.
  const auto doc = nlohmann::json::parse(data_in(html));
  std::size_t tasks = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CHECK(doc["runs"][i]["name"] == runs[i].schedule.name);
    std::size_t n = 0;
    for (const auto& dev : doc["runs"][i]["dev"]) n += dev["d"].size();
    CHECK(n == runs[i].schedule.task_count());
    tasks += n;
  }
  CHECK(tasks == 64 + 96 + 192);
  // Without JavaScript: the metrics table.
  CHECK_THAT(html, Catch::Contains("<noscript>"));
  CHECK_THAT(html, Catch::Contains("<td class=\"name\">1f1b</td><td>4</td><td>8</td>"));
  CHECK_THAT(html, Catch::Contains("<td>27.27%</td>"));  // 1F1B: (66 - 48) / 66
}

TEST_CASE("the page's script never ends its element early", "[viz][html]") {
  CHECK(std::string(report_script()).find("</script") == std::string::npos);
  CHECK(std::string(playground_script()).find("</script") == std::string::npos);
  CHECK(std::string(report_style()).find("</style") == std::string::npos);
  CHECK_THAT(std::string(report_script()), Catch::Contains("window.ppsim = {"));
}

TEST_CASE("the report escapes every name", "[viz][html]") {
  Run run = make_run("zb-h1", 2, 2, "F=1,B=1,W=1");
  run.schedule.name = "<script>alert('x')</script>";
  run.costs.source = "costs & \"friends\"";
  run.parameters.emplace_back("<key>", "<value>");
  const std::string html = report({run});
  CHECK(count(html, "<script>") == 1);  // only the page's own
  CHECK(count(html, "</script>") == 2);
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  CHECK_THAT(html, !Catch::Contains("<value>"));
  CHECK_THAT(data_in(html), !Catch::Contains("<"));
}

TEST_CASE("the report is byte-identical for the same runs", "[viz][html]") {
  const std::vector<Run> runs = {make_run("interleaved-1f1b", 4, 8, "F=1,B=2,W=1,comm=0.1"),
                                 make_run("dualpipe", 4, 8, "F=1,B=2,W=1,comm=0.1")};
  CHECK(report(runs) == report(runs));
}

TEST_CASE("the report of a comparison shows the bound and the rows that did not fit",
          "[viz][html]") {
  Comparison c;
  Run automatic = make_run("zb-auto", 4, 8, "F=2,B=2,W=2");
  automatic.lower_bound = 54'000'000;  // as run_request sets it
  automatic.optimality_gap = 0;
  c.runs.push_back(make_run("1f1b", 4, 8, "F=2,B=2,W=2"));
  c.runs.push_back(std::move(automatic));
  c.rows.push_back({"1f1b", 4, 8, 0, 0, "", -1});
  c.rows.push_back({"<zb-h2>", 4, 8, 0, -1, "zb-h2: device 0 peaks at 7 M_B", 7.0});
  c.rows.push_back({"zb-auto", 4, 8, 0, 1, "", -1});
  std::ostringstream os;
  write_html_report(os, c);
  const std::string html = os.str();
  CHECK_THAT(html, Catch::Contains("<th>lower bound ms</th><th>gap to it</th>"));
  CHECK_THAT(html, Catch::Contains("<td>4</td><td>-</td><td>-</td></tr>"));        // 1f1b
  CHECK_THAT(html, Catch::Contains("<td>4</td><td>54</td><td>0.00%</td></tr>"));  // zb-auto
  CHECK_THAT(html, Catch::Contains("<tr class=\"infeasible\"><td class=\"name\">&lt;zb-h2&gt;</td>"
                                   "<td colspan=\"13\" class=\"name status-bad\">infeasible: zb-h2: "
                                   "device 0 peaks at 7 M_B; the least limit that works: 7 M_B</td>"));
  const auto doc = nlohmann::json::parse(data_in(html));
  CHECK(doc["runs"].size() == 2);  // only the runs get timelines
  CHECK(doc["metrics"].size() == 3);
  CHECK(doc["metrics"][1]["least_mem_limit"] == 7.0);
  CHECK(doc["metrics"][2]["lower_bound_ms"] == 54.0);
}

TEST_CASE("the report's data carries each device's waits on communication", "[viz][html][comm]") {
  // 1F1B p=2 m=2, F=B=W=1, comm=1, blocking (tests/sim/comm_test.cpp): device 0 waits on
  // communication over [1,2) [3,4) [5,6) [9,10), device 1 over [5,6); the unit is 1 ms.
  CommOptions blocking;
  blocking.mode = CommMode::Blocking;
  const std::vector<Run> runs = {run_schedule(make_schedule("1f1b", {.devices = 2, .microbatches = 2}),
                                              parse_costs("F=1,B=1,W=1,comm=1"), blocking)};
  const auto doc = nlohmann::json::parse(report_data_json(std::span<const Run>(runs), "t"));
  const auto& run = doc.at("runs").at(0);
  REQUIRE(run.at("unit_ns") == 1'000'000);
  CHECK(run.at("dev").at(0).at("cw") == nlohmann::json::array({1, 1, 1, 1, 1, 1, 3, 1}));
  CHECK(run.at("dev").at(1).at("cw") == nlohmann::json::array({5, 1}));
  // Without a wait the key is absent.
  const std::vector<Run> plain = {make_run("1f1b", 2, 2, "F=1,B=1,W=1")};
  const auto doc0 = nlohmann::json::parse(report_data_json(std::span<const Run>(plain), "t"));
  CHECK_FALSE(doc0.at("runs").at(0).at("dev").at(0).contains("cw"));
}
