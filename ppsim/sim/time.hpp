// Time: the engine's integer nanoseconds, their conversions and their exact text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppsim {

/// Time in integer nanoseconds, so results are exact and byte-stable.
using Ticks = std::int64_t;

inline constexpr Ticks kTicksPerMs = 1'000'000;

/// Throws ConfigError: a time of the run (a task's end, a message's arrival, an iteration's end)
/// does not fit in Ticks, i.e. exceeds about 9.2e12 ms.
[[noreturn]] void throw_time_overflow();

/// a + b for times of a run; throws ConfigError (throw_time_overflow) when the sum does not fit.
/// Every sum of times the engine and the metrics form goes through this (or through a wider type).
[[nodiscard]] inline Ticks add_ticks(Ticks a, Ticks b) {
  Ticks sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) [[unlikely]] throw_time_overflow();
  return sum;
}
/// t * factor for a count of times (iterations, tasks); throws like add_ticks.
[[nodiscard]] inline Ticks mul_ticks(Ticks t, std::int64_t factor) {
  Ticks product = 0;
  if (__builtin_mul_overflow(t, factor, &product)) [[unlikely]] throw_time_overflow();
  return product;
}

/// Milliseconds (finite, 0 <= ms <= limits::kMaxMs) to ticks, rounded to the nearest
/// nanosecond; throws ConfigError naming `where` otherwise.
[[nodiscard]] Ticks ms_to_ticks(double ms, std::string_view where);
/// Seconds measured by a clock (>= 0) to ticks, rounded to the nearest nanosecond.
[[nodiscard]] Ticks seconds_to_ticks(double seconds);
[[nodiscard]] inline double ticks_to_ms(Ticks t) {
  return static_cast<double>(t) / static_cast<double>(kTicksPerMs);
}

/// Checks a bound on every time of one run: `total` nanoseconds, the sum of its durations and
/// messages (a long double holds such sums of int64 values exactly up to 2^64). ConfigError
/// `where: the durations and messages add up to X ms, too much to time in nanoseconds (at most
/// Y ms in all)` when it exceeds limits::kMaxTotalTicks. A search that also adds up the spans
/// of its `devices` (each at most the total) passes their count: then devices x total is
/// bounded, and the message says so.
void check_total_ticks(long double total, std::string_view where, int devices = 1);

/// Ticks as milliseconds with up to 6 decimals, exact: 54000000 -> "54", 1500 -> "0.0015".
[[nodiscard]] std::string ticks_to_ms_text(Ticks t);
/// Ticks as microseconds with up to 3 decimals, exact: 1500 -> "1.5", 2000000 -> "2000".
[[nodiscard]] std::string ticks_to_us_text(Ticks t);
/// ticks_to_us_text, appended to out (no allocation: for writers of millions of events).
void append_ticks_us(std::string& out, Ticks t);

} // namespace ppsim
