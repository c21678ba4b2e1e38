// Static checks of a schedule: every problem found, none thrown.
#pragma once

#include "sim/schedule.hpp"
#include "sim/task_graph.hpp"

#include <string>
#include <vector>

namespace ppsim {

/// One problem. `at.index` is -1 when the problem is not one cell (a missing task, a bad route).
struct Violation {
  Slot at{0, -1};
  std::string what;
};

/// Missing or duplicated tasks, tasks on the wrong device, a task before its own prerequisite on
/// the same device (W before its B, B before its F, ...), BW mixed with B/W for the same
/// (stage, micro-batch), stages or micro-batches out of range, malformed placement or routes.
/// Deadlocks across devices are found by simulate().
[[nodiscard]] std::vector<Violation> validate(const Schedule& schedule);

/// Every violation on its own line (at most `limit`, then a count), then the grid with each
/// offending cell marked.
[[nodiscard]] std::string format_violations(const Schedule& schedule,
                                            const std::vector<Violation>& violations,
                                            std::size_t limit = 40);

/// Throws ScheduleError with format_violations() when validate() finds anything.
void require_valid(const Schedule& schedule);

} // namespace ppsim
