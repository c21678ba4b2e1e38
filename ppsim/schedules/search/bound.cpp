// The lower bound on a schedule's cost: work, the idle no order avoids, chains through the pipeline.
//
// Fix a device d, its tasks T_d (any order), the placement, the routes, the costs and the limit
// L. Let t0 be the start of d's first task, b1 the start of its first task with a backward half
// (B, BW or FB), X its last task with a forward half (F or FB), a = end(X), and e the end of
// its last task; span_d = e - t0 = busy_d + idle_d.
//
// Facts (DESIGN.md's semantics; memory is the running sum along d's order, so it holds for
// every timing of that order):
//  (1) Before b1 only pure F tasks run on d: W needs its B, and B, BW and FB hold a backward.
//      None of them has released memory, so the F tasks that start before b1 hold their M_B at
//      once: their M_B sum to at most L.
//  (2) b1 - t0 >= L1 = the shortest chain from the start of the F of d's first stage on a route
//      to the start of the backward of its last stage there (forwards through the later stages,
//      backwards back, a comm on each cross-device edge, each part at its producer's shortest
//      duration): that backward needs it, and the F starts at t0 or later.
//  (3) After X only B, W and BW tasks run, all of pending items: a (stage, micro-batch) of d
//      whose F is done and backward not (holding M_B) or whose B is done and W not (holding
//      M_W). Right after X the running sum is the sum of these holdings, so it is at most L:
//      the work after a is at most the best "knapsack" of such items within L.
//  (4) e - a >= L2 = the shortest chain from the end of X's forward to the end of the last
//      task on d of the same micro-batch (its backward here, then its W when W is split).
// Case A, b1 <= start(X): the windows [t0, b1) and [a, e] are disjoint, so
//      span_d >= busy_d + max(0, L1 - most F work within L) + max(0, L2 - most pending work).
// Case B, X before b1: every F ran before any backward, so all of d's F hold memory at b1 (only
//      possible when their M_B sum to at most L and d has no FB), and
//      span_d >= max(busy_d, L1 + backward work, F work + L2).
// Either way span_d >= min(A, B), and span_d >= the chain of any one micro-batch through d.
//  (5) Through a device k whose every first stage on a route comes after one of d's: k's first
//      task is an F whose chain starts at an F of d, so t0_k >= t0_d + (that chain). Every F and
//      backward task of k ends by the end E_k of k's last backward (each F precedes its own
//      backward), and so do the W that memory forces before that last backward (one stage per
//      device: all m F and m - 1 B are done then, holding M_B + (m - 1) M_W, less M_W per W).
//      The micro-batch of that last backward then still runs back along the route to d's stages
//      before k (and their W): span_d >= gap(d, k) + that work of k + chain(k -> d).
//  (6) On a device of one stage, memory bounds the micro-batches in flight. Let f_j be the start
//      of its j-th F (in order, 0-based). Before it, j F started and b B, w W ended, b <= j,
//      w <= b, and (j + 1) M_B - b (M_B - M_W) - w M_W <= L. The i-th B to end does so at least
//      a round trip T = F + (chain to its B) + B after the i-th F start, the i-th W a W later.
//      So f_j >= min over the b that fit of max(f_{b-1} + T, f_{w(b)-1} + T + W), w(b) the
//      fewest W with b B, and f_j >= f_{j-1} + F; then span_d >= f_{m-1} + T (+ W).
// The cost is max_d span_d >= max_d of these. Knapsacks are solved exactly for one kind of item and
// relaxed (fractionally: an upper bound on the work, so still a lower bound on the span) else.
// Comm is the cost model's latency per cross-device edge: richer comm modes only add time.
#include "ppsim/schedules/search/bound.hpp"

#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace ppsim {

namespace {

constexpr Ticks kInf = std::numeric_limits<Ticks>::max();

// Saturating sums: inputs may go up to limits::kMaxMs each.
Ticks add(Ticks a, Ticks b) { return a > kInf - b ? kInf : a + b; }
Ticks sub_pos(Ticks a, Ticks b) { return a > b ? a - b : 0; }

// What the tasks of one stage cost, by what they produce.
struct StageParts {
  Ticks f_min{kInf};   // shortest task producing an F here
  Ticks b_min{kInf};   // shortest task producing a B here
  Ticks w_task_min{kInf};
  bool w_fused{false};  // some W made with its B (BW, or an FB with a BW half)
  Ticks back_max{0};    // longest B or BW task here (the backward of a pending item)
  Ticks w_max{0};       // longest W task here
  long long pure_f{0};  // pure F tasks here
  long long items{0};   // F parts here: (stage, micro-batch) items

  [[nodiscard]] Ticks w_after_b() const {
    if (w_fused || w_task_min == kInf) return 0;
    return w_task_min;
  }
};

// One kind of item for a knapsack: `count` of them, each `weight` M_B and `value` ticks.
struct Item {
  double weight;
  Ticks value;
  long long count;
};

// The most value of items whose weights sum to at most `limit` (< 0: no limit): exact when all
// weighted items weigh the same, else the fractional relaxation (an upper bound).
Ticks most_value(std::vector<Item> items, double limit) {
  Ticks total = 0;
  std::vector<Item> weighted;
  for (const Item& it : items) {
    if (it.count <= 0 || it.value <= 0) continue;
    if (limit < 0 || it.weight <= limits::kMemEps) {
      total = add(total, it.value > kInf / it.count ? kInf : it.value * it.count);
    } else {
      weighted.push_back(it);
    }
  }
  if (weighted.empty()) return total;
  std::sort(weighted.begin(), weighted.end(), [](const Item& x, const Item& y) {
    // by value per weight, descending; then by value
    const double rx = static_cast<double>(x.value) / x.weight;
    const double ry = static_cast<double>(y.value) / y.weight;
    return rx != ry ? rx > ry : x.value > y.value;
  });
  const bool same_weight =
      std::all_of(weighted.begin(), weighted.end(),
                  [&](const Item& it) { return std::abs(it.weight - weighted.front().weight) <= limits::kMemEps; });
  double room = limit;
  if (same_weight) {  // exact: the k most valuable items, k = how many fit
    const double w = weighted.front().weight;
    auto k = static_cast<long long>(std::floor(room / w + limits::kMemEps));
    std::sort(weighted.begin(), weighted.end(),
              [](const Item& x, const Item& y) { return x.value > y.value; });
    for (const Item& it : weighted) {
      if (k <= 0) break;
      const long long take = std::min(k, it.count);
      total = add(total, it.value > kInf / take ? kInf : it.value * take);
      k -= take;
    }
    return total;
  }
  for (const Item& it : weighted) {  // fractional: fill by ratio, the last item in part
    if (room <= limits::kMemEps) break;
    const auto fit = static_cast<long long>(std::floor(room / it.weight + limits::kMemEps));
    const long long take = std::min(fit, it.count);
    total = add(total, it.value > kInf / std::max(1LL, take) ? kInf : it.value * take);
    room -= static_cast<double>(take) * it.weight;
    if (take < it.count) {
      const double part = std::clamp(room / it.weight, 0.0, 1.0);
      total = add(total, static_cast<Ticks>(std::ceil(part * static_cast<double>(it.value))));
      break;
    }
  }
  return total;
}

// The most work of pending items (fact 3) on a device with one stage: exact, over how many of
// them still wait for their B (the rest wait for their W).
Ticks most_pending_one_stage(const StageParts& sp, double mb, double mw, double limit) {
  const Ticks back = add(sp.back_max, sp.w_max);
  const Ticks w = sp.w_max;
  if (limit < 0) return back > kInf / std::max(1LL, sp.items) ? kInf : back * sp.items;
  Ticks best = 0;
  for (long long nb = 0; nb <= sp.items; ++nb) {
    const double room = limit - static_cast<double>(nb) * std::max(0.0, mb);
    if (room < -limits::kMemEps) break;
    long long nw = sp.items - nb;
    if (mw > limits::kMemEps) nw = std::min(nw, static_cast<long long>(std::floor(room / mw + limits::kMemEps)));
    best = std::max(best, add(back * nb, w * std::max(0LL, nw)));
  }
  return best;
}

// Fact 6: the span of a device of one stage whose memory keeps few micro-batches in flight.
// `trip` is T, `w_after` the W that follows the last B (0 when fused), `fused` whether one task
// releases all of M_B (BW), else B releases M_B - M_W and W the rest.
Ticks in_flight_span(long long n, Ticks f, Ticks trip, Ticks w, Ticks w_after, double mb,
                     double mw, bool fused, double limit) {
  if (limit < 0 || n < 1 || mb <= limits::kMemEps || trip == kInf) return 0;
  std::vector<Ticks> start(static_cast<std::size_t>(n), 0);
  const auto at = [&](long long i) { return start[static_cast<std::size_t>(i)]; };
  for (long long j = 1; j < n; ++j) {
    Ticks fj = add(at(j - 1), f);
    const double need = static_cast<double>(j + 1) * mb - limit;
    if (need > limits::kMemEps) {
      const auto nb = static_cast<long long>(std::ceil(need / mb - limits::kMemEps));
      if (nb > j) return 0;  // not even one micro-batch fits: the generator refuses it
      if (fused || mw <= limits::kMemEps) {
        fj = std::max(fj, add(at(nb - 1), trip));
      } else {
        // with b B ended, the fewest W: w(b) M_W >= need - b (M_B - M_W); cost(b) falls then
        // rises in b, so the least lies where the W term stops dominating
        const auto w_of = [&](long long b) {
          return static_cast<long long>(std::ceil((need - static_cast<double>(b) * (mb - mw)) / mw - limits::kMemEps));
        };
        const auto cost = [&](long long b) -> Ticks {
          const long long wb = w_of(b);
          if (wb > b) return kInf;
          Ticks c = add(at(b - 1), trip);
          if (wb > 0) c = std::max(c, add(add(at(wb - 1), trip), w));
          return c;
        };
        Ticks best = kInf;
        long long lo = nb, hi = j;  // the last b where the W term is at least the B term
        while (lo < hi) {
          const long long mid = lo + (hi - lo + 1) / 2;
          const long long wb = w_of(mid);
          const bool w_heavy = wb > mid || (wb > 0 && add(add(at(wb - 1), trip), w) >= add(at(mid - 1), trip));
          if (w_heavy) lo = mid;
          else hi = mid - 1;
        }
        for (long long b = std::max(nb, lo - 1); b <= std::min(j, lo + 1); ++b) best = std::min(best, cost(b));
        fj = std::max(fj, best);
      }
    }
    start[static_cast<std::size_t>(j)] = fj;
  }
  return add(add(at(n - 1), trip), w_after);
}

// The round trip of one used route as nodes F(r_0..r_K-1), B(r_K-1..r_0): start and end of each
// node relative to the start of node 0, and each device's positions on the route.
struct RouteChain {
  std::size_t route{0};
  int K{0};
  std::vector<Ticks> start, end;
  std::vector<std::vector<int>> positions;  // per device, ascending
  [[nodiscard]] int b_node(int k) const { return 2 * K - 1 - k; }
};

// The bound of one schedule, built in the order of the facts above: what the tasks cost, the
// round trips of the routes, the chains they give each device, the work fact 5 carries, then
// each device's span.
class OrderBound {
public:
  OrderBound(const Schedule& s, const CostModel& costs, double mem_limit)
      : s_(s), costs_(costs), mem_limit_(mem_limit), topo_(s), P_(std::max(0, s.devices)),
        S_(s.stages()) {
    tally_tasks();
    trace_routes();
    span_routes();
    weigh_forced_work();
  }

  [[nodiscard]] CostBound bound() const {
    CostBound out;
    for (int d = 0; d < P_; ++d) {
      const DeviceBound db = device_bound(d);
      if (db.span > out.cost) {
        out.cost = db.span;
        out.device = d;
      }
      out.per_device.push_back(db);
    }
    return out;
  }

private:
  [[nodiscard]] Ticks fdur(int st) const { return parts_[ix(st)].f_min == kInf ? 0 : parts_[ix(st)].f_min; }
  [[nodiscard]] Ticks bdur(int st) const { return parts_[ix(st)].b_min == kInf ? 0 : parts_[ix(st)].b_min; }
  // The least time from a B to its W at position k of a route (0 when they are one task).
  [[nodiscard]] Ticks w_after(const RouteChain& c, int k) const {
    return parts_[ix(s_.routes[c.route][ix(k)])].w_after_b();
  }

  // One pass over the tasks: work per device and what produces each part.
  void tally_tasks() {
    parts_.assign(ix(S_), StageParts{});
    busy_.assign(ix(P_), 0);
    w_work_.assign(ix(P_), 0);
    has_fb_.assign(ix(P_), false);
    for (int d = 0; d < P_ && ix(d) < s_.order.size(); ++d) {
      for (const Task& t : s_.order[ix(d)]) {
        const Ticks dur = costs_.duration(t);
        busy_[ix(d)] = add(busy_[ix(d)], dur);
        if (t.kind == Kind::W) w_work_[ix(d)] = add(w_work_[ix(d)], dur);
        if (t.kind == Kind::FB) has_fb_[ix(d)] = true;
        for_each_half(t, [&](Kind kind, int stage, int) {
          if (stage < 0 || stage >= S_) return;
          StageParts& sp = parts_[ix(stage)];
          switch (kind) {
          case Kind::F:
            sp.f_min = std::min(sp.f_min, dur);
            ++sp.items;
            if (t.kind == Kind::F) ++sp.pure_f;
            break;
          case Kind::B:
            sp.b_min = std::min(sp.b_min, dur);
            if (t.kind == Kind::B) sp.back_max = std::max(sp.back_max, dur);
            break;
          case Kind::BW:
            sp.b_min = std::min(sp.b_min, dur);
            sp.w_fused = true;
            if (t.kind == Kind::BW) sp.back_max = std::max(sp.back_max, dur);
            break;
          case Kind::W:
            sp.w_task_min = std::min(sp.w_task_min, dur);
            sp.w_max = std::max(sp.w_max, dur);
            break;
          case Kind::FB: break;
          }
        });
      }
    }
  }

  // The round trip of every route some micro-batch takes.
  void trace_routes() {
    std::vector<bool> used(s_.routes.size(), false);
    for (const int r : s_.microbatch_route)
      if (r >= 0 && ix(r) < used.size()) used[ix(r)] = true;
    for (std::size_t r = 0; r < s_.routes.size(); ++r) {
      if (!used[r] || s_.routes[r].empty()) continue;
      const auto& route = s_.routes[r];
      RouteChain c;
      c.route = r;
      c.K = static_cast<int>(route.size());
      const int K = c.K;
      const auto stage_at = [&](int x) { return route[ix(x < K ? x : 2 * K - 1 - x)]; };
      c.start.resize(ix(2 * K));
      c.end.resize(ix(2 * K));
      for (int x = 0; x < 2 * K; ++x) {
        const int st = stage_at(x);
        Ticks at = 0;
        if (x > 0) {
          const bool hop = x != K && topo_.device_of(stage_at(x - 1)) != topo_.device_of(st);
          at = add(c.end[ix(x - 1)], hop ? costs_.comm : 0);
        }
        c.start[ix(x)] = at;
        c.end[ix(x)] = add(at, x < K ? fdur(st) : bdur(st));
      }
      c.positions.resize(ix(P_));
      for (int k = 0; k < K; ++k) {
        const int d = topo_.device_of(route[ix(k)]);
        if (d >= 0 && d < P_) c.positions[ix(d)].push_back(k);
      }
      chains_.push_back(std::move(c));
    }
  }

  // Per device, L1 (head) and L2 (tail) are the least over routes (which route comes first or
  // last is the order's choice), the full chain the most (every micro-batch's chain lies inside
  // the span); per stage, the shortest round trip of one micro-batch (fact 6's T).
  void span_routes() {
    head_.assign(ix(P_), kInf);
    tail_.assign(ix(P_), kInf);
    chain_.assign(ix(P_), 0);
    trip_.assign(ix(S_), kInf);  // F start to B end of one micro-batch on each stage
    for (const RouteChain& c : chains_) {
      for (int k = 0; k < c.K; ++k) {
        Ticks& t = trip_[ix(s_.routes[c.route][ix(k)])];
        t = std::min(t, sub_pos(c.end[ix(c.b_node(k))], c.start[ix(k)]));
      }
      for (int d = 0; d < P_; ++d) {
        const auto& pos = c.positions[ix(d)];
        if (pos.empty()) continue;
        const int first = pos.front(), last = pos.back();
        head_[ix(d)] = std::min(head_[ix(d)], sub_pos(c.start[ix(c.b_node(last))], c.start[ix(first)]));
        // L2: X's forward on any of d's stages k; then every backward of d at or before k
        Ticks l2 = kInf, full = 0;
        for (const int k : pos) {
          Ticks after = 0;
          for (const int u : pos) {
            if (u > k) break;
            const Ticks w = w_after(c, u);
            after = std::max(after, add(sub_pos(c.end[ix(c.b_node(u))], c.end[ix(k)]), w));
            if (k == last)
              full = std::max(full, add(sub_pos(c.end[ix(c.b_node(u))], c.start[ix(first)]), w));
          }
          l2 = std::min(l2, after);
        }
        tail_[ix(d)] = std::min(tail_[ix(d)], l2);
        chain_[ix(d)] = std::max(chain_[ix(d)], full);
      }
    }
  }

  // Fact 5: the work of device k that ends by its last backward, with the W memory forces
  // before it on a device of one stage; and the devices k tried: all of them, or on a long
  // pipeline the 64 with the most such work (later devices first among equals: their chains
  // are the longest).
  void weigh_forced_work() {
    k_work_.assign(ix(P_), 0);
    for (int k = 0; k < P_; ++k) {
      k_work_[ix(k)] = sub_pos(busy_[ix(k)], w_work_[ix(k)]);
      const auto stages = topo_.device_stages(k);
      if (mem_limit_ < 0 || stages.size() != 1 || has_fb_[ix(k)]) continue;
      const StageParts& sp = parts_[ix(stages[0])];
      if (sp.w_fused || sp.w_task_min == kInf || sp.items < 1) continue;
      const double mb = costs_.memory_delta(Kind::F, stages[0]);
      const double mw = -costs_.memory_delta(Kind::W, stages[0]);
      if (mw <= limits::kMemEps) continue;
      const auto n = static_cast<double>(sp.items);
      double need = (mb + (n - 1) * mw - mem_limit_) / mw;
      if (mw > mb) need = std::max(need, (n * mw - mem_limit_) / mw);
      const auto forced = static_cast<long long>(
          std::clamp(std::ceil(need - limits::kMemEps), 0.0, static_cast<double>(sp.items - 1)));
      k_work_[ix(k)] = add(k_work_[ix(k)], sp.w_task_min * forced);
    }
    candidates_.resize(ix(P_));
    for (int k = 0; k < P_; ++k) candidates_[ix(k)] = k;
    constexpr std::size_t kMaxThrough = 64;
    if (candidates_.size() > kMaxThrough) {
      std::partial_sort(candidates_.begin(), candidates_.begin() + kMaxThrough, candidates_.end(),
                        [&](int a, int b) {
                          return k_work_[ix(a)] != k_work_[ix(b)] ? k_work_[ix(a)] > k_work_[ix(b)] : a > b;
                        });
      candidates_.resize(kMaxThrough);
    }
  }

  // span_d >= gap(d, k) + k_work + chain(k -> d), when every route through k meets d first;
  // -1 when it does not apply.
  [[nodiscard]] Ticks through(int d, int k) const {
    Ticks gap = kInf, back = kInf;
    for (const RouteChain& c : chains_) {
      const auto& pk = c.positions[ix(k)];
      if (pk.empty()) continue;
      const auto& pd = c.positions[ix(d)];
      if (pd.empty() || pd.front() >= pk.front()) return -1;  // k may start before d
      const int fk = pk.front();
      gap = std::min(gap, c.start[ix(fk)] - c.start[ix(pd.front())]);
      // the last backward of k on its first stage here is the cheapest to come back from
      Ticks most = 0;
      for (const int u : pd) {
        if (u >= fk) break;
        most = std::max(most, add(sub_pos(c.end[ix(c.b_node(u))], c.end[ix(c.b_node(fk))]),
                                  w_after(c, u)));
      }
      back = std::min(back, most);
    }
    if (gap == kInf) return -1;
    return add(add(gap, k_work_[ix(k)]), back);
  }

  [[nodiscard]] DeviceBound device_bound(int d) const {
    DeviceBound db;
    db.device = d;
    db.busy = busy_[ix(d)];
    db.chain = chain_[ix(d)];
    for (const int k : candidates_) {
      if (k == d) continue;
      const Ticks t = through(d, k);
      if (t > db.through) {
        db.through = t;
        db.through_device = k;
      }
    }
    const auto stages = topo_.device_stages(d);
    if (stages.size() == 1 && !has_fb_[ix(d)]) {
      const int st = stages[0];
      const StageParts& sp = parts_[ix(st)];
      const bool fused = sp.w_fused || sp.w_task_min == kInf;
      db.in_flight = in_flight_span(sp.items, costs_.stage[ix(st)].F, trip_[ix(st)],
                                    fused ? 0 : sp.w_task_min, sp.w_after_b(),
                                    costs_.memory_delta(Kind::F, st),
                                    -costs_.memory_delta(Kind::W, st), fused, mem_limit_);
    }
    const Ticks idle_span =
        head_[ix(d)] != kInf && tail_[ix(d)] != kInf ? idle_bound(d, stages, db) : 0;
    db.span = std::max({idle_span, db.busy, db.chain, db.through, db.in_flight});
    return db;
  }

  // Facts 1-4: the busy time and the idle at both ends no order avoids, the least of cases A
  // and B; sets db's head and tail idle.
  [[nodiscard]] Ticks idle_bound(int d, std::span<const int> stages, DeviceBound& db) const {
    std::vector<Item> forwards, pending;
    Ticks f_work = 0;
    double f_memory = 0;
    for (const int st : stages) {
      const StageParts& sp = parts_[ix(st)];
      const double mb = costs_.memory_delta(Kind::F, st);
      const double mw = -costs_.memory_delta(Kind::W, st);
      const Ticks f = costs_.stage[ix(st)].F;
      forwards.push_back({mb, f, sp.pure_f});
      f_work = add(f_work, f > kInf / std::max(1LL, sp.pure_f) ? kInf : f * sp.pure_f);
      f_memory += mb * static_cast<double>(sp.pure_f);
      pending.push_back({mb, add(sp.back_max, sp.w_max), sp.items});
      pending.push_back({mw, sp.w_max, sp.items});
    }
    const Ticks most_f = most_value(forwards, mem_limit_);
    const Ticks most_pending =
        stages.size() == 1
            ? most_pending_one_stage(parts_[ix(stages[0])], costs_.memory_delta(Kind::F, stages[0]),
                                     -costs_.memory_delta(Kind::W, stages[0]), mem_limit_)
            : most_value(pending, mem_limit_);
    db.head_idle = sub_pos(head_[ix(d)], most_f);
    db.tail_idle = sub_pos(tail_[ix(d)], most_pending);
    Ticks span = add(add(db.busy, db.head_idle), db.tail_idle);
    const bool all_forwards_first =
        !has_fb_[ix(d)] && (mem_limit_ < 0 || f_memory <= mem_limit_ + limits::kMemEps);
    if (all_forwards_first) {
      const Ticks backward_work = sub_pos(db.busy, f_work);
      const Ticks b = std::max({db.busy, add(head_[ix(d)], backward_work), add(f_work, tail_[ix(d)])});
      if (b < span) {
        // NOTE: case B is cheaper; the idle it implies is not split by end, so report it whole.
        span = b;
        db.head_idle = sub_pos(b, db.busy);
        db.tail_idle = 0;
      }
    }
    return span;
  }

  const Schedule& s_;
  const CostModel& costs_;
  double mem_limit_;
  Topology topo_;
  int P_, S_;
  std::vector<StageParts> parts_;
  std::vector<Ticks> busy_, w_work_;
  std::vector<bool> has_fb_;
  std::vector<RouteChain> chains_;
  std::vector<Ticks> head_, tail_, chain_, trip_;
  std::vector<Ticks> k_work_;
  std::vector<int> candidates_;
};

} // namespace

double optimality_gap(Ticks cost, Ticks bound) {
  if (cost <= 0) return 0.0;
  return static_cast<double>(cost - std::min(cost, bound)) / static_cast<double>(cost);
}

CostBound cost_lower_bound(const Schedule& s, const CostModel& costs, double mem_limit) {
  return OrderBound(s, costs, mem_limit).bound();
}

} // namespace ppsim
