// Sweep grids and their writers.
#include "viz/sweep.hpp"

#include "io/json_text.hpp"
#include "viz/html_report.hpp"
#include "io/numbers.hpp"
#include "viz/svg.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
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

std::vector<LineChart> sweep_charts(std::span<const SweepPoint> points) {
  // Curves keyed in first-appearance order, so the charts follow the command line's order.
  const auto series_of = [](std::vector<LineSeries>& all, const std::string& name) -> LineSeries& {
    for (LineSeries& s : all)
      if (s.name == name) return s;
    all.push_back(LineSeries{name, {}, {}, {}});
    return all.back();
  };
  LineChart by_m{"bubble rate against micro-batches", "micro-batches m", "bubble rate (%)", true,
                 false, {}};
  LineChart by_mem{"bubble rate against peak activation memory (one curve per shape)",
                   "peak memory per device (M_B)", "bubble rate (%)", false, true, {}};
  std::map<std::string, std::vector<std::tuple<double, double, std::string>>> mem_points;
  std::vector<std::string> mem_order;
  for (const SweepPoint& pt : points) {
    std::string name = fmt::format("{} p={}", pt.schedule, pt.devices);
    if (pt.chunks > 0) name += fmt::format(" v={}", pt.chunks);
    const std::string mem_name = name + fmt::format(" m={}", pt.microbatches);
    if (pt.mem_limit.given()) name += " mem=" + pt.mem_limit.text;
    LineSeries& s = series_of(by_m.series, name);
    if (!mem_points.contains(mem_name)) mem_order.push_back(mem_name);
    auto& mp = mem_points[mem_name];
    if (!pt.ok()) continue;
    const std::string tip =
        fmt::format("{} m={} mem limit {}: bubble {}, cost {} ms, peak {} M_B", name,
                    pt.microbatches, limit_text(pt.mem_limit.text), human_percent(pt.bubble_rate),
                    human_number(pt.cost_ms), human_number(pt.peak_memory));
    s.x.push_back(pt.microbatches);
    s.y.push_back(100 * pt.bubble_rate);
    s.tips.push_back(tip);
    mp.emplace_back(pt.peak_memory, 100 * pt.bubble_rate, tip);
  }
  for (const std::string& name : mem_order) {
    auto pts = mem_points[name];
    std::stable_sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    LineSeries s{name, {}, {}, {}};
    for (const auto& [x, y, tip] : pts) {
      s.x.push_back(x);
      s.y.push_back(y);
      s.tips.push_back(tip);
    }
    by_mem.series.push_back(std::move(s));
  }
  return {std::move(by_m), std::move(by_mem)};
}

std::string sweep_data_json(std::span<const SweepPoint> points, std::string_view costs) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  doc["schema"] = "ppsim.sweep-report/1";
  doc["costs"] = costs;
  ojson charts = ojson::array();
  for (const LineChart& c : sweep_charts(points)) {
    ojson chart;
    chart["title"] = c.title;
    chart["x_label"] = c.x_label;
    chart["y_label"] = c.y_label;
    chart["log_x"] = c.log_x;
    chart["x_from_zero"] = c.x_from_zero;
    ojson series = ojson::array();
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      const LineSeries& se = c.series[k];
      const SeriesStyle style = series_style(k);
      ojson j;
      j["name"] = se.name;
      j["colour"] = style.colour;
      j["dash"] = style.dash;
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
