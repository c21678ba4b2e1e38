// diff: the measured order simulated and replayed beside the measured run, the errors, and
// every idle window of the measured timeline with its cause.
#include "ppsim/run/measured.hpp"

#include "ppsim/run/detail/run_graph.hpp"
#include "ppsim/sim/metrics.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace ppsim {

using detail::kNoRun;

using detail::durations_by_stage;
using detail::median_of;
using detail::rel_error;
using detail::run_graph;
using detail::RunGraph;

std::string_view idle_cause_name(IdleCause cause) {
  switch (cause) {
  case IdleCause::warmup: return "warmup";
  case IdleCause::cooldown: return "cooldown";
  case IdleCause::dependency: return "dependency";
  case IdleCause::comm: return "comm";
  case IdleCause::straggler: return "straggler";
  case IdleCause::optimizer: return "optimizer";
  case IdleCause::host: return "host";
  }
  return "?";
}

namespace {

// How much of each run's end the stragglers before it account for: the counterfactual in which
// every straggler took its stage's median and every other timing stayed as measured.
std::vector<Ticks> straggler_lateness(const Run& r, const RunGraph& g,
                                      const std::vector<char>& straggler,
                                      const std::vector<Ticks>& median) {
  const auto& runs = r.timeline.runs;
  std::vector<int> by_start(runs.size());
  std::iota(by_start.begin(), by_start.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](int a, int b) { return runs[ix(a)].start < runs[ix(b)].start; });
  std::vector<Ticks> late(runs.size(), 0);
  for (const int p : by_start) {
    Ticks actual = 0, on_time = 0;
    const auto input = [&](int q) {
      actual = std::max(actual, runs[ix(q)].end);
      on_time = std::max(on_time, runs[ix(q)].end - late[ix(q)]);
    };
    if (g.prev[ix(p)] != kNoRun) input(g.prev[ix(p)]);
    for (const int q : g.needs[ix(p)]) input(q);
    // Only the part of the delay that reached this run's start: it may have started later anyway.
    const Ticks shift = std::clamp<Ticks>(actual - on_time, 0, std::max<Ticks>(0, runs[ix(p)].start - on_time));
    const Ticks own = straggler[ix(p)] ? std::max<Ticks>(0, runs[ix(p)].end - runs[ix(p)].start - median[ix(p)]) : 0;
    late[ix(p)] = std::min(shift + own, runs[ix(p)].end);
  }
  return late;
}

struct Classifier {
  const Run& m;
  const RunGraph& g;
  const std::vector<Ticks>& late;
  const std::vector<MeasuredSpan>& spans;
  std::vector<std::vector<MemoryPoint>> memory;
  std::vector<double> peak;
  std::vector<int> first_backward;  // per device: index (in its runs) of its first B/BW/FB
  std::vector<int> last_forward;    // per device: index of its last F/FB
  std::vector<IdleWindow>& out;

  // The memory in use at t: the last step at or before it (a binary search: a device has as
  // many steps as tasks, and as many windows).
  double memory_at(int d, Ticks t) const {
    const auto& steps = memory[ix(d)];
    const auto it = std::upper_bound(steps.begin(), steps.end(), t,
                                     [](Ticks x, const MemoryPoint& p) { return x < p.time; });
    return it == steps.begin() ? 0.0 : std::prev(it)->value;
  }

  // Emits [a, b) of `cause`, with an optimizer step's overlap carved out of it.
  void emit(int d, Ticks a, Ticks b, IdleCause cause, const Task& next) {
    if (b <= a) return;
    for (const MeasuredSpan& s : spans) {
      if (s.rank != d || s.end <= a || s.start >= b) continue;
      emit(d, a, std::max(a, s.start), cause, next);
      push(d, std::max(a, s.start), std::min(b, s.end), IdleCause::optimizer, next);
      emit(d, std::min(b, s.end), b, cause, next);
      return;
    }
    push(d, a, b, cause, next);
  }
  void push(int d, Ticks a, Ticks b, IdleCause cause, const Task& next) {
    if (b <= a) return;
    const double in_use = memory_at(d, a);
    out.push_back({d, a, b, cause, next, in_use, std::max(0.0, peak[ix(d)] - in_use)});
  }

  IdleCause structural(int d, int index) const {
    if (index <= first_backward[ix(d)]) return IdleCause::warmup;
    if (index > last_forward[ix(d)]) return IdleCause::cooldown;
    return IdleCause::dependency;
  }

  void gap(int d, int run, Ticks a, Ticks b) {
    const auto& runs = m.timeline.runs;
    const int index = run - m.timeline.device_begin[ix(d)];
    const Task& next = runs[ix(run)].task;
    int last = kNoRun;
    for (const int q : g.needs[ix(run)])
      if (last == kNoRun || runs[ix(q)].end > runs[ix(last)].end) last = q;
    if (last == kNoRun) return emit(d, a, b, IdleCause::host, next);
    const Ticks e = runs[ix(last)].end;
    const bool remote = g.device[ix(last)] != d;
    if (e <= a) return emit(d, a, b, remote ? IdleCause::comm : IdleCause::host, next);
    const Ticks mid = std::min(e, b);
    const Ticks on_time = std::clamp(e - late[ix(last)], a, mid);
    emit(d, a, on_time, structural(d, index), next);
    emit(d, on_time, mid, IdleCause::straggler, next);
    emit(d, mid, b, remote ? IdleCause::comm : IdleCause::host, next);
  }
};

} // namespace

DiffReport diff_measured(const MeasuredRun& measured, const CostSpec& costs,
                         const DiffOptions& options) {
  DiffReport d;
  d.measured = measured.run;
  const Run& m = d.measured;
  d.simulated = run_schedule(m.schedule, costs, options.comm);
  d.simulated.parameters.insert(d.simulated.parameters.begin(), {"order", "measured"});
  const double mc = static_cast<double>(m.metrics.cost);
  d.makespan_error = rel_error(static_cast<double>(d.simulated.metrics.makespan),
                               static_cast<double>(m.metrics.makespan));
  d.cost_error = rel_error(static_cast<double>(d.simulated.metrics.cost), mc);
  d.bubble_rate_error = d.simulated.metrics.bubble_rate - m.metrics.bubble_rate;
  // The replay's messages take the latency of the costs simulated on (fitted, or given) and, on
  // a sized link, their stages' message sizes: the measured run's own costs know no bytes.
  // (run_schedule ran the same schedule, so both models have its stages.)
  CostModel memory = m.costs;
  if (options.comm.link.sized)
    for (std::size_t s = 0; s < memory.stage.size(); ++s) {
      memory.stage[s].act_bytes = d.simulated.costs.stage[s].act_bytes;
      memory.stage[s].grad_bytes = d.simulated.costs.stage[s].grad_bytes;
    }
  d.replayed = replay_measured(m.schedule, m.timeline, memory,
                               ReplayComm{costs.comm, options.comm, options.sender_progress});
  d.replay_cost_error = rel_error(static_cast<double>(d.replayed.metrics.cost), mc);

  // Task by task: the runs of both timelines are in the schedule's order, device by device.
  const auto& mr = m.timeline.runs;
  const auto& sr = d.simulated.timeline.runs;
  d.task_error_ms.resize(mr.size());
  double start_sum = 0, end_sum = 0;
  for (std::size_t i = 0; i < mr.size() && i < sr.size(); ++i) {
    const double ds = ticks_to_ms(sr[i].start - mr[i].start);
    const double de = ticks_to_ms(sr[i].end - mr[i].end);
    d.task_error_ms[i] = de;
    start_sum += std::abs(ds);
    end_sum += std::abs(de);
    d.start_error_max_ms = std::max(d.start_error_max_ms, std::abs(ds));
    d.end_error_max_ms = std::max(d.end_error_max_ms, std::abs(de));
  }
  if (!mr.empty()) {
    d.start_error_mean_ms = start_sum / static_cast<double>(mr.size());
    d.end_error_mean_ms = end_sum / static_cast<double>(mr.size());
  }

  // Stragglers: far above the median of their stage and kind.
  const RunGraph g = run_graph(m.schedule, m.timeline);
  const auto by_stage = durations_by_stage(m);
  std::vector<std::array<Ticks, 5>> med(by_stage.size());
  for (std::size_t s = 0; s < by_stage.size(); ++s)
    for (std::size_t k = 0; k < 5; ++k) med[s][k] = median_of(by_stage[s][k]);
  std::vector<Ticks> median(mr.size());
  d.straggler.assign(mr.size(), 0);
  for (std::size_t i = 0; i < mr.size(); ++i) {
    median[i] = med[ix(mr[i].task.stage)][static_cast<std::size_t>(mr[i].task.kind)];
    const double dur = static_cast<double>(mr[i].end - mr[i].start);
    d.straggler[i] = median[i] > 0 && dur > options.straggler_factor * static_cast<double>(median[i]);
  }
  const std::vector<Ticks> late = straggler_lateness(m, g, d.straggler, median);

  Classifier c{m, g, late, measured.spans, memory_series(m.timeline, m.costs), {}, {}, {}, d.windows};
  for (const DeviceMetrics& dm : m.metrics.per_device) c.peak.push_back(dm.peak_memory);
  const Ticks end_all = m.metrics.makespan;
  for (int dev = 0; dev < m.timeline.devices; ++dev) {
    const auto runs = m.timeline.device_runs(dev);
    int first_b = static_cast<int>(runs.size()), last_f = -1;
    for (int i = 0; i < static_cast<int>(runs.size()); ++i) {
      const Kind k = runs[ix(i)].task.kind;
      if (k != Kind::F && k != Kind::W && first_b == static_cast<int>(runs.size())) first_b = i;
      if (k == Kind::F || k == Kind::FB) last_f = i;
    }
    c.first_backward.push_back(first_b);
    c.last_forward.push_back(last_f);
  }
  for (int dev = 0; dev < m.timeline.devices; ++dev) {
    const int b = m.timeline.device_begin[ix(dev)];
    const int e = m.timeline.device_begin[ix(dev) + 1];
    if (b == e) continue;
    // Before the first task: the ramp-up; after the last one: the drain.
    c.emit(dev, 0, mr[ix(b)].start, IdleCause::warmup, mr[ix(b)].task);
    for (int r = b + 1; r < e; ++r)
      if (mr[ix(r)].start > mr[ix(r - 1)].end) c.gap(dev, r, mr[ix(r - 1)].end, mr[ix(r)].start);
    c.emit(dev, mr[ix(e - 1)].end, end_all, IdleCause::cooldown, mr[ix(e - 1)].task);
  }
  for (const IdleWindow& w : d.windows) {
    d.cause_total[static_cast<std::size_t>(w.cause)] += w.end - w.start;
    d.idle_total += w.end - w.start;
  }
  return d;
}

} // namespace ppsim
