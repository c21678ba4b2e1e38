// SVG writers: the timeline of a run and the charts of the HTML reports, as deterministic text.
#include "viz/svg.hpp"

#include "io/json_text.hpp"
#include "sim/metrics.hpp"
#include "sim/schedule.hpp"
#include "viz/metrics_json.hpp"

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

// A palette for the series of line charts (Tableau 10, distinct from one another).
constexpr std::array<std::string_view, 10> series_colours = {
    "#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
    "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};

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

std::string tick_label(double x) { return fmt::format("{:.4g}", x); }

// The opening of a chart: <svg> with its size and class, then the bold title at baseline y.
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

std::string open_chart(std::string_view cls, double w, double h, std::string_view title,
                       int title_y) {
  std::string s;
  open_svg(s, fmt::format("chart {}", cls), w, h);
  s += fmt::format(" font-family=\"sans-serif\" font-size=\"11\">\n<text class=\"title\" x=\"0\" "
                   "y=\"{}\" font-size=\"13\" font-weight=\"bold\">",
                   title_y);
  append_xml_escaped(s, title);
  s += "</text>\n";
  return s;
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

// Idle spent waiting on a message in flight: the idle grey under amber diagonal stripes.
constexpr std::string_view comm_hatch_defs =
    "<defs><pattern id=\"comm-hatch\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
    "patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"4\" fill=\"#e4e4e4\"/>"
    "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#d08c2a\" stroke-width=\"1.5\"/>"
    "</pattern></defs>\n";

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

  void write(std::ostream& out) {
    const double rows_h = tl_.devices * (row_h + row_gap);
    const double note = aggregated_ ? note_h : 0;
    const double total_w = label_w + width_ + pad_right;
    const double total_h = top + note + rows_h + axis_h;
    std::string& s = s_;
    open_svg(s, "timeline", total_w, total_h);
    attr(s, "data-schedule", run_.schedule.name);
    attr(s, "data-tasks", fmt::format("{}", tl_.runs.size()));
    attr(s, "data-aggregated", aggregated_ ? "true" : "false");
    attr(s, "role", "img");
    attr(s, "aria-label", fmt::format("timeline of {}", run_.schedule.name));
    s += " font-family=\"sans-serif\" font-size=\"10\">\n";
    if (any_wait_ && !aggregated_) s += comm_hatch_defs;
    rows_y_ = top + note;
    if (aggregated_) {
      s += "<text class=\"note\" x=\"";
      append_num(s, label_w);
      s += "\" y=\"";
      append_num(s, top + 11);
      s += "\" fill=\"#8a4b00\">";
      append_xml_escaped(s, fmt::format("aggregated view: {} tasks exceed the cap of {} "
                                        "rectangles; each pixel column shows the kind that "
                                        "covers most of it",
                                        tl_.runs.size(), options_.max_rects));
      s += "</text>\n";
    }
    for (int d = 0; d < tl_.devices; ++d) {
      device_label(d);
      if (aggregated_) aggregated_row(d);
      else task_row(d);
    }
    axis(rows_y_ + rows_h);
    s += "</svg>\n";
    out.write(s.data(), static_cast<std::streamsize>(s.size()));
  }

private:
  double x_of(Ticks t) const { return label_w + static_cast<double>(t - t0_) * scale_; }
  double y_of(int d) const { return rows_y_ + d * (row_h + row_gap); }

  void device_label(int d) {
    std::string& s = s_;
    s += "<text class=\"device\" x=\"4\" y=\"";
    append_num(s, y_of(d) + row_h / 2 + 3.5);
    s += "\" font-size=\"11\">device ";
    append_int(s, d);
    s += "</text>\n";
  }

  void rect(std::string_view cls, double x, double y, double w, std::string_view fill) {
    std::string& s = s_;
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
      return p + fmt::format(", micro-batch {}", mb);
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

  void task_row(int d) {
    std::string& s = s_;
    const auto runs = tl_.device_runs(d);
    const double y = y_of(d);
    labels_.clear();
    s += "<g class=\"device-row\"";
    attr(s, "data-device", fmt::format("{}", d));
    s += ">\n";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const TaskRun& r = runs[i];
      if (i > 0 && r.start > runs[i - 1].end) {
        const Ticks gap = r.start - runs[i - 1].end;
        rect("idle", x_of(runs[i - 1].end), y, static_cast<double>(gap) * scale_, "#e4e4e4");
        s += "><title>";
        append_xml_escaped(s, fmt::format("device {}: idle {} ms (from {} ms)", d, ticks_to_ms_text(gap),
                                          ticks_to_ms_text(runs[i - 1].end - t0_)));
        s += "</title></rect>\n";
        comm_waits(d, y, runs[i - 1].end, r.start);
      }
      const Task& t = r.task;
      const int c = chunk(t.stage);
      const double w = std::max(0.5, static_cast<double>(r.end - r.start) * scale_);
      const std::string cls = fmt::format("task {} c{}", kind_name(t.kind), c);
      rect(cls, x_of(r.start), y, w, task_fill(t.kind, c, run_.schedule.chunks()));
      s += " stroke=\"#ffffff\" stroke-width=\"0.5\"";
      attr(s, "data-mb", fmt::format("{}", t.microbatch));
      s += "><title>";
      append_xml_escaped(s, fmt::format("device {}: {}: {}; start {} ms, duration {} ms", d,
                                        to_string(t), task_text(t), ticks_to_ms_text(r.start - t0_),
                                        ticks_to_ms_text(r.end - r.start)));
      s += "</title></rect>\n";
      const std::string label = t.kind == Kind::FB
                                    ? fmt::format("{}+{}", t.microbatch, t.microbatch2)
                                    : fmt::format("{}", t.microbatch);
      if (static_cast<double>(label.size()) * 6.2 + 3 <= w) {
        labels_ += "<text";
        attr(labels_, "x", x_of(r.start) + w / 2);
        attr(labels_, "y", y + row_h / 2 + 3.5);
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
  void comm_waits(int d, double y, Ticks from, Ticks to) {
    std::string& s = s_;
    for (const CommWait& w : waits_[static_cast<std::size_t>(d)]) {
      if (w.end <= from || w.begin >= to) continue;
      rect("comm-wait", x_of(w.begin), y, static_cast<double>(w.end - w.begin) * scale_,
           "url(#comm-hatch)");
      s += "><title>";
      append_xml_escaped(s, fmt::format("device {}: waiting for a message {} ms (from {} ms)", d,
                                        ticks_to_ms_text(w.end - w.begin),
                                        ticks_to_ms_text(w.begin - t0_)));
      s += "</title></rect>\n";
    }
  }

  // Per pixel column, the kind covering most of it; one rectangle per stretch of equal columns.
  void aggregated_row(int d) {
    std::string& s = s_;
    const auto cols = static_cast<std::size_t>(width_);
    constexpr std::size_t kinds = 5;
    cover_.assign(cols * kinds, 0);
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
        if (hi > lo) cover_[c * kinds + k] += hi - lo;
      }
    }
    const auto dominant = [&](std::size_t c) {
      int best = -1;
      Ticks most = 0;
      for (std::size_t k = 0; k < kinds; ++k)
        if (cover_[c * kinds + k] > most) {
          most = cover_[c * kinds + k];
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
        rect(fmt::format("agg {}", kind_name(kind)), label_w + static_cast<double>(c),
             y, static_cast<double>(e - c), task_fill(kind, 0, 1));
        s += "><title>";
        append_xml_escaped(s, fmt::format("device {}: mostly {} from {} ms to {} ms", d,
                                          kind_name(kind), ticks_to_ms_text(edge(c) - t0_),
                                          ticks_to_ms_text(edge(e) - t0_)));
        s += "</title></rect>\n";
      }
      c = e;
    }
    s += "</g>\n";
  }

  void axis(double y) {
    std::string& s = s_;
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
      text += ticks_to_ms_text(t);
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
  TimelineSvgOptions options_;
  std::vector<std::vector<CommWait>> waits_;  // per device, by start
  bool any_wait_{false};
  Ticks t0_{0};
  Ticks makespan_{0};
  Ticks span_{0};
  int width_{1};
  double scale_{0};
  double rows_y_{0};
  bool aggregated_{false};
  std::string s_;
  std::string labels_;
  std::vector<Ticks> cover_;
};

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
  const double t = chunks > 1 ? 0.5 * std::clamp(chunk, 0, chunks - 1) / (chunks - 1) : 0.0;
  const auto mix = [t](int v) { return static_cast<int>(std::lround(v + (255 - v) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(base.r), mix(base.g), mix(base.b));
}

void write_timeline_svg(std::ostream& out, const Run& run, const TimelineSvgOptions& options) {
  TimelineSvg(run, options).write(out);
}

void write_bar_chart_svg(std::ostream& out, std::string_view title, std::span<const Bar> bars,
                         double max_value) {
  constexpr double w = 520, label = 150, text_w = 110, bar_h = 18, gap = 6, head = 24;
  const double plot = w - label - text_w;
  double most = max_value;
  for (const Bar& b : bars)
    if (std::isfinite(b.value)) most = std::max(most, b.value);
  if (!(most > 0)) most = 1;
  const double h = head + static_cast<double>(bars.size()) * (bar_h + gap) + 4;
  std::string s = open_chart("bars", w, h, title, 14);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = head + static_cast<double>(i) * (bar_h + gap);
    const double len = std::isfinite(b.value) ? std::max(0.0, b.value) / most * plot : 0;
    s += "<text";
    attr(s, "x", label - 6);
    attr(s, "y", y + 13);
    s += " text-anchor=\"end\">";
    append_xml_escaped(s, b.label);
    s += "</text>\n<rect class=\"bar\"";
    attr(s, "x", label);
    attr(s, "y", y);
    attr(s, "width", std::max(len, 0.5));
    attr(s, "height", bar_h);
    attr(s, "fill", series_colours[i % series_colours.size()]);
    s += "><title>";
    append_xml_escaped(s, b.label + ": " + b.text);
    s += "</title></rect>\n<text";
    attr(s, "x", label + len + 5);
    attr(s, "y", y + 13);
    s += '>';
    append_xml_escaped(s, b.text);
    s += "</text>\n";
  }
  s += "</svg>\n";
  out << s;
}

void write_line_chart_svg(std::ostream& out, const LineChart& chart) {
  constexpr double w = 620, h = 340, left = 58, right = 170, top_m = 30, bottom = 44;
  const double pw = w - left - right, ph = h - top_m - bottom;
  const bool log_x = chart.log_x;
  const auto xv = [log_x](double x) { return log_x ? std::log2(x) : x; };
  std::vector<double> xs;
  double ymax = 0;
  for (const LineSeries& se : chart.series)
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i]) || (log_x && !(se.x[i] > 0)))
        continue;
      xs.push_back(se.x[i]);
      ymax = std::max(ymax, se.y[i]);
    }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  double x_lo = xs.empty() ? 0 : xv(xs.front());
  double x_hi = xs.empty() ? 1 : xv(xs.back());
  if (chart.x_from_zero && !log_x) x_lo = std::min(x_lo, 0.0);
  if (x_hi <= x_lo) {
    x_lo -= 1;
    x_hi += 1;
  }
  const double y_hi = nice_ceiling(ymax);
  const auto px = [&](double x) { return left + (xv(x) - x_lo) / (x_hi - x_lo) * pw; };
  const auto py = [&](double y) { return top_m + ph - y / y_hi * ph; };

  std::string s = open_chart("lines", w, h, chart.title, 16);
  s += "<g class=\"grid\" stroke=\"#dddddd\">\n";
  std::string labels;
  for (int i = 0; i <= 5; ++i) {
    const double y = y_hi * i / 5;
    s += "<line";
    attr(s, "x1", left);
    attr(s, "y1", py(y));
    attr(s, "x2", left + pw);
    attr(s, "y2", py(y));
    s += "/>\n";
    labels += "<text text-anchor=\"end\"";
    attr(labels, "x", left - 5);
    attr(labels, "y", py(y) + 4);
    labels += '>';
    labels += tick_label(y);
    labels += "</text>\n";
  }
  std::vector<double> x_ticks = xs;
  if (x_ticks.size() > 10) {
    x_ticks.clear();
    for (int i = 0; i <= 5; ++i) {
      const double v = x_lo + (x_hi - x_lo) * i / 5;
      x_ticks.push_back(log_x ? std::exp2(v) : v);
    }
  }
  for (const double x : x_ticks) {
    s += "<line";
    attr(s, "x1", px(x));
    attr(s, "y1", top_m);
    attr(s, "x2", px(x));
    attr(s, "y2", top_m + ph);
    s += "/>\n";
    labels += "<text text-anchor=\"middle\"";
    attr(labels, "x", px(x));
    attr(labels, "y", top_m + ph + 15);
    labels += '>';
    labels += tick_label(x);
    labels += "</text>\n";
  }
  s += "</g>\n<g class=\"axis\" stroke=\"#555555\">\n<line";
  attr(s, "x1", left);
  attr(s, "y1", top_m + ph);
  attr(s, "x2", left + pw);
  attr(s, "y2", top_m + ph);
  s += "/>\n<line";
  attr(s, "x1", left);
  attr(s, "y1", top_m);
  attr(s, "x2", left);
  attr(s, "y2", top_m + ph);
  s += "/>\n</g>\n<g class=\"tick-labels\" fill=\"#333333\">\n";
  s += labels;
  s += "</g>\n<text text-anchor=\"middle\"";
  attr(s, "x", left + pw / 2);
  attr(s, "y", h - 8);
  s += '>';
  append_xml_escaped(s, chart.x_label + (log_x ? " (log scale)" : ""));
  s += "</text>\n<text text-anchor=\"middle\"";
  attr(s, "transform", fmt::format("translate(14,{}) rotate(-90)", num(top_m + ph / 2)));
  s += '>';
  append_xml_escaped(s, chart.y_label);
  s += "</text>\n";
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const LineSeries& se = chart.series[k];
    const std::string_view colour = series_colours[k % series_colours.size()];
    std::string points;
    std::string dots;
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i]) || (log_x && !(se.x[i] > 0)))
        continue;
      if (!points.empty()) points += ' ';
      append_num(points, px(se.x[i]));
      points += ',';
      append_num(points, py(se.y[i]));
      dots += "<circle";
      attr(dots, "cx", px(se.x[i]));
      attr(dots, "cy", py(se.y[i]));
      dots += " r=\"3\"";
      attr(dots, "fill", colour);
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
    if (!points.empty()) {
      s += "<polyline fill=\"none\" stroke-width=\"1.5\"";
      attr(s, "stroke", colour);
      attr(s, "points", points);
      s += "/>\n";
    }
    s += dots;
    const double ly = top_m + 4 + static_cast<double>(k) * 16;
    s += "<rect";
    attr(s, "x", w - right + 12);
    attr(s, "y", ly);
    s += " width=\"10\" height=\"10\"";
    attr(s, "fill", colour);
    s += "/>\n<text";
    attr(s, "x", w - right + 27);
    attr(s, "y", ly + 9);
    s += '>';
    append_xml_escaped(s, se.name);
    s += "</text>\n</g>\n";
  }
  s += "</svg>\n";
  out << s;
}

} // namespace ppsim
