// Metrics of a timeline.
#include "ppsim/sim/metrics.hpp"

#include "ppsim/sim/dependencies.hpp"

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
  for_each_half(t, [&](Kind kind, int stage, int mb) {
    const double x = costs.memory_delta(kind, stage, mb);
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

// Device d's memory steps with its copies merged in (Timeline::copies): a task's deltas as
// for_each_memory_step gives them, an O's drop at its end before the task steps of that time,
// an R's rise at its start after them. step(time, level) as for_each_memory_step.
template <class Fn>
void copy_memory_steps(const Timeline& tl, const CostModel& costs,
                       const std::vector<const CopyEvent*>& copies, int d, Fn&& step) {
  struct Step {
    Ticks time;
    int order;  // 0: an O's drop, 1: a task's step, 2: an R's rise
    std::size_t seq;
    double delta;
  };
  std::vector<Step> steps;
  for (const CopyEvent* c : copies)
    steps.push_back(c->kind == CopyKind::O ? Step{c->end, 0, steps.size(), -c->units}
                                           : Step{c->start, 2, steps.size(), c->units});
  double running = 0, previous = 0;
  for (const TaskRun& r : tl.device_runs(d))
    for_each_memory_step(r, costs, running, [&](Ticks t, double v) {
      steps.push_back(Step{t, 1, steps.size(), v - previous});
      previous = v;
    });
  // The task steps keep their order (their times never decrease); the copies fall in between.
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  });
  double level = 0;
  for (const Step& s : steps) {
    level += s.delta;
    step(s.time, level);
  }
}

// Per device, its copies in the timeline's order.
std::vector<std::vector<const CopyEvent*>> copies_by_device(const Timeline& tl) {
  std::vector<std::vector<const CopyEvent*>> out(static_cast<std::size_t>(tl.devices));
  for (const CopyEvent& c : tl.copies)
    if (c.device >= 0 && c.device < tl.devices) out[static_cast<std::size_t>(c.device)].push_back(&c);
  return out;
}

// Device d's host memory: +units at each O's end, -units at its R's end (drops first at one
// time). step(time, level).
template <class Fn> void host_memory_steps(const std::vector<const CopyEvent*>& copies, Fn&& step) {
  std::vector<std::pair<Ticks, double>> steps;
  for (const CopyEvent* c : copies)
    steps.emplace_back(c->end, c->kind == CopyKind::O ? c->units : -c->units);
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  double level = 0;
  for (const auto& [t, delta] : steps) {
    level += delta;
    step(t, level);
  }
}

// The device of every run (runs are grouped by device).
std::vector<int> run_devices(const Timeline& tl) {
  std::vector<int> device(tl.runs.size());
  for (int d = 0; d < tl.devices; ++d)
    std::fill(device.begin() + tl.device_begin[static_cast<std::size_t>(d)],
              device.begin() + tl.device_begin[static_cast<std::size_t>(d) + 1], d);
  return device;
}

template <class Fn> void comm_waits(const Timeline& tl, const std::vector<int>& device, Fn&& fn) {
  const auto ix = [](int i) { return static_cast<std::size_t>(i); };
  const bool blocking = !tl.sends_done.empty();
  // The device is free for the next task from its previous task's end, or with blocking sends
  // from the delivery of that task's messages (the wait until then is on communication).
  const auto free_after = [&](int prev) {
    return blocking ? std::max(tl.runs[ix(prev)].end, tl.sends_done[ix(prev)])
                    : tl.runs[ix(prev)].end;
  };
  if (blocking) {
    for (int d = 0; d < tl.devices; ++d)
      for (int r = tl.device_begin[ix(d)] + 1; r < tl.device_begin[ix(d) + 1]; ++r) {
        const Ticks end = std::min(free_after(r - 1), tl.runs[ix(r)].start);
        if (end > tl.runs[ix(r - 1)].end) fn(CommWait{d, r, tl.runs[ix(r - 1)].end, end});
      }
  }
  for (std::size_t k = 0; k < tl.comms.size();) {
    const int r = tl.comms[k].to;
    Ticks sent = tl.comms[k].send, arrived = tl.comms[k].arrive;
    for (++k; k < tl.comms.size() && tl.comms[k].to == r; ++k) {
      sent = std::max(sent, tl.comms[k].send);
      arrived = std::max(arrived, tl.comms[k].arrive);
    }
    const int d = device[ix(r)];
    if (r == tl.device_begin[ix(d)]) continue;  // before the device's span
    const Ticks begin = std::max(free_after(r - 1), sent);
    const Ticks end = std::min(arrived, tl.runs[ix(r)].start);
    if (end > begin) fn(CommWait{d, r, begin, end});
  }
}

} // namespace

void for_each_comm_wait(const Timeline& tl, const std::function<void(const CommWait&)>& fn) {
  comm_waits(tl, run_devices(tl), fn);
}

std::vector<std::vector<MemoryPoint>> memory_series(const Timeline& tl, const CostModel& costs) {
  std::vector<std::vector<MemoryPoint>> out(static_cast<std::size_t>(tl.devices));
  const auto copies = copies_by_device(tl);
  for (int d = 0; d < tl.devices; ++d) {
    auto& series = out[static_cast<std::size_t>(d)];
    double level = 0;
    series.push_back(MemoryPoint{0, 0.0});
    const auto push = [&](Ticks t, double v) { series.push_back(MemoryPoint{t, tidy(v)}); };
    if (!copies[static_cast<std::size_t>(d)].empty()) {
      copy_memory_steps(tl, costs, copies[static_cast<std::size_t>(d)], d, push);
      continue;
    }
    for (const TaskRun& r : tl.device_runs(d)) for_each_memory_step(r, costs, level, push);
  }
  return out;
}

std::vector<std::vector<MemoryPoint>> host_memory_series(const Timeline& tl) {
  std::vector<std::vector<MemoryPoint>> out(static_cast<std::size_t>(tl.devices));
  const auto copies = copies_by_device(tl);
  for (std::size_t d = 0; d < out.size(); ++d) {
    out[d].push_back(MemoryPoint{0, 0.0});
    host_memory_steps(copies[d], [&](Ticks t, double v) { out[d].push_back(MemoryPoint{t, tidy(v)}); });
  }
  return out;
}

Metrics measure(const Timeline& tl, const CostModel& costs) {
  Metrics m;
  Ticks first = std::numeric_limits<Ticks>::max(), last = std::numeric_limits<Ticks>::min();
  // NOTE: sums over devices in 128 bits: each device's busy time fits in Ticks (its tasks do
  // not overlap within its span), but P of them, or P times the makespan, may not.
  __extension__ typedef __int128 Wide;
  Wide total_busy = 0;
  std::vector<char> holds(costs.stage.size(), 0);  // stages of this device, for its state bytes
  const auto copies = copies_by_device(tl);
  // Off the common path: only a run with recomputed forwards sums them.
  const bool recomputes = std::any_of(costs.stage.begin(), costs.stage.end(),
                                      [](const StageCosts& c) { return c.R > 0; });
  const bool has_ops = std::any_of(costs.stage.begin(), costs.stage.end(),
                                   [](const StageCosts& c) { return !c.F_ops.empty(); });
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
    const auto& mine = copies[static_cast<std::size_t>(d)];
    for (const TaskRun& r : runs) dm.busy += r.end - r.start;
    if (recomputes)
      for (const TaskRun& r : runs) dm.recompute += std::min(costs.recompute_part(r.task), r.end - r.start);
    if (has_ops)
      for (const TaskRun& r : runs) {
        dm.exposed_comm += std::min(costs.exposed_comm(r.task), r.end - r.start);
        dm.task_comm += costs.task_comm(r.task);
      }
    if (mine.empty())
      for (const TaskRun& r : runs)
        for_each_memory_step(r, costs, level, [&](Ticks, double v) { peak = std::max(peak, v); });
    if (!mine.empty()) {
      copy_memory_steps(tl, costs, mine, d, [&](Ticks, double v) { peak = std::max(peak, v); });
      double host_peak = 0;
      host_memory_steps(mine, [&](Ticks, double v) { host_peak = std::max(host_peak, v); });
      dm.host_peak_memory = tidy(host_peak);
      dm.host_peak_bytes = dm.host_peak_memory * costs.memory_unit_bytes;
      for (const CopyEvent* c : mine) {
        dm.copy_busy += c->end - c->start;
        (c->kind == CopyKind::O ? dm.offloaded_memory : dm.reloaded_memory) += c->units;
        (c->kind == CopyKind::O ? dm.offloaded_bytes : dm.reloaded_bytes) += c->bytes;
        dm.exposed_copy += c->exposed;
      }
      dm.offloaded_memory = tidy(dm.offloaded_memory);
      dm.reloaded_memory = tidy(dm.reloaded_memory);
      m.exposed_copy += dm.exposed_copy;
      m.host_peak_memory = std::max(m.host_peak_memory, dm.host_peak_memory);
      m.host_peak_bytes = std::max(m.host_peak_bytes, dm.host_peak_bytes);
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
  if (!tl.comms.empty()) {
    const std::vector<int> device = run_devices(tl);
    for (const CommEvent& c : tl.comms) {
      const int from = device[static_cast<std::size_t>(c.from)];
      DeviceMetrics& sender = m.per_device[static_cast<std::size_t>(from)];
      ++sender.p2p_messages;
      sender.p2p_bytes_sent += c.bytes;
    }
    comm_waits(tl, device, [&](const CommWait& w) {
      m.per_device[static_cast<std::size_t>(w.device)].comm_wait += w.end - w.begin;
    });
  }
  m.makespan = last > first ? last - first : 0;
  const auto ratio = [](Ticks a, Ticks b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  m.bubble_rate = ratio(m.cost - m.ideal, m.cost);
  m.bubble_over_ideal = ratio(m.cost - m.ideal, m.ideal);
  m.idle_fraction =
      m.makespan > 0 ? 1.0 - static_cast<double>(total_busy) /
                                 static_cast<double>(Wide{tl.devices} * Wide{m.makespan})
                     : 0.0;
  m.peak_memory_bytes = costs.memory_unit_bytes > 0 ? m.peak_memory * costs.memory_unit_bytes : 0;
  return m;
}

double order_peak(const Schedule& s, const CostModel& costs) {
  double peak = 0;
  for (const auto& device : s.order) {
    double mem = 0;
    for (const Task& t : device) {
      for_each_half(t, [&](Kind kind, int stage, int) { mem += costs.memory_delta(kind, stage); });
      peak = std::max(peak, mem);
    }
  }
  return peak;
}

double memory_lower_bound(const Schedule& schedule, const CostModel& costs) {
  const Topology topo(schedule);
  double worst = 0;
  for (int d = 0; d < schedule.devices; ++d) {
    double held = 0;
    for (const int s : topo.device_stages(d)) held += costs.memory_delta(Kind::F, s);
    worst = std::max(worst, held);
  }
  return worst;
}

} // namespace ppsim
