// The exact optimum of small zero-bubble problems, by branch and bound: the reference that says
// how far zb-auto and the lower bound are from the best order.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"

#include <cstdint>

namespace ppsim {

struct OptimumOptions {
  /// Give up after this many search nodes (then `proven` is false and the best order found so
  /// far is returned).
  std::int64_t max_nodes{50'000'000};
  /// The cost of an order known to exist (e.g. a heuristic's): only strictly cheaper orders are
  /// searched for; < 0 = none. When none is cheaper, the optimum is this cost and `schedule`
  /// is empty.
  Ticks known_cost{-1};
  /// Stop as soon as an order meets cost_lower_bound() (then that bound proves it optimal). Off,
  /// the search proves the optimum by itself: the way to check the bound against it.
  bool use_lower_bound{true};
};

struct Optimum {
  Ticks cost{-1};         ///< the least cost; -1 when no order fits the limit
  bool proven{false};     ///< the whole tree was searched: `cost` is the optimum
  Schedule schedule;      ///< an order with that cost (empty when `known_cost` won)
  std::int64_t nodes{0};  ///< search nodes visited
};

/// The least cost (max per-device span, ppsim's timing: each device runs its order as soon as
/// dependencies and comm allow) of any order of F, B and W on one stage per device (the
/// zb-auto problem) whose per-device peak memory stays within `mem_limit` (M_B units; < 0 =
/// none). `costs` holds one entry per stage (cost_model_for over a one-chunk skeleton).
/// Throws ConfigError above 6 devices or 12 micro-batches: the search is exponential.
///
///   const Optimum o = optimal_zero_bubble(4, 8, costs, 4.0);   // o.cost == 54 ms at unit 2 ms
///
/// NOTE: each device runs each kind in micro-batch order (F0 before F1, ...). This loses
/// nothing: micro-batches are alike, so relabelling the k-th F (B, W) of every device as
/// micro-batch k keeps every start time, every dependency and every memory level.
[[nodiscard]] Optimum optimal_zero_bubble(int devices, int microbatches, const CostModel& costs,
                                          double mem_limit, const OptimumOptions& options = {});

} // namespace ppsim
