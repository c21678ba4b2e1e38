// A comparison of schedules that keeps going past infeasible ones, and the least limit that works.
#include "ppsim/run/compare.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

namespace ppsim {

namespace {

// The run of `rq` under `limit` M_B, or nullopt when that is infeasible.
std::optional<Run> run_at(RunRequest rq, double limit) {
  rq.mem_limit = MemLimit::of_units(limit);
  rq.jitter = {};
  try {
    return run_request(rq);
  } catch (const InfeasibleError&) {
    return std::nullopt;
  }
}

} // namespace

void Comparison::require_any_ran() const {
  if (rows.empty() || any_ran()) return;
  // Every shape refused: a bad shape, as for a single run (exit 3).
  if (std::all_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.rejected; })) {
    std::string why;
    for (const CompareRow& r : rows) why += (why.empty() ? "" : "; ") + r.reason;
    throw ConfigError(why);
  }
  std::string least;
  for (const CompareRow& r : rows) {
    if (!least.empty()) least += ", ";
    least += r.rejected ? fmt::format("{} rejected ({})", r.schedule, r.reason)
             : r.least_mem_limit >= 0 ? fmt::format("{} {} M_B", r.schedule, human_number(r.least_mem_limit))
                                      : fmt::format("{} unknown", r.schedule);
  }
  throw InfeasibleError(fmt::format(
      "no schedule fits the memory limit (the least limit that works: {})", least));
}

double least_mem_limit(const RunRequest& rq) {
  const bool file = is_schedule_file(rq.schedule);
  const ScheduleInfo* info = file ? nullptr : find_schedule(rq.schedule);
  RunRequest free = rq;
  free.mem_limit = {};
  free.jitter = {};  // the limit depends on the order, not on sampled durations
  if (info == nullptr || !info->automatic()) return peak_memory_all_iterations(run_request(free));

  // NOTE: above the least possible limit, an automatic generator's feasibility is taken to grow
  // with the limit (the more memory, the more orders fit); every value returned was checked to
  // work.
  const int devices = rq.devices.value_or(0);
  const double asked =
      std::max(0.0, mem_limit_units(rq.mem_limit, devices, request_costs(rq, std::max(1, devices))));
  double lo = asked;
  double hi = lo > 0 ? 2 * lo : 1.0;
  std::optional<Run> found;
  for (int i = 0; i < 30 && !(found = run_at(rq, hi)); ++i) {
    lo = hi;
    hi *= 2;
  }
  if (!found) return -1;
  // Nothing holds less than one micro-batch per device: when the generator works there, that is
  // the answer (generators need not be monotone: zb-auto may fail just above it and work again).
  const double least = memory_lower_bound(found->schedule, found->costs);
  if (least > asked && least < hi) {
    if (run_at(rq, least)) return least;
    lo = std::max(lo, least);
  }
  // Halve the gap until it is below a thousandth of the limit: a dozen generations.
  while (hi - lo > 1e-3 * hi) {
    const double mid = lo + (hi - lo) / 2;
    if (auto r = run_at(rq, mid)) {
      hi = mid;
      found = std::move(r);
    } else {
      lo = mid;
    }
  }
  // The schedule found holds at most `hi`; its own peak is the round figure the limit stands for.
  const double peak = peak_memory_all_iterations(*found);
  if (peak < hi && peak > lo && run_at(rq, peak)) return peak;
  return hi;
}

Comparison run_compare(std::span<const RunRequest> requests, Progress* progress) {
  // An unknown name is wrong for the whole command; a shape a generator refuses, for its row.
  for (const RunRequest& rq : requests)
    if (!is_schedule_file(rq.schedule) && find_schedule(rq.schedule) == nullptr)
      throw unknown_schedule(rq.schedule, "--schedule");
  Comparison c;
  c.rows.reserve(requests.size());
  for (const RunRequest& rq : requests) {
    report(progress, "schedules", c.rows.size(), requests.size());
    CompareRow row;
    row.schedule = rq.schedule;
    row.devices = rq.devices.value_or(0);
    row.microbatches = rq.microbatches.value_or(0);
    row.chunks = rq.chunks;
    try {
      c.runs.push_back(run_request(rq));
      row.run = static_cast<int>(c.runs.size()) - 1;
    } catch (const OutOfMemoryError& e) {
      row.reason = e.what();  // no activation limit helps: the device is too small
      row.out_of_memory = true;
    } catch (const InfeasibleError& e) {
      row.reason = e.what();
      row.least_mem_limit = least_mem_limit(rq);
    } catch (const ConfigError& e) {
      if (is_schedule_file(rq.schedule)) throw;  // the file itself is wrong
      row.reason = e.what();
      row.rejected = true;
    }
    c.rows.push_back(std::move(row));
  }
  // Over the same samples (each task's factor depends on the seed, the sample and the task
  // only), how often each schedule that ran was the cheapest.
  std::vector<SampleSummary*> sampled;
  for (Run& r : c.runs)
    if (r.samples) sampled.push_back(&*r.samples);
  if (sampled.size() == c.runs.size()) count_wins(sampled);
  return c;
}

} // namespace ppsim
