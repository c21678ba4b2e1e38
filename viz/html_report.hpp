// The self-contained HTML report of `ppsim compare --html`: timelines, metrics, charts.
#pragma once

#include "run/compare.hpp"
#include "sim/run.hpp"

#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

namespace ppsim {

struct HtmlReportOptions {
  std::string title{"ppsim report"};
  int timeline_width{1000};            ///< pixels of the longest timeline
  std::size_t max_rects{50'000};       ///< per timeline; above it the timeline is aggregated
};

/// One HTML file that opens from disk with no network: inline CSS, SVG and a small script.
/// Per schedule a timeline (all on one time scale), the metrics table, bubble-rate and
/// peak-memory bar charts, and each run's parameters and cost provenance. Every name is escaped;
/// the same runs give byte-identical text.
///
///   write_file_atomically("out/report.html",
///                         [&](std::ostream& f) { write_html_report(f, runs); });
void write_html_report(std::ostream& out, std::span<const Run> runs,
                       const HtmlReportOptions& options = {});
/// The report of a comparison: its runs as above, and in the metrics table a row for each
/// schedule that did not fit, with the reason and the least limit that works.
void write_html_report(std::ostream& out, const Comparison& comparison,
                       const HtmlReportOptions& options = {});

/// The page's opening (doctype, head with the inline style, h1 title) and its closing (the
/// script, </body></html>): shared by the compare and sweep reports.
void write_html_head(std::ostream& out, std::string_view title);
void write_html_tail(std::ostream& out);

} // namespace ppsim
