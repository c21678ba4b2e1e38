// Orders of F and fused BW with a bound on the micro-batches in flight (detail/in_flight.hpp).
#include "ppsim/schedules/detail/in_flight.hpp"

#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

namespace ppsim::detail {

int in_flight_within(double limit, double one) {
  if (!(one > 0)) return std::numeric_limits<int>::max();
  const double k = std::floor((limit + limits::kMemEps) / one);
  if (!(k >= 0)) return 0;
  return k >= static_cast<double>(std::numeric_limits<int>::max()) ? std::numeric_limits<int>::max()
                                                                   : static_cast<int>(k);
}

namespace {

// One micro-batch's next task: position q on its way (q < L: F at route[q]; then BW back).
struct Front {
  int mb{0};
  int q{0};
  Ticks ready{0};
};

} // namespace

Schedule in_flight_order(const Schedule& skeleton, const CostModel& costs, int k) {
  Schedule s = skeleton;
  for (auto& o : s.order) o.clear();
  const int m = skeleton.microbatches;
  if (m <= 0 || k <= 0) return s;
  k = std::min(k, m);
  const auto stage_at = [&](int mb, int q) {
    const auto& route = skeleton.routes[ix(skeleton.microbatch_route[ix(mb)])];
    const int len = static_cast<int>(route.size());
    return q < len ? route[ix(q)] : route[ix(2 * len - 1 - q)];
  };
  const auto length = [&](int mb) {
    return 2 * static_cast<int>(skeleton.routes[ix(skeleton.microbatch_route[ix(mb)])].size());
  };
  const auto task_at = [&](int mb, int q) {
    const int len = length(mb) / 2;
    return Task::make(q < len ? Kind::F : Kind::BW, stage_at(mb, q), mb);
  };
  {
    std::vector<std::size_t> held(ix(skeleton.devices), 0);
    for (const int d : skeleton.stage_device) ++held[ix(d)];
    for (std::size_t d = 0; d < held.size(); ++d) s.order[d].reserve(2 * ix(m) * held[d]);
  }

  std::vector<Ticks> free(ix(skeleton.devices), 0);
  std::vector<Front> front;  // at most k: one per micro-batch in flight
  front.reserve(ix(k));
  int next_mb = 0;
  const auto begin_next = [&](Ticks at) {
    if (next_mb < m) front.push_back(Front{next_mb++, 0, at});
  };
  for (int i = 0; i < k; ++i) begin_next(0);
  while (!front.empty()) {
    // each device's pick: the ready backward of the earliest micro-batch, else its ready
    // forward, else the first to become ready; the device that starts first goes (lower first)
    std::size_t pick = front.size();
    std::tuple<Ticks, int, int, int> best{};  // start, device, forward?, micro-batch
    for (std::size_t i = 0; i < front.size(); ++i) {
      const Front& f = front[i];
      const int dev = skeleton.stage_device[ix(stage_at(f.mb, f.q))];
      const bool forward = f.q < length(f.mb) / 2;
      const Ticks start = std::max(free[ix(dev)], f.ready);
      // among a device's ready tasks the kind and micro-batch decide, not the ready time
      const Ticks key = f.ready <= free[ix(dev)] ? free[ix(dev)] : start;
      const std::tuple<Ticks, int, int, int> t{key, dev, forward ? 1 : 0, f.mb};
      if (pick == front.size() || t < best) {
        best = t;
        pick = i;
      }
    }
    Front& f = front[pick];
    const Task task = task_at(f.mb, f.q);
    const int dev = skeleton.stage_device[ix(task.stage)];
    const Ticks end = std::get<0>(best) + costs.duration(task);
    s.order[ix(dev)].push_back(task);
    free[ix(dev)] = end;
    if (++f.q == length(f.mb)) {
      front.erase(front.begin() + static_cast<std::ptrdiff_t>(pick));
      begin_next(end);
      continue;
    }
    const int next_dev = skeleton.stage_device[ix(stage_at(f.mb, f.q))];
    f.ready = end + (next_dev == dev ? 0 : costs.comm);
  }
  return s;
}

} // namespace ppsim::detail
