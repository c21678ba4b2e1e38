// The HTML report: a page of inline SVG timelines and charts with the runs' metrics and parameters.
#include "viz/html_report.hpp"

#include "viz/metrics_json.hpp"
#include "viz/svg.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <ostream>
#include <sstream>
#include <vector>

namespace ppsim {

namespace {

constexpr std::string_view style = R"(body{font-family:sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 4px}p.sub{color:#555;margin:0 0 12px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td.name,th.name{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:24px}.details{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
.note{color:#8a4b00}.status-ok{color:#1b6e1b}.status-bad{color:#a01010}
svg.timeline rect.task.hl{stroke:#000;stroke-width:1.5}
svg{display:block}
)";

// Highlights the tasks of the hovered micro-batch across the devices of one timeline.
constexpr std::string_view script = R"(document.querySelectorAll('svg.timeline').forEach(function (svg) {
  svg.addEventListener('mouseover', function (e) {
    var t = e.target;
    if (!t.classList || !t.classList.contains('task')) return;
    var mb = t.getAttribute('data-mb');
    svg.querySelectorAll('rect.task').forEach(function (r) {
      if (r.getAttribute('data-mb') === mb) r.classList.add('hl');
    });
  });
  svg.addEventListener('mouseout', function () {
    svg.querySelectorAll('rect.hl').forEach(function (r) { r.classList.remove('hl'); });
  });
});
)";

std::string esc(std::string_view s) { return xml_escaped(s); }

std::string percent(double x) { return fmt::format("{:.2f}%", 100.0 * x); }
std::string memory_text(double mb) { return fmt::format("{:.4g}", mb); }

void legend(std::ostream& out, int max_chunks) {
  out << "<p class=\"legend\">";
  for (const Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW, Kind::FB}) {
    for (int c = 0; c < max_chunks; ++c) {
      out << fmt::format("<span><i style=\"background:{}\"></i>{}{}</span>",
                         task_fill(k, c, max_chunks), kind_name(k),
                         max_chunks > 1 ? fmt::format(" chunk {}", c) : "");
    }
  }
  out << "<span><i style=\"background:#e4e4e4\"></i>idle</span></p>\n";
}

void summary_table(std::ostream& out, std::span<const Run> runs,
                   std::span<const CompareRow* const> not_run) {
  out << "<table class=\"metrics\">\n<tr><th class=\"name\">schedule</th><th>p</th><th>m</th>"
         "<th>v</th><th>tasks</th><th>makespan ms</th><th>cost ms</th><th>ideal ms</th>"
         "<th>bubble rate</th><th>bubble / ideal</th><th>idle</th><th>peak M_B</th>"
         "<th>lower bound ms</th><th>gap to it</th></tr>\n";
  for (const Run& r : runs) {
    const Metrics& m = r.metrics;
    out << fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       esc(r.schedule.name), r.schedule.devices,
                       r.schedule.microbatches / std::max(1, r.iterations.options.count),
                       r.schedule.chunks(), r.timeline.runs.size(), ticks_to_ms_text(m.makespan),
                       ticks_to_ms_text(m.cost), ticks_to_ms_text(m.ideal), percent(m.bubble_rate),
                       percent(m.bubble_over_ideal), percent(m.idle_fraction),
                       memory_text(m.peak_memory),
                       r.has_lower_bound() ? ticks_to_ms_text(r.lower_bound) : "-",
                       r.has_lower_bound() ? percent(r.optimality_gap) : "-");
  }
  for (const CompareRow* c : not_run)
    out << fmt::format("<tr class=\"infeasible\"><td class=\"name\">{}</td><td colspan=\"13\" "
                       "class=\"name status-bad\">infeasible: {}{}</td></tr>\n",
                       esc(c->schedule), esc(c->reason),
                       c->least_mem_limit >= 0
                           ? fmt::format("; the least limit that works: {} M_B",
                                         memory_text(c->least_mem_limit))
                           : std::string());
  out << "</table>\n";
}

void parameters_table(std::ostream& out, const Run& r) {
  out << "<table class=\"parameters\">\n<tr><th class=\"name\" colspan=\"2\">parameters</th></tr>\n";
  const auto row = [&](std::string_view key, std::string_view value) {
    out << fmt::format("<tr><td class=\"name\">{}</td><td class=\"name\">{}</td></tr>\n", esc(key),
                       esc(value));
  };
  for (const auto& [key, value] : r.parameters) row(key, value);
  row("cost provenance", r.costs.source);
  row("comm", ticks_to_ms_text(r.costs.comm) + " ms per cross-device edge");
  row("memory limit", r.mem_limit >= 0 ? memory_text(r.mem_limit) + " M_B" : "none");
  if (r.costs.memory_unit_bytes > 0)
    row("M_B", fmt::format("{:.6g} bytes", r.costs.memory_unit_bytes));
  out << "</table>\n";
}

void stage_costs_table(std::ostream& out, const Run& r) {
  constexpr std::size_t max_rows = 32;
  out << "<table class=\"stage-costs\">\n<tr><th>stage</th><th>F ms</th><th>B ms</th>"
         "<th>W ms</th><th>BW ms</th><th>M_B</th><th>M_W</th></tr>\n";
  const auto& st = r.costs.stage;
  for (std::size_t i = 0; i < st.size() && i < max_rows; ++i) {
    const StageCosts& c = st[i];
    out << fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td></tr>\n",
                       i, ticks_to_ms_text(c.F), ticks_to_ms_text(c.B), ticks_to_ms_text(c.W),
                       c.BW >= 0 ? ticks_to_ms_text(c.BW) : ticks_to_ms_text(c.B + c.W), memory_text(c.MB),
                       memory_text(c.MW));
  }
  if (st.size() > max_rows)
    out << fmt::format("<tr><td class=\"name\" colspan=\"7\">... {} more stages</td></tr>\n",
                       st.size() - max_rows);
  out << "</table>\n";
}

void device_table(std::ostream& out, const Run& r) {
  out << "<table class=\"devices\">\n<tr><th>device</th><th>busy ms</th><th>span ms</th>"
         "<th>idle ms</th><th>peak M_B</th></tr>\n";
  for (const DeviceMetrics& d : r.metrics.per_device)
    out << fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       d.device, ticks_to_ms_text(d.busy), ticks_to_ms_text(d.span), ticks_to_ms_text(d.idle),
                       memory_text(d.peak_memory));
  out << "</table>\n";
}

} // namespace

void write_html_head(std::ostream& out, std::string_view title) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
      << esc(title) << "</title>\n<style>\n"
      << style << "</style>\n</head>\n<body>\n<h1>" << esc(title) << "</h1>\n";
}

void write_html_tail(std::ostream& out) {
  out << "<script>\n" << script << "</script>\n</body>\n</html>\n";
}

namespace {

void write_report(std::ostream& out, std::span<const Run> runs,
                  std::span<const CompareRow* const> not_run, const HtmlReportOptions& options) {
  std::ostringstream page;
  write_html_head(page, options.title);
  Ticks span = 0;
  int max_chunks = 1;
  for (const Run& r : runs) {
    span = std::max(span, r.metrics.makespan);
    max_chunks = std::max(max_chunks, r.schedule.chunks());
  }
  page << fmt::format("<p class=\"sub\">{} schedule{}; every timeline on one time scale ({} ms "
                      "across)</p>\n",
                      runs.size(), runs.size() == 1 ? "" : "s", ticks_to_ms_text(span));

  page << "<h2>Metrics</h2>\n";
  summary_table(page, runs, not_run);
  page << "<div class=\"charts\">\n";
  std::vector<Bar> bubble;
  std::vector<Bar> memory;
  for (const Run& r : runs) {
    bubble.push_back({r.schedule.name, r.metrics.bubble_rate, percent(r.metrics.bubble_rate)});
    std::string mem = memory_text(r.metrics.peak_memory) + " M_B";
    if (r.metrics.peak_memory_bytes > 0)
      mem += fmt::format(" ({:.4g} MiB)", r.metrics.peak_memory_bytes / 1048576.0);
    memory.push_back({r.schedule.name, r.metrics.peak_memory, mem});
  }
  write_bar_chart_svg(page, "bubble rate (cost - ideal) / cost", bubble);
  write_bar_chart_svg(page, "peak activation memory per device", memory);
  page << "</div>\n";

  page << "<h2>Timelines</h2>\n";
  legend(page, std::min(max_chunks, 4));
  const TimelineSvgOptions svg{options.timeline_width, span, options.max_rects};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    page << fmt::format("<div class=\"schedule\" id=\"schedule-{}\">\n<h3 class=\"schedule-name\">"
                        "{}</h3>\n",
                        i, esc(r.schedule.name));
    page << fmt::format("<p class=\"sub\">cost {} ms, bubble rate {}, peak {} M_B</p>\n",
                        ticks_to_ms_text(r.metrics.cost), percent(r.metrics.bubble_rate),
                        memory_text(r.metrics.peak_memory));
    write_timeline_svg(page, r, svg);
    page << "</div>\n";
  }

  page << "<h2>Parameters and costs</h2>\n";
  for (const Run& r : runs) {
    page << "<h3>" << esc(r.schedule.name) << "</h3>\n<div class=\"details\">\n";
    parameters_table(page, r);
    device_table(page, r);
    stage_costs_table(page, r);
    page << "</div>\n";
  }
  write_html_tail(page);
  out << page.str();
}

} // namespace

void write_html_report(std::ostream& out, std::span<const Run> runs,
                       const HtmlReportOptions& options) {
  write_report(out, runs, {}, options);
}

void write_html_report(std::ostream& out, const Comparison& comparison,
                       const HtmlReportOptions& options) {
  std::vector<const CompareRow*> not_run;
  for (const CompareRow& c : comparison.rows)
    if (!c.ok()) not_run.push_back(&c);
  write_report(out, comparison.runs, not_run, options);
}

} // namespace ppsim
