// Validate, simulate, measure.
#include "sim/run.hpp"

#include "sim/simulator.hpp"
#include "sim/validate.hpp"

#include <fmt/format.h>

namespace ppsim {

Run run_schedule(Schedule schedule, const CostSpec& costs) {
  require_valid(schedule);
  Run run;
  run.costs = cost_model_for(costs, schedule);
  run.timeline = simulate(schedule, run.costs);
  run.metrics = measure(run.timeline, run.costs);
  run.parameters = {
      {"schedule", schedule.name},
      {"devices", fmt::format("{}", schedule.devices)},
      {"stages", fmt::format("{}", schedule.stages())},
      {"chunks", fmt::format("{}", schedule.chunks())},
      {"microbatches", fmt::format("{}", schedule.microbatches)},
      {"placement", placement_name(schedule)},
      {"costs", costs.source},
  };
  run.schedule = std::move(schedule);
  return run;
}

} // namespace ppsim
