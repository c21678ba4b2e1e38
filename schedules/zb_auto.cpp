// The automatic zero-bubble scheduler (zb-auto, zb-1p, zb-2p) and the greedy machinery it shares
// with zb-v: Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3.1 and App. G.
#include "schedules/detail/generators.hpp"
#include "schedules/detail/greedy.hpp"
#include "sim/errors.hpp"
#include "sim/simulator.hpp"
#include "sim/time.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <fmt/format.h>
#include <limits>
#include <utility>

namespace ppsim {

namespace detail {

namespace {

constexpr Ticks kNever = std::numeric_limits<Ticks>::max();
constexpr double kEps = 1e-9;

std::size_t ix(int i) { return static_cast<std::size_t>(i); }

// The greedy list scheduler. Devices decide in (time, device) order; a device knows the arrival
// of every result already scheduled and a lower bound on the rest.
class Greedy {
public:
  Greedy(const Schedule& skeleton, const CostModel& costs, double limit, const GreedyOptions& o)
      : s_(skeleton), costs_(costs), limit_(limit), o_(o), topo_(s_) {
    for (auto& v : s_.order) v.clear();
    P_ = s_.devices;
    S_ = s_.stages();
    M_ = s_.microbatches;
    for (int d = 0; d < P_; ++d) {
      const auto st = topo_.device_stages(d);
      dev_stages_.emplace_back(st.begin(), st.end());
    }
    reserve_.assign(ix(S_), 0.0);
    for (const auto& v : dev_stages_)
      for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t k = i + 1; k < v.size(); ++k)
          reserve_[ix(v[i])] += costs_.memory_delta(Kind::F, v[k]);
    // tail_[st]: from the end of F(st) to the earliest arrival of the gradient B(st) needs
    tail_.assign(ix(S_), 0);
    const auto& route = s_.routes.front();
    for (std::size_t k = route.size(); k-- > 1;) {
      const int st = route[k - 1], nx = route[k];
      const Ticks c = topo_.device_of(st) != topo_.device_of(nx) ? costs_.comm : 0;
      tail_[ix(st)] = c + dur(Kind::F, nx) + tail_[ix(nx)] + dur(Kind::B, nx) + c;
    }
    endF_.assign(ix(S_ * M_), -1);
    endB_.assign(ix(S_ * M_), -1);
    nextF_.assign(ix(S_), 0);
    nextB_.assign(ix(S_), 0);
    mem_.assign(ix(P_), 0.0);
    free_.assign(ix(P_), 0);
    wake_.assign(ix(P_), 0);
    nF_.assign(ix(P_), 0);
    nB_.assign(ix(P_), 0);
    warm_.assign(ix(P_), 0);
    pendW_.assign(ix(P_), {});
  }

  std::optional<Schedule> run() {
    long long remaining = 3LL * S_ * M_;
    Ticks now = 0;
    while (remaining > 0) {
      int d = -1;
      for (int e = 0; e < P_; ++e)
        if (wake_[ix(e)] != kNever && (d < 0 || wake_[ix(e)] < wake_[ix(d)])) d = e;
      if (d < 0) {
        // every device waits on a guess: the first one that can act does, ignoring soft rules
        bool acted = false;
        for (int e = 0; e < P_ && !acted; ++e) acted = decide(e, std::max(now, free_[ix(e)]), true);
        if (!acted) return std::nullopt;
        --remaining;
        continue;
      }
      const Ticks t = wake_[ix(d)];
      now = std::max(now, t);
      if (decide(d, t, false)) --remaining;
    }
    return std::move(s_);
  }

private:
  Ticks dur(Kind k, int st) const { return costs_.duration(Task::make(k, st, 0)); }
  std::size_t at(int st, int j) const { return ix(st * M_ + j); }
  Ticks comm(int a, int b) const { return topo_.device_of(a) != topo_.device_of(b) ? costs_.comm : 0; }

  // Arrival of F(st, j)'s input, or kNever when not yet scheduled.
  Ticks ready_f(int st, int j) const {
    const int prev = topo_.prev_stage(j, st);
    if (prev < 0) return 0;
    const Ticks e = endF_[at(prev, j)];
    return e < 0 ? kNever : e + comm(prev, st);
  }
  // Arrival of B(st, j)'s inputs (its F is done), or kNever when not yet scheduled.
  Ticks ready_b(int st, int j) const {
    const Ticks f = endF_[at(st, j)];
    const int nx = topo_.next_stage(j, st);
    if (nx < 0) return f;
    const Ticks e = endB_[at(nx, j)];
    return e < 0 ? kNever : std::max(f, e + comm(nx, st));
  }

  void place(int d, Kind k, int st, int j, Ticks t) {
    const Task task = Task::make(k, st, j);
    s_.order[ix(d)].push_back(task);
    const Ticks end = t + costs_.duration(task);
    free_[ix(d)] = end;
    wake_[ix(d)] = end;
    mem_[ix(d)] += costs_.memory_delta(k, st);
    switch (k) {
    case Kind::F:
      endF_[at(st, j)] = end;
      ++nextF_[ix(st)];
      ++nF_[ix(d)];
      break;
    case Kind::B:
      if (nB_[ix(d)] == 0) warm_[ix(d)] = nF_[ix(d)];
      endB_[at(st, j)] = end;
      ++nextB_[ix(st)];
      ++nB_[ix(d)];
      pendW_[ix(d)].emplace_back(st, j);
      break;
    default: pendW_[ix(d)].pop_front(); break;
    }
    // new knowledge: every other device re-decides from now on
    for (int e = 0; e < P_; ++e)
      if (e != d) wake_[ix(e)] = std::max(free_[ix(e)], t);
  }

  bool fits(int d, double up) const { return mem_[ix(d)] + up <= limit_ + kEps; }

  // keep_inflight: places the ready F (after a W when memory needs one); false when none fits.
  bool forward_now(int d, Ticks t) {
    for (auto it = dev_stages_[ix(d)].rbegin(); it != dev_stages_[ix(d)].rend(); ++it) {
      const int st = *it, j = nextF_[ix(st)];
      if (j >= M_ || ready_f(st, j) > t) continue;
      const double up = costs_.memory_delta(Kind::F, st) + reserve_[ix(st)];
      if (fits(d, up)) {
        place(d, Kind::F, st, j, t);
        return true;
      }
      if (!pendW_[ix(d)].empty() &&
          fits(d, up + costs_.memory_delta(Kind::W, pendW_[ix(d)].front().first))) {
        const auto [w_st, w_j] = pendW_[ix(d)].front();
        place(d, Kind::W, w_st, w_j, t);
        return true;
      }
    }
    return false;
  }

  // One decision of device d at time t; true when it placed a task.
  bool decide(int d, Ticks t, bool force) {
    const auto& stages = dev_stages_[ix(d)];
    // the next backward: earliest micro-batch first, then the later stage on the route
    int b_st = -1, b_j = 0;
    Ticks b_guess = kNever;
    int guess_j = M_;
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      const int st = *it, j = nextB_[ix(st)];
      if (j >= M_ || j >= nextF_[ix(st)]) continue;
      const Ticks r = ready_b(st, j);
      const Ticks g = r != kNever ? r : endF_[at(st, j)] + tail_[ix(st)];
      if (g < b_guess || (g == b_guess && j < guess_j)) b_guess = g, guess_j = j;
      if (r <= t && (b_st < 0 || j < b_j)) b_st = st, b_j = j;
    }
    const double b_up = b_st >= 0 ? std::max(0.0, costs_.memory_delta(Kind::B, b_st)) : 0.0;
    if (b_st >= 0 && o_.keep_inflight && nB_[ix(d)] > 0 && !force &&
        nF_[ix(d)] - nB_[ix(d)] < warm_[ix(d)] && forward_now(d, t))
      return true;
    if (b_st >= 0) {
      if (fits(d, b_up) || pendW_[ix(d)].empty()) {
        place(d, Kind::B, b_st, b_j, t);
      } else {  // B raises memory (M_W > M_B): make room first
        const auto [w_st, w_j] = pendW_[ix(d)].front();
        place(d, Kind::W, w_st, w_j, t);
      }
      return true;
    }
    // the next forward
    int f_st = -1, f_j = 0;
    Ticks f_next = kNever;
    bool mem_blocked = false;
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      const int st = *it, j = nextF_[ix(st)];
      if (j >= M_) continue;
      const Ticks r = ready_f(st, j);
      if (r == kNever) continue;
      if (!fits(d, costs_.memory_delta(Kind::F, st) + reserve_[ix(st)])) {
        mem_blocked = mem_blocked || r <= t;
        continue;
      }
      if (r > t) {
        f_next = std::min(f_next, r);
        continue;
      }
      const bool better = f_st < 0 || (o_.deep_first ? false : j < f_j);
      if (better) f_st = st, f_j = j;
    }
    if (f_st >= 0) {
      bool skip = false;
      const Ticks f_end = t + dur(Kind::F, f_st);
      // only an F that the next backward does not wait for may be held back
      const bool optional = f_j > guess_j || guess_j == M_;
      if (!force && optional && nF_[ix(d)] > 0 && b_guess != kNever) {
        if (nB_[ix(d)] == 0)  // warm-up: the one-flag overrun rule
          skip = o_.allow_overrun ? t >= b_guess : f_end > b_guess;
        else if (o_.prioritize_b)
          skip = nF_[ix(d)] - nB_[ix(d)] >= 2 && f_end > b_guess;
      }
      if (!skip) {
        place(d, Kind::F, f_st, f_j, t);
        return true;
      }
    }
    // fill with W
    if (!pendW_[ix(d)].empty()) {
      const Ticks next = std::min(b_guess, f_next);
      const auto [w_st, w_j] = pendW_[ix(d)].front();
      const Ticks w_dur = dur(Kind::W, w_st);
      const bool take = force || (mem_blocked && f_st < 0) || o_.eager_w || next == kNever ||
                        next - t >= w_dur || (o_.no_bubble_greedy && next > t);
      if (take) {
        place(d, Kind::W, w_st, w_j, t);
        return true;
      }
    }
    if (force && f_st >= 0) {
      place(d, Kind::F, f_st, f_j, t);
      return true;
    }
    // wait for the earliest known arrival after t, or for news
    Ticks wake = kNever;
    for (const int st : stages) {
      if (nextB_[ix(st)] < std::min(M_, nextF_[ix(st)])) {
        const Ticks r = ready_b(st, nextB_[ix(st)]);
        if (r != kNever && r > t) wake = std::min(wake, r);
      }
    }
    if (f_next != kNever) wake = std::min(wake, f_next);
    wake_[ix(d)] = wake;
    return false;
  }

  Schedule s_;
  const CostModel& costs_;
  double limit_;
  GreedyOptions o_;
  Topology topo_;
  int P_{0}, S_{0}, M_{0};
  std::vector<std::vector<int>> dev_stages_;
  std::vector<double> reserve_;
  std::vector<Ticks> tail_;
  std::vector<Ticks> endF_, endB_;
  std::vector<int> nextF_, nextB_;
  std::vector<double> mem_;
  std::vector<Ticks> free_, wake_;
  std::vector<int> nF_, nB_, warm_;
  std::vector<std::deque<std::pair<int, int>>> pendW_;
};

struct Key {
  Ticks cost;
  long double spans;  // the sum of up to 4096 spans may exceed Ticks
  friend auto operator<=>(const Key&, const Key&) = default;
};

Key key_of(const Metrics& m) {
  long double spans = 0;
  for (const auto& d : m.per_device) spans += static_cast<long double>(d.span);
  return Key{m.cost, spans};
}

// The greedy's clock, its guesses (an F's end plus the rest of its route) and the simulations
// of its candidates stay below the sum of all durations and messages: bound it first.
void check_greedy_total(std::string_view name, const Schedule& skeleton, const CostModel& costs) {
  long double per_microbatch = 0;
  for (int st = 0; st < skeleton.stages(); ++st) {
    for (const Kind k : {Kind::F, Kind::B, Kind::W})
      per_microbatch += static_cast<long double>(costs.duration(Task::make(k, st, 0)));
    per_microbatch += 2.0L * static_cast<long double>(costs.comm);
  }
  check_total_ticks(per_microbatch * static_cast<long double>(skeleton.microbatches), name);
}

// NOTE: the search is bounded by simulated tasks, not wall-clock, so its result is deterministic.
constexpr long long kLocalSearchTaskBudget = 3'000'000;
constexpr long long kLocalSearchMaxEvaluations = 400;

// Whether swapping neighbours a (first) and b could be useful and keep each device's own order
// of dependent parts: the same kind on the same stage keeps micro-batch order, and a part never
// moves before one of the same micro-batch on the same stage.
bool may_swap(const Task& a, const Task& b) {
  if (a.kind == b.kind && a.stage == b.stage) return false;
  if (a.stage == b.stage && a.microbatch == b.microbatch) return false;
  return a.kind == Kind::W || b.kind == Kind::W || a.microbatch != b.microbatch;
}

void improve_by_swaps(Evaluated& best, const CostModel& costs, double limit) {
  const auto tasks = static_cast<long long>(best.schedule.task_count());
  if (tasks == 0) return;
  long long evaluations =
      std::min(kLocalSearchMaxEvaluations, kLocalSearchTaskBudget / std::max(1LL, tasks));
  Key best_key = key_of(best.metrics);
  bool improved = true;
  while (improved && evaluations > 0) {
    improved = false;
    for (std::size_t d = 0; d < best.schedule.order.size() && evaluations > 0; ++d) {
      for (std::size_t i = 0; i + 1 < best.schedule.order[d].size() && evaluations > 0; ++i) {
        // NOTE: `best` is replaced on success, so no reference into it outlives an iteration
        if (!may_swap(best.schedule.order[d][i], best.schedule.order[d][i + 1])) continue;
        Schedule trial = best.schedule;
        std::swap(trial.order[d][i], trial.order[d][i + 1]);
        --evaluations;
        auto e = evaluate(trial, costs, limit);
        if (e && key_of(e->metrics) < best_key) {
          best_key = key_of(e->metrics);
          best = std::move(*e);
          improved = true;
        }
      }
    }
  }
}

} // namespace

double device_microbatch_memory(const Schedule& skeleton, const CostModel& costs) {
  const Topology topo(skeleton);
  std::vector<double> per(ix(skeleton.devices), 0.0);
  for (int st = 0; st < skeleton.stages(); ++st)
    per[ix(topo.device_of(st))] += costs.memory_delta(Kind::F, st);
  return per.empty() ? 0.0 : *std::max_element(per.begin(), per.end());
}

double least_memory_limit(const Schedule& skeleton, const CostModel& costs) {
  // NOTE: a micro-batch's activations on each of a device's stages live from its F to its
  // B (or W); all of them overlap on the device, and when B raises memory (M_W > M_B) the W
  // still pending counts too.
  const Topology topo(skeleton);
  std::vector<double> per(ix(skeleton.devices), 0.0);
  for (int st = 0; st < skeleton.stages(); ++st)
    per[ix(topo.device_of(st))] += costs.memory_delta(Kind::F, st) +
                                   std::max(0.0, costs.memory_delta(Kind::B, st));
  return per.empty() ? 0.0 : *std::max_element(per.begin(), per.end());
}

std::optional<Schedule> greedy_schedule(const Schedule& skeleton, const CostModel& costs,
                                        double limit, const GreedyOptions& options) {
  return Greedy(skeleton, costs, limit, options).run();
}

std::optional<Evaluated> evaluate(const Schedule& schedule, const CostModel& costs, double limit) {
  Timeline tl;
  try {
    tl = simulate(schedule, costs);
  } catch (const ScheduleError&) {
    return std::nullopt;
  }
  Metrics m = measure(tl, costs);
  for (const auto& d : m.per_device)
    if (d.peak_memory > limit + kEps) return std::nullopt;
  return Evaluated{schedule, std::move(m)};
}

Schedule search_best(std::string_view name, const Schedule& skeleton, const CostModel& costs,
                     double limit, const std::vector<Schedule>& seeds) {
  check_greedy_total(name, skeleton, costs);
  const double least = least_memory_limit(skeleton, costs);
  if (!(limit + kEps >= least))
    throw InfeasibleError(fmt::format(
        "{}: memory limit {:g} M_B is below the least that works, {:g} M_B (one micro-batch's "
        "activations on all stages of a device; stages={}, microbatches={})",
        name, limit, least, skeleton.devices, skeleton.microbatches));
  std::optional<Evaluated> best;
  const auto consider = [&](std::optional<Evaluated> e) {
    if (e && (!best || key_of(e->metrics) < key_of(best->metrics))) best = std::move(e);
  };
  // the paper's 8 flag combinations, then ppsim's extra knobs
  bool one_stage_per_device = true;
  {
    const Topology topo(skeleton);
    for (int st = 0; st < skeleton.stages(); ++st)
      one_stage_per_device = one_stage_per_device && topo.chunk_of(st) == 0;
  }
  for (int mask = 0; mask < 64; ++mask) {
    const GreedyOptions o{.allow_overrun = (mask & 1) != 0,
                          .prioritize_b = (mask & 2) != 0,
                          .no_bubble_greedy = (mask & 4) != 0,
                          .deep_first = (mask & 8) == 0,
                          .eager_w = (mask & 16) != 0,
                          .keep_inflight = (mask & 32) != 0};
    if (one_stage_per_device && !o.deep_first) continue;  // the same schedule as deep_first
    if (auto s = greedy_schedule(skeleton, costs, limit, o)) consider(evaluate(*s, costs, limit));
  }
  for (const auto& seed : seeds) consider(evaluate(seed, costs, limit));
  if (!best)
    throw InfeasibleError(fmt::format(
        "{}: found no schedule within the memory limit {:g} M_B (stages={}, microbatches={})",
        name, limit, skeleton.devices, skeleton.microbatches));
  improve_by_swaps(*best, costs, limit);
  best->schedule.name = std::string(name);
  return std::move(best->schedule);
}

} // namespace detail

namespace {

CostModel costs_for(const ScheduleSpec& spec, const Schedule& skeleton) {
  static const CostSpec unit{};
  return cost_model_for(spec.costs != nullptr ? *spec.costs : unit, skeleton);
}

// zb-auto on one stage per device; `limit_in_p` > 0 fixes the limit to that many p*M_B.
Schedule make_zb_auto_named(std::string_view name, const ScheduleSpec& spec, double limit_in_p) {
  require_single_chunk_shape(name, spec);
  const int p = spec.devices, m = spec.microbatches;
  const Schedule skeleton = make_pipeline(std::string(name), p, m, loop_placement(p, 1));
  const CostModel costs = costs_for(spec, skeleton);
  const double mb = detail::device_microbatch_memory(skeleton, costs);
  double limit = limit_in_p > 0 ? limit_in_p * p * mb : spec.mem_limit;
  if (limit_in_p <= 0 && spec.mem_limit < 0) limit = p * mb;
  if (!std::isfinite(limit))
    throw ConfigError(fmt::format("{}: memory limit must be a finite number (got {})", name, limit));
  // the handcrafted schedules join the search, so zb-auto is never worse than them
  std::vector<Schedule> seeds;
  const ScheduleSpec plain{.devices = p, .microbatches = m};
  seeds.push_back(make_zb_h1(plain));
  if (m >= 2 * p) seeds.push_back(make_zb_h2(plain));
  return detail::search_best(name, skeleton, costs, limit, seeds);
}

} // namespace

// zb-auto at p*M_B (ZB-1p), p = 4, m = 8, F = B = W (cost 54, as ZB-H1; at 2p*M_B, ZB-2p, the
// warm-up grows to ZB-H2's and the cost is the ideal 48):
//   rank0: 0F0 0F1 0F2 0F3 0B0 0W0 0B1 0F4 0B2 0F5 0B3 0W1 0F6 0W2 0B4 0F7 0B5 0W3 ... 0B7 0W7
//   rank3: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3W0 3W1 3F4 3B4 3F5 3B5 3W2 3W3 3F6 ... 3W6 3W7
// Heuristic (sec. 3.1): warm-up F within the limit, stopping before the first B can arrive (flag:
// allow one F to overrun it); steady state B first (flag prioritize_b: hold back an F that would
// delay it), W into gaps that fit a whole W (flag no_bubble_greedy: also smaller ones); flush
// the W. ppsim adds knobs (1F1B's rhythm of one F per B, eager W, chunk order), seeds ZB-H1 and
// ZB-H2, and refines the best by swapping neighbours: never worse than any candidate.
Schedule make_zb_auto(const ScheduleSpec& spec) { return make_zb_auto_named("zb-auto", spec, 0); }
Schedule make_zb_1p(const ScheduleSpec& spec) { return make_zb_auto_named("zb-1p", spec, 1); }
Schedule make_zb_2p(const ScheduleSpec& spec) { return make_zb_auto_named("zb-2p", spec, 2); }

} // namespace ppsim
