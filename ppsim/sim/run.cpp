// Validate, simulate, measure.
#include "ppsim/sim/run.hpp"

#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

Run run_schedule(Schedule schedule, const CostSpec& costs, const CommOptions& comm,
                 const OffloadPlan& offload, const DataParallelSync& data_parallel,
                 Ticks optimizer_step) {
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
      {"microbatches", fmt::format("{}", schedule.whole_microbatches())},
      {"placement", placement_name(schedule)},
      {"costs", costs.source},
  };
  if (schedule.slices > 1) {
    // the slices' lengths: each one's tokens share, as its W (pure GEMMs) shows them
    std::string lengths;
    for (const SliceCosts& c : costs.slices)
      lengths += fmt::format("{}{:.3g}", lengths.empty() ? "" : ", ", c.W);
    run.parameters.insert(run.parameters.begin() + 5,
                          {"slices", fmt::format("{} per micro-batch (lengths {})",
                                                 schedule.slices, lengths)});
  }
  if (comm.requested()) run.parameters.emplace_back("comm", describe(comm));
  if (!costs.slow.empty()) {
    std::string slow;
    for (const SlowDevice& s : costs.slow)
      slow += fmt::format("{}device {} x{:g}", slow.empty() ? "" : ", ", s.device, s.factor);
    run.parameters.emplace_back("slow", slow);
  }
  run.schedule = std::move(schedule);
  if (data_parallel.any() || optimizer_step > 0)
    attach_data_parallel(run, data_parallel,
                         data_parallel_tail(run.timeline, run.costs, data_parallel, optimizer_step),
                         optimizer_step);
  return run;
}

void attach_data_parallel(Run& run, const DataParallelSync& sync, const DataParallelTail& tail,
                          Ticks step) {
  run.data_parallel = sync;
  run.timeline.collectives = tail.collectives;
  for (DeviceMetrics& dm : run.metrics.per_device) {
    const auto d = static_cast<std::size_t>(dm.device);
    dm.dp_busy = 0;
    dm.exposed_dp = tail.end[d] - add_ticks(tail.compute_end[d], step);
  }
  for (const CollectiveEvent& e : tail.collectives)
    run.metrics.per_device[static_cast<std::size_t>(e.device)].dp_busy += e.end - e.start;
  run.metrics.exposed_dp = tail.iteration_end - add_ticks(tail.last_end, step);
  run.iterations.iteration_time = tail.iteration_end - tail.first_start;
  if (step > 0) run.parameters.emplace_back("optimizer step", fmt::format("{:.4g} ms", ticks_to_ms(step)));
  if (!sync.any()) return;
  run.parameters.emplace_back(
      "data parallel",
      fmt::format("{} replicas, {} of the gradients ({:g} bytes per parameter){} over {} GB/s, {} "
                  "ms per step",
                  sync.replicas, sync.shard ? "reduce-scatter" : "all-reduce",
                  sync.grad_bytes_per_param,
                  sync.shard ? " and all-gather of the parameters (ZeRO-1)" : "",
                  sync.gbytes_per_s, ticks_to_ms(sync.latency)));
}

} // namespace ppsim
