// Sweep grids and their writers.
#include "ppsim/viz/sweep.hpp"

#include "ppsim/io/json_text.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/viz/html_report.hpp"
#include "ppsim/viz/svg.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <tuple>

namespace ppsim {

namespace {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string chunks_text(int v) { return v > 0 ? fmt::format("{}", v) : "default"; }
std::string limit_text(const std::string& m) { return m.empty() ? "none" : m; }

// The reason a point did not run, with the least limit that works when it is known.
std::string reason_text(const SweepPoint& pt) {
  if (pt.least_mem_limit < 0) return pt.reason;
  return fmt::format("{}; the least limit that works: {} M_B", pt.reason,
                     human_number(pt.least_mem_limit));
}

} // namespace

void write_sweep_table(std::ostream& out, std::span<const SweepPoint> points) {
  out << fmt::format("{:<18} {:>4} {:>5} {:>7} {:>9} {:<10} {:>12} {:>8} {:>8}  {}\n", "schedule",
                     "p", "m", "v", "mem_limit", "status", "cost_ms", "bubble", "peak_M_B",
                     "reason");
  for (const SweepPoint& pt : points) {
    const bool ok = pt.ok();
    out << fmt::format("{:<18} {:>4} {:>5} {:>7} {:>9} {:<10} {:>12} {:>8} {:>8}  {}\n",
                       pt.schedule, pt.devices, pt.microbatches,
                       ok ? fmt::format("{}", pt.run_chunks) : chunks_text(pt.chunks),
                       limit_text(pt.mem_limit.text), sweep_status_name(pt.status), ok ? human_number(pt.cost_ms) : "-",
                       ok ? human_percent(pt.bubble_rate) : "-",
                       ok ? human_number(pt.peak_memory) : "-", reason_text(pt));
  }
}

void write_sweep_csv(std::ostream& out, std::span<const SweepPoint> points) {
  out << "schedule,p,m,v,mem_limit,status,tasks,makespan_ms,cost_ms,ideal_ms,bubble_rate,"
         "bubble_over_ideal,peak_memory,reason,least_mem_limit\n";
  for (const SweepPoint& pt : points) {
    // v: the chunks the schedule used; for a point that did not run, those asked (empty: the
    // schedule's default).
    const int v = pt.ok() ? pt.run_chunks : pt.chunks;
    std::string line = fmt::format("{},{},{},{},{},{},", csv_field(pt.schedule), pt.devices,
                                   pt.microbatches, v > 0 ? fmt::format("{}", v) : "",
                                   csv_field(pt.mem_limit.text), sweep_status_name(pt.status));
    if (pt.ok()) {
      line += fmt::format("{},{},{},{},{},{},{},", pt.tasks,
                          json_number(pt.makespan_ms), json_number(pt.cost_ms),
                          json_number(pt.ideal_ms), json_number(pt.bubble_rate),
                          json_number(pt.bubble_over_ideal), json_number(pt.peak_memory));
    } else {
      line += ",,,,,,,";
    }
    line += csv_field(pt.reason);
    line += ',';
    if (pt.least_mem_limit >= 0) line += json_number(pt.least_mem_limit);
    out << line << '\n';
  }
}

std::string sweep_json(std::span<const SweepPoint> points) {
  using ojson = nlohmann::ordered_json;
  ojson all = ojson::array();
  for (const SweepPoint& pt : points) {
    ojson j;
    j["schedule"] = pt.schedule;
    j["p"] = pt.devices;
    j["m"] = pt.microbatches;
    const int v = pt.ok() ? pt.run_chunks : pt.chunks;
    if (v > 0) j["v"] = v;
    else j["v"] = nullptr;
    if (!pt.mem_limit.given()) j["mem_limit"] = nullptr;
    else j["mem_limit"] = pt.mem_limit.text;
    j["status"] = sweep_status_name(pt.status);
    if (!pt.ok()) {
      j["reason"] = pt.reason;
      if (pt.status == SweepStatus::infeasible) {
        if (pt.least_mem_limit >= 0) j["least_mem_limit"] = pt.least_mem_limit;
        else j["least_mem_limit"] = nullptr;
      }
    } else {
      j["tasks"] = pt.tasks;
      j["makespan_ms"] = pt.makespan_ms;
      j["cost_ms"] = pt.cost_ms;
      j["ideal_ms"] = pt.ideal_ms;
      j["bubble_rate"] = pt.bubble_rate;
      j["bubble_over_ideal"] = pt.bubble_over_ideal;
      j["peak_memory"] = pt.peak_memory;
      if (pt.mem_limit_mb >= 0) j["mem_limit_mb"] = pt.mem_limit_mb;
    }
    all.push_back(std::move(j));
  }
  ojson doc;
  doc["schema"] = "ppsim.sweep/1";
  doc["points"] = std::move(all);
  return doc.dump(2);
}

namespace {

// One panel's series under construction: points with their tips, in the order they come.
struct Curve {
  std::string name;
  std::vector<std::tuple<double, double, std::string>> pts;
  bool joined{true};
  std::string pv{};              ///< a memory shape's "p=4 v=2": the scatter it may join
  std::vector<int> ms{};         ///< a scatter's micro-batch counts, one per point's shape
};

// The panel (a chart of its group) named `panel`, made on first use so the panels follow the
// command line's order of schedules.
std::vector<Curve>& panel_of(std::vector<std::pair<std::string, std::vector<Curve>>>& panels,
                             const std::string& panel) {
  for (auto& [name, curves] : panels)
    if (name == panel) return curves;
  panels.emplace_back(panel, std::vector<Curve>{});
  return panels.back().second;
}

Curve& curve_of(std::vector<Curve>& curves, const std::string& name) {
  for (Curve& c : curves)
    if (c.name == name) return c;
  curves.push_back(Curve{name, {}, true});
  return curves.back();
}

bool same_points(const Curve& a, const Curve& b) {
  if (a.pts.size() != b.pts.size() || a.pts.empty()) return false;
  for (std::size_t i = 0; i < a.pts.size(); ++i)
    if (std::get<0>(a.pts[i]) != std::get<0>(b.pts[i]) ||
        std::get<1>(a.pts[i]) != std::get<1>(b.pts[i]))
      return false;
  return true;
}

// Curves whose points coincide become one, named for all of them ("p=4 mem=1p = p=4 mem=2p"),
// so no line hides another; each point's tip says which curves it stands for.
std::vector<Curve> merge_coinciding(std::vector<Curve> curves) {
  std::vector<Curve> out;
  for (Curve& c : curves) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Curve& o) {
      return o.joined == c.joined && same_points(o, c);
    });
    if (same == out.end()) {
      out.push_back(std::move(c));
      continue;
    }
    same->name += " = " + c.name;
    for (auto& pt : same->pts) std::get<2>(pt) += fmt::format("\n(the same for {})", c.name);
  }
  return out;
}

// Memory panels: a shape's curve runs through its memory limits, sorted by memory, each point
// once. Shapes with a single point (one limit, or limits that all give the same run) are points
// of one scatter per p and v instead of a legend entry each; shapes that did not run add nothing
// (the table lists them with their reason).
std::vector<Curve> memory_curves(std::vector<Curve> shapes) {
  std::vector<Curve> out;
  for (Curve& c : shapes) {
    std::stable_sort(c.pts.begin(), c.pts.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    c.pts.erase(std::unique(c.pts.begin(), c.pts.end(),
                            [](const auto& a, const auto& b) {
                              return std::get<0>(a) == std::get<0>(b) &&
                                     std::get<1>(a) == std::get<1>(b);
                            }),
                c.pts.end());
    if (c.pts.size() > 1) {
      out.push_back(std::move(c));
      continue;
    }
    if (c.pts.empty()) continue;  // a shape that did not run: the table says why
    auto scatter = std::find_if(out.begin(), out.end(),
                                [&](const Curve& o) { return !o.joined && o.pv == c.pv; });
    if (scatter == out.end()) scatter = out.insert(out.end(), Curve{c.pv, {}, false, c.pv, {}});
    scatter->ms.push_back(c.ms.front());
    scatter->pts.push_back(std::move(c.pts.front()));
  }
  for (Curve& c : out) {
    if (c.joined) continue;
    if (c.ms.size() == 1) {
      c.name += fmt::format(" m={}", c.ms.front());  // a scatter of one shape is that shape
    } else {
      std::string ms;
      for (const int m : c.ms) ms += fmt::format("{}{}", ms.empty() ? "" : ", ", m);
      c.name += fmt::format(", one point per m ({})", ms);
    }
    std::stable_sort(c.pts.begin(), c.pts.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) < std::get<0>(b);
    });
  }
  return out;
}

// The charts of one group from its panels: shared scales, and one style per series name across
// the panels (p=4 is the same line in every panel).
void add_group(std::vector<LineChart>& charts, const LineChart& shape,
               std::vector<std::pair<std::string, std::vector<Curve>>> panels) {
  std::vector<std::string> styles;
  std::vector<double> xs;
  double ymax = 0;
  const std::size_t first = charts.size();
  for (auto& [panel, curves] : panels) {
    LineChart c = shape;
    c.title = panel;
    for (Curve& cu : curves) {
      // A merged curve keeps the style of its first name.
      const std::string key = cu.name.substr(0, cu.name.find(" = "));
      auto st = std::find(styles.begin(), styles.end(), key);
      if (st == styles.end()) st = styles.insert(styles.end(), key);
      LineSeries se{cu.name, {}, {}, {}, cu.joined,
                    static_cast<int>(st - styles.begin())};
      for (auto& [x, y, tip] : cu.pts) {
        se.x.push_back(x);
        se.y.push_back(y);
        se.tips.push_back(std::move(tip));
        xs.push_back(x);
        ymax = std::max(ymax, y);
      }
      c.series.push_back(std::move(se));
    }
    charts.push_back(std::move(c));
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (std::size_t i = first; i < charts.size(); ++i) {
    charts[i].shared_x = xs;
    charts[i].shared_y = ymax;
  }
}

} // namespace

std::vector<LineChart> sweep_charts(std::span<const SweepPoint> points) {
  using Panels = std::vector<std::pair<std::string, std::vector<Curve>>>;
  Panels by_m, by_mem;
  for (const SweepPoint& pt : points) {
    std::string name = fmt::format("p={}", pt.devices);
    if (pt.chunks > 0) name += fmt::format(" v={}", pt.chunks);
    const std::string pv = name;
    const std::string shape = pv + fmt::format(" m={}", pt.microbatches);
    if (pt.mem_limit.given()) name += " mem=" + pt.mem_limit.text;
    Curve& c = curve_of(panel_of(by_m, pt.schedule), name);
    Curve& mc = curve_of(panel_of(by_mem, pt.schedule), shape);
    mc.pv = pv;
    mc.ms = {pt.microbatches};
    if (!pt.ok()) continue;
    const std::string tip =
        fmt::format("{} {} m={} mem limit {}: bubble {}, cost {} ms, peak {} M_B", pt.schedule,
                    pv, pt.microbatches, limit_text(pt.mem_limit.text),
                    human_percent(pt.bubble_rate), human_number(pt.cost_ms),
                    human_number(pt.peak_memory));
    c.pts.emplace_back(pt.microbatches, 100 * pt.bubble_rate, tip);
    mc.pts.emplace_back(pt.peak_memory, 100 * pt.bubble_rate, tip);
  }
  for (auto& [panel, curves] : by_m) curves = merge_coinciding(std::move(curves));
  for (auto& [panel, curves] : by_mem) curves = merge_coinciding(memory_curves(std::move(curves)));
  std::vector<LineChart> charts;
  add_group(charts,
            LineChart{"", "micro-batches m", "bubble rate (%)", true, false, {},
                      "bubble rate against micro-batches", {}, 0},
            std::move(by_m));
  add_group(charts,
            LineChart{"", "peak memory per device (M_B)", "bubble rate (%)", false, true, {},
                      "bubble rate against peak activation memory (a curve per shape through "
                      "its memory limits)",
                      {}, 0},
            std::move(by_mem));
  return charts;
}

std::string sweep_data_json(std::span<const SweepPoint> points, std::string_view costs) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  doc["schema"] = "ppsim.sweep-report/2";
  doc["costs"] = costs;
  ojson charts = ojson::array();
  for (const LineChart& c : sweep_charts(points)) {
    ojson chart;
    chart["group"] = c.group;
    chart["title"] = c.title;
    chart["x_label"] = c.x_label;
    chart["y_label"] = c.y_label;
    chart["log_x"] = c.log_x;
    chart["x_from_zero"] = c.x_from_zero;
    ojson series = ojson::array();
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      const LineSeries& se = c.series[k];
      const SeriesStyle style =
          series_style(se.style >= 0 ? static_cast<std::size_t>(se.style) : k);
      ojson j;
      j["name"] = se.name;
      j["colour"] = style.colour;
      j["dash"] = style.dash;
      j["joined"] = se.joined;
      ojson pts = ojson::array();
      for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i)
        pts.push_back(ojson::array({se.x[i], se.y[i], i < se.tips.size() ? se.tips[i] : ""}));
      j["points"] = std::move(pts);
      series.push_back(std::move(j));
    }
    chart["series"] = std::move(series);
    charts.push_back(std::move(chart));
  }
  doc["charts"] = std::move(charts);
  // Safe inside <script>: no "</script>" can appear.
  std::string text = doc.dump();
  std::string safe;
  for (const char c : text) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  return safe;
}

void write_sweep_svg(std::ostream& out, std::span<const SweepPoint> points) {
  const std::vector<LineChart> charts = sweep_charts(points);
  write_line_charts_picture(out, charts);
}

void write_sweep_html(std::ostream& out, std::span<const SweepPoint> points,
                      const std::string& costs) {
  std::ostringstream page;
  write_html_head(page, "ppsim sweep");
  std::size_t ok = 0;
  for (const SweepPoint& pt : points)
    if (pt.ok()) ++ok;
  page << fmt::format("<p class=\"sub\">{} points, {} ran, {} did not (listed with their reason); "
                      "costs: {}</p>\n",
                      points.size(), ok, points.size() - ok, xml_escaped(costs));
  page << "<noscript><p class=\"note\">The charts of this page are drawn by its script.</p>"
          "</noscript>\n";
  write_html_drawing(page, sweep_data_json(points, costs));
  page << "<h2>Points</h2>\n<table class=\"sweep sortable static\">\n<tr><th class=\"name\">"
          "schedule</th><th>p</th><th>m</th><th>v</th><th>mem limit</th><th class=\"name\">"
          "status</th><th>cost ms</th><th>bubble rate</th><th>peak M_B</th>"
          "<th class=\"name\">reason</th></tr>\n";
  for (const SweepPoint& pt : points) {
    const bool good = pt.ok();
    page << fmt::format(
        "<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"name {}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"name\">{}</td>"
        "</tr>\n",
        xml_escaped(pt.schedule), pt.devices, pt.microbatches,
        good ? fmt::format("{}", pt.run_chunks) : chunks_text(pt.chunks),
        xml_escaped(limit_text(pt.mem_limit.text)), good ? "status-ok" : "status-bad",
        sweep_status_name(pt.status), good ? human_number(pt.cost_ms) : "-",
        good ? human_percent(pt.bubble_rate) : "-", good ? human_number(pt.peak_memory) : "-",
        xml_escaped(reason_text(pt)));
  }
  page << "</table>\n";
  write_html_tail(page);
  out << page.str();
}

} // namespace ppsim
