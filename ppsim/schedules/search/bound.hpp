// How far from optimal: a lower bound on the cost (max per-device span) that no order of a
// schedule's tasks can beat under a memory limit.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"

#include <vector>

namespace ppsim {

/// One device's share of the bound: its work, the idle no order avoids, and the chain of one
/// micro-batch from the device's first task to its last.
struct DeviceBound {
  int device{0};
  Ticks busy{0};       ///< the sum of its tasks' durations (the same in every order)
  Ticks head_idle{0};  ///< idle before its first backward: the round trip of a micro-batch
                       ///< through the later stages, less the forwards the memory limit admits
  Ticks tail_idle{0};  ///< idle after its last forward: the round trip of that micro-batch,
                       ///< less the backward work the memory limit lets it keep pending
  Ticks chain{0};      ///< one micro-batch from its first forward here to its last task here
  /// Through a device k further down the route: the chain from here to k's first task, all of
  /// k's work that must end before its last backward, and the chain of that backward back here.
  Ticks through{0};
  int through_device{-1};  ///< that k; -1 when none applies
  /// On a device of one stage: the micro-batches its memory keeps in flight, each for a round
  /// trip, one after the other.
  Ticks in_flight{0};
  Ticks span{0};       ///< the bound on the device's span
};

/// A lower bound on the cost of every order of a schedule's tasks on its placement and routes
/// (every order any generator could pick, the optimum included) whose per-device peak memory
/// stays within `mem_limit`.
struct CostBound {
  Ticks cost{0};   ///< max over devices of DeviceBound::span
  int device{0};   ///< the device that sets it (the first of equals)
  std::vector<DeviceBound> per_device;
};

/// The bound for `schedule`'s tasks (kinds as the schedule has them: split B/W, fused BW, FB)
/// under `costs` and `mem_limit` (M_B units; < 0 = no limit). Time O(tasks + devices * chunks^2
/// + stages): cheaper than one simulation.
///
///   const CostBound b = cost_lower_bound(s, cost_model_for(spec, s), 4.0);
///   // b.cost <= the cost of s, and of every other order of its tasks that peaks <= 4 M_B
[[nodiscard]] CostBound cost_lower_bound(const Schedule& schedule, const CostModel& costs,
                                         double mem_limit);

/// (cost - bound) / cost: 0 when the schedule is optimal, at least the distance to the optimum
/// otherwise; 0 for cost 0.
[[nodiscard]] double optimality_gap(Ticks cost, Ticks bound);

} // namespace ppsim
