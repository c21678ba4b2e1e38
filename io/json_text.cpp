// Hand-written JSON text: string escaping, numbers, exact tick conversions.
#include "io/json_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <iterator>
#include <stdexcept>

namespace ppsim {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (u < 0x20) {
        out += "\\u00";
        out += hex[u >> 4];
        out += hex[u & 0xF];
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double x) {
  if (!std::isfinite(x)) {
    throw std::logic_error(fmt::format("json_number: {} has no JSON text", x));
  }
  if (x == 0) {  // also -0
    out += '0';
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", x);
}

std::string json_number(double x) {
  std::string s;
  append_json_number(s, x);
  return s;
}

void append_int(std::string& out, long long v) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
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
