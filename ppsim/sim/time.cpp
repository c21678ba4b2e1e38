// Conversions of ticks and their exact decimal text.
#include "ppsim/sim/time.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace ppsim {

Ticks ms_to_ticks(double ms, std::string_view where) {
  if (!std::isfinite(ms) || ms < 0)
    throw ConfigError(fmt::format("{}: expected a finite time >= 0 ms, got {}", where, ms));
  if (ms > limits::kMaxMs) throw ConfigError(fmt::format("{}: {} ms is too large", where, ms));
  return static_cast<Ticks>(std::llround(ms * 1e6));
}

void throw_time_overflow() {
  throw ConfigError(fmt::format(
      "the run's time exceeds {:.4g} ms, the longest time the simulator represents (int64 "
      "nanoseconds): use smaller costs, fewer micro-batches or fewer iterations",
      static_cast<double>(std::numeric_limits<Ticks>::max()) / 1e6));
}

Ticks seconds_to_ticks(double seconds) { return static_cast<Ticks>(std::llround(seconds * 1e9)); }

void check_total_ticks(long double total, std::string_view where, int devices) {
  const long double n = devices > 1 ? static_cast<long double>(devices) : 1.0L;
  if (total * n <= static_cast<long double>(limits::kMaxTotalTicks)) return;
  const double total_ms = static_cast<double>(total / static_cast<long double>(kTicksPerMs));
  const double most_ms = ticks_to_ms(limits::kMaxTotalTicks);
  if (devices <= 1)
    throw ConfigError(fmt::format("{}: the durations and messages add up to {:.4g} ms, too much "
                                  "to time in nanoseconds (at most {:.4g} ms in all)",
                                  where, total_ms, most_ms));
  throw ConfigError(fmt::format(
      "{}: the durations and messages add up to {:.4g} ms, too much to time in nanoseconds for "
      "a search that adds up the spans of {} devices (at most {:.4g} ms in all)",
      where, total_ms, devices, most_ms / static_cast<double>(devices)));
}

namespace {

// |t| / 10^digits with the fraction written exactly, trailing zeros dropped.
void append_scaled(std::string& out, Ticks t, int digits) {
  std::uint64_t scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  // Magnitude in unsigned arithmetic so that the most negative value does not overflow.
  const std::uint64_t mag =
      t < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(t) : static_cast<std::uint64_t>(t);
  if (t < 0) out += '-';
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, mag / scale);
  out.append(buf, res.ptr);
  std::uint64_t frac = mag % scale;
  if (frac == 0) return;
  int width = digits;
  while (frac % 10 == 0) {
    frac /= 10;
    --width;
  }
  out += '.';
  char digits_buf[24];
  for (int i = width - 1; i >= 0; --i) {
    digits_buf[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  out.append(digits_buf, static_cast<std::size_t>(width));
}

} // namespace

void append_ticks_us(std::string& out, Ticks t) { append_scaled(out, t, 3); }

std::string ticks_to_us_text(Ticks t) {
  std::string s;
  append_ticks_us(s, t);
  return s;
}

std::string ticks_to_ms_text(Ticks t) {
  std::string s;
  append_scaled(s, t, 6);
  return s;
}

} // namespace ppsim
