// One simulated schedule with everything a report needs: the schedule, its costs, the timeline
// and the metrics.
#pragma once

#include "sim/comm.hpp"
#include "sim/cost_model.hpp"
#include "sim/iterations.hpp"
#include "sim/metrics.hpp"
#include "sim/schedule.hpp"
#include "sim/timeline.hpp"

#include <string>
#include <utility>
#include <vector>

namespace ppsim {

struct Run {
  Schedule schedule;
  CostModel costs;
  Timeline timeline;
  Metrics metrics;
  /// The run's parameters (schedule, devices, micro-batches, costs, ...) in display order.
  std::vector<std::pair<std::string, std::string>> parameters;
  /// The activation memory limit it was generated or checked against, M_B units; < 0 = none.
  double mem_limit{-1};
  /// Several iterations (run_iterations): then schedule and timeline are the K-fold ones, while
  /// metrics stay those of one iteration. Count 1 and no step for a plain run.
  IterationSummary iterations;
  /// The communication model it was simulated under (the default for a plain run).
  CommOptions comm;
};

/// Validates (ScheduleError with every violation), expands the costs over the schedule's
/// stages, simulates (under `comm`) and measures.
///
///   Run r = run_schedule(make_schedule("1f1b", {4, 8}), parse_costs("F=1,B=1,W=1"));
[[nodiscard]] Run run_schedule(Schedule schedule, const CostSpec& costs,
                               const CommOptions& comm = {});

} // namespace ppsim
