// Branch and bound over the orders of F, B and W on one stage per device.
//
// The tree: at each node the device that is free first (the least clock among those not
// waiting; ties by index) decides the kind of its next task. Its start follows at once when the
// input is there (ppsim's timing: the later of the device's clock and the producer's end plus
// comm); when the input's producer is not placed yet, the device waits, and the task starts
// when that producer is placed. Because the next decision is a function of the state, every set
// of per-device orders is one path of the tree: nothing is searched twice.
//
// The bound at a node: per device, each remaining task's earliest start (its kind's previous
// task, its inputs along the chain of the other devices, the device's clock; a device's last B
// also after all its other F and B and the W that memory forces before it) and the single
// machine bound over them (max over tasks of its earliest start plus the work of all tasks that
// cannot start earlier), less the device's first start (fixed: F0 runs as soon as it can); and
// at the root, cost_lower_bound(). A node whose bound reaches the best cost found is cut.
#include "ppsim/schedules/search/optimum.hpp"

#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/time.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <limits>
#include <vector>

namespace ppsim {

namespace {

constexpr int kMaxDevices = 6;
constexpr int kMaxMicrobatches = 12;
// Above every time of the search: those are at most the sum of all durations and messages,
// bounded by limits::kMaxTotalTicks (a quarter of the range) before the search starts.
constexpr Ticks kNoCost = std::numeric_limits<Ticks>::max() / 2;

enum Wait : signed char { kWaitNone = -1, kWaitF = 0, kWaitB = 1 };

struct State {
  std::array<int, kMaxDevices> f{}, b{}, w{};
  std::array<Ticks, kMaxDevices> clock{};
  std::array<signed char, kMaxDevices> waiting{};
};

class Search {
public:
  Search(int p, int m, const CostModel& costs, double limit, const OptimumOptions& options)
      : p_(p), m_(m), comm_(costs.comm), limit_(limit), options_(options),
        end_f_(ix(p * m)), end_b_(ix(p * m)), order_(ix(p)) {
    for (int d = 0; d < p; ++d) {
      const StageCosts& c = costs.stage[ix(d)];
      f_[ix(d)] = c.F;
      b_[ix(d)] = c.B;
      w_[ix(d)] = c.W;
      mb_[ix(d)] = costs.memory_delta(Kind::F, d);
      mw_[ix(d)] = -costs.memory_delta(Kind::W, d);
      // F0 is each device's first task and waits only for F0 of the device before
      first_[ix(d)] = d == 0 ? 0 : first_[ix(d - 1)] + f_[ix(d - 1)] + comm_;
      // Before the last B all m F and m - 1 B are done: M_B + (m - 1) M_W, less M_W per W.
      const double mb = mb_[ix(d)], mw = mw_[ix(d)];
      if (limit >= 0 && mw > limits::kMemEps) {
        double need = (mb + (m - 1) * mw - limit) / mw;
        if (mw > mb) need = std::max(need, (m * mw - limit) / mw);
        forced_w_[ix(d)] = static_cast<int>(std::clamp(std::ceil(need - limits::kMemEps), 0.0, m - 1.0));
      }
    }
    best_ = options.known_cost >= 0 ? options.known_cost : kNoCost;
  }

  Optimum run(Ticks root_bound) {
    root_ = root_bound;
    State s;
    s.waiting.fill(kWaitNone);
    if (root_ > 0 && root_ < best_) {
      // First look only for an order that meets the bound (it is often tight): every node
      // above it is cut. Failing that, search again with the incumbent as usual.
      const Ticks incumbent = best_;
      best_ = root_ + 1;
      node_limit_ = options_.max_nodes / 2;
      dfs(s);
      if (best_ > root_) best_ = incumbent;
      aborted_ = false;  // the rest of the budget goes to the full search
    }
    node_limit_ = options_.max_nodes;
    if (!aborted_ && !done_ && root_ < best_) dfs(s);
    Optimum o;
    o.proven = !aborted_;
    o.nodes = nodes_;
    o.cost = best_ >= kNoCost ? -1 : best_;
    if (!best_order_.empty()) {
      o.schedule = make_pipeline("optimum", p_, m_, loop_placement(p_, 1));
      o.schedule.order = best_order_;
    }
    return o;
  }

private:
  [[nodiscard]] Ticks dur(int d, int kind) const {
    return kind == 0 ? f_[ix(d)] : kind == 1 ? b_[ix(d)] : w_[ix(d)];
  }
  [[nodiscard]] double level(const State& s, int d) const {
    return s.f[ix(d)] * mb_[ix(d)] - s.b[ix(d)] * (mb_[ix(d)] - mw_[ix(d)]) -
           s.w[ix(d)] * mw_[ix(d)];
  }
  [[nodiscard]] bool finished(const State& s, int d) const {
    return s.f[ix(d)] == m_ && s.b[ix(d)] == m_ && s.w[ix(d)] == m_;
  }
  Ticks& end_f(int d, int k) { return end_f_[ix(d * m_ + k)]; }
  Ticks& end_b(int d, int k) { return end_b_[ix(d * m_ + k)]; }

  // Places d's next task of `kind` at `start`, then starts the tasks that waited for it.
  void place(State& s, int d, int kind, Ticks start) {
    const Ticks end = start + dur(d, kind);
    s.clock[ix(d)] = end;
    s.waiting[ix(d)] = kWaitNone;
    if (kind == 0) {
      const int k = s.f[ix(d)]++;
      end_f(d, k) = end;
      order_[ix(d)].push_back(Task::make(Kind::F, d, k));
      if (d + 1 < p_ && s.waiting[ix(d + 1)] == kWaitF && s.f[ix(d + 1)] == k)
        place(s, d + 1, 0, std::max(s.clock[ix(d + 1)], end + comm_));
    } else if (kind == 1) {
      const int k = s.b[ix(d)]++;
      end_b(d, k) = end;
      order_[ix(d)].push_back(Task::make(Kind::B, d, k));
      if (d > 0 && s.waiting[ix(d - 1)] == kWaitB && s.b[ix(d - 1)] == k)
        place(s, d - 1, 1, std::max(s.clock[ix(d - 1)], end + comm_));
    } else {
      order_[ix(d)].push_back(Task::make(Kind::W, d, s.w[ix(d)]++));
    }
  }

  // Decides d's next task: placed now when its input exists, else d waits for it.
  void choose(State& s, int d, int kind) {
    const int k = kind == 0 ? s.f[ix(d)] : s.b[ix(d)];
    if (kind == 0 && d > 0) {
      if (s.f[ix(d - 1)] <= k) {
        s.waiting[ix(d)] = kWaitF;
        return;
      }
      place(s, d, 0, std::max(s.clock[ix(d)], end_f(d - 1, k) + comm_));
    } else if (kind == 1 && d + 1 < p_) {
      if (s.b[ix(d + 1)] <= k) {
        s.waiting[ix(d)] = kWaitB;
        return;
      }
      place(s, d, 1, std::max(s.clock[ix(d)], end_b(d + 1, k) + comm_));
    } else {
      place(s, d, kind, s.clock[ix(d)]);
    }
  }

  // The node's bound (see the top of the file): earliest starts micro-batch by micro-batch,
  // since an F may wait for the B and W that make room for it.
  Ticks bound(const State& s) {
    es_f_.assign(ix(p_ * m_), 0);
    es_b_.assign(ix(p_ * m_), 0);
    es_w_.assign(ix(p_ * m_), 0);
    const auto at = [&](int d, int k) { return ix(d * m_ + k); };
    for (int k = 0; k < m_; ++k) {
      for (int d = 0; d < p_; ++d) {
        if (k < s.f[ix(d)]) continue;
        Ticks es = s.clock[ix(d)];
        if (k > s.f[ix(d)]) es = std::max(es, es_f_[at(d, k - 1)] + f_[ix(d)]);
        if (d > 0)
          es = std::max(es, k < s.f[ix(d - 1)] ? end_f(d - 1, k) + comm_
                                               : es_f_[at(d - 1, k)] + f_[ix(d - 1)] + comm_);
        // Room for the (k+1)-th F: the B and W before it released (k+1) M_B - limit; a B with
        // its W releases M_B, so at least `need_b` B are done, and with at most k B, `need_w` W.
        const double mb = mb_[ix(d)], mw = mw_[ix(d)];
        const double room = (k + 1) * mb - limit_;
        if (limit_ >= 0 && room > limits::kMemEps && mb > limits::kMemEps) {
          const int need_b = static_cast<int>(std::ceil(room / mb - limits::kMemEps));
          if (need_b > s.b[ix(d)] && need_b <= k)
            es = std::max(es, es_b_[at(d, need_b - 1)] + b_[ix(d)]);
          if (mw > limits::kMemEps) {
            const int need_w = static_cast<int>(std::ceil((room - k * (mb - mw)) / mw - limits::kMemEps));
            if (need_w > s.w[ix(d)] && need_w <= k)
              es = std::max(es, es_w_[at(d, need_w - 1)] + w_[ix(d)]);
          }
        }
        es_f_[at(d, k)] = es;
      }
      for (int d = p_ - 1; d >= 0; --d) {
        if (k < s.b[ix(d)]) continue;
        Ticks es = s.clock[ix(d)];
        if (k > s.b[ix(d)]) es = std::max(es, es_b_[at(d, k - 1)] + b_[ix(d)]);
        if (k >= s.f[ix(d)]) es = std::max(es, es_f_[at(d, k)] + f_[ix(d)]);
        if (d + 1 < p_)
          es = std::max(es, k < s.b[ix(d + 1)] ? end_b(d + 1, k) + comm_
                                               : es_b_[at(d + 1, k)] + b_[ix(d + 1)] + comm_);
        es_b_[at(d, k)] = es;
        // The last B waits for every F, every other B and the W memory forces before it.
        if (k == m_ - 1) {
          gather(s, d, m_ - 1, std::max(0, forced_w_[ix(d)] - s.w[ix(d)]));
          es_b_[at(d, k)] = std::max(es, machine_end(s.clock[ix(d)]));
        }
      }
      for (int d = 0; d < p_; ++d) {
        if (k < s.w[ix(d)]) continue;
        Ticks es = s.clock[ix(d)];
        if (k > s.w[ix(d)]) es = std::max(es, es_w_[at(d, k - 1)] + w_[ix(d)]);
        if (k >= s.b[ix(d)]) es = std::max(es, es_b_[at(d, k)] + b_[ix(d)]);
        es_w_[at(d, k)] = es;
      }
    }
    Ticks most = 0;
    for (int d = 0; d < p_; ++d) {
      gather(s, d, m_, m_);
      most = std::max(most, machine_end(s.clock[ix(d)]) - first_[ix(d)]);
    }
    return most;
  }

  // Collects d's remaining F, its remaining B below `b_end` and its next `n_w` W with their
  // earliest starts.
  void gather(const State& s, int d, int b_end, int n_w) {
    starts_.clear();
    const auto at = [&](int k) { return ix(d * m_ + k); };
    for (int k = s.f[ix(d)]; k < m_; ++k) starts_.push_back({es_f_[at(k)], f_[ix(d)]});
    for (int k = s.b[ix(d)]; k < b_end; ++k) starts_.push_back({es_b_[at(k)], b_[ix(d)]});
    for (int k = s.w[ix(d)]; k < std::min(m_, s.w[ix(d)] + n_w); ++k)
      starts_.push_back({es_w_[at(k)], w_[ix(d)]});
  }

  // One machine from `clock` with the gathered tasks: it ends no earlier than any task's
  // earliest start plus the work of all tasks that cannot start earlier.
  Ticks machine_end(Ticks clock) {
    Ticks end = clock;
    std::sort(starts_.begin(), starts_.end());
    Ticks work = 0;
    for (auto it = starts_.rbegin(); it != starts_.rend(); ++it) {
      work += it->second;
      end = std::max(end, it->first + work);
    }
    return end;
  }

  void dfs(const State& s) {
    if (aborted_ || done_) return;
    if (++nodes_ > node_limit_) {
      aborted_ = true;
      return;
    }
    int d = -1;
    bool all_done = true;
    for (int i = 0; i < p_; ++i) {
      if (finished(s, i)) continue;
      all_done = false;
      if (s.waiting[ix(i)] != kWaitNone) continue;
      if (d < 0 || s.clock[ix(i)] < s.clock[ix(d)]) d = i;
    }
    if (all_done) {
      Ticks cost = 0;
      for (int i = 0; i < p_; ++i) cost = std::max(cost, s.clock[ix(i)] - first_[ix(i)]);
      if (cost < best_) {
        best_ = cost;
        best_order_ = order_;
        done_ = best_ <= root_;  // nothing can beat the root's bound
      }
      return;
    }
    if (d < 0) return;  // every unfinished device waits: a deadlock
    if (bound(s) >= best_) return;

    // The kinds d may run next (memory as DESIGN.md: + at a task's start), earliest start first,
    // then B before F before W: good orders come early and cut more of the tree.
    struct Option {
      Ticks ready;
      int kind;
    };
    std::array<Option, 3> options{};
    int n = 0;
    const double lvl = level(s, d);
    const int fd = s.f[ix(d)], bd = s.b[ix(d)], wd = s.w[ix(d)];
    const Ticks clock = s.clock[ix(d)];
    // An F or B that would wait while d's next W fits before its input arrives is cut: the order
    // with that W first starts it no later, frees the W's memory sooner and delays nothing
    // (a W feeds no other task), so some optimal order never leaves such a gap.
    const bool w_next = wd < bd;
    const auto fits_w = [&](Ticks earliest) { return w_next && clock + w_[ix(d)] <= earliest; };
    if (fd < m_ && lvl + mb_[ix(d)] <= limit_ + limits::kMemEps) {
      Ticks ready = clock, earliest = clock;
      if (d > 0) {
        const bool there = s.f[ix(d - 1)] > fd;
        ready = there ? std::max(clock, end_f(d - 1, fd) + comm_) : kNoCost;
        earliest = there ? ready : std::max(clock, s.clock[ix(d - 1)] + f_[ix(d - 1)] + comm_);
      }
      if (!fits_w(earliest)) options[ix(n++)] = {ready, 0};
    }
    const double rise = mw_[ix(d)] - mb_[ix(d)];
    if (bd < fd && (rise <= 0 || lvl + rise <= limit_ + limits::kMemEps)) {
      Ticks ready = clock, earliest = clock;
      if (d + 1 < p_) {
        const bool there = s.b[ix(d + 1)] > bd;
        ready = there ? std::max(clock, end_b(d + 1, bd) + comm_) : kNoCost;
        earliest = there ? ready : std::max(clock, s.clock[ix(d + 1)] + b_[ix(d + 1)] + comm_);
      }
      if (!fits_w(earliest)) options[ix(n++)] = {ready, 1};
    }
    if (w_next) options[ix(n++)] = {clock, 2};
    const int prefer[3] = {1, 0, 2};  // F, B, W
    std::sort(options.begin(), options.begin() + n, [&](const Option& x, const Option& y) {
      return x.ready != y.ready ? x.ready < y.ready : prefer[x.kind] < prefer[y.kind];
    });
    for (int i = 0; i < n; ++i) {
      State next = s;
      choose(next, d, options[ix(i)].kind);
      dfs(next);
      for (int e = 0; e < p_; ++e) order_[ix(e)].resize(ix(s.f[ix(e)] + s.b[ix(e)] + s.w[ix(e)]));
      if (aborted_ || done_) return;
    }
  }

  int p_, m_;
  Ticks comm_;
  double limit_;
  OptimumOptions options_;
  std::array<Ticks, kMaxDevices> f_{}, b_{}, w_{}, first_{};
  std::array<double, kMaxDevices> mb_{}, mw_{};
  std::array<int, kMaxDevices> forced_w_{};
  std::vector<Ticks> end_f_, end_b_, es_f_, es_b_, es_w_;
  std::vector<std::pair<Ticks, Ticks>> starts_;
  std::vector<std::vector<Task>> order_, best_order_;
  Ticks best_{kNoCost};
  Ticks root_{0};
  std::int64_t nodes_{0};
  std::int64_t node_limit_{0};
  bool aborted_{false};
  bool done_{false};
};

} // namespace

Optimum optimal_zero_bubble(int devices, int microbatches, const CostModel& costs,
                            double mem_limit, const OptimumOptions& options) {
  if (devices < 1 || devices > kMaxDevices || microbatches < 1 ||
      microbatches > kMaxMicrobatches)
    throw ConfigError(fmt::format(
        "exact optimum: supports 1..{} devices and 1..{} micro-batches (got devices={}, "
        "microbatches={}); the search grows exponentially",
        kMaxDevices, kMaxMicrobatches, devices, microbatches));
  if (static_cast<int>(costs.stage.size()) != devices)
    throw ConfigError(fmt::format("exact optimum: costs for {} stages, expected one per device ({})",
                                  costs.stage.size(), devices));
  long double total = 0;
  for (int d = 0; d < devices; ++d) {
    const StageCosts& c = costs.stage[ix(d)];
    total += static_cast<long double>(c.F) + static_cast<long double>(c.B) +
             static_cast<long double>(c.W) + 2.0L * static_cast<long double>(costs.comm);
  }
  check_total_ticks(total * microbatches, "exact optimum");
  // Any order of the same tasks has the same bound: the split F, B, W of every micro-batch.
  Schedule tasks = make_pipeline("optimum", devices, microbatches, loop_placement(devices, 1));
  for (int d = 0; d < devices; ++d)
    for (const Kind k : {Kind::F, Kind::B, Kind::W})
      for (int j = 0; j < microbatches; ++j) tasks.order[ix(d)].push_back(Task::make(k, d, j));
  for (int d = 0; d < devices; ++d) {
    const double mb = costs.memory_delta(Kind::F, d);
    const double rise = std::max(0.0, -costs.memory_delta(Kind::W, d) - mb);
    if (mem_limit >= 0 && mb + rise > mem_limit + limits::kMemEps) return Optimum{-1, true, {}, 0};
  }
  Search search(devices, microbatches, costs, mem_limit, options);
  return search.run(options.use_lower_bound ? cost_lower_bound(tasks, costs, mem_limit).cost : 0);
}

} // namespace ppsim
