// The sweep grid and its points.
#include "ppsim/run/sweep.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/io/schedule_file.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <limits>

namespace ppsim {

std::string_view sweep_status_name(SweepStatus status) {
  switch (status) {
  case SweepStatus::ok: return "ok";
  case SweepStatus::infeasible: return "infeasible";
  case SweepStatus::invalid: return "invalid";
  case SweepStatus::rejected: return "rejected";
  }
  return "?";
}

long long sweep_grid_points(const SweepGrid& g) {
  constexpr long long kMax = std::numeric_limits<long long>::max();
  long long n = 1;
  for (const std::size_t axis : {g.schedules.size(), g.devices.size(), g.chunks.size(),
                                 g.mem_limits.size(), g.microbatches.size()}) {
    const auto k = static_cast<long long>(axis);
    if (k != 0 && n > kMax / k) return kMax;
    n *= k;
  }
  return n;
}

std::vector<SweepPoint> expand_sweep_grid(const SweepGrid& g) {
  const auto need = [](bool empty, const char* what) {
    if (empty) throw ConfigError(fmt::format("sweep: {} has no values", what));
  };
  need(g.schedules.empty(), "--schedule");
  need(g.devices.empty(), "--stages");
  need(g.microbatches.empty(), "--microbatches");
  need(g.chunks.empty(), "--chunks");
  need(g.mem_limits.empty(), "--mem-limit");
  const long long n = sweep_grid_points(g);
  if (n > limits::kMaxSweepPoints)
    throw ConfigError(fmt::format(
        "sweep: {} schedules x {} p x {} v x {} limits x {} m = {} points; at most {} in one "
        "sweep (split it)",
        g.schedules.size(), g.devices.size(), g.chunks.size(), g.mem_limits.size(),
        g.microbatches.size(),
        n == std::numeric_limits<long long>::max() ? std::string("more than 9e18")
                                                   : fmt::format("{}", n),
        limits::kMaxSweepPoints));
  double tasks = 0;
  for (const auto& s : g.schedules)
    for (const int p : g.devices)
      for (const int v : g.chunks)
        for (const int m : g.microbatches)
          tasks += estimated_run_tasks(s, p, v, m) * static_cast<double>(g.mem_limits.size());
  check_command_work(tasks, fmt::format("{} points", n),
                     "p x v x m x 3 per point, v = 2 where the schedule picks, x20 for an "
                     "automatic schedule's search",
                     "split it, or fewer micro-batches");
  std::vector<SweepPoint> points;
  points.reserve(g.schedules.size() * g.devices.size() * g.chunks.size() * g.mem_limits.size() *
                 g.microbatches.size());
  for (const auto& s : g.schedules)
    for (const int p : g.devices)
      for (const int v : g.chunks)
        for (const auto& limit : g.mem_limits)
          for (const int m : g.microbatches) {
            SweepPoint pt;
            pt.schedule = s;
            pt.devices = p;
            pt.microbatches = m;
            pt.chunks = v;
            pt.mem_limit = limit;
            points.push_back(std::move(pt));
          }
  return points;
}

namespace {

// Runs one point, keeping an InfeasibleError, ScheduleError or ConfigError as its outcome.
void run_point(SweepPoint& pt, const RunRequest& base) {
  RunRequest rq = base;
  rq.schedule = pt.schedule;
  rq.devices = pt.devices;
  rq.microbatches = pt.microbatches;
  rq.chunks = pt.chunks;
  rq.mem_limit = pt.mem_limit;
  try {
    const Run r = run_request(rq);
    const Metrics& m = r.metrics;
    pt.run_chunks = r.schedule.chunks();
    pt.tasks = r.schedule.task_count();
    pt.makespan_ms = ticks_to_ms(m.makespan);
    pt.cost_ms = ticks_to_ms(m.cost);
    pt.ideal_ms = ticks_to_ms(m.ideal);
    pt.bubble_rate = m.bubble_rate;
    pt.bubble_over_ideal = m.bubble_over_ideal;
    pt.peak_memory = m.peak_memory;
    pt.mem_limit_mb = r.mem_limit;
  } catch (const InfeasibleError& e) {
    pt.status = SweepStatus::infeasible;
    pt.reason = e.what();
    pt.least_mem_limit = least_mem_limit(rq);
  } catch (const ScheduleError& e) {
    pt.status = SweepStatus::invalid;
    pt.reason = e.what();
  } catch (const ConfigError& e) {
    pt.status = SweepStatus::rejected;
    pt.reason = e.what();
  }
}

} // namespace

std::string encode_sweep_outcome(const SweepPoint& pt) {
  detail::ByteWriter out;
  out.put(static_cast<std::uint8_t>(pt.status));
  out.put(static_cast<std::int32_t>(pt.run_chunks));
  out.put(static_cast<std::uint64_t>(pt.tasks));
  for (const double x : {pt.makespan_ms, pt.cost_ms, pt.ideal_ms, pt.bubble_rate,
                         pt.bubble_over_ideal, pt.peak_memory, pt.mem_limit_mb,
                         pt.least_mem_limit})
    out.put(x);
  out.text(pt.reason);
  return out.take();
}

void decode_sweep_outcome(std::string_view bytes, SweepPoint& pt, std::string_view from) {
  detail::ByteReader in(bytes, from);
  const auto status = in.get<std::uint8_t>();
  if (status > static_cast<std::uint8_t>(SweepStatus::rejected)) in.fail();
  pt.status = static_cast<SweepStatus>(status);
  pt.run_chunks = in.get<std::int32_t>();
  pt.tasks = static_cast<std::size_t>(in.get<std::uint64_t>());
  for (double* x : {&pt.makespan_ms, &pt.cost_ms, &pt.ideal_ms, &pt.bubble_rate,
                    &pt.bubble_over_ideal, &pt.peak_memory, &pt.mem_limit_mb,
                    &pt.least_mem_limit})
    *x = in.get<double>();
  pt.reason = in.text();
  in.finish();
}

std::vector<SweepPoint> run_sweep(const SweepGrid& grid, const RunRequest& base,
                                  Progress* progress, Workers workers) {
  for (const auto& name : grid.schedules)
    if (!is_schedule_file(name) && find_schedule(name) == nullptr)
      throw unknown_schedule(name, "--schedule");
  // A limit in bytes on costs that know no bytes is wrong for every point: say so once.
  const CostSpec probe = request_costs(base, 1);
  for (const MemLimit& limit : grid.mem_limits) (void)mem_limit_units(limit, 1, probe);

  std::vector<SweepPoint> points = expand_sweep_grid(grid);
  const std::vector<std::string> outcomes = share_work(
      points.size(), workers,
      [&](std::size_t i) {
        SweepPoint pt = points[i];  // a copy: another thread reads the list
        run_point(pt, base);
        return encode_sweep_outcome(pt);
      },
      progress, "points");
  if (workers.exchange != nullptr && workers.exchange->rank() != 0) return {};
  for (std::size_t i = 0; i < points.size(); ++i)
    decode_sweep_outcome(outcomes[i], points[i], "a point");
  return points;
}

} // namespace ppsim
