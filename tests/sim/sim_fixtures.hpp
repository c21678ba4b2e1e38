// Small hand-built schedules shared by the engine's tests.
#pragma once

#include "sim/schedule.hpp"

namespace ppsim::test {

/// d0: 0F0 0B0 0W0   d1: 1F0 1B0 1W0  (ZB-H1's order at p = 2, m = 1)
inline Schedule two_device_pipeline() {
  Schedule s = make_pipeline("tiny", 2, 1, loop_placement(2, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::B, 0, 0), Task::make(Kind::W, 0, 0)};
  s.order[1] = {Task::make(Kind::F, 1, 0), Task::make(Kind::B, 1, 0), Task::make(Kind::W, 1, 0)};
  return s;
}

} // namespace ppsim::test
