// A measured run as ppsim's own: the schedule a trace ran (placement and routes inferred,
// validated) and its timeline on one clock (ranks aligned on message pairs).
#include "ppsim/run/measured.hpp"

#include "ppsim/run/detail/run_graph.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/time.hpp"
#include "ppsim/sim/validate.hpp"

#include <fmt/format.h>
#include <map>
#include <numeric>
#include <queue>

namespace ppsim {

using detail::kNoRun;

namespace {

using detail::RunGraph;
using detail::record_messages;
using detail::run_graph;

// Clock offsets, rank by rank from 0 along the ranks that exchange messages: a rank keeps its
// clock when no consumer starts before its producer ends; otherwise it takes the middle of what
// the messages both ways allow.
std::vector<Ticks> align_clocks(int ranks, const std::vector<MeasuredAction>& acts,
                                const std::vector<std::pair<int, int>>& edges) {
  // Per ordered rank pair: the tightest bound on off[b] - off[a] from each direction.
  constexpr Ticks kNone = std::numeric_limits<Ticks>::min();
  struct Bounds {
    Ticks lo{kNone};  // off[b] - off[a] >= lo   (messages a -> b)
    Ticks hi{std::numeric_limits<Ticks>::max()};  // off[b] - off[a] <= hi  (messages b -> a)
  };
  std::map<std::pair<int, int>, Bounds> pair;
  for (const auto& [producer, consumer] : edges) {
    const MeasuredAction& p = acts[ix(producer)];
    const MeasuredAction& c = acts[ix(consumer)];
    if (p.rank == c.rank) continue;
    // consumer.start + off[c] >= producer.end + off[p]
    const Ticks need = p.end - c.start;  // off[c] - off[p] >= need
    if (p.rank < c.rank) {
      Bounds& b = pair[{p.rank, c.rank}];
      b.lo = std::max(b.lo, need);
    } else {
      Bounds& b = pair[{c.rank, p.rank}];
      b.hi = std::min(b.hi, -need);  // off[p] - off[c] <= -need
    }
  }
  std::vector<Ticks> off(ix(ranks), 0);
  std::vector<char> placed(ix(ranks), 0);
  std::queue<int> todo;
  placed[0] = 1;
  todo.push(0);
  while (!todo.empty()) {
    const int a = todo.front();
    todo.pop();
    for (const auto& [key, b] : pair) {
      const auto [x, y] = key;
      if (x != a && y != a) continue;
      const int other = x == a ? y : x;
      if (placed[ix(other)]) continue;
      // Bounds on off[other] - off[a].
      Ticks lo = b.lo, hi = b.hi;
      if (x != a) {  // key is (other, a): bounds on off[a] - off[other]
        lo = b.hi == std::numeric_limits<Ticks>::max() ? kNone : -b.hi;
        hi = b.lo == kNone ? std::numeric_limits<Ticks>::max() : -b.lo;
      }
      Ticks shift = 0;
      const bool has_lo = lo != kNone, has_hi = hi != std::numeric_limits<Ticks>::max();
      if ((has_lo && lo > 0) || (has_hi && hi < 0)) {
        if (has_lo && has_hi) shift = lo + (hi - lo) / 2;
        else shift = has_lo ? lo : hi;
      }
      off[ix(other)] = off[ix(a)] + shift;
      placed[ix(other)] = 1;
      todo.push(other);
    }
  }
  return off;
}

// The route of each micro-batch: the stages its forwards ran on, in the model's order (stage
// numbers grow along a route in every schedule ppsim knows; times would do too, but clocks a
// little off between ranks could swap them). One route through every stage is the plain
// pipeline; DualPipe's two directions are two routes over two replicas.
void infer_routes(Schedule& s, const std::vector<MeasuredAction>& acts) {
  std::vector<std::vector<std::pair<Ticks, int>>> forwards(ix(s.microbatches));
  for (const MeasuredAction& a : acts)
    for_each_half(a.task, [&](Kind kind, int stage, int mb) {
      if (kind == Kind::F) forwards[ix(mb)].emplace_back(a.start, stage);
    });
  std::vector<std::vector<int>> routes;
  std::vector<int> of(ix(s.microbatches), 0);
  for (int mb = 0; mb < s.microbatches; ++mb) {
    auto& f = forwards[ix(mb)];
    std::vector<int> route;
    for (const auto& [start, stage] : f) route.push_back(stage);
    std::sort(route.begin(), route.end());
    route.erase(std::unique(route.begin(), route.end()), route.end());
    if (route.empty()) return;  // validate() names the missing forwards
    auto it = std::find(routes.begin(), routes.end(), route);
    if (it == routes.end()) {
      if (routes.size() >= ix(limits::kMaxRoutes)) return;
      routes.push_back(std::move(route));
      it = routes.end() - 1;
    }
    of[ix(mb)] = static_cast<int>(it - routes.begin());
  }
  if (routes.size() == 1 && routes[0] == s.routes[0]) return;
  s.routes = std::move(routes);
  s.microbatch_route = std::move(of);
}

} // namespace

MeasuredRun measured_run(const ImportedTrace& trace, const CostSpec& memory) {
  const int devices = trace.ranks;
  if (devices < 1 || trace.actions.empty()) throw ConfigError("import: the trace holds no action");
  int stages = 0, microbatches = 0;
  for (const MeasuredAction& a : trace.actions)
    for_each_half(a.task, [&](Kind, int stage, int mb) {
      stages = std::max(stages, stage + 1);
      microbatches = std::max(microbatches, mb + 1);
    });
  if (static_cast<long long>(stages) * microbatches > limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format("import: {} stages x {} micro-batches; at most {}", stages,
                                  microbatches, limits::kMaxStageMicrobatches));
  // Placement: where each stage ran.
  std::vector<int> placement(ix(stages), -1);
  for (const MeasuredAction& a : trace.actions)
    for_each_half(a.task, [&](Kind, int stage, int) {
      int& d = placement[ix(stage)];
      if (d >= 0 && d != a.rank)
        throw ScheduleError(fmt::format("import: stage {} ran on ranks {} and {}: a stage belongs "
                                        "to one rank",
                                        stage, d, a.rank));
      d = a.rank;
    });
  for (int s = 0; s < stages; ++s)
    if (placement[ix(s)] < 0)
      throw ScheduleError(fmt::format("import: stage {} never ran (stages 0..{} are named)", s,
                                      stages - 1));

  // Each rank's actions in time order; ties keep the trace's order (a trace lists a device's
  // tasks as they ran, and short tasks at a coarse clock start at the same time).
  std::vector<MeasuredAction> acts = trace.actions;
  std::stable_sort(acts.begin(), acts.end(), [](const MeasuredAction& a, const MeasuredAction& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.start < b.start;
  });
  // A rank runs one action at a time. Profilers draw GPU ranges a nanosecond wider on each side,
  // so neighbours touch: an overlap within 1 us + 1 % of the shorter is cut at the next start;
  // more is two ranges for one action, or nested ones.
  for (std::size_t i = 1; i < acts.size(); ++i) {
    MeasuredAction& prev = acts[i - 1];
    const MeasuredAction& next = acts[i];
    if (prev.rank != next.rank || next.start >= prev.end) continue;
    const Ticks overlap = prev.end - next.start;
    const Ticks shorter = std::min(prev.end - prev.start, next.end - next.start);
    if (overlap > 1000 + shorter / 100)
      throw ConfigError(fmt::format(
          "import: rank {}: {} ({} .. {} ms) and {} ({} .. {} ms) overlap: a rank runs one "
          "action at a time (nested or repeated ranges? select one range per action with --map)",
          prev.rank, to_string(prev.task), ticks_to_ms_text(prev.start), ticks_to_ms_text(prev.end),
          to_string(next.task), ticks_to_ms_text(next.start), ticks_to_ms_text(next.end)));
    prev.end = std::max(prev.start, next.start);
  }
  std::vector<int> order(acts.size());
  std::iota(order.begin(), order.end(), 0);
  Schedule s = make_pipeline("measured", devices, microbatches, placement);
  if (trace.slices > 1) {
    if (microbatches % trace.slices != 0)
      throw ConfigError(fmt::format("import: {} micro-batch slices are not whole micro-batches "
                                    "of {} slices",
                                    microbatches, trace.slices));
    s.slices = trace.slices;
  }
  for (const MeasuredAction& a : acts) s.order[ix(a.rank)].push_back(a.task);
  // NOTE: the plain route wins when the order runs on it; inferred routes are for orders that
  // need them (DualPipe's).
  Schedule routed = s;
  infer_routes(routed, acts);
  if (routed.routes != s.routes) {
    bool plain_runs = validate(s).empty();
    if (plain_runs) {
      try {
        (void)simulate(s, cost_model_for(CostSpec{}, s));
      } catch (const ScheduleError&) {
        plain_runs = false;
      }
    }
    if (!plain_runs) s = std::move(routed);
  }
  const Violations violations = validate(s);
  if (!violations.empty())
    throw ScheduleError(fmt::format("import: the measured order is not a schedule: {}",
                                    format_violations(s, violations)));

  // The timeline on each rank's own clock first: its graph gives the message pairs.
  Timeline t;
  t.devices = devices;
  t.device_begin.assign(ix(devices) + 1, 0);
  t.runs.reserve(order.size());
  std::vector<int> action_of_run;
  action_of_run.reserve(order.size());
  for (const int i : order) {
    const MeasuredAction& a = acts[ix(i)];
    t.runs.push_back({a.task, a.start, a.end});
    action_of_run.push_back(i);
    ++t.device_begin[ix(a.rank) + 1];
  }
  for (int d = 0; d < devices; ++d) t.device_begin[ix(d) + 1] += t.device_begin[ix(d)];
  const RunGraph g = run_graph(s, t);
  std::vector<std::pair<int, int>> edges;
  for (std::size_t r = 0; r < t.runs.size(); ++r)
    for (const int q : g.needs[r]) edges.emplace_back(action_of_run[ix(q)], action_of_run[r]);
  const std::vector<Ticks> off = align_clocks(devices, acts, edges);
  Ticks origin = std::numeric_limits<Ticks>::max();
  for (std::size_t r = 0; r < t.runs.size(); ++r) {
    const Ticks o = off[ix(g.device[r])];
    t.runs[r].start += o;
    t.runs[r].end += o;
    origin = std::min(origin, t.runs[r].start);
  }
  for (TaskRun& r : t.runs) {
    r.start -= origin;
    r.end -= origin;
  }
  // The messages: from each producer's end to the consumer's start (when it was measured to use
  // it: the arrival itself is not in the trace).
  record_messages(s, g, t, [&](int, int consumer) { return t.runs[ix(consumer)].start; });

  MeasuredRun m;
  m.format = trace.format;
  m.files = trace.files;
  m.iterations = trace.iterations;
  m.iteration = trace.iteration;
  m.device_time = trace.device_time;
  m.comm_actions_skipped = trace.comm_actions_skipped;
  m.messages = trace.messages;
  m.clock_offset = off;
  for (MeasuredSpan sp : trace.spans) {
    sp.start += off[ix(sp.rank)] - origin;
    sp.end += off[ix(sp.rank)] - origin;
    m.spans.push_back(std::move(sp));
  }
  CostSpec mem = memory;
  mem.source = fmt::format("measured ({})", trace.format);
  m.run.costs = cost_model_for(mem, s);
  m.run.metrics = measure(t, m.run.costs);
  m.run.timeline = std::move(t);
  m.run.schedule = std::move(s);
  m.run.parameters = {{"schedule", "measured"},
                      {"source", fmt::format("{} ({} file{})", trace.format, trace.files.size(),
                                             trace.files.size() == 1 ? "" : "s")},
                      {"devices", fmt::format("{}", devices)},
                      {"stages", fmt::format("{}", stages)},
                      {"microbatches", fmt::format("{}", m.run.schedule.whole_microbatches())},
                      {"iteration", fmt::format("{} of {}", trace.iteration, trace.iterations)},
                      {"clock", trace.device_time ? "device (GPU annotations)" : "host"}};
  if (trace.slices > 1)
    m.run.parameters.emplace_back("slices", fmt::format("{} per micro-batch", trace.slices));
  return m;
}

} // namespace ppsim
