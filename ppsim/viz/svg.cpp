// SVG writers: timelines, the pictures of --svg and the sweep charts, as deterministic text.
#include "ppsim/viz/svg.hpp"

#include "ppsim/io/json_text.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/viz/metrics_json.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <iterator>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace ppsim {

namespace {

// Coordinates with at most two decimals and no trailing zeros: short, and byte-stable.
void append_num(std::string& out, double x) {
  std::string s = fmt::format("{:.2f}", x);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  out += s;
}

std::string num(double x) {
  std::string s;
  append_num(s, x);
  return s;
}

// A start tag's attribute: ` name="value"` with the value escaped.
void attr(std::string& out, std::string_view name, std::string_view value) {
  out += ' ';
  out += name;
  out += "=\"";
  append_xml_escaped(out, value);
  out += '"';
}

void attr(std::string& out, std::string_view name, double value) {
  out += ' ';
  out += name;
  out += "=\"";
  append_num(out, value);
  out += '"';
}

struct Rgb {
  int r, g, b;
};

constexpr Rgb kind_rgb(Kind k) {
  switch (k) {
  case Kind::F: return {0x4e, 0x79, 0xa7};   // blue
  case Kind::B: return {0x59, 0xa1, 0x4f};   // green
  case Kind::W: return {0xf2, 0x8e, 0x2b};   // orange
  case Kind::BW: return {0xb0, 0x7a, 0xa1};  // purple
  case Kind::FB: return {0xe1, 0x57, 0x59};  // red
  }
  return {0x80, 0x80, 0x80};
}

// The series colours of charts (Tableau 10) and their dash patterns.
constexpr std::array<std::string_view, 10> series_colours = {
    "#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
    "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr std::array<std::string_view, 4> series_dashes = {"", "6 3", "2 2", "8 3 2 3"};

// Idle: a hatch of grey stripes, which no task colour resembles.
constexpr std::string_view idle_hatch_id = "ppsim-idle";
constexpr std::string_view idle_defs =
    "<defs><pattern id=\"ppsim-idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
    "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f4f4f4\"/>"
    "<rect width=\"2\" height=\"6\" fill=\"#c6c6c6\"/></pattern></defs>\n";
// Idle spent waiting on a message in flight: amber stripes, apart from idle on compute.
constexpr std::string_view comm_hatch_id = "ppsim-comm-wait";
constexpr std::string_view comm_defs =
    "<defs><pattern id=\"ppsim-comm-wait\" width=\"4\" height=\"4\" "
    "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"4\" "
    "height=\"4\" fill=\"#f4f4f4\"/><rect width=\"1.5\" height=\"4\" fill=\"#d08c2a\"/>"
    "</pattern></defs>\n";

// Text width estimate for the sans-serif font at `size` px (average glyph about 0.56 em).
double text_width(std::string_view text, double size) {
  return static_cast<double>(text.size()) * size * 0.56;
}

// 1, 2 or 5 times a power of ten: the smallest such step giving at most `max_ticks` ticks.
Ticks nice_tick_step(Ticks span, int max_ticks) {
  if (span <= 0) return 1;
  Ticks power = 1;
  while (true) {
    for (const Ticks f : {Ticks{1}, Ticks{2}, Ticks{5}}) {
      const Ticks step = f * power;
      if (span / step <= max_ticks) return step;
    }
    if (power > std::numeric_limits<Ticks>::max() / 100) return span;
    power *= 10;
  }
}

double nice_ceiling(double x) {
  if (!(x > 0) || !std::isfinite(x)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(x)));
  for (const double f : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (f * power >= x * (1 - 1e-12)) return f * power;
  return 10 * power;
}

std::string tick_label(double x) { return human_number(x); }

// `<svg xmlns=.. class=.. width=.. height=.. viewBox=..` (the tag left open for more attributes).
void open_svg(std::string& s, std::string_view cls, double w, double h) {
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"";
  s += cls;
  s += '"';
  attr(s, "width", w);
  attr(s, "height", h);
  s += " viewBox=\"0 0 ";
  append_num(s, w);
  s += ' ';
  append_num(s, h);
  s += '"';
}

// ---------------------------------------------------------------------------------------------
// The timeline.

constexpr double label_w = 76;  // the "device d" column
constexpr double pad_right = 12;
constexpr double top = 6;
constexpr double row_h = 20;
constexpr double row_gap = 4;
constexpr double axis_h = 26;
constexpr double note_h = 16;
constexpr double title_h = 20;
constexpr double legend_h = 22;

// Draws one run's rows and axis into a string at a vertical offset; the <svg> around it is the
// caller's (one timeline, or a picture of several).
class TimelineSvg {
public:
  TimelineSvg(const Run& run, const TimelineSvgOptions& o)
      : run_(run), tl_(run.timeline), topo_(run.schedule), options_(o) {
    t0_ = 0;
    Ticks t1 = 0;
    bool any = false;
    for (const TaskRun& r : tl_.runs) {
      if (!any || r.start < t0_) t0_ = r.start;
      if (!any || r.end > t1) t1 = r.end;
      any = true;
    }
    if (!any) t1 = t0_;
    makespan_ = t1 - t0_;
    span_ = o.time_span > 0 ? std::max(o.time_span, makespan_) : makespan_;
    width_ = std::max(1, o.width);
    scale_ = span_ > 0 ? static_cast<double>(width_) / static_cast<double>(span_) : 0;
    aggregated_ = tl_.runs.size() > o.max_rects;
    // The idle stretches spent waiting on communication, per device in time order.
    waits_.resize(static_cast<std::size_t>(std::max(0, tl_.devices)));
    for_each_comm_wait(tl_, [&](const CommWait& w) {
      waits_[static_cast<std::size_t>(w.device)].push_back(w);
      any_wait_ = true;
    });
    for (auto& w : waits_)
      std::sort(w.begin(), w.end(),
                [](const CommWait& a, const CommWait& b) { return a.begin < b.begin; });
  }

  [[nodiscard]] bool aggregated() const { return aggregated_; }
  /// Whether the rows hatch waits on communication (never in the aggregated view).
  [[nodiscard]] bool shows_comm_waits() const { return any_wait_ && !aggregated_; }
  [[nodiscard]] double total_width() const { return label_w + width_ + pad_right; }
  [[nodiscard]] double height() const {
    return top + (aggregated_ ? note_h : 0) + tl_.devices * (row_h + row_gap) + axis_h;
  }

  // The rows (a `g.device-row` per device, with its labels) and the time axis, from y0 down.
  void write_body(std::string& s, double y0) {
    rows_y_ = y0 + top + (aggregated_ ? note_h : 0);
    if (aggregated_) {
      s += "<text class=\"note\" x=\"";
      append_num(s, label_w);
      s += "\" y=\"";
      append_num(s, y0 + top + 11);
      s += "\" fill=\"#8a4b00\">";
      append_xml_escaped(s, fmt::format("aggregated view: {} tasks exceed the cap of {} "
                                        "rectangles; each pixel column shows the kind that "
                                        "covers most of it",
                                        tl_.runs.size(), options_.max_rects));
      s += "</text>\n";
    }
    for (int d = 0; d < tl_.devices; ++d) {
      device_label(s, d);
      if (aggregated_) aggregated_row(s, d);
      else task_row(s, d);
    }
    axis(s, rows_y_ + tl_.devices * (row_h + row_gap));
  }

private:
  double x_of(Ticks t) const { return label_w + static_cast<double>(t - t0_) * scale_; }
  double y_of(int d) const { return rows_y_ + d * (row_h + row_gap); }

  void device_label(std::string& s, int d) {
    s += "<text class=\"device\" x=\"4\" y=\"";
    append_num(s, y_of(d) + row_h / 2 + 3.5);
    s += "\" font-size=\"11\">device ";
    append_int(s, d);
    s += "</text>\n";
  }

  static void rect(std::string& s, std::string_view cls, double x, double y, double w,
                   std::string_view fill) {
    s += "<rect class=\"";
    s += cls;
    s += '"';
    attr(s, "x", x);
    attr(s, "y", y);
    attr(s, "width", w);
    attr(s, "height", row_h);
    s += " fill=\"";
    s += fill;
    s += '"';
  }

  std::string task_text(const Task& t) const {
    const auto part = [&](Kind k, int stage, int mb) {
      std::string p = fmt::format("{} stage {}", kind_name(k), stage);
      if (run_.schedule.chunks() > 1) p += fmt::format(" (chunk {})", topo_.chunk_of(stage));
      const int n = run_.schedule.slice_count();
      return p + (n > 1 ? fmt::format(", micro-batch {}, slice {}", mb / n, mb % n)
                        : fmt::format(", micro-batch {}", mb));
    };
    if (t.kind == Kind::FB)
      return part(Kind::F, t.stage, t.microbatch) + " overlapped with " +
             part(t.kind2, t.stage2, t.microbatch2);
    return part(t.kind, t.stage, t.microbatch);
  }

  int chunk(int stage) const {
    const int chunks = run_.schedule.chunks();
    return std::clamp(topo_.chunk_of(stage), 0, std::max(0, chunks - 1));
  }

  void task_row(std::string& s, int d) {
    const auto runs = tl_.device_runs(d);
    const double y = y_of(d);
    labels_.clear();
    s += "<g class=\"device-row\"";
    attr(s, "data-device", fmt::format("{}", d));
    s += ">\n";
    const std::string idle_fill = fmt::format("url(#{})", idle_hatch_id);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const TaskRun& r = runs[i];
      if (i > 0 && r.start > runs[i - 1].end) {
        const Ticks gap = r.start - runs[i - 1].end;
        rect(s, "idle", x_of(runs[i - 1].end), y, static_cast<double>(gap) * scale_, idle_fill);
        s += "><title>";
        append_xml_escaped(s, fmt::format("device {}: idle {} ms (from {} ms)", d,
                                          human_ms(gap), human_ms(runs[i - 1].end - t0_)));
        s += "</title></rect>\n";
        comm_waits(s, d, y, runs[i - 1].end, r.start);
      }
      const Task& t = r.task;
      const int c = chunk(t.stage);
      const double w = std::max(0.5, static_cast<double>(r.end - r.start) * scale_);
      const std::string cls = fmt::format("task {} c{}", kind_name(t.kind), c);
      rect(s, cls, x_of(r.start), y, w, task_fill(t.kind, c, run_.schedule.chunks()));
      s += " stroke=\"#ffffff\" stroke-width=\"0.5\"";
      attr(s, "data-mb", fmt::format("{}", t.microbatch));
      s += "><title>";
      append_xml_escaped(s, fmt::format("device {}: {}: {}; start {} ms, duration {} ms", d,
                                        to_string(t), task_text(t),
                                        human_ms(r.start - t0_), human_ms(r.end - r.start)));
      s += "</title></rect>\n";
      const int n = run_.schedule.slice_count();
      const std::string label = t.kind == Kind::FB ? fmt::format("{}+{}", t.microbatch, t.microbatch2)
                                : n > 1 ? fmt::format("{}.s{}", t.microbatch / n, t.microbatch % n)
                                        : fmt::format("{}", t.microbatch);
      if (static_cast<double>(label.size()) * 6.2 + 3 <= w) {
        labels_ += "<text";
        attr(labels_, "x", x_of(r.start) + w / 2);
        attr(labels_, "y", y + row_h / 2 + 3.5);
        // White on the dark shades, black on the others.
        if (c % 4 == 1 || c % 4 == 3) labels_ += " fill=\"#ffffff\"";
        labels_ += '>';
        labels_ += label;
        labels_ += "</text>\n";
      }
    }
    s += "</g>\n";
    if (!labels_.empty()) {
      s += "<g class=\"labels\" text-anchor=\"middle\" fill=\"#111111\" pointer-events=\"none\">\n";
      s += labels_;
      s += "</g>\n";
    }
  }

  // The parts of device d's idle gap [from, to) spent waiting on communication, hatched.
  void comm_waits(std::string& s, int d, double y, Ticks from, Ticks to) const {
    const std::string fill = fmt::format("url(#{})", comm_hatch_id);
    for (const CommWait& w : waits_[static_cast<std::size_t>(d)]) {
      if (w.end <= from || w.begin >= to) continue;
      rect(s, "comm-wait", x_of(w.begin), y, static_cast<double>(w.end - w.begin) * scale_, fill);
      s += "><title>";
      append_xml_escaped(s, fmt::format("device {}: waiting for a message {} ms (from {} ms)", d,
                                        ticks_to_ms_text(w.end - w.begin),
                                        ticks_to_ms_text(w.begin - t0_)));
      s += "</title></rect>\n";
    }
  }

  // Per pixel column, the kind covering most of it; one rectangle per stretch of equal columns.
  void aggregated_row(std::string& s, int d) {
    const auto cols = static_cast<std::size_t>(width_);
    constexpr std::size_t kKinds = 5;
    cover_.assign(cols * kKinds, 0);
    const auto edge = [&](std::size_t c) {
      return t0_ + static_cast<Ticks>(static_cast<long double>(span_) * static_cast<long double>(c) /
                                      static_cast<long double>(cols));
    };
    const auto col_of = [&](Ticks t) {
      if (span_ <= 0) return std::size_t{0};
      const auto c = static_cast<std::size_t>(static_cast<long double>(t - t0_) *
                                              static_cast<long double>(cols) /
                                              static_cast<long double>(span_));
      return std::min(c, cols - 1);
    };
    for (const TaskRun& r : tl_.device_runs(d)) {
      if (r.end <= r.start) continue;
      const auto k = static_cast<std::size_t>(r.task.kind);
      for (std::size_t c = col_of(r.start); c <= col_of(r.end - 1); ++c) {
        const Ticks lo = std::max(r.start, edge(c));
        const Ticks hi = std::min(r.end, edge(c + 1));
        if (hi > lo) cover_[c * kKinds + k] += hi - lo;
      }
    }
    const auto dominant = [&](std::size_t c) {
      int best = -1;
      Ticks most = 0;
      for (std::size_t k = 0; k < kKinds; ++k)
        if (cover_[c * kKinds + k] > most) {
          most = cover_[c * kKinds + k];
          best = static_cast<int>(k);
        }
      return best;
    };
    s += "<g class=\"device-row\"";
    attr(s, "data-device", fmt::format("{}", d));
    s += ">\n";
    const double y = y_of(d);
    std::size_t c = 0;
    while (c < cols) {
      const int k = dominant(c);
      std::size_t e = c + 1;
      while (e < cols && dominant(e) == k) ++e;
      if (k >= 0) {
        const auto kind = static_cast<Kind>(k);
        rect(s, fmt::format("agg {}", kind_name(kind)), label_w + static_cast<double>(c), y,
             static_cast<double>(e - c), task_fill(kind, 0, 1));
        s += "><title>";
        append_xml_escaped(s, fmt::format("device {}: mostly {} from {} ms to {} ms", d,
                                          kind_name(kind), human_ms(edge(c) - t0_),
                                          human_ms(edge(e) - t0_)));
        s += "</title></rect>\n";
      }
      c = e;
    }
    s += "</g>\n";
  }

  void axis(std::string& s, double y) {
    s += "<g class=\"axis\" stroke=\"#555555\">\n<line";
    attr(s, "x1", label_w);
    attr(s, "y1", y);
    attr(s, "x2", label_w + width_);
    attr(s, "y2", y);
    s += "/>\n";
    const Ticks step = nice_tick_step(span_, std::max(2, width_ / 80));
    std::string text;
    for (Ticks t = 0; t <= span_; t += step) {
      const double x = x_of(t0_ + t);
      s += "<line";
      attr(s, "x1", x);
      attr(s, "y1", y);
      attr(s, "x2", x);
      attr(s, "y2", y + 4);
      s += "/>\n";
      text += "<text";
      attr(text, "x", x);
      attr(text, "y", y + 14);
      text += '>';
      text += human_ms(t);
      text += "</text>\n";
      if (step <= 0 || t > span_ - step) break;
    }
    s += "</g>\n<g class=\"axis-labels\" text-anchor=\"middle\" fill=\"#333333\">\n";
    s += text;
    s += "</g>\n<text x=\"4\"";
    attr(s, "y", y + 14);
    s += " fill=\"#333333\">time (ms)</text>\n";
  }

  const Run& run_;
  const Timeline& tl_;
  Topology topo_;
  std::vector<std::vector<CommWait>> waits_;  // per device, by start
  bool any_wait_{false};
  TimelineSvgOptions options_;
  Ticks t0_{0};
  Ticks makespan_{0};
  Ticks span_{0};
  int width_{1};
  double scale_{0};
  double rows_y_{0};
  bool aggregated_{false};
  std::string labels_;
  std::vector<Ticks> cover_;
};

std::string percent_text(double x) { return human_percent(x); }

// The legend of a picture: a swatch per kind and chunk that occurs, then idle.
void legend(std::string& s, std::span<const Run> runs, double y, double width, bool comm_waits) {
  std::array<int, 5> chunks_of{};  // per kind: 1 + the highest chunk seen, 0 = not seen
  bool chunked = false;
  for (const Run& r : runs) {
    const Topology topo(r.schedule);
    chunked = chunked || r.schedule.chunks() > 1;
    for (const TaskRun& t : r.timeline.runs) {
      auto& n = chunks_of[static_cast<std::size_t>(t.task.kind)];
      n = std::max(n, std::min(topo.chunk_of(t.task.stage), 3) + 1);
    }
  }
  s += "<g class=\"legend\" font-size=\"11\">\n";
  double x = 4;
  const auto item = [&](std::string_view fill, const std::string& text) {
    const double w = 16 + text_width(text, 11) + 12;
    if (x + w > width && x > 4) return;  // the picture is as wide as its timelines
    s += "<rect";
    attr(s, "x", x);
    attr(s, "y", y + 4);
    s += " width=\"12\" height=\"12\"";
    attr(s, "fill", fill);
    s += " stroke=\"#999999\" stroke-width=\"0.5\"/>\n<text";
    attr(s, "x", x + 16);
    attr(s, "y", y + 14);
    s += '>';
    append_xml_escaped(s, text);
    s += "</text>\n";
    x += w;
  };
  for (const Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW, Kind::FB}) {
    const int n = chunks_of[static_cast<std::size_t>(k)];
    for (int c = 0; c < n; ++c)
      item(task_fill(k, c, chunked ? 2 : 1),
           chunked ? fmt::format("{} chunk {}", kind_name(k), c) : std::string(kind_name(k)));
  }
  item(fmt::format("url(#{})", idle_hatch_id), "idle");
  if (comm_waits) item(fmt::format("url(#{})", comm_hatch_id), "idle, waiting for a message");
  s += "</g>\n";
}

// ---------------------------------------------------------------------------------------------
// Line charts.

constexpr double chart_w = 640, chart_left = 58, chart_right = 16, chart_top = 30,
                 chart_plot_h = 260, chart_axis_h = 40, legend_row_h = 16;

struct LegendItem {
  double x, y;
};

// Where each series' legend entry goes: rows under the plot, wrapped to the chart's width.
std::vector<LegendItem> legend_layout(const LineChart& chart, double y0, double& height) {
  std::vector<LegendItem> at;
  double x = chart_left, y = y0;
  for (const LineSeries& se : chart.series) {
    const double w = 30 + text_width(se.name, 11) + 14;
    if (x + w > chart_w - chart_right && x > chart_left) {
      x = chart_left;
      y += legend_row_h;
    }
    at.push_back({x, y});
    x += w;
  }
  height = chart.series.empty() ? 0 : y - y0 + legend_row_h + 4;
  return at;
}

// Where a chart's values go: the x values of the data, the ranges of both axes, and the
// position of a value in the plot.
struct ChartAxes {
  bool log_x{false};
  std::vector<double> xs;  // every usable x value, sorted, once each
  double x_lo{0}, x_hi{1}, y_hi{1};

  explicit ChartAxes(const LineChart& chart) : log_x(chart.log_x) {
    double ymax = 0;
    for (const LineSeries& se : chart.series)
      for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
        if (!usable(se.x[i], se.y[i])) continue;
        xs.push_back(se.x[i]);
        ymax = std::max(ymax, se.y[i]);
      }
    for (const double x : chart.shared_x)
      if (usable(x, 0)) xs.push_back(x);
    if (std::isfinite(chart.shared_y)) ymax = std::max(ymax, chart.shared_y);
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    x_lo = xs.empty() ? 0 : xv(xs.front());
    x_hi = xs.empty() ? 1 : xv(xs.back());
    if (chart.x_from_zero && !log_x) x_lo = std::min(x_lo, 0.0);
    if (x_hi <= x_lo) {
      x_lo -= 1;
      x_hi += 1;
    }
    y_hi = nice_ceiling(ymax);
  }
  [[nodiscard]] double xv(double x) const { return log_x ? std::log2(x) : x; }
  [[nodiscard]] bool usable(double x, double y) const {
    return std::isfinite(x) && std::isfinite(y) && (!log_x || x > 0);
  }
  [[nodiscard]] static double plot_w() { return chart_w - chart_left - chart_right; }
  [[nodiscard]] double px(double x) const { return chart_left + (xv(x) - x_lo) / (x_hi - x_lo) * plot_w(); }
  [[nodiscard]] double py(double y) const { return chart_top + chart_plot_h - y / y_hi * chart_plot_h; }
};

// The grid, the ticks and their labels, the axes and their titles.
void append_chart_frame(std::string& s, const LineChart& chart, const ChartAxes& ax) {
  const double pw = ChartAxes::plot_w(), ph = chart_plot_h;
  s += "<g class=\"grid\" stroke=\"#dddddd\">\n";
  std::string labels;
  for (int i = 0; i <= 5; ++i) {
    const double y = ax.y_hi * i / 5;
    s += "<line";
    attr(s, "x1", chart_left);
    attr(s, "y1", ax.py(y));
    attr(s, "x2", chart_left + pw);
    attr(s, "y2", ax.py(y));
    s += "/>\n";
    labels += "<text text-anchor=\"end\"";
    attr(labels, "x", chart_left - 5);
    attr(labels, "y", ax.py(y) + 4);
    labels += '>';
    labels += tick_label(y);
    labels += "</text>\n";
  }
  // x ticks at the data's values while they fit, else at even steps; then any label that would
  // touch the one before it is left out, so no two overlap.
  std::vector<double> x_ticks = ax.xs;
  if (x_ticks.size() > 12) {
    x_ticks.clear();
    for (int i = 0; i <= 6; ++i) {
      const double v = ax.x_lo + (ax.x_hi - ax.x_lo) * i / 6;
      x_ticks.push_back(ax.log_x ? std::exp2(v) : v);
    }
  }
  double last_right = -1e300;
  for (const double x : x_ticks) {
    const std::string text = tick_label(x);
    const double half = text_width(text, 11) / 2;
    if (ax.px(x) - half < last_right + 6) continue;
    last_right = ax.px(x) + half;
    s += "<line";
    attr(s, "x1", ax.px(x));
    attr(s, "y1", chart_top);
    attr(s, "x2", ax.px(x));
    attr(s, "y2", chart_top + ph);
    s += "/>\n";
    labels += "<text class=\"x-tick\" text-anchor=\"middle\"";
    attr(labels, "x", ax.px(x));
    attr(labels, "y", chart_top + ph + 15);
    labels += '>';
    labels += text;
    labels += "</text>\n";
  }
  s += "</g>\n<g class=\"axis\" stroke=\"#555555\">\n<line";
  attr(s, "x1", chart_left);
  attr(s, "y1", chart_top + ph);
  attr(s, "x2", chart_left + pw);
  attr(s, "y2", chart_top + ph);
  s += "/>\n<line";
  attr(s, "x1", chart_left);
  attr(s, "y1", chart_top);
  attr(s, "x2", chart_left);
  attr(s, "y2", chart_top + ph);
  s += "/>\n</g>\n<g class=\"tick-labels\" fill=\"#333333\">\n";
  s += labels;
  s += "</g>\n<text text-anchor=\"middle\"";
  attr(s, "x", chart_left + pw / 2);
  attr(s, "y", chart_top + ph + 34);
  s += '>';
  append_xml_escaped(s, chart.x_label + (ax.log_x ? " (log scale)" : ""));
  s += "</text>\n<text text-anchor=\"middle\"";
  attr(s, "transform", fmt::format("translate(14,{}) rotate(-90)", num(chart_top + ph / 2)));
  s += '>';
  append_xml_escaped(s, chart.y_label);
  s += "</text>\n";
}

// One series: its line (when joined), its points with their tips, and its legend entry at `at`.
void append_series(std::string& s, const LineSeries& se, std::size_t k, const ChartAxes& ax,
                   const LegendItem& at) {
  const SeriesStyle style = series_style(se.style >= 0 ? static_cast<std::size_t>(se.style) : k);
  std::string points;
  std::string dots;
  std::size_t drawn = 0;
  for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
    if (!ax.usable(se.x[i], se.y[i])) continue;
    ++drawn;
    if (!points.empty()) points += ' ';
    append_num(points, ax.px(se.x[i]));
    points += ',';
    append_num(points, ax.py(se.y[i]));
    dots += "<circle";
    attr(dots, "cx", ax.px(se.x[i]));
    attr(dots, "cy", ax.py(se.y[i]));
    dots += " r=\"3\"";
    attr(dots, "fill", style.colour);
    dots += "><title>";
    append_xml_escaped(dots, i < se.tips.size()
                                 ? se.tips[i]
                                 : fmt::format("{}: ({}, {})", se.name, tick_label(se.x[i]),
                                               tick_label(se.y[i])));
    dots += "</title></circle>\n";
  }
  s += "<g class=\"series\"";
  attr(s, "data-series", se.name);
  s += ">\n";
  const auto stroke = [&](std::string& out) {
    out += " fill=\"none\" stroke-width=\"1.8\"";
    attr(out, "stroke", style.colour);
    if (!style.dash.empty()) attr(out, "stroke-dasharray", style.dash);
  };
  if (drawn >= 2 && se.joined) {
    s += "<polyline";
    stroke(s);
    attr(s, "points", points);
    s += "/>\n";
  }
  s += dots;
  // The legend entry: a short stretch of the line in its dash (a point for a scatter), then
  // the name.
  if (se.joined) {
    s += "<line class=\"swatch\"";
    attr(s, "x1", at.x);
    attr(s, "y1", at.y + 6);
    attr(s, "x2", at.x + 24);
    attr(s, "y2", at.y + 6);
    stroke(s);
  } else {
    s += "<circle class=\"swatch\" r=\"3\"";
    attr(s, "cx", at.x + 12);
    attr(s, "cy", at.y + 6);
    attr(s, "fill", style.colour);
  }
  s += "/>\n<text";
  attr(s, "x", at.x + 30);
  attr(s, "y", at.y + 10);
  s += '>';
  append_xml_escaped(s, se.name);
  s += "</text>\n</g>\n";
}

// The chart's elements (no <svg> around them) and its height.
std::string line_chart_body(const LineChart& chart, double& height) {
  const ChartAxes ax(chart);
  std::string s;
  s += "<text class=\"title\" x=\"0\" y=\"16\" font-size=\"13\" font-weight=\"bold\">";
  append_xml_escaped(s, chart.group.empty() ? chart.title : chart.group + ": " + chart.title);
  s += "</text>\n";
  append_chart_frame(s, chart, ax);
  double legend_height = 0;
  const auto at = legend_layout(chart, chart_top + chart_plot_h + chart_axis_h + 4, legend_height);
  for (std::size_t k = 0; k < chart.series.size(); ++k) append_series(s, chart.series[k], k, ax, at[k]);
  height = chart_top + chart_plot_h + chart_axis_h + 4 + legend_height;
  return s;
}

} // namespace

void append_xml_escaped(std::string& out, std::string_view s) {
  for (const char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default:
      // Control characters other than tab and newline are not allowed in XML 1.0.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += "&#xFFFD;";
      else out += c;
    }
  }
}

std::string xml_escaped(std::string_view s) {
  std::string out;
  append_xml_escaped(out, s);
  return out;
}

std::string task_fill(Kind kind, int chunk, int chunks) {
  const Rgb base = kind_rgb(kind);
  // Toward black (< 0) or white (> 0) by that share: the chunk's shade.
  constexpr std::array<double, 4> shades = {0.0, -0.45, 0.35, -0.25};
  const double t = chunks > 1 ? shades[static_cast<std::size_t>(std::max(0, chunk) % 4)] : 0.0;
  const auto mix = [t](int v) {
    return static_cast<int>(std::lround(t >= 0 ? v + (255 - v) * t : v * (1 + t)));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(base.r), mix(base.g), mix(base.b));
}

SeriesStyle series_style(std::size_t k) {
  return {series_colours[k % series_colours.size()],
          series_dashes[(k + k / series_colours.size()) % series_dashes.size()]};
}

void write_timeline_svg(std::ostream& out, const Run& run, const TimelineSvgOptions& options) {
  TimelineSvg tl(run, options);
  std::string s;
  open_svg(s, "timeline", tl.total_width(), tl.height());
  attr(s, "data-schedule", run.schedule.name);
  attr(s, "data-tasks", fmt::format("{}", run.timeline.runs.size()));
  attr(s, "data-aggregated", tl.aggregated() ? "true" : "false");
  attr(s, "role", "img");
  attr(s, "aria-label", fmt::format("timeline of {}", run.schedule.name));
  s += " font-family=\"sans-serif\" font-size=\"10\">\n";
  s += idle_defs;
  if (tl.shows_comm_waits()) s += comm_defs;
  tl.write_body(s, 0);
  s += "</svg>\n";
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

void write_timelines_picture(std::ostream& out, std::span<const Run> runs,
                             const TimelineSvgOptions& options) {
  TimelineSvgOptions o = options;
  for (const Run& r : runs) o.time_span = std::max(o.time_span, r.metrics.makespan);
  std::string body;
  double y = 0;
  double width = 0;
  bool comm_waits = false;
  for (const Run& r : runs) {
    TimelineSvg tl(r, o);
    width = std::max(width, tl.total_width());
    comm_waits = comm_waits || tl.shows_comm_waits();
    const Metrics& m = r.metrics;
    const int iterations = std::max(1, r.iterations.options.count);
    body += "<text class=\"run-title\" x=\"4\"";
    attr(body, "y", y + 15);
    body += " font-size=\"13\"><tspan font-weight=\"bold\">";
    append_xml_escaped(body, r.schedule.name);
    body += "</tspan>";
    append_xml_escaped(body, fmt::format("  p={} m={} v={}{}: cost {} ms, bubble rate {}, peak {} M_B",
                                         r.schedule.devices, r.schedule.microbatches / iterations,
                                         r.schedule.chunks(),
                                         iterations > 1 ? fmt::format(" x{} iterations", iterations) : "",
                                         human_ms(m.cost), percent_text(m.bubble_rate),
                                         human_number(m.peak_memory)));
    body += "</text>\n";
    tl.write_body(body, y + title_h - top);
    y += title_h - top + tl.height();
  }
  if (width == 0) width = label_w + std::max(1, o.width) + pad_right;
  legend(body, runs, y, width, comm_waits);
  y += legend_h;
  std::string s;
  open_svg(s, "timelines", width, y);
  s += " font-family=\"sans-serif\" font-size=\"10\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += idle_defs;
  if (comm_waits) s += comm_defs;
  s += body;
  s += "</svg>\n";
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

void write_line_chart_svg(std::ostream& out, const LineChart& chart) {
  double h = 0;
  const std::string body = line_chart_body(chart, h);
  std::string s;
  open_svg(s, "chart lines", chart_w, h);
  s += " font-family=\"sans-serif\" font-size=\"11\">\n";
  s += body;
  s += "</svg>\n";
  out << s;
}

void write_line_charts_picture(std::ostream& out, std::span<const LineChart> charts) {
  std::string body;
  double y = 8;
  for (const LineChart& c : charts) {
    double h = 0;
    const std::string chart = line_chart_body(c, h);
    body += "<g class=\"chart lines\"";
    attr(body, "transform", fmt::format("translate(8,{})", num(y)));
    body += ">\n";
    body += chart;
    body += "</g>\n";
    y += h + 16;
  }
  std::string s;
  open_svg(s, "charts", chart_w + 16, y);
  s += " font-family=\"sans-serif\" font-size=\"11\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += body;
  s += "</svg>\n";
  out << s;
}

} // namespace ppsim
