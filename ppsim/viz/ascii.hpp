// The timeline as a text grid like the zero-bubble paper's figures, for terminals and logs.
#pragma once

#include "ppsim/sim/run.hpp"

#include <ostream>

namespace ppsim {

struct AsciiOptions {
  /// Columns for the time axis; 0 = automatic (one column per smallest task duration, capped at
  /// 200).
  int width{0};
};

/// The timeline as a grid like the zero-bubble paper's figures: one row per device.
///
///   write_ascii(std::cout, run_schedule(make_schedule("zb-h1", {4, 8}), parse_costs("F=1")));
///
/// zb-h1, p = 4, m = 8, F = B = W = 1 (one column per ms):
///   device 0 |0123...aA4bB5cC6dD7eEfFgGhH|
///   device 3 |...0a1b2c3dA4eB5fC6gD7hEFGH|
/// F is its micro-batch digit, B (and BW) a lowercase letter (a = micro-batch 0), W an uppercase
/// letter; a task wider than its name shows the name (`F12`, `BW3`, `F3.c1`, `F3+B1`); `.` is
/// idle. With more time than columns, a column shows the task that covers most of it. Below the
/// grid: the scale, the legend, and per device busy, idle and peak memory.
/// Throws ConfigError for a width below 0 or above 10000.
void write_ascii(std::ostream& out, const Run& run, const AsciiOptions& options = {});

} // namespace ppsim
