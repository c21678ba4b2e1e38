// The HTML report: the runs' data and the script that draws them, with a static metrics table
// for readers without JavaScript.
#include "ppsim/viz/html_report.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/viz/page_assets.hpp"
#include "ppsim/viz/report_data.hpp"
#include "ppsim/viz/svg.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <ostream>
#include <sstream>
#include <vector>

namespace ppsim {

namespace {

std::string esc(std::string_view s) { return xml_escaped(s); }

std::string memory_text(double mb) { return human_number(mb); }

// The metrics as a plain table, inside <noscript>: what a reader without JavaScript sees.
void summary_table(std::ostream& out, std::span<const Run> runs,
                   std::span<const CompareRow* const> not_run) {
  out << "<table class=\"metrics static\">\n<tr><th class=\"name\">schedule</th><th>p</th>"
         "<th>m</th><th>v</th><th>tasks</th><th>makespan ms</th><th>cost ms</th><th>ideal ms</th>"
         "<th>bubble rate</th><th>bubble / ideal</th><th>idle</th><th>peak M_B</th>"
         "<th>lower bound ms</th><th>gap to it</th></tr>\n";
  for (const Run& r : runs) {
    const Metrics& m = r.metrics;
    out << fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       esc(r.schedule.name), r.schedule.devices,
                       r.schedule.microbatches / std::max(1, r.iterations.options.count),
                       r.schedule.chunks(), r.timeline.runs.size(), human_ms(m.makespan),
                       human_ms(m.cost), human_ms(m.ideal), human_percent(m.bubble_rate),
                       human_percent(m.bubble_over_ideal), human_percent(m.idle_fraction),
                       memory_text(m.peak_memory),
                       r.has_lower_bound() ? human_ms(r.lower_bound) : "-",
                       r.has_lower_bound() ? human_percent(r.optimality_gap) : "-");
  }
  for (const CompareRow* c : not_run)
    out << fmt::format("<tr class=\"infeasible\"><td class=\"name\">{}</td><td colspan=\"13\" "
                       "class=\"name status-bad\">{}: {}{}</td></tr>\n",
                       esc(c->schedule), c->rejected ? "rejected" : "infeasible", esc(c->reason),
                       c->least_mem_limit >= 0
                           ? fmt::format("; the least limit that works: {} M_B",
                                         memory_text(c->least_mem_limit))
                           : std::string());
  out << "</table>\n";
}

void write_report(std::ostream& out, std::span<const Run> runs,
                  std::span<const CompareRow* const> not_run, const std::string& data,
                  const HtmlReportOptions& options) {
  std::ostringstream page;
  write_html_head(page, options.title);
  page << "<noscript><p class=\"note\">The timelines, charts and memory curves of this report "
          "are drawn by its script; with JavaScript off only the metrics show.</p>\n";
  summary_table(page, runs, not_run);
  page << "</noscript>\n";
  write_html_drawing(page, data);
  write_html_tail(page);
  out << page.str();
}

} // namespace

void write_html_head(std::ostream& out, std::string_view title) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
      << esc(title) << "</title>\n<style>\n"
      << report_style() << "</style>\n</head>\n<body>\n<h1>" << esc(title) << "</h1>\n";
}

void write_html_tail(std::ostream& out) { out << "</body>\n</html>\n"; }

void write_html_drawing(std::ostream& out, std::string_view data) {
  out << "<div id=\"ppsim-root\"></div>\n<script type=\"application/json\" id=\"ppsim-data\">"
      << data << "</script>\n<script>\n"
      << report_script()
      << "ppsim.render(document.getElementById('ppsim-root'), "
         "JSON.parse(document.getElementById('ppsim-data').textContent));\n</script>\n";
}

void write_html_report(std::ostream& out, std::span<const Run> runs,
                       const HtmlReportOptions& options) {
  write_report(out, runs, {}, report_data_json(runs, options.title), options);
}

void write_html_report(std::ostream& out, const Comparison& comparison,
                       const HtmlReportOptions& options) {
  std::vector<const CompareRow*> not_run;
  for (const CompareRow& c : comparison.rows)
    if (!c.ok()) not_run.push_back(&c);
  write_report(out, comparison.runs, not_run, report_data_json(comparison, options.title), options);
}

} // namespace ppsim
