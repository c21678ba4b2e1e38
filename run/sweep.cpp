// The sweep grid and its points.
#include "run/sweep.hpp"
#include "io/text_parse.hpp"

#include "io/schedule_file.hpp"
#include "run/compare.hpp"
#include "run/request.hpp"
#include "schedules/registry.hpp"
#include "sim/cores.hpp"
#include "sim/errors.hpp"
#include "sim/limits.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fmt/format.h>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

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
  check_command_work(tasks, "sweep",
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

// Runs points[i] for every i in `mine` over `threads` threads (each thread every threads-th
// of them). Any other error is rethrown after every thread ended: the one of the lowest index.
void run_points(std::vector<SweepPoint>& points, const std::vector<std::size_t>& mine,
                const RunRequest& base, unsigned threads, Progress* progress) {
  std::size_t done = 0;
  std::mutex reporting;  // the counts reach `progress` in order: 1, 2, ... whatever finished
  std::vector<std::exception_ptr> errors(mine.size());
  const auto work = [&](std::size_t first, std::size_t step) {
    const WorkerScope worker;  // a point's zb-auto search does not start threads of its own
    for (std::size_t k = first; k < mine.size(); k += step) {
      try {
        run_point(points[mine[k]], base);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      const std::lock_guard lock(reporting);
      report(progress, "points", ++done, mine.size());
    }
  };
  threads = std::clamp<unsigned>(threads, 1, static_cast<unsigned>(std::max<std::size_t>(1, mine.size())));
  if (threads == 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t, threads);
    for (std::thread& t : pool) t.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Bytes of plain values, appended and read back in order.
template <typename T> void put(std::string& out, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

struct Reader {
  std::string_view bytes;
  std::string_view from;
  template <typename T> T get() {
    if (bytes.size() < sizeof(T)) fail();
    T value;
    std::memcpy(&value, bytes.data(), sizeof(T));
    bytes.remove_prefix(sizeof(T));
    return value;
  }
  std::string text() {
    const auto n = get<std::uint32_t>();
    if (bytes.size() < n) fail();
    std::string t(bytes.substr(0, n));
    bytes.remove_prefix(n);
    return t;
  }
  [[noreturn]] void fail() const {
    throw std::runtime_error(fmt::format("sweep: the outcomes from {} are cut short or malformed", from));
  }
};

constexpr std::uint8_t kOutcomes = 1;  // a rank's blob: its outcomes
constexpr std::uint8_t kFailed = 2;    // a rank's blob: the error that stopped it

} // namespace

std::string encode_sweep_outcomes(const std::vector<SweepPoint>& points,
                                  const std::vector<std::size_t>& indices) {
  std::string out;
  put(out, kOutcomes);
  put(out, static_cast<std::uint64_t>(indices.size()));
  for (const std::size_t i : indices) {
    const SweepPoint& pt = points[i];
    put(out, static_cast<std::uint64_t>(i));
    put(out, static_cast<std::uint8_t>(pt.status));
    put(out, static_cast<std::int32_t>(pt.run_chunks));
    put(out, static_cast<std::uint64_t>(pt.tasks));
    for (const double x : {pt.makespan_ms, pt.cost_ms, pt.ideal_ms, pt.bubble_rate,
                           pt.bubble_over_ideal, pt.peak_memory, pt.mem_limit_mb,
                           pt.least_mem_limit})
      put(out, x);
    put(out, static_cast<std::uint32_t>(pt.reason.size()));
    out += pt.reason;
  }
  return out;
}

void decode_sweep_outcomes(std::string_view bytes, std::vector<SweepPoint>& points,
                           const std::function<bool(std::size_t)>& accept, std::string_view from) {
  Reader in{bytes, from};
  if (in.get<std::uint8_t>() != kOutcomes) in.fail();
  const auto n = in.get<std::uint64_t>();
  if (n > points.size()) in.fail();
  for (std::uint64_t k = 0; k < n; ++k) {
    const auto i = in.get<std::uint64_t>();
    if (i >= points.size() || !accept(static_cast<std::size_t>(i))) in.fail();
    SweepPoint& pt = points[static_cast<std::size_t>(i)];
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
  }
  if (!in.bytes.empty()) in.fail();
}

std::vector<SweepPoint> run_sweep(const SweepGrid& grid, const RunRequest& base,
                                  Progress* progress, SweepWorkers workers) {
  for (const auto& name : grid.schedules)
    if (!is_schedule_file(name) && find_schedule(name) == nullptr)
      throw unknown_schedule(name, "--schedule");
  // A limit in bytes on costs that know no bytes is wrong for every point: say so once.
  const CostSpec probe = request_costs(base, 1);
  for (const MemLimit& limit : grid.mem_limits) (void)mem_limit_units(limit, 1, probe);

  std::vector<SweepPoint> points = expand_sweep_grid(grid);
  const unsigned threads = workers.threads != 0 ? workers.threads : usable_cores();
  PointExchange* const ex = workers.exchange;
  const int ranks = ex != nullptr ? ex->ranks() : 1;
  const int rank = ex != nullptr ? ex->rank() : 0;
  // Interleaved, so that each rank gets its share of every axis (the large p and m as well).
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < points.size();
       i += static_cast<std::size_t>(ranks))
    mine.push_back(i);
  report(progress, "points", 0, mine.size());
  if (ranks == 1) {
    run_points(points, mine, base, threads, progress);
    return points;
  }
  // Every rank reaches the gather, also when its points failed, so that none waits forever.
  std::string blob;
  try {
    run_points(points, mine, base, threads, progress);
    blob = encode_sweep_outcomes(points, mine);
  } catch (const std::exception& e) {
    blob.clear();
    put(blob, kFailed);
    const std::string what = e.what();
    put(blob, static_cast<std::uint32_t>(what.size()));
    blob += what;
  }
  const std::vector<std::string> all = ex->gather(blob);
  if (rank != 0) return {};
  if (all.size() != static_cast<std::size_t>(ranks))
    throw std::runtime_error(fmt::format("sweep: {} of {} ranks answered", all.size(), ranks));
  std::vector<bool> arrived(points.size(), false);  // each point once, from the rank it was given
  for (int r = 0; r < ranks; ++r) {
    const std::string from = fmt::format("rank {}", r);
    const std::string_view b = all[static_cast<std::size_t>(r)];
    if (!b.empty() && static_cast<std::uint8_t>(b.front()) == kFailed) {
      Reader in{b.substr(1), from};
      throw std::runtime_error(fmt::format("sweep: rank {} failed: {}", r, in.text()));
    }
    std::size_t count = 0;
    decode_sweep_outcomes(b, points, [&](std::size_t i) {
      if (i % static_cast<std::size_t>(ranks) != static_cast<std::size_t>(r) || arrived[i])
        return false;
      arrived[i] = true;
      ++count;
      return true;
    }, from);
    const std::size_t expected = (points.size() + static_cast<std::size_t>(ranks - r - 1)) /
                                 static_cast<std::size_t>(ranks);
    if (count != expected)
      throw std::runtime_error(fmt::format("sweep: {} sent {} outcomes, expected {}", from, count,
                                           expected));
  }
  return points;
}

} // namespace ppsim
