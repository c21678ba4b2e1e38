// The self-contained HTML report of `ppsim compare --html` (and `plan --html`): the runs as
// compact data, drawn in the browser by the embedded script (ppsim/viz/page/report.js).
#pragma once

#include "ppsim/run/compare.hpp"
#include "ppsim/sim/run.hpp"

#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

namespace ppsim {

struct HtmlReportOptions {
  std::string title{"ppsim report"};
};

/// One HTML file that opens from disk with no network: inline style, the runs as a
/// ppsim.report/1 document (report_data_json) and the script that draws them: the metrics table
/// (sortable), bubble-rate, cost and peak-memory bars, per schedule a timeline with zoom, pan,
/// a minimap brush, hover details and the micro-batch chain on click, the activation memory of
/// each device over time and its peak, and each run's parameters. Without JavaScript the
/// metrics table still shows. Every name is escaped; the same runs give byte-identical text.
///
///   write_file_atomically("out/report.html",
///                         [&](std::ostream& f) { write_html_report(f, runs); });
void write_html_report(std::ostream& out, std::span<const Run> runs,
                       const HtmlReportOptions& options = {});
/// The report of a comparison: its runs as above, and in the metrics table a row for each
/// schedule that did not fit, with the reason and the least limit that works.
void write_html_report(std::ostream& out, const Comparison& comparison,
                       const HtmlReportOptions& options = {});

/// The page's opening (doctype, head with the inline style, h1 title) and its closing: shared by
/// the compare and sweep reports and the playground.
void write_html_head(std::ostream& out, std::string_view title);
void write_html_tail(std::ostream& out);
/// The drawing area `#ppsim-root`, the document `data` (JSON, safe inside <script>) in
/// `#ppsim-data`, and the script that renders it there.
void write_html_drawing(std::ostream& out, std::string_view data);

} // namespace ppsim
