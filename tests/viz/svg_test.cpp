// Tests of the SVG timeline and charts: one rectangle per task, colours per kind, escaping, one
// time scale, aggregation of large runs, and an approved golden timeline.
#include "ppsim/viz/svg.hpp"

#include "ppsim/schedules/registry.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

using namespace ppsim;
using namespace ppsim::test;

std::string svg_of(const Run& run, TimelineSvgOptions options = {}) {
  std::ostringstream os;
  write_timeline_svg(os, run, options);
  return os.str();
}

// The value of attribute `name` of the first element that matches `head`.
std::string attribute(const std::string& text, const std::string& head, const std::string& name) {
  const auto at = text.find(head);
  REQUIRE(at != std::string::npos);
  const auto end = text.find('>', at);
  const std::string tag = text.substr(at, end - at);
  const std::string key = " " + name + "=\"";
  const auto k = tag.find(key);
  REQUIRE(k != std::string::npos);
  const auto v = k + key.size();
  return tag.substr(v, tag.find('"', v) - v);
}

} // namespace

TEST_CASE("xml escaping covers the five specials and control characters", "[viz][svg]") {
  CHECK(xml_escaped("<a href='x'>&\"</a>") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  CHECK(xml_escaped("plain zb-h1") == "plain zb-h1");
  CHECK(xml_escaped(std::string("a\x01z")) == "a&#xFFFD;z");
}

TEST_CASE("the timeline holds one rectangle per task, with idle gaps drawn", "[viz][svg]") {
  for (const char* name : {"1f1b", "zb-h1", "zb-v", "dualpipe-v", "interleaved-1f1b"}) {
    CAPTURE(name);
    const Run run = make_run(name, 4, 8, "F=1,B=1,W=1");
    const std::string svg = svg_of(run);
    CHECK(count(svg, "<rect class=\"task ") == run.schedule.task_count());
    CHECK(attribute(svg, "<svg", "data-tasks") == std::to_string(run.schedule.task_count()));
    CHECK(attribute(svg, "<svg", "data-aggregated") == "false");
    for (int d = 0; d < 4; ++d) CHECK(count(svg, ">device " + std::to_string(d) + "<") == 1);
  }
  // 1F1B idles in its steady state on device 0 (DESIGN: bubble (p-1)(F+B+W)), hatched.
  const std::string svg = svg_of(make_run("1f1b", 4, 8, "F=1,B=1,W=1"));
  CHECK(count(svg, "<rect class=\"idle\"") > 0);
  CHECK(count(svg, "<pattern id=\"ppsim-idle\"") == 1);
  CHECK(count(svg, "<rect class=\"idle\"") == count(svg, "fill=\"url(#ppsim-idle)\""));
  CHECK_THAT(svg, Catch::Contains("device 0: idle"));
  // zb-h2 at F = B = W has no bubble on the last device: its row has no idle rectangle.
  const std::string h2 = svg_of(make_run("zb-h2", 4, 8, "F=1,B=1,W=1"));
  const auto row3 = h2.substr(h2.find("data-device=\"3\""));
  CHECK(count(row3.substr(0, row3.find("</g>")), "class=\"idle\"") == 0);
}

TEST_CASE("task rectangles are coloured by kind and shaded by chunk", "[viz][svg]") {
  CHECK(task_fill(Kind::F, 0, 1) == "#4e79a7");
  CHECK(task_fill(Kind::B, 0, 1) == "#59a14f");
  CHECK(task_fill(Kind::W, 0, 1) == "#f28e2b");
  CHECK(task_fill(Kind::BW, 0, 1) == "#b07aa1");
  CHECK(task_fill(Kind::FB, 0, 1) == "#e15759");
  CHECK(task_fill(Kind::F, 0, 2) == "#4e79a7");
  CHECK(task_fill(Kind::F, 1, 2) == "#2b435c");  // chunk 1: a dark shade of the kind
  // Four chunks, four shades, and no two kinds or chunks alike.
  std::set<std::string> fills;
  for (const Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW, Kind::FB})
    for (int c = 0; c < 4; ++c) fills.insert(task_fill(k, c, 4));
  CHECK(fills.size() == 20);
  // None looks like idle's greys: every shade keeps its hue, at least 30 of 255 between its
  // strongest and weakest channel (a grey has 0).
  for (const std::string& f : fills) {
    CAPTURE(f);
    const int r = std::stoi(f.substr(1, 2), nullptr, 16), g = std::stoi(f.substr(3, 2), nullptr, 16),
              b = std::stoi(f.substr(5, 2), nullptr, 16);
    CHECK(std::max({r, g, b}) - std::min({r, g, b}) >= 30);
  }

  const Run run = make_run("zb-v", 4, 8, "F=1,B=1,W=1");
  const std::string svg = svg_of(run);
  const std::regex rect("<rect class=\"task (F|B|W|BW|FB) c([0-9]+)\"[^>]* fill=\"(#[0-9a-f]{6})\"");
  std::size_t seen = 0, chunk1 = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), rect), end; it != end; ++it) {
    const std::string kind = (*it)[1];
    const int chunk = std::stoi((*it)[2]);
    const Kind k = kind == "F" ? Kind::F : kind == "B" ? Kind::B : kind == "W" ? Kind::W
                   : kind == "BW" ? Kind::BW : Kind::FB;
    CHECK((*it)[3] == task_fill(k, chunk, 2));
    ++seen;
    if (chunk == 1) ++chunk1;
  }
  CHECK(seen == run.schedule.task_count());
  CHECK(chunk1 == run.schedule.task_count() / 2);  // a V: half the tasks on chunk 1
}

TEST_CASE("the tooltip names stage, micro-batch, start and duration", "[viz][svg]") {
  const std::string svg = svg_of(make_run("zb-h1", 4, 8, "F=2,B=2,W=2"));
  // Device 3 runs F of micro-batch 0 on stage 3 after the three devices before it: 6 ms.
  CHECK_THAT(svg, Catch::Contains(
                      "device 3: 3F0: F stage 3, micro-batch 0; start 6 ms, duration 2 ms"));
  CHECK_THAT(svg, Catch::Contains(">7</text>"));  // the micro-batch number fits in 2 ms
}

TEST_CASE("timelines drawn with one time span share one time scale", "[viz][svg]") {
  const Run a = make_run("1f1b", 4, 8, "F=2,B=2,W=2");   // cost 66
  const Run b = make_run("zb-h2", 4, 8, "F=2,B=2,W=2");  // makespan 54 (cost 48)
  const Ticks span = std::max(a.metrics.makespan, b.metrics.makespan);
  const std::string sa = svg_of(a, {.width = 660, .time_span = span});
  const std::string sb = svg_of(b, {.width = 660, .time_span = span});
  CHECK(attribute(sa, "<svg", "width") == attribute(sb, "<svg", "width"));
  // 10 px per ms in both: the first task of device 1 (F0 at 2 ms) starts at 76 + 20 px.
  const auto first_x = [](const std::string& svg, int d) {
    const auto row = svg.substr(svg.find("data-device=\"" + std::to_string(d) + "\""));
    return attribute(row, "<rect class=\"task", "x");
  };
  CHECK(first_x(sa, 1) == "96");
  CHECK(first_x(sb, 1) == "96");
}

TEST_CASE("a run above the rectangle cap is drawn aggregated and says so", "[viz][svg]") {
  const Run run = make_run("zb-h1", 4, 8, "F=1,B=1,W=1");
  const std::string svg = svg_of(run, {.width = 200, .max_rects = 50});
  CHECK(attribute(svg, "<svg", "data-aggregated") == "true");
  CHECK(count(svg, "<rect class=\"task ") == 0);
  CHECK(count(svg, "<rect class=\"agg ") > 0);
  CHECK(count(svg, "<rect class=\"agg ") <= 4 * 200);
  CHECK_THAT(svg, Catch::Contains("aggregated view: 96 tasks exceed the cap of 50"));
}

TEST_CASE("the timeline is deterministic and escapes the schedule name", "[viz][svg]") {
  Run run = make_run("1f1b", 2, 2, "F=1,B=1,W=1");
  run.schedule.name = "<x & \"y\">";
  const std::string a = svg_of(run);
  CHECK(a == svg_of(run));
  CHECK_THAT(a, Catch::Contains("data-schedule=\"&lt;x &amp; &quot;y&quot;&gt;\""));
  CHECK_THAT(a, !Catch::Contains("<x &"));
}

TEST_CASE("line charts draw one point per value, distinct series and a legend that fits",
          "[viz][svg]") {
  LineChart chart{"t", "m", "bubble", true, false,
                  {{"a", {8, 16, 32}, {30, 20, 10}, {}}, {"b", {8, 64}, {5, 1}, {}}, {"c", {}, {}, {}}}};
  std::ostringstream l;
  write_line_chart_svg(l, chart);
  CHECK(count(l.str(), "<circle") == 5);
  CHECK(count(l.str(), "<polyline") == 2);  // c has no points: legend only
  CHECK(count(l.str(), "data-series=") == 3);

  // 40 series: 40 different (colour, dash) pairs, neighbours differ in both.
  std::set<std::pair<std::string_view, std::string_view>> styles;
  for (std::size_t k = 0; k < 40; ++k) {
    styles.insert({series_style(k).colour, series_style(k).dash});
    if (k > 0) {
      CHECK(series_style(k).colour != series_style(k - 1).colour);
      CHECK(series_style(k).dash != series_style(k - 1).dash);
    }
  }
  CHECK(styles.size() == 40);

  // Many long names: the legend wraps below the plot and the chart grows to hold it.
  LineChart many{"t", "m", "bubble", true, false, {}};
  for (int k = 0; k < 24; ++k)
    many.series.push_back({fmt::format("interleaved-1f1b p={} mem=2p", k), {8, 16}, {1, 2}, {}});
  std::ostringstream big;
  write_line_chart_svg(big, many);
  const std::string svg = big.str();
  const double width = std::stod(attribute(svg, "<svg", "width"));
  const double height = std::stod(attribute(svg, "<svg", "height"));
  const std::regex legend_text("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\">interleaved");
  std::size_t entries = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), legend_text), end; it != end; ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    CHECK(x + 30 * 0.56 * 11 <= width);  // the name's estimated width ends inside
    CHECK(y <= height);
    ++entries;
  }
  CHECK(entries == 24);
}

TEST_CASE("x tick labels of a line chart never overlap", "[viz][svg]") {
  // m = 1 and 64..70 on a log axis: the seven crowd the right end, and labels that would
  // touch the one before them go.
  LineChart chart{"t", "m", "bubble", true, false, {}};
  LineSeries s{"a", {1}, {1}, {}};
  for (int m = 64; m <= 70; ++m) {
    s.x.push_back(m);
    s.y.push_back(1.0 / m);
  }
  chart.series.push_back(s);
  std::ostringstream os;
  write_line_chart_svg(os, chart);
  const std::string svg = os.str();
  const std::regex tick("<text class=\"x-tick\" text-anchor=\"middle\" x=\"([0-9.]+)\"[^>]*>([^<]+)<");
  std::vector<std::pair<double, std::string>> ticks;
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it)
    ticks.emplace_back(std::stod((*it)[1]), (*it)[2]);
  REQUIRE(ticks.size() >= 2);
  CHECK(ticks.size() < 8);  // of the eight values
  CHECK(ticks.front().second == "1");
  for (std::size_t i = 1; i < ticks.size(); ++i) {
    const double half = 0.56 * 11 * static_cast<double>(ticks[i].second.size() + ticks[i - 1].second.size()) / 2;
    CHECK(ticks[i].first - ticks[i - 1].first >= half);
  }
}

TEST_CASE("the --svg picture holds every run on one time scale with titles and a legend",
          "[viz][svg]") {
  const std::vector<Run> runs = {make_run("1f1b", 4, 8, "F=2,B=2,W=2"),
                                 make_run("zb-v", 4, 8, "F=2,B=2,W=2")};
  std::ostringstream os;
  write_timelines_picture(os, runs);
  const std::string svg = os.str();
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timelines\"", 0) == 0);
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "<rect class=\"task ") == 64 + 192);
  CHECK_THAT(svg, Catch::Contains("<tspan font-weight=\"bold\">1f1b</tspan>  p=4 m=8 v=1: cost 66 "
                                  "ms, bubble rate 27.27%, peak 4 M_B"));
  CHECK_THAT(svg, Catch::Contains(">zb-v</tspan>  p=4 m=8 v=2: cost 48 ms"));
  // The legend names each kind and chunk drawn (zb-v splits B and W; 1f1b fuses BW) and idle.
  for (const char* item : {">F chunk 0<", ">F chunk 1<", ">B chunk 1<", ">W chunk 0<", ">BW chunk 0<", ">idle<"})
    CHECK_THAT(svg, Catch::Contains(item));
  CHECK_THAT(svg, !Catch::Contains(">FB chunk"));
  // One time scale: 66 ms over 1000 px for both, so 1f1b's first F on device 1 starts 2 ms in.
  CHECK_THAT(svg, Catch::Contains("<rect class=\"task F c0\" x=\"106.3"));
  std::ostringstream again;
  write_timelines_picture(again, runs);
  CHECK(again.str() == svg);
}

TEST_CASE("the zb-h1 timeline at p = 4, m = 4 matches the approved golden SVG", "[viz][golden]") {
  const std::string svg = svg_of(make_run("zb-h1", 4, 4, "F=1,B=1,W=1"), {.width = 400});
  check_golden("data/golden/timeline_zb_h1_p4_m4.svg", svg);
}

TEST_CASE("the timeline hatches the idle spent waiting for a message", "[viz][comm]") {
  CommOptions blocking;
  blocking.mode = CommMode::Blocking;
  const Run run = run_schedule(make_schedule("1f1b", {.devices = 2, .microbatches = 2}),
                               parse_costs("F=1,B=1,W=1,comm=1"), blocking);
  const std::string svg = svg_of(run);
  CHECK(count(svg, "<pattern id=\"ppsim-comm-wait\"") == 1);
  // Device 0: 4 stretches ([1,2) [3,4) [5,6) [9,10)), device 1: one ([5,6)).
  CHECK(count(svg, "<rect class=\"comm-wait\"") == 5);
  CHECK_THAT(svg, Catch::Contains("device 0: waiting for a message 1 ms (from 5 ms)"));
  const std::string plain = svg_of(make_run("1f1b", 2, 2, "F=1,B=1,W=1"));
  CHECK(count(plain, "ppsim-comm-wait") == 0);
  CHECK(count(plain, "comm-wait") == 0);
}
