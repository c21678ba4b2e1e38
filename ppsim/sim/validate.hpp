// Static checks of a schedule: every problem found, none thrown.
#pragma once

#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/task_graph.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace ppsim {

/// One problem. `at.index` is -1 when the problem is not one cell (a missing task, a bad route).
struct Violation {
  Slot at{0, -1};
  std::string what;
};

/// What validate() found: the first problems in full, and how many there are in all.
struct Violations {
  std::vector<Violation> first;  ///< in the order found, at most as many as were asked for
  std::size_t total{0};          ///< every problem, described in `first` or only counted
  [[nodiscard]] bool empty() const { return total == 0; }
  [[nodiscard]] auto begin() const { return first.begin(); }
  [[nodiscard]] auto end() const { return first.end(); }
};

/// Missing or duplicated tasks, tasks on the wrong device, a task before its own prerequisite on
/// the same device (W before its B, B before its F, ...), BW mixed with B/W for the same
/// (stage, micro-batch), stages or micro-batches out of range, malformed placement or routes.
/// Deadlocks across devices are found by simulate().
///
/// The first `describe` problems get a message; the rest are only counted, and memory and time
/// follow the tasks the schedule lists, not the parts it declares: a file that declares
/// millions of micro-batches and lists none costs a few kilobytes to reject.
[[nodiscard]] Violations validate(const Schedule& schedule,
                                  std::size_t describe = limits::kMaxReportedProblems);

/// The count, every described violation on its own line (at most `limit`, then how many more),
/// then the grid with each offending cell marked.
[[nodiscard]] std::string format_violations(const Schedule& schedule,
                                            const Violations& violations,
                                            std::size_t limit = limits::kMaxReportedProblems);

/// Throws ScheduleError with format_violations() when validate() finds anything.
void require_valid(const Schedule& schedule);

} // namespace ppsim
