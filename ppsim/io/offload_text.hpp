// An activation offload as the user writes it (`--offload none|auto|0.5|stages=0-3,fraction=0.5`),
// parsed once into a value; ppsim/run/offload.hpp resolves it against a schedule and its costs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppsim {

/// A parsed --offload: which stages (or chunks of each device) offload which fraction of each
/// micro-batch's activation, or `auto` (the smallest fraction that fits the memory limit).
///
///   OffloadSpec o = parse_offload("stages=0-3,fraction=0.5");
struct OffloadSpec {
  enum class Mode : std::uint8_t { none, fraction, automatic };
  Mode mode{Mode::none};
  double fraction{1.0};  ///< in (0, 1]
  /// Stages first..last (inclusive); -1 = every stage.
  int first_stage{-1};
  int last_stage{-1};
  /// Chunks first..last of every device; -1 = every chunk.
  int first_chunk{-1};
  int last_chunk{-1};
  std::string text;  ///< as given, for messages and reports; "" for none

  [[nodiscard]] bool requested() const { return mode != Mode::none; }

  friend bool operator==(const OffloadSpec&, const OffloadSpec&) = default;
};

/// Parses an --offload text: "" or `none` (no offload), `auto`, a fraction in (0, 1] of every
/// activation (`0.5`), or keys `stages=A-B` (or `A`), `chunks=A-B` (or `A`) and `fraction=X`
/// (default 1). ConfigError `--offload 'x': ...` naming what is wrong: a fraction outside
/// (0, 1], a bad range, an unknown key (with the valid keys). Stages beyond a schedule are
/// checked when it is resolved (ppsim/run/offload.hpp).
[[nodiscard]] OffloadSpec parse_offload(std::string_view text);

} // namespace ppsim
