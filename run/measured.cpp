// Measured runs: the schedule and timeline of a trace, clock alignment, the cost fit, and the
// side-by-side with a simulation of the same order, every idle window with its cause.
#include "run/measured.hpp"

#include "io/cost_file.hpp"
#include "io/numbers.hpp"
#include "sim/dependencies.hpp"
#include "sim/errors.hpp"
#include "sim/limits.hpp"
#include "sim/metrics.hpp"
#include "sim/schedule.hpp"
#include "sim/simulator.hpp"
#include "sim/validate.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <queue>

namespace ppsim {

namespace {

std::size_t ix(int i) { return static_cast<std::size_t>(i); }

constexpr int kNoRun = -1;

// The run of the measured timeline that produced each part (F, B, W of a stage and micro-batch).
class Producers {
public:
  Producers(const Timeline& t, int stages, int microbatches)
      : index_(stages, microbatches), run_(index_.size(), kNoRun) {
    for (std::size_t r = 0; r < t.runs.size(); ++r)
      for_each_product(t.runs[r].task, [&](const Part& p) { run_[index_(p)] = static_cast<int>(r); });
  }
  [[nodiscard]] int of(const Part& p) const { return run_[index_(p)]; }

private:
  PartIndex index_;
  std::vector<int> run_;
};

// For each run: the runs that produce what it needs, and the run before it on its device.
struct RunGraph {
  std::vector<std::vector<int>> needs;
  std::vector<int> prev;    // kNoRun for a device's first
  std::vector<int> device;  // per run
};

RunGraph run_graph(const Schedule& s, const Timeline& t) {
  const Topology topo(s);
  const Producers producers(t, s.stages(), s.microbatches);
  RunGraph g;
  g.needs.resize(t.runs.size());
  g.prev.assign(t.runs.size(), kNoRun);
  g.device.assign(t.runs.size(), 0);
  for (int d = 0; d < t.devices; ++d) {
    const int b = t.device_begin[ix(d)];
    const int e = t.device_begin[ix(d) + 1];
    for (int r = b; r < e; ++r) {
      g.device[ix(r)] = d;
      if (r > b) g.prev[ix(r)] = r - 1;
      for_each_dependency(topo, t.runs[ix(r)].task, [&](const Part& p) {
        const int q = producers.of(p);
        if (q != kNoRun && q != r) g.needs[ix(r)].push_back(q);
      });
    }
  }
  return g;
}

// The cross-device messages of a timeline, each arriving at arrival(producer run, consumer run)
// (no earlier than its send), with the part the consumer needs.
template <class Arrival>
void record_messages(const Schedule& s, const RunGraph& g, Timeline& t, Arrival&& arrival) {
  const Topology topo(s);
  for (std::size_t r = 0; r < t.runs.size(); ++r)
    for (const int q : g.needs[r]) {
      if (g.device[ix(q)] == g.device[r]) continue;
      CommEvent c;
      c.from = q;
      c.to = static_cast<int>(r);
      c.send = t.runs[ix(q)].end;
      c.start = c.send;
      c.arrive = std::max(c.send, arrival(q, static_cast<int>(r)));
      // Which of the producer's parts this consumer needs: F forward, B backward.
      const Task& pt = t.runs[ix(q)].task;
      Part part{Kind::F, pt.stage, pt.microbatch};
      for_each_dependency(topo, t.runs[r].task, [&](const Part& p) {
        bool produced = false;
        for_each_product(pt, [&](const Part& x) {
          produced = produced || (x.kind == p.kind && x.stage == p.stage && x.microbatch == p.microbatch);
        });
        if (produced) part = p;
      });
      c.part = part;
      int to_stage = t.runs[r].task.stage;
      for_each_half(t.runs[r].task, [&](Kind, int stage, int) {
        if (topo.device_of(stage) == g.device[r]) to_stage = stage;
      });
      c.to_stage = to_stage;
      t.comms.push_back(c);
    }
}

Ticks median_of(std::vector<Ticks> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  const Ticks hi = *mid;
  const Ticks lo = *std::max_element(v.begin(), mid);
  return lo + (hi - lo) / 2;
}

Ticks quantile_of(std::vector<Ticks> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[std::min(i, v.size() - 1)];
}

double rel_error(double got, double want) {
  if (want == 0) return got == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (got - want) / want;
}

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
                      {"microbatches", fmt::format("{}", microbatches)},
                      {"iteration", fmt::format("{} of {}", trace.iteration, trace.iterations)},
                      {"clock", trace.device_time ? "device (GPU annotations)" : "host"}};
  return m;
}

// ------------------------------------------------------------------------------------------
// The fit.

namespace {

// Durations per (stage, kind) of a timeline; an FB counts for its forward's stage.
std::vector<std::array<std::vector<Ticks>, 5>> durations_by_stage(const Run& r) {
  std::vector<std::array<std::vector<Ticks>, 5>> d(ix(r.schedule.stages()));
  for (const TaskRun& tr : r.timeline.runs)
    d[ix(tr.task.stage)][static_cast<std::size_t>(tr.task.kind)].push_back(tr.end - tr.start);
  return d;
}

// The waits that show a message's latency: the consumer's device idle before it, this message
// the last of its inputs to be ready.
std::vector<Ticks> message_waits(const Run& r) {
  const RunGraph g = run_graph(r.schedule, r.timeline);
  const auto& runs = r.timeline.runs;
  std::vector<Ticks> waits;
  for (std::size_t c = 0; c < runs.size(); ++c) {
    int last = kNoRun;
    for (const int q : g.needs[c])
      if (last == kNoRun || runs[ix(q)].end > runs[ix(last)].end) last = q;
    if (last == kNoRun || g.device[ix(last)] == g.device[c]) continue;
    const Ticks free = g.prev[c] == kNoRun ? 0 : runs[ix(g.prev[c])].end;
    if (runs[c].start <= free) continue;  // the device was busy: the wait says nothing
    const Ticks gap = runs[c].start - runs[ix(last)].end;
    if (gap >= 0) waits.push_back(gap);
  }
  return waits;
}

} // namespace

CostFit fit_costs(const MeasuredRun& m) {
  const Run& r = m.run;
  const int S = r.schedule.stages();
  const auto by_stage = durations_by_stage(r);
  CostFit fit;
  fit.costs.stages.assign(ix(S), StageCosts{});
  fit.costs.source = fmt::format("fitted from a measured run ({})", m.format);
  const Topology topo(r.schedule);
  for (int s = 0; s < S; ++s) {
    StageFit sf;
    sf.stage = s;
    sf.device = topo.device_of(s);
    std::array<Ticks, 5> med{};
    std::array<bool, 5> has{};
    for (std::size_t k = 0; k < 5; ++k) {
      const auto& v = by_stage[ix(s)][k];
      KindFit& kf = sf.kinds[k];
      kf.samples = static_cast<int>(v.size());
      if (v.empty()) continue;
      has[k] = true;
      med[k] = median_of(v);
      kf.median_ms = ticks_to_ms(med[k]);
      kf.p10_ms = ticks_to_ms(quantile_of(v, 0.1));
      kf.p90_ms = ticks_to_ms(quantile_of(v, 0.9));
      std::vector<Ticks> dev;
      dev.reserve(v.size());
      for (const Ticks x : v) dev.push_back(std::abs(x - med[k]));
      kf.spread = med[k] > 0 ? static_cast<double>(median_of(dev)) / static_cast<double>(med[k]) : 0.0;
    }
    StageCosts& c = fit.costs.stages[ix(s)];
    const auto at = [](Kind k) { return static_cast<std::size_t>(k); };
    c.F = has[at(Kind::F)] ? med[at(Kind::F)] : 0;
    if (has[at(Kind::B)] || has[at(Kind::W)]) {
      c.B = has[at(Kind::B)] ? med[at(Kind::B)] : 0;
      c.W = has[at(Kind::W)] ? med[at(Kind::W)] : 0;
      c.BW = has[at(Kind::BW)] ? med[at(Kind::BW)] : -1;
    } else if (has[at(Kind::BW)]) {
      // NOTE: a fused backward does not say how it splits; for every GEMM dX and dW cost the same
      // FLOPs, so B = W = BW / 2, which add up to the measured BW exactly (BW stays "B + W", so
      // that --costs B=..,W=.. on top of the fit moves it too).
      const Ticks bw = med[at(Kind::BW)];
      c.B = bw / 2;
      c.W = bw - c.B;
      c.BW = -1;
    }
    c.FB = has[at(Kind::FB)] ? med[at(Kind::FB)] : -1;
    // One entry per virtual stage: the measured run's own memory per stage, as it is.
    c.MB = r.costs.stage[ix(s)].MB;
    c.MW = r.costs.stage[ix(s)].MW;
    c.act_bytes = r.costs.stage[ix(s)].act_bytes;
    c.grad_bytes = r.costs.stage[ix(s)].grad_bytes;
    fit.stages.push_back(sf);
  }
  fit.costs.memory_unit_bytes = r.costs.memory_unit_bytes;
  const std::vector<Ticks> waits = message_waits(r);
  fit.comm_samples = static_cast<int>(waits.size());
  fit.costs.comm = median_of(waits);
  fit.comm_ms = ticks_to_ms(fit.costs.comm);
  double total = 0;
  for (const DeviceMetrics& d : r.metrics.per_device) total += static_cast<double>(d.busy);
  const double mean = total / static_cast<double>(std::max<std::size_t>(1, r.metrics.per_device.size()));
  for (const DeviceMetrics& d : r.metrics.per_device)
    fit.device_load.push_back(mean > 0 ? static_cast<double>(d.busy) / mean : 1.0);
  const Run replay = run_schedule(r.schedule, fit.costs);
  fit.replay_cost_ms = ticks_to_ms(replay.metrics.cost);
  fit.replay_cost_error = rel_error(static_cast<double>(replay.metrics.cost),
                                    static_cast<double>(r.metrics.cost));
  return fit;
}

std::string fitted_costs_json(const CostFit& fit, const MeasuredRun& m) {
  auto doc = nlohmann::ordered_json::parse(cost_spec_json(
      fit.costs, fmt::format("fitted by ppsim import from {} ({}), iteration {} of {}",
                             m.files.empty() ? std::string("a trace") : m.files.front(), m.format,
                             m.iteration, m.iterations)));
  nlohmann::ordered_json f;
  f["method"] = "per stage and kind, the median of the measured durations; comm, the median "
                "wait of a consumer for its last input from another device";
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageFit& sf : fit.stages) {
    nlohmann::ordered_json s;
    s["stage"] = sf.stage;
    s["device"] = sf.device;
    for (const Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW, Kind::FB}) {
      const KindFit& kf = sf.kinds[static_cast<std::size_t>(k)];
      if (kf.samples == 0) continue;
      s[std::string(kind_name(k))] = {{"samples", kf.samples},  {"median_ms", kf.median_ms},
                                      {"p10_ms", kf.p10_ms},    {"p90_ms", kf.p90_ms},
                                      {"spread", kf.spread}};
    }
    stages.push_back(std::move(s));
  }
  f["stages"] = std::move(stages);
  f["comm_samples"] = fit.comm_samples;
  f["device_load"] = fit.device_load;
  f["replay_cost_ms"] = fit.replay_cost_ms;
  f["measured_cost_ms"] = ticks_to_ms(m.run.metrics.cost);
  f["replay_cost_error"] = fit.replay_cost_error;
  doc["fit"] = std::move(f);
  return doc.dump(2) + "\n";
}

// ------------------------------------------------------------------------------------------
// diff.

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

  double memory_at(int d, Ticks t) const {
    double v = 0;
    for (const MemoryPoint& p : memory[ix(d)]) {
      if (p.time > t) break;
      v = p.value;
    }
    return v;
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
  // The replay's messages take the latency of the costs simulated on (fitted, or given).
  d.replayed = replay_measured(m.schedule, m.timeline, m.costs,
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
