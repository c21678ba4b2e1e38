// Small hand-built schedules shared by the engine's tests.
#pragma once

#include "ppsim/sim/run.hpp"
#include "ppsim/sim/schedule.hpp"
#include "tests/test_helpers.hpp"

namespace ppsim::test {

/// d0: 0F0 0B0 0W0   d1: 1F0 1B0 1W0  (ZB-H1's order at p = 2, m = 1)
inline Schedule two_device_pipeline() {
  Schedule s = make_pipeline("tiny", 2, 1, loop_placement(2, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::B, 0, 0), Task::make(Kind::W, 0, 0)};
  s.order[1] = {Task::make(Kind::F, 1, 0), Task::make(Kind::B, 1, 0), Task::make(Kind::W, 1, 0)};
  return s;
}

/// The metrics of device `d` of a run.
inline const DeviceMetrics& device_metrics(const Run& r, int d) {
  return r.metrics.per_device[static_cast<std::size_t>(d)];
}

} // namespace ppsim::test
