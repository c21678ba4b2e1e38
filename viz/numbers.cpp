// Rounded numbers for tables.
#include "viz/numbers.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

namespace {

std::string strip_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

} // namespace

std::string human_ms(Ticks t) {
  const double ms = ticks_to_ms(t);
  const double a = std::abs(ms);
  if (a >= 100) return strip_zeros(fmt::format("{:.1f}", ms));
  if (a >= 10) return strip_zeros(fmt::format("{:.2f}", ms));
  if (a >= 1) return strip_zeros(fmt::format("{:.3f}", ms));
  if (a == 0) return "0";
  return strip_zeros(fmt::format("{:.4g}", ms));
}

std::string human_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (std::abs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_count(double n) {
  static constexpr const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  double v = n;
  while (std::abs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f}", v);
  return strip_zeros(fmt::format("{:.3g}", v)) + units[u];
}

} // namespace ppsim
