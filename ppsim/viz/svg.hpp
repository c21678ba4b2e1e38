// SVG pictures: the timeline of a run (one row per device, one rectangle per task), the
// standalone pictures of `--svg`, and the line charts of sweeps.
#pragma once

#include "ppsim/sim/run.hpp"

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

/// The colour of a task kind (`#4e79a7` for F, ...). With several chunks per device each chunk
/// gets its own shade of it: chunk 0 the colour itself, chunk 1 a dark shade, chunk 2 a light
/// one, chunk 3 a deep one (then again), all saturated, so that no task looks like idle (which
/// is hatched grey).
[[nodiscard]] std::string task_fill(Kind kind, int chunk, int chunks);

/// The style of series k of a chart: one of ten colours and one of four dash patterns, chosen so
/// that the first 40 series differ and neighbouring series differ in both.
struct SeriesStyle {
  std::string_view colour;
  std::string_view dash;  ///< stroke-dasharray; "" = solid
};
[[nodiscard]] SeriesStyle series_style(std::size_t k);

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
/// hatched `rect.idle` gaps inside the device's span, with `rect.comm-wait` (amber stripes)
/// over the parts of a gap spent waiting on a message in flight (CommWait; not in the aggregated
/// view); a time axis in ms below.
///
///   std::ostringstream svg;
///   write_timeline_svg(svg, run_schedule(make_schedule("zb-h1", {4, 8}), parse_costs("F=1")));
void write_timeline_svg(std::ostream& out, const Run& run, const TimelineSvgOptions& options = {});

/// `--svg` of simulate and compare: one picture for a slide or a chat. Per run a title line
/// (schedule, p, m, v, cost, bubble rate, peak memory) over its timeline, all on one time scale,
/// and a legend of the kinds and chunks drawn, of idle and of waiting for a message.
///
///   write_file_atomically("zb.svg", [&](std::ostream& f) { write_timelines_picture(f, runs); });
void write_timelines_picture(std::ostream& out, std::span<const Run> runs,
                             const TimelineSvgOptions& options = {});

/// One curve of a line chart; `tips` (optional, one per point) become the points' tooltips.
struct LineSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  std::vector<std::string> tips;
  bool joined{true};  ///< a line through the points; false: the points alone (a scatter)
  int style{-1};      ///< series_style(style); -1: by the series' index in its chart
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x{false};  ///< base-2 positions (micro-batch grids 8, 16, 32, 64 spread evenly)
  bool x_from_zero{false};  ///< a linear x axis that starts at 0 (memory)
  std::vector<LineSeries> series;
  /// Small multiples: the charts of one group are panels of one figure (the group is its title,
  /// `title` the panel's) and share its scales: `shared_x` are x values every panel's axis
  /// covers, `shared_y` the least top of the y axis. Empty group: a chart on its own.
  std::string group{};
  std::vector<double> shared_x{};
  double shared_y{0};
};

/// A line chart (`svg.chart.lines`): axes with ticks whose labels never overlap, one polyline
/// and its points per series in series_style(k), and a legend below the plot that wraps to the
/// chart's width (the chart grows to hold it). Series without points are listed in the legend
/// only.
void write_line_chart_svg(std::ostream& out, const LineChart& chart);

/// Several line charts as one standalone picture, one above the other (`sweep --svg`).
void write_line_charts_picture(std::ostream& out, std::span<const LineChart> charts);

} // namespace ppsim
