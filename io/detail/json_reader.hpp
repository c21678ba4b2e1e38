// Private helper of the JSON loaders (.cpp files only): typed reads that name the JSON path.
#pragma once

#include "sim/cost_model.hpp"
#include "sim/errors.hpp"

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ppsim::detail {

/// Parses a whole document; ConfigError `where: not valid JSON: ...` when it is not JSON.
inline nlohmann::json parse_document(std::string_view text, std::string_view where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
}

/// Reads values of a parsed document; every failure is a ConfigError `where: /path: what`.
struct JsonReader {
  std::string_view where;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", where, path.empty() ? "/" : path, what));
  }
  static std::string shown(const nlohmann::json& j) {
    auto s = j.dump();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return s;
  }
  double number(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_number()) fail(path, fmt::format("expected a number, got {}", shown(j)));
    const double v = j.get<double>();
    if (!std::isfinite(v) || v < 0) fail(path, fmt::format("expected a number >= 0, got {}", shown(j)));
    return v;
  }
  Ticks ms(const nlohmann::json& j, const std::string& path) const {
    return ms_to_ticks(number(j, path), path);
  }
  void object(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", shown(j)));
  }
  void array(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, fmt::format("expected an array, got {}", shown(j)));
  }
  std::string string(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, fmt::format("expected a string, got {}", shown(j)));
    return j.get<std::string>();
  }
  /// An integer in [lo, hi]; 2.0 is not accepted as 2.
  int integer(const nlohmann::json& j, const std::string& path, int lo = 0,
              int hi = std::numeric_limits<int>::max()) const {
    if (!j.is_number_integer())
      fail(path, fmt::format("expected an integer, got {}", shown(j)));
    bool in_range = false;
    if (j.is_number_unsigned()) {
      const auto v = j.get<std::uint64_t>();
      in_range = v <= static_cast<std::uint64_t>(hi) && static_cast<std::int64_t>(v) >= lo;
    } else {
      const auto v = j.get<std::int64_t>();
      in_range = v >= lo && v <= hi;
    }
    if (!in_range) fail(path, fmt::format("expected an integer in {}..{}, got {}", lo, hi, shown(j)));
    return static_cast<int>(j.get<std::int64_t>());
  }
};

} // namespace ppsim::detail
