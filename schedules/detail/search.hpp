// Private machinery of the automatic schedulers: candidates scored by (cost, sum of spans), and
// how many threads independent candidates may use.
#pragma once

#include "sim/time.hpp"

#include <algorithm>
#include <compare>
#include <cstddef>
#include <thread>

namespace ppsim::detail {

/// What a candidate is judged by: the paper's cost (max span), then the sum of the devices'
/// spans (less idle overall), then its index among the candidates (the first wins a tie).
struct Score {
  Ticks cost{0};
  Ticks spans{0};
  friend auto operator<=>(const Score&, const Score&) = default;
};

/// Threads for independent work: the hardware's, at most `jobs`, at least 1.
[[nodiscard]] inline unsigned search_threads(std::size_t jobs) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<std::size_t>(jobs, 1, hw));
}

} // namespace ppsim::detail
