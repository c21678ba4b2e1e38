// The discrete-event engine. Per device a cursor into its task list; per part the time its
// result exists. The event queue holds task ends, ordered by (time, insertion sequence).
#include "sim/simulator.hpp"

#include "sim/dependencies.hpp"
#include "sim/errors.hpp"
#include "sim/task_graph.hpp"
#include "sim/time.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <queue>
#include <string_view>

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
            d, to_string(t, s.notation)));
    }
  }
}

// Rejects options whose sizes do not match the runs or that name a barrier that does not exist.
void check_options(const SimOptions& o, std::size_t runs) {
  const auto sized = [&](std::size_t n, std::string_view what) {
    if (n != 0 && n != runs)
      throw ConfigError(fmt::format("simulator options: {} has {} entries for {} runs", what, n, runs));
  };
  sized(o.pause_after.size(), "pause_after");
  sized(o.barrier_member.size(), "barrier_member");
  sized(o.barrier_gate.size(), "barrier_gate");
  const auto barriers = static_cast<int>(o.barrier_delay.size());
  for (const auto* ids : {&o.barrier_member, &o.barrier_gate})
    for (std::size_t r = 0; r < ids->size(); ++r)
      if ((*ids)[r] < -1 || (*ids)[r] >= barriers)
        throw ConfigError(fmt::format("simulator options: run {} names barrier {} of {}", r,
                                      (*ids)[r], barriers));
  for (Ticks t : o.pause_after)
    if (t < 0) throw ConfigError(fmt::format("simulator options: negative pause {} ns", t));
  for (Ticks t : o.barrier_delay)
    if (t < 0) throw ConfigError(fmt::format("simulator options: negative barrier delay {} ns", t));
}

// The engine. kOptions = false is simulate()'s hot path: every option branch compiles away.
template <bool kOptions>
Timeline simulate_core(const Schedule& schedule, const CostModel& costs, const SimOptions* opt) {
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

  // Barriers (SimOptions): members still running, their last end, the release time (-1 until
  // every member ended), and the first device parked on it (chained through next_waiter).
  std::vector<int> barrier_left;
  std::vector<Ticks> barrier_last, barrier_release;
  std::vector<int> barrier_waiter;
  if constexpr (kOptions) {
    check_options(*opt, tl.runs.size());
    const std::size_t nb = opt->barrier_delay.size();
    barrier_left.assign(nb, 0);
    barrier_last.assign(nb, 0);
    barrier_release.assign(nb, -1);
    barrier_waiter.assign(nb, -1);
    for (int b : opt->barrier_member)
      if (b >= 0) ++barrier_left[ix(b)];
    for (std::size_t b = 0; b < nb; ++b)
      if (barrier_left[b] == 0) barrier_release[b] = opt->barrier_delay[b];
  }

  // Every end time is a chain of distinct runs, each adding its duration and at most one
  // message, pause or barrier delay: bound their sum before any of them is added up in Ticks.
  {
    long double total = static_cast<long double>(costs.comm) * static_cast<long double>(tl.runs.size());
    for (const TaskRun& run : tl.runs) total += static_cast<long double>(costs.duration(run.task));
    if constexpr (kOptions) {
      for (const Ticks t : opt->pause_after) total += static_cast<long double>(t);
      for (const Ticks t : opt->barrier_delay) total += static_cast<long double>(t);
    }
    check_total_ticks(total, schedule.name.empty() ? std::string_view("simulate") : schedule.name);
  }

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
    // The cross-device inputs, remembered so their messages are recorded without a second walk
    // of the dependencies (an FB has at most three inputs).
    struct Crossing {
      const PartState* state;
      Part part;
      int to_stage;
    };
    std::array<Crossing, 4> crossing{};
    std::size_t n_crossing = 0;
    for_each_half(run.task, [&](Kind kind, int stage, int mb) {
      for_each_dependency_simple(topo, kind, stage, mb, [&](const Part& q) {
        if (blocked) return;
        PartState& st = part[index(q)];
        if (st.done < 0) {
          blocked = true;
          next_waiter[ix(d)] = st.waiter;
          st.waiter = d;
          return;
        }
        const bool cross = topo.device_of(q.stage) != d;
        if (cross) crossing[n_crossing++] = Crossing{&st, q, stage};
        ready = std::max(ready, st.done + (cross ? costs.comm : 0));
      });
    });
    if (blocked) return;
    if constexpr (kOptions) {
      const int g = opt->barrier_gate.empty() ? -1 : opt->barrier_gate[ix(r)];
      if (g >= 0) {
        if (barrier_release[ix(g)] < 0) {
          next_waiter[ix(d)] = barrier_waiter[ix(g)];
          barrier_waiter[ix(g)] = d;
          return;
        }
        ready = std::max(ready, barrier_release[ix(g)]);
      }
    }
    for (std::size_t k = 0; k < n_crossing; ++k) {
      const Crossing& c = crossing[k];
      tl.comms.push_back(CommEvent{c.state->producer, r, c.state->done,
                                   c.state->done + costs.comm, c.part, c.to_stage});
    }
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
    if constexpr (kOptions) {
      if (!opt->pause_after.empty()) free_at[ix(d)] += opt->pause_after[ix(r)];
      const int b = opt->barrier_member.empty() ? -1 : opt->barrier_member[ix(r)];
      if (b >= 0) {
        barrier_last[ix(b)] = std::max(barrier_last[ix(b)], run.end);
        if (--barrier_left[ix(b)] == 0) {
          barrier_release[ix(b)] = barrier_last[ix(b)] + opt->barrier_delay[ix(b)];
          for (int w = barrier_waiter[ix(b)]; w >= 0; w = next_waiter[ix(w)]) woken.push_back(w);
          barrier_waiter[ix(b)] = -1;
        }
      }
    }
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

} // namespace

Timeline simulate(const Schedule& schedule, const CostModel& costs) {
  return simulate_core<false>(schedule, costs, nullptr);
}

Timeline simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options) {
  return simulate_core<true>(schedule, costs, &options);
}

} // namespace ppsim
