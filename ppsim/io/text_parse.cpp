// Shared parsing of KEY=VALUE lists and numbers.
#include "ppsim/io/text_parse.hpp"

#include "ppsim/sim/errors.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <vector>

namespace ppsim {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool for_each_field(std::string_view text, char sep,
                    const std::function<bool(std::string_view)>& fn) {
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find(sep, pos);
    if (end == std::string_view::npos) end = text.size();
    if (!fn(trim(text.substr(pos, end - pos)))) return false;
    pos = end + 1;
  }
  return true;
}

std::string excerpt(std::string_view text, std::size_t max_chars) {
  const bool cut = text.size() > max_chars;
  std::size_t keep = cut ? max_chars : text.size();
  // Back off over UTF-8 continuation bytes, so the cut falls between characters.
  if (cut)
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  std::string out;
  out.reserve(keep + 24);
  for (const char c : text.substr(0, keep)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  if (cut) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

void for_each_key_value(std::string_view text, std::string_view where,
                        const std::function<void(std::string_view, std::string_view)>& fn) {
  if (trim(text).empty()) throw ConfigError(fmt::format("{}: no KEY=VALUE given", where));
  std::vector<std::string_view> keys;
  std::size_t seen = 0;
  const std::size_t fields = static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1;
  for_each_field(text, ',', [&](std::string_view item) {
    ++seen;
    if (item.empty()) {
      if (seen == fields) return true;  // a trailing comma
      throw ConfigError(fmt::format("{}: empty item (expected KEY=VALUE)", where));
    }
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw ConfigError(fmt::format("{}: expected KEY=VALUE, got '{}'", where, excerpt(item)));
    const std::string_view key = trim(item.substr(0, eq));
    // NOTE: `F=1,F=7` would silently keep the last; a repeated key is a mistake.
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      throw ConfigError(fmt::format("{}: '{}' is given twice", where, excerpt(key)));
    keys.push_back(key);
    fn(key, trim(item.substr(eq + 1)));
    return true;
  });
}

namespace {

ConfigError not_a_number(std::string_view text, std::string_view where) {
  return ConfigError(fmt::format("{}: expected a number, got '{}'", where, excerpt(text)));
}

} // namespace

NumberWithUnit parse_number_with_unit(std::string_view text, std::string_view where) {
  double value = 0;
  const auto* last = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), last, value);
  if (ec != std::errc{} || p == text.data()) throw not_a_number(text, where);
  return NumberWithUnit{value, std::string_view(p, static_cast<std::size_t>(last - p))};
}

double parse_number(std::string_view text, std::string_view where) {
  const NumberWithUnit n = parse_number_with_unit(text, where);
  if (!n.unit.empty() || !std::isfinite(n.value)) throw not_a_number(text, where);
  return n.value;
}

double parse_non_negative(std::string_view text, std::string_view where) {
  const NumberWithUnit n = parse_number_with_unit(text, where);
  if (!n.unit.empty()) throw not_a_number(text, where);
  if (!std::isfinite(n.value) || n.value < 0)
    throw ConfigError(
        fmt::format("{}: expected a finite number >= 0, got {}", where, excerpt(text)));
  return n.value;
}

std::optional<double> byte_unit(std::string_view unit) {
  struct Unit {
    std::string_view name;
    double bytes;
  };
  static constexpr Unit units[] = {{"B", 1.0},        {"KB", 1e3},          {"MB", 1e6},
                                   {"GB", 1e9},       {"TB", 1e12},         {"KiB", 1024.0},
                                   {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const Unit& u : units)
    if (unit == u.name) return u.bytes;
  return std::nullopt;
}

double parse_bytes(std::string_view text, std::string_view where) {
  const NumberWithUnit n = parse_number_with_unit(text, where);
  const std::optional<double> unit = n.unit.empty() ? std::optional<double>(1.0) : byte_unit(n.unit);
  if (!unit)
    throw ConfigError(fmt::format("{}: unknown unit '{}' in '{}' (use B, KB, MB, GB, KiB, MiB, "
                                  "GiB, TiB)",
                                  where, excerpt(n.unit), excerpt(text)));
  const double bytes = n.value * *unit;
  if (!std::isfinite(bytes) || bytes < 1 || bytes > limits::kMaxBytes)
    throw ConfigError(
        fmt::format("{}: '{}' is not a size between 1 byte and 1 EB", where, excerpt(text)));
  return bytes;
}

long long parse_integer(std::string_view text, std::string_view where, long long lo,
                        long long hi) {
  long long value = 0;
  const char* last = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), last, value);
  if (text.empty() || p != last || (ec != std::errc{} && ec != std::errc::result_out_of_range))
    throw ConfigError(fmt::format("{}: expected an integer, got '{}'", where, excerpt(text)));
  if (ec == std::errc::result_out_of_range || value < lo || value > hi)
    throw ConfigError(
        fmt::format("{}: {} is out of range (expected {}..{})", where, excerpt(text), lo, hi));
  return value;
}

} // namespace ppsim
