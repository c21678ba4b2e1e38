// Metrics of a timeline.
#include "sim/metrics.hpp"

#include "sim/dependencies.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ppsim {

namespace {

// Memory is a sum of fractions (1/v per chunk); rounding keeps printed peaks stable.
double tidy(double x) { return std::round(x * 1e9) / 1e9; }

struct Deltas {
  double up{0};
  double down{0};
};

Deltas task_deltas(const Task& t, const CostModel& costs) {
  Deltas d;
  for_each_half(t, [&](Kind kind, int stage, int) {
    const double x = costs.memory_delta(kind, stage);
    (x > 0 ? d.up : d.down) += x;
  });
  return d;
}

template <class Fn> void for_each_memory_step(const TaskRun& r, const CostModel& costs, double& level,
                                              Fn&& step) {
  const Deltas dl = task_deltas(r.task, costs);
  if (dl.up != 0) {
    level += dl.up;
    step(r.start, level);
  }
  if (dl.down != 0) {
    level += dl.down;
    step(r.end, level);
  }
}

} // namespace

std::vector<std::vector<MemoryPoint>> memory_series(const Timeline& tl, const CostModel& costs) {
  std::vector<std::vector<MemoryPoint>> out(static_cast<std::size_t>(tl.devices));
  for (int d = 0; d < tl.devices; ++d) {
    auto& series = out[static_cast<std::size_t>(d)];
    double level = 0;
    series.push_back(MemoryPoint{0, 0.0});
    for (const TaskRun& r : tl.device_runs(d))
      for_each_memory_step(r, costs, level,
                           [&](Ticks t, double v) { series.push_back(MemoryPoint{t, tidy(v)}); });
  }
  return out;
}

Metrics measure(const Timeline& tl, const CostModel& costs) {
  Metrics m;
  Ticks first = std::numeric_limits<Ticks>::max(), last = std::numeric_limits<Ticks>::min();
  Ticks total_busy = 0;
  std::vector<char> holds(costs.stage.size(), 0);  // stages of this device, for its state bytes
  for (int d = 0; d < tl.devices; ++d) {
    DeviceMetrics dm;
    dm.device = d;
    const auto runs = tl.device_runs(d);
    std::fill(holds.begin(), holds.end(), 0);
    for (const TaskRun& r : runs)
      for_each_half(r.task, [&](Kind, int stage, int) {
        char& h = holds[static_cast<std::size_t>(stage)];
        if (h == 0) dm.state_bytes += costs.stage[static_cast<std::size_t>(stage)].state_bytes;
        h = 1;
      });
    double level = 0, peak = 0;
    for (const TaskRun& r : runs) {
      dm.busy += r.end - r.start;
      for_each_memory_step(r, costs, level, [&](Ticks, double v) { peak = std::max(peak, v); });
    }
    if (!runs.empty()) {
      dm.span = runs.back().end - runs.front().start;
      first = std::min(first, runs.front().start);
      last = std::max(last, runs.back().end);
    }
    dm.idle = dm.span - dm.busy;
    dm.peak_memory = tidy(peak);
    const double activation_bytes = costs.memory_unit_bytes > 0 ? dm.peak_memory * costs.memory_unit_bytes : 0;
    dm.peak_bytes = dm.state_bytes + activation_bytes;
    m.peak_bytes = std::max(m.peak_bytes, dm.peak_bytes);
    m.total_peak_bytes += dm.peak_bytes;
    total_busy += dm.busy;
    m.cost = std::max(m.cost, dm.span);
    m.ideal = std::max(m.ideal, dm.busy);
    m.peak_memory = std::max(m.peak_memory, dm.peak_memory);
    m.per_device.push_back(dm);
  }
  m.makespan = last > first ? last - first : 0;
  const auto ratio = [](Ticks a, Ticks b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  m.bubble_rate = ratio(m.cost - m.ideal, m.cost);
  m.bubble_over_ideal = ratio(m.cost - m.ideal, m.ideal);
  // NOTE: devices x makespan may exceed Ticks (4096 devices, a makespan near the limit of
  // limits::kMaxTotalTicks), so the denominator is a double
  m.idle_fraction = m.makespan > 0 ? 1.0 - static_cast<double>(total_busy) /
                                               (static_cast<double>(tl.devices) *
                                                static_cast<double>(m.makespan))
                                   : 0.0;
  m.peak_memory_bytes = costs.memory_unit_bytes > 0 ? m.peak_memory * costs.memory_unit_bytes : 0;
  return m;
}

} // namespace ppsim
