// The automatic zero-bubble scheduler (zb-auto, zb-1p, zb-2p): the authors' heuristic at every
// memory limit up to the requested one, ppsim's variants of its rules and the handcrafted
// schedules of the placement, the best kept (Qi et al., ICLR 2024, sec. 3.1).
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/schedules/detail/in_flight.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/schedules/search/detail/search.hpp"
#include "ppsim/schedules/search/detail/zb_auto.hpp"
#include "ppsim/schedules/search/detail/zb_greedy.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/simulator.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <mutex>
#include <thread>

namespace ppsim {

namespace detail {

namespace {

constexpr Ticks kNoCutoff = std::numeric_limits<Ticks>::max();
constexpr double kLadderWork = 4e8;  // tasks the walk down may place at worst
constexpr double kThreadWork = 2e5;  // tasks the chains place at one limit, to go parallel

// A handcrafted schedule of the placement with its peak, and its score once timed.
struct Seed {
  std::string label;
  Schedule schedule;
  Score score;
  double peak{0};
};

// Whether W never needs more than its B left (M_W <= M_B on every stage): then a fused BW is
// never better than B followed by W, in time or memory.
bool split_never_worse(const CostModel& costs) {
  return std::all_of(costs.stage.begin(), costs.stage.end(),
                     [](const StageCosts& c) { return c.MW <= c.MB; });
}

// BW -> B W, when that is never worse.
Schedule split_bw(Schedule s) {
  for (auto& device : s.order) {
    std::vector<Task> out;
    out.reserve(device.size() * 3 / 2);
    for (const Task& t : device) {
      if (t.kind != Kind::BW) {
        out.push_back(t);
        continue;
      }
      out.push_back(Task::make(Kind::B, t.stage, t.microbatch));
      out.push_back(Task::make(Kind::W, t.stage, t.microbatch));
    }
    device = std::move(out);
  }
  return s;
}

} // namespace

Schedule with_every_task(Schedule s) {
  s.order.assign(ix(s.devices), {});
  for (int st = 0; st < s.stages(); ++st) {
    auto& device = s.order[ix(s.stage_device[ix(st)])];
    for (int j = 0; j < s.microbatches; ++j)
      for (const Kind k : {Kind::F, Kind::B, Kind::W}) device.push_back(Task::make(k, st, j));
  }
  return s;
}

std::optional<OrderTiming> time_order(const Schedule& s, const CostModel& costs,
                                      const Score& must_beat) {
  const int S = s.stages(), m = s.microbatches, P = s.devices;
  std::vector<Ticks> busy(ix(P), 0);
  for (int d = 0; d < P; ++d)
    for (const Task& t : s.order[ix(d)]) busy[ix(d)] += costs.duration(t);
  // the least (cost, sum of spans) the order can still end with: work plus the idle so far
  Ticks lb_cost = *std::max_element(busy.begin(), busy.end()), lb_spans = 0;
  for (const Ticks b : busy) lb_spans += b;
  const auto hopeless = [&] {
    return lb_cost > must_beat.cost || (lb_cost == must_beat.cost && lb_spans >= must_beat.spans);
  };
  if (hopeless()) return std::nullopt;
  const std::size_t parts = ix(S) * ix(m);
  std::vector<Ticks> end_f(parts, -1), end_grad(parts, -1), end_b(parts, -1);
  std::vector<std::size_t> cursor(ix(P), 0);
  std::vector<Ticks> clock(ix(P), 0), first(ix(P), -1), idle(ix(P), 0);
  OrderTiming out;
  const auto at = [&](int st, int j) { return ix(st) * ix(m) + ix(j); };
  const auto comm = [&](int a, int b) {
    return s.stage_device[ix(a)] != s.stage_device[ix(b)] ? costs.comm : 0;
  };
  std::size_t left = s.task_count();
  for (int sweep = 0; left > 0; ++sweep) {
    bool progress = false;
    for (int i = 0; i < P; ++i) {
      const int d = sweep % 2 == 0 ? i : P - 1 - i;  // F flow up, B down
      const auto& order = s.order[ix(d)];
      for (std::size_t& c = cursor[ix(d)]; c < order.size(); ++c) {
        const Task& t = order[c];
        const int st = t.stage, j = t.microbatch;
        Ticks ready = clock[ix(d)];
        const auto need = [&](Ticks end, Ticks latency) {
          if (end < 0) return false;
          ready = std::max(ready, end + latency);
          return true;
        };
        bool ok = true;
        switch (t.kind) {
        case Kind::F: ok = st == 0 || need(end_f[at(st - 1, j)], comm(st - 1, st)); break;
        case Kind::B:
        case Kind::BW:
          ok = need(end_f[at(st, j)], 0) &&
               (st == S - 1 || need(end_grad[at(st + 1, j)], comm(st + 1, st)));
          break;
        case Kind::W: ok = need(end_b[at(st, j)], 0); break;
        case Kind::FB: return std::nullopt;  // not on a plain loop placement
        }
        if (!ok) break;
        if (first[ix(d)] < 0) {
          first[ix(d)] = ready;
        } else if (ready > clock[ix(d)]) {
          idle[ix(d)] += ready - clock[ix(d)];
          lb_cost = std::max(lb_cost, busy[ix(d)] + idle[ix(d)]);
          lb_spans += ready - clock[ix(d)];
          if (hopeless()) return std::nullopt;
        }
        const Ticks end = ready + costs.duration(t);
        clock[ix(d)] = end;
        if (t.kind == Kind::F) end_f[at(st, j)] = end;
        if (t.kind == Kind::B || t.kind == Kind::BW) end_grad[at(st, j)] = end;
        if (t.kind == Kind::B) end_b[at(st, j)] = end;
        --left;
        progress = true;
      }
    }
    if (!progress) return std::nullopt;  // a deadlock: not a schedule
  }
  for (int d = 0; d < P; ++d) {
    const Ticks span = first[ix(d)] < 0 ? 0 : clock[ix(d)] - first[ix(d)];
    out.score.cost = std::max(out.score.cost, span);
    out.score.spans += span;
  }
  out.peak = order_peak(s, costs);
  return out;
}

namespace {

// The handcrafted schedules of the placement, with their peaks (timed only when they fit).
// NOTE: 1F1B split into B and W never won on the measured grid when W needs no more than B
// left (ZB-H1 holds as little and defers W); with fused BW it is the one that fits when B
// raises memory.
std::vector<Seed> make_seeds(const Schedule& skeleton, const CostModel& costs) {
  const int p = skeleton.devices, m = skeleton.microbatches, v = skeleton.chunks();
  const bool split = split_never_worse(costs);
  std::vector<std::pair<std::string, Schedule>> made;
  const ScheduleSpec plain{.devices = p, .microbatches = m, .chunks = v};
  if (v == 1) {
    made.emplace_back("zb-h1", make_zb_h1(plain));
    if (m >= 2 * p) made.emplace_back("zb-h2", make_zb_h2(plain));
    if (!split) made.emplace_back("1f1b", make_1f1b(plain));
  } else if (m % p == 0 && v <= 64) {
    Schedule s = make_interleaved_1f1b(plain);
    made.emplace_back("interleaved-1f1b", split ? split_bw(std::move(s)) : std::move(s));
  }
  std::vector<Seed> seeds;
  for (auto& [label, s] : made) {
    const double peak = order_peak(s, costs);
    seeds.push_back(Seed{label, std::move(s), Score{}, peak});
  }
  return seeds;
}

// One line of the search: a rule set walked down from the requested limit.
struct Chain {
  int problem{0};  // index into the problems (chunk-order groups)
  int group{0};    // index of (problem, rules): chains of a group differ in their flags only
  ZbFlags flags;
  ZbRules rules;
  std::string label;
};

// The runs made in one group of chains, so that a chain can skip a run an earlier chain of the
// group already made: a run is the same for flags that agree on the ones that changed a decision
// in it, and for every limit in [accepted, at].
struct RunEntry {
  std::size_t chain;
  ZbFlags flags;
  std::uint8_t decisive;
  double accepted, at;
};

bool same_run(const RunEntry& e, const ZbFlags& flags) {
  const auto differs = [](bool a, bool b) { return a != b; };
  const std::uint8_t diff = static_cast<std::uint8_t>(
      (differs(e.flags.allow_bubble_before_first_b, flags.allow_bubble_before_first_b) ? 1 : 0) |
      (differs(e.flags.prioritize_b, flags.prioritize_b) ? 2 : 0) |
      (differs(e.flags.no_bubble_greedy, flags.no_bubble_greedy) ? 4 : 0));
  return (diff & e.decisive) == 0;
}

class RunLog {
public:
  // The limit the earlier run covering (flags, at) accepted, when an earlier chain made one.
  // NOTE: only earlier chains count, so that a chain's own best never depends on the threads.
  std::optional<double> find(std::size_t chain, const ZbFlags& flags, double at) {
    const std::lock_guard lock(mutex_);
    for (const RunEntry& e : entries_)
      if (e.chain < chain && e.accepted <= at + limits::kMemEps && at <= e.at + limits::kMemEps && same_run(e, flags))
        return e.accepted;
    return std::nullopt;
  }
  void add(const RunEntry& e) {
    const std::lock_guard lock(mutex_);
    entries_.push_back(e);
  }

private:
  std::mutex mutex_;
  std::vector<RunEntry> entries_;
};

// The best run of a chain: the limit it ran at, and its identity for ties (a chain's runs are
// told apart by the limits they accepted, which do not depend on the path).
struct ChainBest {
  bool found{false};
  Score score;
  double accepted{0};
  double limit{0};
};

bool better(const ChainBest& a, const ChainBest& b) {
  if (!b.found) return a.found;
  if (!a.found) return false;
  if (a.score != b.score) return a.score < b.score;
  return a.accepted > b.accepted;
}

// ppsim's variants of the rules, in the order they were measured to help most (on 4096 cases:
// p 2-16, m p-5p, eight cost sets, M_W 0.25-2, limits 1p-3p); a variant that never won there is
// not tried. When B raises memory (M_W > M_B) the heuristic often cannot fit its warm-up's B,
// and reserving room for it rescues most of those cases.
std::vector<ZbRules> rule_variants(bool variants, unsigned mask, bool b_raises_memory) {
  std::vector<ZbRules> out{ZbRules{}};
  if (!variants) return out;
  std::vector<ZbRules> all{ZbRules{.budget_permille = 500}, ZbRules{.budget_permille = 0},
                           ZbRules{.warmup_offset = 1}, ZbRules{.budget_permille = 1500},
                           ZbRules{.warmup_offset = -1}};
  if (b_raises_memory) {
    all.push_back(ZbRules{.budget_permille = 500, .reserve_b = true});
    all.push_back(ZbRules{.warmup_offset = -1, .budget_permille = 500});
    all.push_back(ZbRules{.reserve_b = true});
  }
  for (std::size_t i = 0; i < all.size(); ++i)
    if ((mask >> i) & 1u) out.push_back(all[i]);
  return out;
}

std::string rules_label(const ZbRules& r) {
  if (r == ZbRules{}) return "heuristic";
  std::string out = "variant:";
  if (r.warmup_offset != 0) out += fmt::format("warmup{:+d}", r.warmup_offset);
  if (r.budget_permille != 1000) out += fmt::format("budget{}", r.budget_permille);
  if (r.reserve_b) out += "reserveb";
  return out;
}

// The chunk orders: Megatron's groups of p; groups of 2p, whose longer warm-up fills the
// pipeline where memory allows (p = 4, m = 16, v = 2 at 2p M_B: the ideal 96 ms instead of 98
// for F = B = W = 2); smaller ones that need less warm-up memory.
std::vector<int> chunk_groups(const Schedule& skeleton) {
  const int p = skeleton.devices;
  std::vector<int> groups{p};
  if (skeleton.chunks() > 1) {
    if (2 * p <= skeleton.microbatches) groups.push_back(2 * p);
    for (int g = p / 2; g >= 1; g /= 2) groups.push_back(g);
  }
  return groups;
}

// NOTE: the walk down covers every limit from the requested one down to the least that works
// (so a larger limit is never worse) when one run per smallest memory change would place at
// most kLadderWork tasks; larger problems stop at a floor that depends on the inputs only, so
// the result is the same on every machine (and never worse at a larger limit above it).
double ladder_floor(const Schedule& skeleton, const CostModel& costs, double per_step,
                    double limit, double least) {
  double step = std::numeric_limits<double>::infinity();
  for (int st = 0; st < skeleton.stages(); ++st)
    for (const Kind k : {Kind::F, Kind::B, Kind::W})
      if (const double dm = std::abs(costs.memory_delta(k, st)); dm > limits::kMemEps)
        step = std::min(step, dm);
  const double steps = std::max(0.0, std::floor(kLadderWork / per_step) - 1);
  if (steps == 0) return limit;
  if (steps * step < limit - least) return limit - steps * step;
  return least;
}

// The chains' walks down from the limit, on one thread or several: every (chunk order, rules)
// group runs the 8 flag combinations; each run is the same for all limits down to what it
// accepted, so the next limit below that is the next one that can differ.
class ChainWalks {
public:
  ChainWalks(const std::vector<ZbProblem>& problems, const std::vector<Chain>& chains,
             std::size_t groups, const ZbAutoOptions& options, double limit, Ticks floor_cost,
             double walk_floor)
      : problems_(problems), chains_(chains), logs_(groups), options_(options), limit_(limit),
        floor_cost_(floor_cost), walk_floor_(walk_floor), found_(chains.size()) {}

  void run(unsigned threads) {
    const auto work = [this] {
      ZbWorkspace workspace;
      for (std::size_t c = next_++; c < chains_.size(); c = next_++) walk(c, workspace);
    };
    if (threads <= 1) {
      work();
      return;
    }
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    for (auto& th : pool) th.join();
  }

  // The best chain: by score, then the earlier chain (the earliest chain at the lower bound
  // wins outright).
  [[nodiscard]] std::optional<std::size_t> best_chain() const {
    std::optional<std::size_t> out;
    for (std::size_t c = 0; c < chains_.size(); ++c) {
      if (!found_[c].found) continue;
      if (found_[c].score.cost <= floor_cost_) return c;
      if (!out || found_[c].score < found_[*out].score) out = c;
    }
    return out;
  }

  [[nodiscard]] const ChainBest& found(std::size_t c) const { return found_[c]; }
  [[nodiscard]] long long runs() const { return runs_.load(); }
  [[nodiscard]] long long placed() const { return placed_.load(); }

  // The record of chain c's best, made again unless it was the authors' own first run.
  [[nodiscard]] ZbRecord record_of(std::size_t c) {
    const Chain& chain = chains_[c];
    const ChainBest& win = found_[c];
    if (c == 0 && first_accepted_ == win.accepted) return std::move(first_record_);
    ZbRecord record;
    const ZbOutcome again = run_zb(problems_[ix(chain.problem)], win.limit, chain.flags,
                                   chain.rules, ZbCutoff{}, &record);
    assert(again.status == ZbStatus::ok && again.cost == win.score.cost);  // runs repeat exactly
    (void)again;
    return record;
  }

private:
  // the best so far over all chains (and which chain found it; a seed loses ties): a run that
  // can only end worse, or tie an earlier chain, gives up
  struct Best {
    Score score;
    std::size_t chain;
  };
  Best best_now() {
    const std::lock_guard lock(best_mutex_);
    return best_;
  }

  void walk(std::size_t c, ZbWorkspace& workspace) {
    const Chain& chain = chains_[c];
    const ZbProblem& pb = problems_[ix(chain.problem)];
    RunLog& log = logs_[ix(chain.group)];
    double at = limit_;
    while (at + limits::kMemEps >= std::max(walk_floor_, pb.warmup_memory()) &&
           pb.memory_bound(at) <= best_now().score.cost) {
      if (const Best now = best_now(); now.score.cost <= floor_cost_ && now.chain < c) break;
      // the same run made by an earlier chain needs no repeating
      if (const auto lower = log.find(c, chain.flags, at)) {
        if (!options_.ladder) break;
        at = *lower - 10 * limits::kMemEps;
        continue;
      }
      // NOTE: a run that can only tie this chain's best gives up too (the chain keeps its
      // first best, at the highest limit), and one that can only tie an earlier chain's: ties
      // go to the earlier, so what wins never depends on the threads.
      const Best global = best_now();
      ZbCutoff cut{.worse_cost = global.score.cost, .worse_spans = global.score.spans};
      std::optional<Score> tie;
      if (found_[c].found) tie = found_[c].score;
      if (global.score.cost <= floor_cost_) cut.worse_spans = kNoCutoff;  // a later chain's
      else if (global.chain < c) tie = std::min(tie.value_or(global.score), global.score);
      if (tie) {
        cut.tie_cost = tie->cost;
        cut.tie_spans = tie->spans;
      }
      // the authors' own run at the limit (chain 0's first) wins most often: record it
      const bool first = c == 0 && at == limit_;
      const ZbOutcome out = run_zb(pb, at, chain.flags, chain.rules, cut,
                                   first ? &first_record_ : nullptr, &workspace);
      if (first && out.status == ZbStatus::ok) first_accepted_ = out.accepted;
      ++runs_;
      placed_ += out.placed;
      log.add({c, chain.flags, out.decisive, out.accepted, at});
      if (out.status == ZbStatus::ok) {
        const ChainBest here{true, Score{out.cost, out.spans}, out.accepted, at};
        if (better(here, found_[c])) found_[c] = here;
        const std::lock_guard lock(best_mutex_);
        const bool optimal = here.score.cost <= floor_cost_;
        if (optimal ? best_.score.cost > floor_cost_ || c < best_.chain
                    : here.score < best_.score || (here.score == best_.score && c < best_.chain))
          best_ = Best{here.score, c};
        if (optimal) break;
      }
      if (!options_.ladder) break;
      at = out.accepted - 10 * limits::kMemEps;
    }
  }

  const std::vector<ZbProblem>& problems_;
  const std::vector<Chain>& chains_;
  std::vector<RunLog> logs_;
  const ZbAutoOptions& options_;
  double limit_;
  Ticks floor_cost_;
  double walk_floor_;
  std::mutex best_mutex_;
  Best best_{Score{kNoCutoff, kNoCutoff}, std::numeric_limits<std::size_t>::max()};
  std::vector<ChainBest> found_;
  ZbRecord first_record_;
  std::optional<double> first_accepted_;
  std::atomic<long long> runs_{0}, placed_{0};
  std::atomic<std::size_t> next_{0};
};

// The handcrafted schedules that fit, timed only as far as they can still win: the best one
// strictly better than `bar` (the best chain's score), if any.
std::optional<std::size_t> best_seed(std::vector<Seed>& seeds, const CostModel& costs,
                                     double limit, Score bar) {
  std::optional<std::size_t> out;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    if (!(seeds[i].peak <= limit + limits::kMemEps)) continue;
    const Score against = out ? seeds[*out].score : bar;
    const auto timing = time_order(seeds[i].schedule, costs, against);
    if (!timing || !(timing->score < against)) continue;
    seeds[i].score = timing->score;
    out = i;
  }
  return out;
}

} // namespace

Schedule zb_auto_search(std::string_view name, const Schedule& skeleton, const CostSpec& spec,
                        double limit, const ZbAutoOptions& options, ZbAutoReport* report) {
  const CostModel costs = cost_model_for(spec, skeleton);
  const int p = skeleton.devices, v = skeleton.chunks();
  const std::vector<int> groups = chunk_groups(skeleton);
  std::vector<ZbProblem> problems;
  problems.reserve(groups.size());
  for (const int g : groups) problems.emplace_back(skeleton, costs, g);
  double least = std::numeric_limits<double>::infinity();
  for (const auto& pb : problems) least = std::min(least, pb.warmup_memory());

  std::vector<Seed> seeds = options.seeds ? make_seeds(skeleton, costs) : std::vector<Seed>{};
  for (const Seed& s : seeds) least = std::min(least, s.peak);
  // The memory-minimal orders (detail/in_flight.hpp): F and fused BW with k micro-batches in
  // flight hold k micro-batches' activations, where split B and W hold what W still needs too
  // (B raises memory) and the heuristic's warm-up more; k = 1 holds the least any order can.
  const double one = memory_lower_bound(skeleton, costs);
  if (const int k = in_flight_within(limit, one); options.seeds && k >= 1 && k < p) {
    Schedule s = in_flight_order(skeleton, costs, k);
    const double peak = order_peak(s, costs);
    seeds.push_back(Seed{fmt::format("in-flight-{}", k), std::move(s), Score{}, peak});
  }
  const double least_any = options.seeds ? std::min(least, one) : least;
  if (!(limit + limits::kMemEps >= least_any))
    throw InfeasibleError(fmt::format(
        "{}: memory limit {:g} M_B is below the least that works, {:g} M_B (one micro-batch's "
        "activations on all stages of a device; devices={}, chunks={}, microbatches={})",
        name, limit, least_any, p, v, skeleton.microbatches));

  // NOTE: no order of these tasks within the limit costs less than `floor_cost`, so a run that
  // meets it is optimal and the search stops there: the chains after the first that meets it
  // give up, the earlier ones look only for the same cost (then sums of spans no longer count),
  // and the earliest chain at the bound wins, whatever the threads
  const Ticks floor_cost = cost_lower_bound(with_every_task(skeleton), costs, limit).cost;

  const std::vector<ZbRules> variants =
      rule_variants(options.variants, options.variant_mask, !split_never_worse(costs));
  std::vector<Chain> chains;
  // below the heuristic's own least (its warm-up, or the W a B leaves) only the seeds fit
  const std::size_t groups_run = limit + limits::kMemEps >= least ? problems.size() : 0;
  for (std::size_t g = 0; g < groups_run; ++g)
    for (std::size_t r = 0; r < variants.size(); ++r)
      for (const ZbFlags& flags : zb_flag_combinations())
        chains.push_back(Chain{static_cast<int>(g), static_cast<int>(g * variants.size() + r),
                               flags, variants[r], rules_label(variants[r])});

  const double per_step = 3.0 * static_cast<double>(skeleton.stages()) * skeleton.microbatches *
                          static_cast<double>(chains.size());
  ChainWalks walks(problems, chains, problems.size() * variants.size(), options, limit,
                   floor_cost, ladder_floor(skeleton, costs, per_step, limit, least));
  // NOTE: threads only where the work pays for starting them (the result is the same)
  unsigned threads = per_step < kThreadWork ? 1u : search_threads(chains.size());
  if (options.threads > 0)
    threads = std::min<unsigned>(options.threads, static_cast<unsigned>(chains.size()));
  walks.run(threads);

  // a seed wins only when strictly better than the best chain
  const std::optional<std::size_t> best_chain = walks.best_chain();
  const std::optional<std::size_t> seed =
      best_seed(seeds, costs, limit,
                best_chain ? walks.found(*best_chain).score : Score{kNoCutoff, kNoCutoff});
  if (report != nullptr) {
    report->runs = walks.runs();
    report->placed = walks.placed();
  }
  if (seed) {
    Seed& s = seeds[*seed];
    if (report != nullptr) {
      report->winner = "seed:" + s.label;
      report->limit = limit;
    }
    s.schedule.name = std::string(name);
    return std::move(s.schedule);
  }
  if (!best_chain)
    throw InfeasibleError(fmt::format(
        "{}: found no schedule within the memory limit {:g} M_B (devices={}, chunks={}, "
        "microbatches={})",
        name, limit, p, v, skeleton.microbatches));
  const Chain& chain = chains[*best_chain];
  if (report != nullptr) {
    report->winner = chain.label;
    report->limit = walks.found(*best_chain).limit;
  }
  return schedule_of(problems[ix(chain.problem)], walks.record_of(*best_chain), std::string(name));
}

double zb_h1_peak(const ScheduleSpec& spec, int pieces) {
  const Schedule h1 = make_zb_h1({.devices = spec.devices, .microbatches = spec.microbatches});
  static const CostSpec unit{};
  const CostSpec& given = spec.costs != nullptr ? *spec.costs : unit;
  const std::size_t p = ix(spec.devices), v = ix(std::max(1, pieces));
  if (v == 1 || given.stages.size() != v * p) return order_peak(h1, cost_model_for(given, h1));
  // NOTE: ZB-H1's device-stage k holds the pieces k v .. k v + v - 1 of the same model
  CostSpec merged = given;
  merged.stages.clear();
  for (std::size_t k = 0; k < p; ++k) {
    StageCosts c = given.stages[k * v];
    for (std::size_t j = 1; j < v; ++j) {
      c.MB += given.stages[k * v + j].MB;
      c.MW += given.stages[k * v + j].MW;
    }
    merged.stages.push_back(c);
  }
  return order_peak(h1, cost_model_for(merged, h1));
}

} // namespace detail

namespace {

const CostSpec& costs_of(const ScheduleSpec& spec) {
  static const CostSpec unit{};
  return spec.costs != nullptr ? *spec.costs : unit;
}

// K p M_B, M_B being what one micro-batch leaves on a device (the most on any device).
double times_p_mb(const ScheduleSpec& spec, double k) {
  const Schedule skeleton =
      make_pipeline("zb", spec.devices, spec.microbatches, loop_placement(spec.devices, 1));
  const CostModel model = cost_model_for(costs_of(spec), skeleton);
  double most = 0;
  for (int st = 0; st < skeleton.stages(); ++st)
    most = std::max(most, model.memory_delta(Kind::F, st));
  return k * spec.devices * most;
}

Schedule generate(std::string_view name, const ScheduleSpec& spec, double limit) {
  if (!std::isfinite(limit))
    throw ConfigError(
        fmt::format("{}: memory limit must be a finite number (got {})", name, limit));
  const int p = spec.devices, v = std::max(1, spec.chunks);
  const Schedule skeleton =
      make_pipeline(std::string(name), p, spec.microbatches, loop_placement(p, v));
  detail::ZbAutoReport report;
  Schedule s = detail::zb_auto_search(name, skeleton, costs_of(spec), limit, {}, &report);
  if (spec.notes != nullptr && report.winner.starts_with("seed:in-flight-"))
    spec.notes->push_back(fmt::format(
        "the best order within the limit runs F and fused BW with at most {} micro-batch{} in "
        "flight (split B and W hold more: the W a B leaves, or the heuristic's warm-up)",
        report.winner.substr(15), report.winner.substr(15) == "1" ? "" : "es"));
  return s;
}

} // namespace

void check_zb_auto(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  if (spec.chunks < 0 || spec.chunks > 64)
    throw ConfigError(
        fmt::format("{}: needs 1 <= chunks <= 64 (got chunks={})", name, spec.chunks));
  if (static_cast<long long>(std::max(1, spec.chunks)) * spec.devices * spec.microbatches >
      limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format("{}: devices={} x chunks={} x microbatches={} is too large to "
                                  "schedule",
                                  name, spec.devices, spec.chunks, spec.microbatches));
}

double zb_auto_memory_limit(const ScheduleSpec& spec) {
  return spec.mem_limit >= 0 ? spec.mem_limit : detail::zb_h1_peak(spec, spec.chunks);
}
double zb_1p_memory_limit(const ScheduleSpec& spec) { return times_p_mb(spec, 1); }
double zb_2p_memory_limit(const ScheduleSpec& spec) { return times_p_mb(spec, 2); }

// zb-auto at p M_B (ZB-1p), p = 4, m = 8, F = B = W (cost 54, as ZB-H1; at 2p M_B, ZB-2p, the
// warm-up grows to ZB-H2's and the cost is the ideal 48):
//   rank0: 0F0 0F1 0F2 0F3 0B0 0W0 0F4 0B1 0W1 0F5 0B2 0W2 0F6 0B3 0W3 0F7 0B4 0W4 0B5 ... 0W7
//   rank1: 1F0 1F1 1F2 1B0 1F3 1B1 1W0 1F4 1B2 1W1 1F5 1B3 1W2 1F6 1B4 1W3 1F7 1B5 ... 1W7
//   rank3: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3W0 3F4 3B4 3W1 3F5 3B5 3W2 ... 3B7 3W4 3W5 3W6 3W7
// The authors' heuristic (sec. 3.1; detail/zb_greedy.hpp): warm-up F within the limit before
// the first B can arrive, then rounds of one F and one B per device with W in the gaps, the
// remaining W flushed; 3 flags, 8 runs, the best kept. ppsim runs it at every limit up to the
// requested one (so a larger limit is never worse), with measured variants of its rules, next to
// ZB-H1, ZB-H2 and (when B raises memory) 1F1B: never worse than any of them. With v chunks
// (zb-auto -v) the same rounds run over Megatron's chunk order, next to interleaved 1F1B.
Schedule make_zb_auto(const ScheduleSpec& spec) {
  check_zb_auto("zb-auto", spec);
  return generate("zb-auto", spec, zb_auto_memory_limit(spec));
}
Schedule make_zb_1p(const ScheduleSpec& spec) {
  require_single_chunk_shape("zb-1p", spec);
  return generate("zb-1p", spec, zb_1p_memory_limit(spec));
}
Schedule make_zb_2p(const ScheduleSpec& spec) {
  require_single_chunk_shape("zb-2p", spec);
  return generate("zb-2p", spec, zb_2p_memory_limit(spec));
}

} // namespace ppsim
