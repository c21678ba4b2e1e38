// Hand-written JSON text: string escaping, numbers, exact tick conversions.
#include "ppsim/io/json_text.hpp"


#include <charconv>
#include <cmath>
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

} // namespace ppsim
