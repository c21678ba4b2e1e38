// Private machinery of the automatic schedulers: candidates scored by (cost, sum of spans), and
// how many threads independent candidates may use.
#pragma once

#include "ppsim/sim/cores.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/time.hpp"

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

/// Work an automatic generator may still spend, in units it counts itself (tasks placed, slots
/// replayed), so that where a search ends does not depend on the machine or the threads.
class WorkBudget {
public:
  explicit WorkBudget(long long units) : total_(units), left_(units) {}
  /// Takes `units`; false (and none taken, and ended() from then on) when fewer are left.
  [[nodiscard]] bool take(long long units) {
    if (units > left_) {
      ended_ = true;
      return false;
    }
    left_ -= units;
    return true;
  }
  /// Takes `units` of work already done: what is not left makes the next take() fail.
  void charge(long long units) { left_ = units > left_ ? 0 : left_ - units; }
  [[nodiscard]] bool ended() const { return ended_; }
  [[nodiscard]] long long total() const { return total_; }

private:
  long long total_;
  long long left_;
  bool ended_{false};
};

/// A construction that needs more work than its budget (exit 3, as an input too large).
class WorkBudgetError : public ConfigError {
public:
  using ConfigError::ConfigError;
};

/// Threads for independent work: the usable cores (one inside a sweep's or a plan's worker), at
/// most `jobs`, at least 1.
[[nodiscard]] inline unsigned search_threads(std::size_t jobs) {
  return static_cast<unsigned>(std::clamp<std::size_t>(jobs, 1, worker_cores()));
}

} // namespace ppsim::detail
