// How a micro-batch's sequence is cut into slices (Seq1F1B), as the user writes it: `--slices N`
// and `--slicing even|balanced|L1,L2,...`, parsed once; ppsim/run/slicing.hpp turns it into the
// slices' costs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ppsim {

/// A parsed --slicing.
///
///   SlicingSpec s = parse_slicing("3,1");   // {lengths, {0.75, 0.25}}: 2 slices
struct SlicingSpec {
  /// even: equal lengths; balanced: the lengths that equalise F + B per slice under causal
  /// attention (Seq1F1B's computation-wise partition); lengths: as given.
  enum class Mode : std::uint8_t { even, balanced, lengths };
  Mode mode{Mode::even};
  std::vector<double> lengths;  ///< Mode::lengths: fractions of the sequence, summing to 1

  friend bool operator==(const SlicingSpec&, const SlicingSpec&) = default;
};

/// Parses `even`, `balanced` or 2..limits::kMaxSlices positive lengths (tokens or any unit:
/// they are normalised). ConfigError `--slicing 'x': ...` otherwise.
[[nodiscard]] SlicingSpec parse_slicing(std::string_view text);

} // namespace ppsim
