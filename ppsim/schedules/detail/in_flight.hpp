// The memory-minimal orders: F and fused BW with a bound on the micro-batches in flight. The
// automatic schedulers take them as candidates, so that they work down to the least memory any
// order of the tasks can hold, and name that least exactly.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"

namespace ppsim::detail {

/// How many micro-batches may be in flight within `limit`: floor(limit / one), at least 0.
[[nodiscard]] int in_flight_within(double limit, double one);

/// F and fused BW of every micro-batch on its route, at most `k` micro-batches in flight (begun
/// on the route's first stage and not yet ended there; they begin in order), so each device
/// holds at most k micro-batches' activations: k = 1 holds memory_lower_bound(), the least
/// any order can (ppsim/schedules/search/bound.hpp). The order is
/// a list schedule on the costs (the cost file's comm between devices): a free device runs the
/// ready backward of the earliest micro-batch, else its ready forward, else waits for the first
/// to become ready. Deterministic; O(tasks x k) at worst.
///
///   in_flight_order(skeleton, costs, 1)   // one micro-batch at a time: F0..F3 BW3..BW0, ...
[[nodiscard]] Schedule in_flight_order(const Schedule& skeleton, const CostModel& costs, int k);

} // namespace ppsim::detail
