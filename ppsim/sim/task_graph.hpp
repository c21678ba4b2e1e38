// The task graph of a schedule (dependencies + device order), analysed with Boost.Graph:
// cycles (deadlocks) and the critical path.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/grid.hpp"
#include "ppsim/sim/schedule.hpp"

#include <string>
#include <vector>

namespace ppsim {

/// A cycle of the task graph, each task followed by one that waits for it (device order or
/// data); empty when the graph is acyclic.
[[nodiscard]] std::vector<Slot> find_cycle(const Schedule& schedule);

/// The message of a deadlock: every blocked device's next task (`next[d]` = its index, or the
/// list's size when finished) and what it waits for, the cycle, and the grid marked at each
/// blocked task.
[[nodiscard]] std::string describe_deadlock(const Schedule& schedule, const std::vector<int>& next);

/// The chain of tasks that sets the makespan: longest path through the task graph, weighted by
/// durations and by comm on cross-device edges. Throws ScheduleError if there is a cycle.
struct CriticalPath {
  std::vector<Slot> tasks;  ///< in time order
  Ticks length{0};
};
[[nodiscard]] CriticalPath critical_path(const Schedule& schedule, const CostModel& costs);

} // namespace ppsim
