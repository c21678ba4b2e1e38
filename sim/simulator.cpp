// The discrete-event engine. Per device a cursor into its task list; per part the time its
// result exists. The event queue holds task ends, ordered by (time, insertion sequence).
#include "sim/simulator.hpp"

#include "sim/dependencies.hpp"
#include "sim/errors.hpp"
#include "sim/task_graph.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <queue>

namespace ppsim {

namespace {

std::size_t ix(int i) { return static_cast<std::size_t>(i); }

struct EndEvent {
  Ticks time;
  std::uint64_t seq;
  int device;
  friend bool operator>(const EndEvent& a, const EndEvent& b) {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

// Rejects tasks the engine cannot index (validate() gives the full report).
void check_indexable(const Schedule& s, const Topology& topo) {
  if (s.devices <= 0) throw ScheduleError("schedule: needs at least one device");
  if (static_cast<int>(s.order.size()) != s.devices)
    throw ScheduleError(fmt::format("schedule: {} device task lists for {} devices",
                                    s.order.size(), s.devices));
  if (static_cast<int>(s.microbatch_route.size()) != s.microbatches)
    throw ScheduleError("schedule: micro-batch routes do not match the micro-batch count");
  for (int d = 0; d < s.devices; ++d) {
    for (const Task& t : s.order[ix(d)]) {
      bool ok = topo.on_route(t.microbatch, t.stage);
      if (t.kind == Kind::FB) ok = ok && topo.on_route(t.microbatch2, t.stage2);
      if (!ok)
        throw ScheduleError(fmt::format(
            "schedule: device {}: task {} names a stage or micro-batch outside the schedule "
            "(run `ppsim validate` for the full report)",
            d, to_string(t)));
    }
  }
}

} // namespace

Timeline simulate(const Schedule& schedule, const CostModel& costs) {
  const Topology topo(schedule);
  check_indexable(schedule, topo);
  const int P = schedule.devices;
  const int S = schedule.stages();
  if (static_cast<int>(costs.stage.size()) != S)
    throw ConfigError(fmt::format("cost model has {} stages, the schedule {}", costs.stage.size(), S));

  Timeline tl;
  tl.devices = P;
  tl.device_begin.resize(ix(P) + 1, 0);
  for (int d = 0; d < P; ++d)
    tl.device_begin[ix(d) + 1] =
        tl.device_begin[ix(d)] + static_cast<int>(schedule.order[ix(d)].size());
  tl.runs.reserve(ix(tl.device_begin[ix(P)]));
  for (int d = 0; d < P; ++d)
    for (const Task& t : schedule.order[ix(d)]) tl.runs.push_back(TaskRun{t, d, 0, 0});

  const PartIndex index(S, schedule.microbatches);
  const std::size_t n_parts = index.size();
  // One record per part, so a lookup touches one cache line.
  struct PartState {
    Ticks done{-1};   // when the part's result exists
    int producer{-1};  // run that produced it
    int waiter{-1};    // first device blocked on it
  };
  std::vector<PartState> part(n_parts);
  std::vector<int> next_waiter(ix(P), -1);
  std::vector<int> cursor(ix(P));             // next run of each device
  std::vector<Ticks> free_at(ix(P), 0);
  std::vector<char> busy(ix(P), 0);
  for (int d = 0; d < P; ++d) cursor[ix(d)] = tl.device_begin[ix(d)];

  std::priority_queue<EndEvent, std::vector<EndEvent>, std::greater<>> events;
  std::uint64_t seq = 0;
  tl.comms.reserve(tl.runs.size());

  // Starts device d's next task if every dependency is known; otherwise parks d on the first
  // missing part.
  const auto try_start = [&](int d) {
    if (busy[ix(d)] || cursor[ix(d)] == tl.device_begin[ix(d) + 1]) return;
    const int r = cursor[ix(d)];
    TaskRun& run = tl.runs[ix(r)];
    Ticks ready = free_at[ix(d)];
    bool blocked = false;
    for_each_dependency(topo, run.task, [&](const Part& q) {
      if (blocked) return;
      PartState& st = part[index(q)];
      if (st.done < 0) {
        blocked = true;
        next_waiter[ix(d)] = st.waiter;
        st.waiter = d;
        return;
      }
      const bool cross = topo.device_of(q.stage) != d;
      ready = std::max(ready, st.done + (cross ? costs.comm : 0));
    });
    if (blocked) return;
    for_each_dependency(topo, run.task, [&](const Part& q) {
      if (topo.device_of(q.stage) == d) return;
      const PartState& st = part[index(q)];
      tl.comms.push_back(CommEvent{st.producer, r, st.done, st.done + costs.comm});
    });
    run.start = ready;
    run.end = ready + costs.duration(run.task);
    busy[ix(d)] = 1;
    events.push(EndEvent{run.end, seq++, d});
  };

  for (int d = 0; d < P; ++d) try_start(d);
  std::vector<int> woken;
  while (!events.empty()) {
    const EndEvent ev = events.top();
    events.pop();
    const int d = ev.device;
    const int r = cursor[ix(d)];
    const TaskRun& run = tl.runs[ix(r)];
    woken.clear();
    for_each_product(run.task, [&](const Part& q) {
      PartState& st = part[index(q)];
      st.done = run.end;
      st.producer = r;
      for (int w = st.waiter; w >= 0; w = next_waiter[ix(w)]) woken.push_back(w);
      st.waiter = -1;
    });
    busy[ix(d)] = 0;
    free_at[ix(d)] = run.end;
    ++cursor[ix(d)];
    try_start(d);
    for (int w : woken) try_start(w);
  }

  bool stuck = false;
  for (int d = 0; d < P; ++d) stuck = stuck || cursor[ix(d)] != tl.device_begin[ix(d) + 1];
  if (stuck) {
    std::vector<int> next(ix(P));
    for (int d = 0; d < P; ++d) next[ix(d)] = cursor[ix(d)] - tl.device_begin[ix(d)];
    throw ScheduleError(describe_deadlock(schedule, next));
  }
  return tl;
}

} // namespace ppsim
