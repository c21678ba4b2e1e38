// The deterministic discrete-event engine: a schedule and a cost model in, a timeline out.
#pragma once

#include "sim/cost_model.hpp"
#include "sim/schedule.hpp"
#include "sim/timeline.hpp"

namespace ppsim {

/// Runs every device's task list in order. A task starts when the task before it on its device
/// has ended and every dependency (DESIGN.md) has ended, plus the comm latency when it crossed
/// devices; sends are asynchronous. Events are processed in (time, insertion) order.
/// Throws ScheduleError when the schedule cannot progress, naming each device's blocked task,
/// what it waits for, and a cycle of the task graph when there is one.
///
///   Timeline t = simulate(make_schedule("1f1b", {4, 8}), cost_model_for(parse_costs("F=1"), s));
[[nodiscard]] Timeline simulate(const Schedule& schedule, const CostModel& costs);

} // namespace ppsim
