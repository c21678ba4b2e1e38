// Replays of a measured order on its own durations: through the simulator, or with messages
// that leave when their sender is next inside MPI (Open MPI's rendezvous).
#include "ppsim/run/measured.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/run/detail/run_graph.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/simulator.hpp"

#include <fmt/format.h>
#include <functional>
#include <queue>

namespace ppsim {

using detail::kNoRun;

using detail::record_messages;
using detail::run_graph;
using detail::RunGraph;

namespace {

// The replay with the sender-progress rule (ReplayComm), event by event in time order: a device
// that comes free decides its next run; that decision also fixes when the messages of the run
// it just ended leave (now when it idles, at the end of the next run when that starts at once).
Timeline replay_with_progress(const Schedule& s, const Timeline& measured, const CostModel& model,
                              const ReplayComm& comm) {
  Timeline t;
  t.devices = measured.devices;
  t.device_begin = measured.device_begin;
  t.runs = measured.runs;
  const RunGraph g = run_graph(s, measured);
  const std::size_t n = t.runs.size();
  const LinkModel& link = comm.options.link;
  const bool blocking = comm.options.mode == CommMode::Blocking;
  // Per run: its end (-1 until it ran) and, for a run whose messages have left, their arrival.
  std::vector<Ticks> end(n, -1), arrive(n, -1);
  std::vector<std::vector<int>> consumers(n);
  for (std::size_t r = 0; r < n; ++r)
    for (const int q : g.needs[r])
      if (g.device[ix(q)] != g.device[r]) consumers[ix(q)].push_back(static_cast<int>(r));
  const auto message_time = [&](int producer) {
    if (!link.sized) return comm.latency;
    const Task& task = t.runs[ix(producer)].task;
    const StageCosts& c = model.stage[ix(task.stage)];
    const double bytes = task.kind == Kind::F ? c.act_bytes : c.grad_bytes;
    return link.latency + (link.bandwidth > 0 ? static_cast<Ticks>(bytes / link.bandwidth) : 0);
  };
  const int devices = t.devices;
  std::vector<int> next(ix(devices), 0);          // index of the device's next run (global)
  std::vector<Ticks> free_at(ix(devices), 0);
  std::vector<int> pending(ix(devices), kNoRun);  // the run whose messages wait for a decision
  using Event = std::pair<Ticks, int>;            // (time, device)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (int d = 0; d < devices; ++d) {
    next[ix(d)] = t.device_begin[ix(d)];
    events.push({0, d});
  }
  // When run r could start: its inputs' arrival (-1 while one is not known yet).
  const auto ready_of = [&](int r) -> Ticks {
    Ticks ready = 0;
    for (const int q : g.needs[ix(r)]) {
      const bool remote = g.device[ix(q)] != g.device[ix(r)];
      const Ticks at = remote ? arrive[ix(q)] : end[ix(q)];
      if (at < 0) return -1;
      ready = std::max(ready, at);
    }
    return ready;
  };
  const auto send = [&](int producer, Ticks leave) {
    arrive[ix(producer)] = add_ticks(leave, message_time(producer));
    for (const int c : consumers[ix(producer)]) events.push({arrive[ix(producer)], g.device[ix(c)]});
  };
  std::size_t done = 0;
  while (!events.empty()) {
    const auto [now, d] = events.top();
    events.pop();
    const auto du = ix(d);
    if (now < free_at[du]) continue;  // a stale wake-up: the device is busy
    const int r = next[du];
    const bool more = r < t.device_begin[du + 1];
    const Ticks ready = more ? ready_of(r) : -1;
    const bool starts = more && ready >= 0 && ready <= now;
    if (pending[du] != kNoRun) {
      // The messages of the run that just ended: the sender is inside MPI again when it idles,
      // or once the run it starts now ends.
      const int p = pending[du];
      pending[du] = kNoRun;
      send(p, starts && comm.sender_progress ? add_ticks(now, t.runs[ix(r)].end - t.runs[ix(r)].start) : now);
    }
    if (!more) continue;
    if (!starts) {
      if (ready > now) events.push({ready, d});
      continue;
    }
    TaskRun& run = t.runs[ix(r)];
    const Ticks dur = measured.runs[ix(r)].end - measured.runs[ix(r)].start;
    run.start = now;
    run.end = add_ticks(now, dur);
    end[ix(r)] = run.end;
    ++next[du];
    ++done;
    Ticks free = run.end;
    if (!consumers[ix(r)].empty()) {
      if (blocking) {
        // isend + wait: the sender is inside MPI until its messages are delivered.
        send(r, run.end);
        free = std::max(free, arrive[ix(r)]);
      } else if (!comm.sender_progress) {
        send(r, run.end);
      } else {
        pending[du] = r;
      }
    }
    free_at[du] = free;
    events.push({free, d});
  }
  if (done != n)
    throw ScheduleError(fmt::format("replay: {} of {} tasks could not run (a cycle of waits)",
                                    n - done, n));
  record_messages(s, g, t, [&](int producer, int) { return arrive[ix(producer)]; });
  return t;
}

} // namespace

Run replay_measured(const Schedule& schedule, const Timeline& measured, const CostModel& memory,
                    const ReplayComm& comm) {
  CostModel model = memory;
  model.comm = comm.latency;
  Run run;
  run.schedule = schedule;
  if (comm.sender_progress) {
    run.timeline = replay_with_progress(schedule, measured, model, comm);
  } else {
    SimOptions o;
    o.comm = comm.options;
    o.durations.reserve(measured.runs.size());
    for (const TaskRun& r : measured.runs) o.durations.push_back(r.end - r.start);
    run.timeline = simulate(schedule, model, o);
  }
  run.metrics = measure(run.timeline, model);
  run.costs = std::move(model);
  run.comm = comm.options;
  run.parameters = {{"schedule", "replayed"},
                    {"durations", "measured, task by task"},
                    {"comm", fmt::format("{} ms{}", human_ms(comm.latency),
                                         comm.sender_progress ? ", sent when the sender is next in MPI" : "")}};
  return run;
}

} // namespace ppsim
