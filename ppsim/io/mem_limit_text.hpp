// A memory limit as the user writes it (`2p`, `1.5p`, `12`, `3GiB`), parsed once into a value
// whose unit says how it resolves; ppsim/run/request.hpp turns it into M_B with the run's own costs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppsim {

/// A parsed --mem-limit. `value` is K of `Kp` (K*p*M_B), a count of M_B, or bytes.
///
///   MemLimit l = parse_mem_limit("1.5p");   // {per_device, 1.5, "1.5p"}
struct MemLimit {
  enum class Unit : std::uint8_t { none, per_device, units, bytes };
  Unit unit{Unit::none};
  double value{0};
  std::string text;  ///< as given, for messages; "" for none

  [[nodiscard]] bool given() const { return unit != Unit::none; }
  /// A limit of `mb` M_B (what a search or a bisection hands on), written as a number.
  [[nodiscard]] static MemLimit of_units(double mb);

  friend bool operator==(const MemLimit&, const MemLimit&) = default;
};

/// Parses a --mem-limit text: `Kp`, a bare number of M_B, or bytes (`3GiB`, `512MiB`, `100MB`).
/// "" gives no limit. ConfigError `--mem-limit 'x': ... (use 2p, 1.5p, 12 or 3GiB)` for a text
/// that is none of those, a value <= 0 or above the limits of ppsim/sim/limits.hpp.
[[nodiscard]] MemLimit parse_mem_limit(std::string_view text);

} // namespace ppsim
