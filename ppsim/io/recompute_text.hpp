// Activation recomputation as the user asks for it (`--recompute none|selective|full|full:N|
// auto`, or one choice per stage), parsed once; ppsim/run/transformer.hpp turns it into costs.
#pragma once

#include "ppsim/io/model_file.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// What one stage recomputes. `full` with `layers` >= 0 is Megatron's `--recompute-granularity
/// full --recompute-method block --recompute-num-layers N`: the first N decoder layers of the
/// stage keep only their input and recompute their forward before the backward; the others
/// keep everything, or (`full:N+selective`) recompute selectively. `layers` < 0 means every
/// layer of the stage.
struct StageRecompute {
  Recompute mode{Recompute::none};
  int layers{-1};
  Recompute rest{Recompute::none};  ///< of the layers after the first `layers` (none or selective)

  friend bool operator==(const StageRecompute&, const StageRecompute&) = default;
};

/// `none`, `selective`, `full`, `full:N`, `full:N+selective` and `auto`, or a comma list of the
/// others with one entry per stage of the layout.
///
///   RecomputeSpec r = parse_recompute("selective,none,none,full:2");
struct RecomputeSpec {
  /// Empty: not given (the model's own `recompute`); one entry: every stage; else per stage.
  std::vector<StageRecompute> stages;
  /// `auto`: per device the cheapest choice that fits its memory (ppsim/run/recompute.hpp).
  bool automatic{false};
  std::string text;  ///< as given, for messages

  [[nodiscard]] bool given() const { return automatic || !stages.empty(); }
  /// One choice for the whole model with no layer count: it replaces the model's own field.
  [[nodiscard]] bool uniform() const {
    return !automatic && stages.size() == 1 && stages.front().layers < 0;
  }

  friend bool operator==(const RecomputeSpec&, const RecomputeSpec&) = default;
};

/// One stage's choice as text: `none`, `selective`, `full`, `full:N` or `full:N+selective`.
[[nodiscard]] std::string recompute_text(const StageRecompute& stage);
/// A list of choices as parse_recompute reads it back; equal entries collapse to one.
[[nodiscard]] std::string recompute_text(const std::vector<StageRecompute>& stages);

/// Parses `where`'s text ("" = not given). ConfigError `--recompute 'x': ...` naming the entry
/// for an unknown mode, a layer count that is no integer in 0..4096, `auto` inside a list, or a
/// list longer than limits::kMaxDevices * 64 entries.
[[nodiscard]] RecomputeSpec parse_recompute(std::string_view text,
                                            std::string_view where = "--recompute");

} // namespace ppsim
