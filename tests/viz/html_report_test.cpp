// Tests of the HTML report: structure, escaping, one rectangle per task, colours per kind, one
// time scale, determinism.
#include "viz/html_report.hpp"

#include "schedules/registry.hpp"
#include "sim/errors.hpp"
#include "tests/viz/viz_checks.hpp"
#include "viz/svg.hpp"
#include "viz/sweep.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
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

} // namespace

TEST_CASE("the report is one self-contained page with a section per schedule", "[viz][html]") {
  const std::vector<Run> runs = {make_run("1f1b", 4, 8, "F=2,B=2,W=2"),
                                 make_run("zb-h1", 4, 8, "F=2,B=2,W=2"),
                                 make_run("zb-v", 4, 8, "F=2,B=2,W=2")};
  const std::string html = report(runs);
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(html.ends_with("</body>\n</html>\n"));
  CHECK(count(html, "<style>") == 1);
  CHECK(count(html, "<script>") == 1);
  // Nothing is fetched: no external scripts, styles, images or links.
  CHECK(count(html, " src=") == 0);
  CHECK(count(html, " href=") == 0);
  CHECK(count(html, "https://") == 0);
  CHECK(count(html, "http://") == count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  // One timeline per schedule, each named, one rect per task in total.
  CHECK(count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\"") == 3);
  std::size_t tasks = 0;
  for (const Run& r : runs) {
    tasks += r.schedule.task_count();
    CHECK_THAT(html, Catch::Contains("<h3 class=\"schedule-name\">" + r.schedule.name + "</h3>"));
  }
  CHECK(count(html, "<rect class=\"task ") == tasks);
  // The metrics table, two bar charts (bubble rate, peak memory) and the provenance.
  CHECK(count(html, "<table class=\"metrics\">") == 1);
  CHECK(count(html, "class=\"chart bars\"") == 2);
  CHECK(count(html, "<rect class=\"bar\"") == 6);
  CHECK_THAT(html, Catch::Contains("<td class=\"name\">cost provenance</td><td class=\"name\">"
                                   "--costs F=2,B=2,W=2</td>"));
  CHECK_THAT(html, Catch::Contains("<td>27.27%</td>"));  // 1F1B: (66 - 48) / 66
}

TEST_CASE("every timeline of a report uses the same time scale", "[viz][html]") {
  const std::vector<Run> runs = {make_run("1f1b", 4, 8, "F=2,B=2,W=2"),
                                 make_run("zb-h2", 4, 8, "F=2,B=2,W=2")};
  const std::string html = report(runs);
  std::vector<std::string> widths;
  for (const std::string& line : lines_of(html)) {
    if (line.find("class=\"timeline\"") == std::string::npos) continue;
    const auto w = line.find(" width=\"");
    widths.push_back(line.substr(w, line.find('"', w + 8) - w));
  }
  REQUIRE(widths.size() == 2);
  CHECK(widths[0] == widths[1]);
  CHECK_THAT(html, Catch::Contains("every timeline on one time scale (66 ms across)"));
}

TEST_CASE("the report escapes every name and colours tasks per kind", "[viz][html]") {
  Run run = make_run("zb-h1", 2, 2, "F=1,B=1,W=1");
  run.schedule.name = "<script>alert('x')</script>";
  run.costs.source = "costs & \"friends\"";
  run.parameters.emplace_back("<key>", "<value>");
  const std::string html = report({run});
  CHECK(count(html, "<script>") == 1);  // only the page's own
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  CHECK_THAT(html, Catch::Contains("costs &amp; &quot;friends&quot;"));
  CHECK_THAT(html, Catch::Contains("&lt;key&gt;"));
  CHECK_THAT(html, !Catch::Contains("<value>"));
  for (const Kind k : {Kind::F, Kind::B, Kind::W}) {
    CAPTURE(kind_name(k));
    CHECK_THAT(html, Catch::Contains(fmt::format("class=\"task {} c0\"", kind_name(k))));
    CHECK_THAT(html, Catch::Contains(fmt::format("fill=\"{}\"", task_fill(k, 0, 1))));
  }
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
  // Only the runs get timelines.
  CHECK(count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\"") == 2);
}
