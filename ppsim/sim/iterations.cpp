// K training iterations through the engine: the repeated schedule, the optimizer-step pauses,
// the all-reduce barriers, and the steady-state iteration time.
#include "ppsim/sim/iterations.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

std::string_view sync_name(SyncMode mode) {
  return mode == SyncMode::AllReduce ? "allreduce" : "post-validation";
}

void check_iterations(const IterationOptions& o, const Schedule& one) {
  if (o.count < 1)
    throw ConfigError(fmt::format("--iterations {}: needs at least 1 iteration", o.count));
  if (o.optimizer_step < 0)
    throw ConfigError(fmt::format("--optimizer-step {} ms: must be >= 0",
                                  ticks_to_ms(o.optimizer_step)));
  const long long mbs = static_cast<long long>(o.count) * one.microbatches;
  if (mbs > limits::kMaxMicrobatches ||
      mbs * std::max(1, one.stages()) > limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format(
        "--iterations {} x microbatches={} ({} micro-batches on {} stages) is too large to "
        "simulate (limits: {} micro-batches, {} stage x micro-batch pairs)",
        o.count, one.microbatches, mbs, one.stages(), limits::kMaxMicrobatches,
        limits::kMaxStageMicrobatches));
}

Schedule repeat_schedule(const Schedule& one, int count) {
  Schedule s = one;
  if (count <= 1) return s;
  const int m = one.microbatches;
  s.microbatches = m * count;
  s.microbatch_route.reserve(ix(s.microbatches));
  for (int i = 1; i < count; ++i)
    s.microbatch_route.insert(s.microbatch_route.end(), one.microbatch_route.begin(),
                              one.microbatch_route.end());
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    const auto& tasks = one.order[d];
    auto& out = s.order[d];
    out.reserve(tasks.size() * ix(count));
    for (int i = 1; i < count; ++i) {
      for (Task t : tasks) {
        t.microbatch += i * m;
        if (t.kind == Kind::FB) t.microbatch2 += i * m;
        out.push_back(t);
      }
    }
  }
  return s;
}

SimOptions iteration_sim_options(const Schedule& one, const IterationOptions& o,
                                 const IterationTail& tail) {
  const int K = std::max(1, o.count);
  std::size_t total = 0;
  for (const auto& tasks : one.order) total += tasks.size() * ix(K);
  SimOptions opt;
  opt.pause_after.assign(total, 0);
  const bool barrier = o.sync == SyncMode::AllReduce && K > 1;
  if (barrier) {
    opt.barrier_member.assign(total, -1);
    opt.barrier_gate.assign(total, -1);
    opt.barrier_delay.assign(ix(K - 1), tail.after.empty() ? o.optimizer_step : tail.barrier);
  }
  std::size_t begin = 0;  // the device's first run in the K-fold timeline
  for (std::size_t d = 0; d < one.order.size(); ++d) {
    const std::size_t n = one.order[d].size();
    const Ticks after = tail.after_of(d, o.optimizer_step);
    for (int i = 0; i < K && n > 0; ++i) {
      const std::size_t first = begin + ix(i) * n;
      opt.pause_after[first + n - 1] = after;
      if (!barrier) continue;
      if (i + 1 < K)
        std::fill(opt.barrier_member.begin() + static_cast<std::ptrdiff_t>(first),
                  opt.barrier_member.begin() + static_cast<std::ptrdiff_t>(first + n), i);
      if (i > 0) opt.barrier_gate[first] = i - 1;
    }
    begin += n * ix(K);
  }
  return opt;
}

Ticks iteration_ends(const Timeline& tl, const IterationOptions& o, std::vector<Ticks>& ends,
                     const IterationTail& tail) {
  const int K = o.count;
  ends.assign(ix(K), 0);
  Ticks first_start = -1;
  for (int d = 0; d < tl.devices; ++d) {
    const auto runs = tl.device_runs(d);
    const std::size_t n = runs.size() / ix(K);
    if (n == 0) continue;
    if (first_start < 0 || runs.front().start < first_start) first_start = runs.front().start;
    const Ticks after = tail.after_of(ix(d), o.optimizer_step);
    for (int i = 0; i < K; ++i)
      ends[ix(i)] = std::max(ends[ix(i)], add_ticks(runs[ix(i + 1) * n - 1].end, after));
  }
  if (first_start < 0) first_start = 0;
  return K >= 2 ? ends[ix(K - 1)] - ends[ix(K - 2)] : ends[0] - first_start;
}

IterationTimeline simulate_iterations(const Schedule& one, const CostModel& costs,
                                      const IterationOptions& o, const CommOptions& comm,
                                      const IterationTail& tail) {
  check_iterations(o, one);
  const int K = o.count;
  IterationTimeline it;
  SimOptions options = iteration_sim_options(one, o, tail);
  options.comm = comm;
  it.timeline = simulate(repeat_schedule(one, K), costs, options);
  it.iteration_time = iteration_ends(it.timeline, o, it.iteration_end, tail);
  return it;
}

Run run_iterations(Schedule one, const CostSpec& spec, const IterationOptions& o,
                   const CommOptions& comm, const DataParallelSync& data_parallel) {
  check_iterations(o, one);
  if (data_parallel.any() && o.sync == SyncMode::PostValidation)
    throw ConfigError(fmt::format(
        "--sync post-validation with --dp {}: the data-parallel tail is modelled with the "
        "all-reduce barrier only (--sync allreduce)", data_parallel.replicas));
  // The first iteration alone: validation, metrics and parameters, exactly as a plain run.
  Run run = run_schedule(std::move(one), spec, comm);
  IterationTail tail;
  std::vector<CollectiveEvent> collectives;
  if (data_parallel.any()) {
    const DataParallelTail dp = data_parallel_tail(run.timeline, run.costs, data_parallel,
                                                   o.optimizer_step);
    attach_data_parallel(run, data_parallel, dp, o.optimizer_step);
    for (std::size_t d = 0; d < dp.end.size(); ++d) tail.after.push_back(dp.end[d] - dp.compute_end[d]);
    tail.barrier = dp.iteration_end - dp.last_end;
    collectives = dp.collectives;
  }
  IterationTimeline it = simulate_iterations(run.schedule, run.costs, o, comm, tail);
  run.schedule = repeat_schedule(run.schedule, o.count);
  run.timeline = std::move(it.timeline);
  // NOTE: under the all-reduce barrier iteration i is the first shifted by i iteration times
  for (int i = 0; i < o.count && !collectives.empty(); ++i)
    for (CollectiveEvent e : collectives) {
      const Ticks shift = mul_ticks(it.iteration_time, i);
      e.issue += shift;
      e.start += shift;
      e.end += shift;
      run.timeline.collectives.push_back(e);
    }
  run.iterations.options = o;
  run.iterations.iteration_time = it.iteration_time;
  const auto series = memory_series(run.timeline, run.costs);
  run.iterations.peak_memory.assign(series.size(), 0.0);
  for (std::size_t d = 0; d < series.size(); ++d)
    for (const MemoryPoint& p : series[d])
      run.iterations.peak_memory[d] = std::max(run.iterations.peak_memory[d], p.value);
  run.parameters.emplace_back("iterations", fmt::format("{}", o.count));
  run.parameters.emplace_back("optimizer step",
                              fmt::format("{} ms", ticks_to_ms(o.optimizer_step)));
  run.parameters.emplace_back("sync", std::string(sync_name(o.sync)));
  return run;
}

} // namespace ppsim
