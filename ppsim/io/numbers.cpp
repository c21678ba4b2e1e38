// Rounded numbers for tables and messages.
#include "ppsim/io/numbers.hpp"

#include <algorithm>
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

std::string human_number(double x) {
  if (!std::isfinite(x)) return fmt::format("{}", x);
  const double a = std::abs(x);
  if (a == 0) return "0";
  int decimals = 1;
  if (a < 1) decimals = std::min(12, 3 - static_cast<int>(std::floor(std::log10(a))));
  else if (a < 10) decimals = 3;
  else if (a < 100) decimals = 2;
  std::string s = strip_zeros(fmt::format("{:.{}f}", x, decimals));
  return s == "-0" ? "0" : s;
}

std::string human_ms(Ticks t) { return human_number(ticks_to_ms(t)); }

std::string human_percent(double fraction) { return fmt::format("{:.2f}%", 100.0 * fraction); }

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
