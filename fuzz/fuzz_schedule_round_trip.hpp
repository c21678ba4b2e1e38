// Shared by the two schedule-file targets: validate, simulate (and check what the metrics
// claim), write back in both formats and read again; each written file must read back to the
// schedule that was written.
#pragma once

#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"

#include <cmath>
#include <cstddef>
#include <sstream>

namespace ppsim::fuzz {

/// What a run of a valid schedule must never claim: times out of order, a device busier than
/// its span, a cost below the ideal, rates outside [0, 1].
inline void check_metrics(const Schedule& s, const Run& run) {
  expect(run.timeline.runs.size() == s.task_count(), "the timeline lost or added a task");
  for (const TaskRun& r : run.timeline.runs)
    expect(r.start >= 0 && r.end >= r.start, "a task ends before it starts");
  for (const CommEvent& c : run.timeline.comms)
    expect(c.arrive >= c.send, "a message arrives before it is sent");
  const Metrics& m = run.metrics;
  for (const DeviceMetrics& d : m.per_device)
    expect(d.busy >= 0 && d.busy <= d.span && d.idle == d.span - d.busy,
           "a device is busier than its span");
  expect(m.makespan >= m.cost && m.cost >= m.ideal && m.ideal >= 0,
         "makespan >= cost >= ideal >= 0 does not hold");
  const auto rate = [](double x) { return std::isfinite(x) && x >= 0 && x <= 1; };
  expect(rate(m.bubble_rate) && rate(m.idle_fraction), "a rate outside [0, 1]");
  expect(std::isfinite(m.peak_memory) && m.peak_memory >= 0, "an impossible peak memory");
}

/// `variant` picks the costs: ordinary ones, ones large enough that sums of them would
/// overflow a careless clock (each run stays below the bound of limits::kMaxTotalTicks or is
/// refused with it), and the largest any input may give.
inline void check_schedule_round_trip(const Schedule& s, std::size_t variant) {
  const Violations v = validate(s);
  expect(v.first.size() <= v.total, "more described problems than counted");
  (void)format_violations(s, v);
  if (!v.empty()) return;
  static const char* const kCosts[] = {"F=1,B=2,W=1,comm=0.5", "F=3e9,B=2e9,W=1e9,comm=7e8",
                                       "F=1e12,B=1e12,W=1e12,BW=1e12,FB=1e12,comm=1e12"};
  const CostSpec costs = parse_costs(kCosts[variant % 3]);
  // A valid schedule simulates, deadlocks (a ScheduleError naming the cycle) or is too long to
  // time (a ConfigError): never a wrong metric.
  Run run;
  if (accepted([&] { run = run_schedule(s, costs); })) check_metrics(s, run);
  std::ostringstream json;
  write_schedule_json(json, s);
  Schedule back;
  expect(accepted([&] { back = parse_schedule_json(json.str(), "round-trip.json"); }),
         "a written ppsim.schedule/1 file does not read back");
  // NOTE: the notation is the vocabulary of the file a schedule came from (its messages
  // speak it), not part of the schedule; each reader sets its own
  back.notation = s.notation;
  expect(back == s, "the JSON round trip changed the schedule");
  std::ostringstream csv;
  if (!accepted([&] { write_pytorch_csv(csv, s); })) return;  // not expressible as a CSV
  Schedule from_csv;
  expect(accepted([&] { from_csv = parse_pytorch_csv(csv.str(), "round-trip.csv"); }),
         "a written PyTorch CSV does not read back");
  from_csv.name = s.name;
  from_csv.notation = s.notation;
  expect(from_csv == s, "the CSV round trip changed the schedule");
}

} // namespace ppsim::fuzz
