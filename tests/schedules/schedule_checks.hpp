// Helpers shared by the schedule generators' tests: each part made once, busiest work, metrics.
#pragma once

#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/task.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>

namespace ppsim::test {

/// Checks that every part (F, B, W) of every (stage on the micro-batch's route, micro-batch) is
/// produced by exactly one task, and that nothing else is.
inline void check_each_part_once(const Schedule& s) {
  const Topology topo(s);
  std::map<std::tuple<int, int, int>, int> made;
  for (const auto& device : s.order)
    for (const Task& t : device)
      for_each_product(t, [&](const Part& part) {
        ++made[{static_cast<int>(part.kind), part.stage, part.microbatch}];
      });
  std::size_t expected = 0;
  for (int j = 0; j < s.microbatches; ++j)
    for (int st = 0; st < s.stages(); ++st) {
      if (!topo.on_route(j, st)) continue;
      for (Kind k : {Kind::F, Kind::B, Kind::W}) {
        CAPTURE(j, st, kind_name(k));
        CHECK(made[{static_cast<int>(k), st, j}] == 1);
        ++expected;
      }
    }
  CHECK(made.size() == expected);
}

/// The largest sum of the durations of one device's tasks under `costs`.
[[nodiscard]] inline Ticks busiest_work(const Schedule& s, const CostModel& costs) {
  Ticks most = 0;
  for (const auto& device : s.order) {
    Ticks work = 0;
    for (const Task& t : device) work += costs.duration(t);
    most = std::max(most, work);
  }
  return most;
}

/// The metrics of schedule `name` generated for `spec` with `costs` and simulated under them.
[[nodiscard]] inline Metrics metrics_of(const std::string& name, ScheduleSpec spec,
                                        const CostSpec& costs) {
  spec.costs = &costs;
  return run_schedule(make_schedule(name, spec), costs).metrics;
}

} // namespace ppsim::test
