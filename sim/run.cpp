// Validate, simulate, measure.
#include "sim/run.hpp"

#include "sim/simulator.hpp"
#include "sim/validate.hpp"

#include <fmt/format.h>

namespace ppsim {

Run run_schedule(Schedule schedule, const CostSpec& costs, const CommOptions& comm,
                 const OffloadPlan& offload) {
  require_valid(schedule);
  Run run;
  run.costs = cost_model_for(costs, schedule);
  if (comm.requested() || offload.any()) {
    SimOptions options;
    options.comm = comm;
    if (offload.any()) options.offload = offload;
    run.timeline = simulate(schedule, run.costs, options);
    if (offload.any()) run.offload = offload;
  } else {
    run.timeline = simulate(schedule, run.costs);
  }
  run.metrics = measure(run.timeline, run.costs);
  run.comm = comm;
  run.parameters = {
      {"schedule", schedule.name},
      {"devices", fmt::format("{}", schedule.devices)},
      {"stages", fmt::format("{}", schedule.stages())},
      {"chunks", fmt::format("{}", schedule.chunks())},
      {"microbatches", fmt::format("{}", schedule.microbatches)},
      {"placement", placement_name(schedule)},
      {"costs", costs.source},
  };
  if (comm.requested()) run.parameters.emplace_back("comm", describe(comm));
  if (!costs.slow.empty()) {
    std::string slow;
    for (const SlowDevice& s : costs.slow)
      slow += fmt::format("{}device {} x{:g}", slow.empty() ? "" : ", ", s.device, s.factor);
    run.parameters.emplace_back("slow", slow);
  }
  run.schedule = std::move(schedule);
  return run;
}

} // namespace ppsim
