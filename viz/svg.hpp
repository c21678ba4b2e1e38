// Inline SVG pictures: the timeline of a run (one row per device, one rectangle per task), and the
// small bar and line charts of the HTML reports.
#pragma once

#include "sim/run.hpp"

#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// Appends `s` with the five XML specials (& < > " ') escaped: safe in text and attributes.
void append_xml_escaped(std::string& out, std::string_view s);
[[nodiscard]] std::string xml_escaped(std::string_view s);

/// The colour of a task kind (`#4e79a7` for F, ...), lightened for later chunks of a device:
/// chunk 0 is the full colour, the last chunk is half-way to white.
[[nodiscard]] std::string task_fill(Kind kind, int chunk, int chunks);

struct TimelineSvgOptions {
  /// Pixels that `time_span` covers. Every timeline of one report uses the same width and span,
  /// so they share one time scale: a shorter run draws a shorter picture.
  int width{1000};
  /// The time the width stands for; 0 = this run's makespan.
  Ticks time_span{0};
  /// Above this many tasks the timeline is aggregated: per device and pixel column, the kind that
  /// covers most of the column, one rectangle per stretch of equal columns, and a note says so.
  std::size_t max_rects{50'000};
};

/// The timeline as a standalone `<svg>` element: per device a row of `rect.task` (one per task,
/// class `task <kind> c<chunk>`, filled by task_fill, the micro-batch number inside when it
/// fits, a `<title>` tooltip with device, stage, chunk, micro-batch, start and duration) and
/// `rect.idle` gaps inside the device's span, with `rect.comm-wait` (hatched) over the parts of
/// a gap spent waiting on a message in flight (CommWait; not in the aggregated view); a time
/// axis in ms below.
///
///   std::ostringstream svg;
///   write_timeline_svg(svg, run_schedule(make_schedule("zb-h1", {4, 8}), parse_costs("F=1")));
void write_timeline_svg(std::ostream& out, const Run& run, const TimelineSvgOptions& options = {});

/// One bar of a bar chart: its label, its length, and the text printed after it.
struct Bar {
  std::string label;
  double value{0};
  std::string text;
};

/// A horizontal bar chart (`svg.chart.bars`), bars scaled to the largest value (or `max_value`
/// when it is larger, e.g. 1 for rates).
void write_bar_chart_svg(std::ostream& out, std::string_view title, std::span<const Bar> bars,
                         double max_value = 0);

/// One curve of a line chart; `tips` (optional, one per point) become the points' tooltips.
struct LineSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  std::vector<std::string> tips;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x{false};  ///< base-2 positions (micro-batch grids 8, 16, 32, 64 spread evenly)
  bool x_from_zero{false};  ///< a linear x axis that starts at 0 (memory)
  std::vector<LineSeries> series;
};

/// A line chart (`svg.chart.lines`): axes with ticks, one polyline and its points per series, a
/// legend. Series without points are listed in the legend only.
void write_line_chart_svg(std::ostream& out, const LineChart& chart);

} // namespace ppsim
