// Text grid of a timeline: one row per device, one character per column of time.
#include "ppsim/viz/ascii.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

namespace ppsim {

namespace {

constexpr long long auto_width_cap = 200;
constexpr long long max_width = 10000;
constexpr long long tick_every = 10;

// Milliseconds rounded to microseconds, trailing zeros dropped: axis labels stay short.
std::string ms_label(Ticks t) {
  const Ticks us = t >= 0 ? (t + 500) / 1000 : -((-t + 500) / 1000);
  return human_ms(us * 1000);
}

// Products of times and counts in 128 bits: a run may last up to the largest Ticks.
__extension__ typedef __int128 Wide;

// The columns of the time axis: column c covers [edge(c), edge(c+1)), num/den ns each.
struct Axis {
  Ticks t0{0};
  long long cols{0};
  Ticks num{1};
  Ticks den{1};
  [[nodiscard]] Ticks edge(long long c) const {
    return t0 + static_cast<Ticks>((Wide{c} * num + den - 1) / den);
  }
};

class AsciiWriter {
public:
  AsciiWriter(const Run& run, const AsciiOptions& options)
      : run_(run), tl_(run.timeline), topo_(run.schedule),
        multi_chunk_(run.schedule.chunks() > 1), slices_(run.schedule.slice_count()) {
    if (options.width < 0 || options.width > max_width) {
      throw ConfigError(fmt::format("ascii: width must be between 0 (automatic) and {} (got "
                                    "width={})",
                                    max_width, options.width));
    }
    width_ = options.width;
    // The stretches of idle spent waiting on communication, per device in time order.
    waits_.resize(ix(tl_.devices));
    for_each_comm_wait(tl_, [&](const CommWait& w) {
      waits_[ix(w.device)].emplace_back(w.begin, w.end);
    });
    for (auto& w : waits_) std::sort(w.begin(), w.end());
  }

  void write(std::ostream& out) {
    std::string s;
    header(s);
    const bool has_time = make_axis();
    if (has_time) {
      grid(s);
    } else {
      s += "(no time elapses: nothing to draw)\n";
    }
    stats(s);
    out << s;
  }

private:
  void header(std::string& s) const {
    bool first = true;
    for (const auto& [key, value] : run_.parameters) {
      s += first ? "" : " | ";
      first = false;
      s += key;
      s += ' ';
      s += value;
    }
    if (!first) s += '\n';
  }

  bool make_axis() {
    Ticks t0 = std::numeric_limits<Ticks>::max();
    Ticks t1 = std::numeric_limits<Ticks>::min();
    min_dur_ = 0;
    for (const TaskRun& r : tl_.runs) {
      t0 = std::min(t0, r.start);
      t1 = std::max(t1, r.end);
      const Ticks dur = r.end - r.start;
      if (dur > 0 && (min_dur_ == 0 || dur < min_dur_)) min_dur_ = dur;
    }
    if (tl_.runs.empty() || t1 <= t0) return false;
    const Ticks span = t1 - t0;
    axis_.t0 = t0;
    if (width_ > 0) {
      axis_ = Axis{t0, width_, span, width_};
    } else {
      const long long cols = (span - 1) / min_dur_ + 1;  // span > 0: ceil(span / min_dur_)
      axis_ = cols <= auto_width_cap ? Axis{t0, cols, min_dur_, 1}
                                     : Axis{t0, auto_width_cap, span, auto_width_cap};
    }
    return true;
  }

  // The name of a task, with the chunk when a device holds several and the slice in a sliced
  // run (`F3.s1`).
  [[nodiscard]] std::string part_name(Kind kind, int stage, int unit, bool chunk) const {
    std::string n = fmt::format("{}{}", kind_name(kind), unit / slices_);
    if (chunk) n += fmt::format(".c{}", topo_.chunk_of(stage));
    if (slices_ > 1) n += fmt::format(".s{}", unit % slices_);
    return n;
  }
  [[nodiscard]] std::string task_name(const Task& t, bool chunk) const {
    if (t.kind == Kind::FB) {
      return part_name(Kind::F, t.stage, t.microbatch, chunk) + "+" +
             part_name(t.kind2, t.stage2, t.microbatch2, chunk);
    }
    return part_name(t.kind, t.stage, t.microbatch, chunk);
  }

  static char code(Kind kind, int mb) {
    switch (kind) {
    case Kind::F: return static_cast<char>('0' + mb % 10);
    case Kind::B:
    case Kind::BW: return static_cast<char>('a' + mb % 26);
    case Kind::W: return static_cast<char>('A' + mb % 26);
    case Kind::FB: return '*';
    }
    return '?';
  }

  // Exactly w characters for a task drawn across w columns: the best text that fits. A name
  // keeps one trailing space so that it never runs into the code of the next task ("BW04").
  [[nodiscard]] std::string label(const Task& t, std::size_t w) const {
    for (const bool chunk : {true, false}) {
      if (chunk && !multi_chunk_) continue;
      std::string n = task_name(t, chunk);
      if (n.size() < w) {
        n.resize(w, ' ');
        return n;
      }
    }
    if (t.kind == Kind::FB) {
      const char f = code(Kind::F, t.microbatch);
      const char b = code(t.kind2, t.microbatch2);
      std::string n = w >= 3 ? std::string{f, '+', b} : w == 2 ? std::string{f, b} : "*";
      n.resize(w, ' ');
      return n;
    }
    // one code per micro-batch: its slices read as one stretch
    return std::string(w, code(t.kind, t.microbatch / slices_));
  }

  // What each column shows: the run of the device that covers most of it (>= 0; ties: the
  // earlier) or a shade (< 0, see shade_char). Fine columns show the run when it covers at least
  // as much as idle does; coarse ones only when it covers half the column, else how busy it is.
  // An idle column shows a wait on communication when that is at least half of its idle time.
  [[nodiscard]] std::vector<int> owners(int d) const {
    const bool coarse = is_coarse();
    const auto runs = tl_.device_runs(d);
    const auto& waits = waits_[ix(d)];
    std::vector<int> owner(ix(axis_.cols), -1);
    std::size_t i = 0, w = 0;
    for (long long c = 0; c < axis_.cols; ++c) {
      const Ticks lo = axis_.edge(c);
      const Ticks hi = axis_.edge(c + 1);
      while (i < runs.size() && runs[i].end <= lo) ++i;
      while (w < waits.size() && waits[w].second <= lo) ++w;
      Ticks waiting = 0;
      for (std::size_t k = w; k < waits.size() && waits[k].first < hi; ++k)
        waiting += std::min(waits[k].second, hi) - std::max(waits[k].first, lo);
      Ticks best_overlap = 0, busy = 0;
      int best = -1;
      for (std::size_t j = i; j < runs.size() && runs[j].start < hi; ++j) {
        const Ticks ov = std::min(runs[j].end, hi) - std::max(runs[j].start, lo);
        if (ov <= 0) continue;
        busy += ov;
        if (ov > best_overlap) {
          best_overlap = ov;
          best = static_cast<int>(j);
        }
      }
      const Ticks len = hi - lo;
      if (!coarse) {
        if (best >= 0 && best_overlap >= len - busy) owner[ix(c)] = best;
        else if (waiting > 0 && 2 * Wide{waiting} >= len - busy) owner[ix(c)] = shade_comm;
      } else if (best >= 0 && 2 * Wide{best_overlap} >= len) {
        owner[ix(c)] = best;
      } else {
        const Wide b = busy;
        owner[ix(c)] = 4 * b >= 3 * Wide{len} ? shade_full : 2 * b >= len ? shade_half
                       : 4 * b >= len         ? shade_quarter
                                              : shade_idle;
        if (owner[ix(c)] == shade_idle && waiting > 0 && 2 * Wide{waiting} >= len - busy)
          owner[ix(c)] = shade_comm;
      }
    }
    return owner;
  }

  void grid(std::string& s) const {
    const std::string widest = fmt::format("device {} ", std::max(tl_.devices - 1, 0));
    const std::size_t pre = widest.size() + 1;  // the grid starts after "device N |"
    // Axis: tick labels every tick_every columns where they fit, then a ruler.
    std::string labels = "time (ms)";
    for (long long c = 0; c < axis_.cols; c += tick_every) {
      const std::size_t pos = pre + ix(c);
      if (labels.size() >= pos) continue;  // keep a space between labels
      labels.resize(pos, ' ');
      labels += ms_label(axis_.edge(c));
    }
    s += labels;
    s += '\n';
    s.append(pre, ' ');
    for (long long c = 0; c < axis_.cols; ++c) s += c % tick_every == 0 ? '+' : '-';
    s += '\n';
    bool comm_shown = false;
    for (int d = 0; d < tl_.devices; ++d) {
      const auto runs = tl_.device_runs(d);
      const std::vector<int> owner = owners(d);
      std::string row(ix(axis_.cols), '.');
      for (long long c = 0; c < axis_.cols;) {
        const int o = owner[ix(c)];
        long long e = c + 1;
        while (e < axis_.cols && owner[ix(e)] == o) ++e;
        if (o >= 0) {
          row.replace(ix(c), ix(e - c), label(runs[ix(o)].task, ix(e - c)));
        } else {
          row.replace(ix(c), ix(e - c), ix(e - c), shade_char(o));
          comm_shown = comm_shown || o == shade_comm;
        }
        c = e;
      }
      std::string prefix = fmt::format("device {} ", d);
      prefix.resize(pre - 1, ' ');
      s += prefix;
      s += '|';
      s += row;
      s += "|\n";
    }
    // Scale and legend.
    const Ticks per_col = axis_.num / axis_.den;
    const bool exact =
        axis_.num % axis_.den == 0 && human_ms(per_col) == ticks_to_ms_text(per_col);
    s += fmt::format("scale: 1 column = {}{} ms, {} columns", exact ? "" : "~",
                     exact ? human_ms(per_col)
                           : human_number(static_cast<double>(axis_.num) /
                                          static_cast<double>(axis_.den) / 1e6),
                     axis_.cols);
    if (is_coarse()) s += " (coarse overview)";
    s += '\n';
    s += "legend: F = micro-batch digit, B/BW = letter a-z (a = micro-batch 0), W = letter A-Z,\n"
         "        FB = F digit + backward letter (or *), . = idle; a task wide enough shows its\n"
         "        name instead: F3, B3, W3, BW3, F3.c1 (chunk 1), F3+B1\n";
    if (slices_ > 1)
      s += "        F3.s1 = slice 1 of micro-batch 3 (its slices share the digit or letter)\n";
    if (is_coarse()) {
      s += "        a column no task covers half of shows how busy the device is: # >= 3/4,\n"
           "        = >= 1/2, : >= 1/4, . less\n";
    }
    if (comm_shown) {
      s += "        ~ = idle waiting for a message in flight (the task's inputs exist), . = idle\n"
           "        waiting on compute\n";
    }
  }

  void stats(std::string& s) const {
    const Metrics& m = run_.metrics;
    const bool bytes = run_.costs.memory_unit_bytes > 0;
    s += '\n';
    s += fmt::format("{:<8} {:>12} {:>12} {:>18}{}\n", "device", "busy (ms)", "idle (ms)",
                     "peak memory (M_B)", bytes ? "  peak memory" : "");
    for (const DeviceMetrics& dm : m.per_device) {
      s += fmt::format("{:<8} {:>12} {:>12} {:>18}", dm.device, human_ms(dm.busy),
                       human_ms(dm.idle), human_number(dm.peak_memory));
      if (bytes)
        s += fmt::format("  {:>11}", human_bytes(dm.peak_memory * run_.costs.memory_unit_bytes));
      s += '\n';
    }
    s += fmt::format("makespan {} ms | cost {} ms | ideal {} ms | bubble rate {} | "
                     "peak memory {} M_B\n",
                     human_ms(m.makespan), human_ms(m.cost), human_ms(m.ideal),
                     human_percent(m.bubble_rate), human_number(m.peak_memory));
  }

  // Shades of columns that no task covers half of (coarse overviews).
  static constexpr int shade_idle = -1;
  static constexpr int shade_quarter = -2;
  static constexpr int shade_half = -3;
  static constexpr int shade_full = -4;
  static constexpr int shade_comm = -5;  // idle, waiting on a message in flight
  static char shade_char(int o) {
    return o == shade_full      ? '#'
           : o == shade_half    ? '='
           : o == shade_quarter ? ':'
           : o == shade_comm    ? '~'
                                : '.';
  }
  // A column lasts longer than the shortest task: several tasks may share it.
  [[nodiscard]] bool is_coarse() const { return axis_.num > Wide{min_dur_} * axis_.den; }

  const Run& run_;
  const Timeline& tl_;
  Topology topo_;
  bool multi_chunk_;
  int slices_;  // sequence slices per micro-batch: a task's unit is mb * slices_ + slice
  long long width_{0};
  Ticks min_dur_{0};
  Axis axis_;
  std::vector<std::vector<std::pair<Ticks, Ticks>>> waits_;  // per device: [begin, end)
};

} // namespace

void write_ascii(std::ostream& out, const Run& run, const AsciiOptions& options) {
  AsciiWriter(run, options).write(out);
}

} // namespace ppsim
