// Overlapped cells of sub-operations and the Combined 1F1B rewrite of an order.
#include "ppsim/sim/overlap.hpp"

#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>

namespace ppsim {

std::vector<TimedOp> chain_of(std::span<const SubOp> ops, Ticks total) {
  std::vector<TimedOp> out;
  out.reserve(ops.size());
  for (const SubOp& op : ops)
    out.push_back({static_cast<Ticks>(std::llround(op.share * static_cast<double>(total))), op.comm});
  return out;
}

namespace {

// Runs the two chains of a cell (overlapped_cell's rules), handing each operation's placement to
// `visit` as it is made; returns when the last one ends.
template <class Visit>
Ticks run_cell(std::span<const TimedOp> first, std::span<const TimedOp> second, int comm_streams,
               Visit&& visit) {
  const std::array<std::span<const TimedOp>, 2> chains{first, second};
  std::array<std::size_t, 2> next{0, 0};
  std::array<Ticks, 2> ready{0, 0};  // when each chain's next operation may start
  // Streams: 0 compute, 1 and 2 the chains' comm streams (one shared when comm_streams == 1).
  std::array<Ticks, 3> free{0, 0, 0};
  const auto stream_of = [&](int c, const TimedOp& op) {
    if (!op.comm) return 0;
    return comm_streams == 1 ? 1 : 1 + c;
  };
  Ticks end = 0;
  for (;;) {
    int pick = -1;
    Ticks pick_start = 0, pick_ready = 0;
    for (int c = 0; c < 2; ++c) {
      if (next[ix(c)] >= chains[ix(c)].size()) continue;
      const TimedOp& op = chains[ix(c)][next[ix(c)]];
      const Ticks start = std::max(ready[ix(c)], free[ix(stream_of(c, op))]);
      // NOTE: the earliest start first; on the same stream at the same start, the operation
      // that was ready first, then the first chain.
      if (pick < 0 || start < pick_start || (start == pick_start && ready[ix(c)] < pick_ready)) {
        pick = c;
        pick_start = start;
        pick_ready = ready[ix(c)];
      }
    }
    if (pick < 0) return end;
    const TimedOp& op = chains[ix(pick)][next[ix(pick)]++];
    const Ticks done = add_ticks(pick_start, op.time);
    const int stream = stream_of(pick, op);
    free[ix(stream)] = done;
    ready[ix(pick)] = done;
    end = std::max(end, done);
    visit(PlacedOp{.start = pick_start, .time = op.time, .chain = pick, .stream = stream});
  }
}

} // namespace

Ticks overlapped_cell(std::span<const TimedOp> first, std::span<const TimedOp> second,
                      int comm_streams) {
  return run_cell(first, second, comm_streams, [](const PlacedOp&) {});
}

std::vector<PlacedOp> place_cell(std::span<const TimedOp> first, std::span<const TimedOp> second,
                                 int comm_streams) {
  std::vector<PlacedOp> out;
  out.reserve(first.size() + second.size());
  run_cell(first, second, comm_streams, [&](const PlacedOp& op) { out.push_back(op); });
  return out;
}

namespace {

bool is_backward(Kind k) { return k == Kind::B || k == Kind::BW; }

constexpr std::size_t none = static_cast<std::size_t>(-1);

// The F each backward of a device's list would be paired with (its index, or -1): the first F
// after it, before the next backward.
std::vector<int> pair_candidates(const std::vector<Task>& tasks) {
  std::vector<int> partner(tasks.size(), -1);
  int open = -1;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Kind k = tasks[i].kind;
    if (k == Kind::F && open >= 0) {
      partner[ix(open)] = static_cast<int>(i);
      open = -1;
    } else if (is_backward(k)) {
      open = static_cast<int>(i);
    }
  }
  return partner;
}

// Runs the combined order without time and parts the cells that would deadlock it
// (combine_forward_backward's comment); `partner` is cut where a cell is parted.
class PairingCheck {
public:
  PairingCheck(const Schedule& s, std::vector<std::vector<int>>& partner)
      : s_(s), topo_(s), index_(s.stages(), s.microbatches), partner_(partner),
        produced_(index_.size(), 0), made_(index_.size(), 0), head_(index_.size(), -1),
        next_waiter_(s.order.size(), -1), waits_on_(s.order.size(), none),
        pos_(s.order.size(), 0), ran_(s.order.size()) {
    for (std::size_t d = 0; d < s.order.size(); ++d) {
      ran_[d].assign(s.order[d].size(), 0);
      for (const Task& t : s.order[d])
        for_each_product(t, [&](const Part& q) {
          if (in_range(q)) produced_[index_(q)] = 1;
        });
    }
  }

  // Returns the number of cells it parted.
  int run() {
    int parted = 0;
    std::vector<int> ready;
    for (int d = static_cast<int>(s_.order.size()) - 1; d >= 0; --d) ready.push_back(d);
    for (;;) {
      while (!ready.empty()) {
        const int d = ready.back();
        ready.pop_back();
        advance(d, ready);
      }
      const int d = device_to_part();
      if (d < 0) break;
      partner_[ix(d)][pos_[ix(d)]] = -1;
      ++parted;
      unwait(d);
      ready.push_back(d);
    }
    return parted;
  }

  // Whether every device ran its whole list.
  [[nodiscard]] bool finished() const {
    for (std::size_t d = 0; d < s_.order.size(); ++d)
      if (pos_[d] < s_.order[d].size()) return false;
    return true;
  }

private:
  [[nodiscard]] bool in_range(const Part& q) const {
    return q.stage >= 0 && q.stage < s_.stages() && q.microbatch >= 0 &&
           q.microbatch < s_.microbatches;
  }

  // The first part the simple task `t` needs that is not made yet (none: it can run).
  [[nodiscard]] std::size_t unmet(const Task& t) const {
    std::size_t first = none;
    if (!topo_.on_route(t.microbatch, t.stage)) return first;
    for_each_dependency(topo_, t, [&](const Part& q) {
      if (first != none || !in_range(q)) return;
      const std::size_t k = index_(q);
      if (produced_[k] != 0 && made_[k] == 0) first = k;
    });
    return first;
  }

  void make(const Task& t, std::vector<int>& ready) {
    for_each_product(t, [&](const Part& q) {
      if (!in_range(q)) return;
      const std::size_t k = index_(q);
      made_[k] = 1;
      for (int w = head_[k]; w >= 0;) {
        const int next = next_waiter_[ix(w)];
        next_waiter_[ix(w)] = -1;
        waits_on_[ix(w)] = none;
        at_unready_f_.erase(w);
        ready.push_back(w);
        w = next;
      }
      head_[k] = -1;
    });
  }

  void wait(int d, std::size_t part) {
    waits_on_[ix(d)] = part;
    next_waiter_[ix(d)] = head_[part];
    head_[part] = d;
  }

  void unwait(int d) {
    const std::size_t part = waits_on_[ix(d)];
    if (part == none) return;
    for (int* w = &head_[part]; *w >= 0; w = &next_waiter_[ix(*w)])
      if (*w == d) {
        *w = next_waiter_[ix(d)];
        break;
      }
    next_waiter_[ix(d)] = -1;
    waits_on_[ix(d)] = none;
    at_unready_f_.erase(d);
  }

  // Runs device d's list from where it stands until it waits or ends.
  void advance(int d, std::vector<int>& ready) {
    const auto& tasks = s_.order[ix(d)];
    std::size_t& pos = pos_[ix(d)];
    auto& ran = ran_[ix(d)];
    while (pos < tasks.size()) {
      if (ran[pos] != 0) {
        ++pos;
        continue;
      }
      const Task& t = tasks[pos];
      const int j = partner_[ix(d)][pos];
      // A cell's F is asked first: a device that waits for one is a cell to part at a
      // standstill (what it waits for is never unmade, so one that waits for its backward's
      // part has its F ready).
      if (j >= 0) {
        if (const std::size_t need = unmet(tasks[ix(j)]); need != none) {
          wait(d, need);
          at_unready_f_.insert(d);
          return;
        }
      }
      if (const std::size_t need = unmet(t); need != none) {
        wait(d, need);
        return;
      }
      make(t, ready);
      if (j >= 0) {
        make(tasks[ix(j)], ready);
        ran[ix(j)] = 1;
      }
      ++pos;
    }
  }

  // When every device waits: the lowest one waiting at a cell whose F is not ready (-1: none,
  // every device is done or the given order deadlocks by itself).
  [[nodiscard]] int device_to_part() const {
    return at_unready_f_.empty() ? -1 : *at_unready_f_.begin();
  }

  const Schedule& s_;
  Topology topo_;
  PartIndex index_;
  std::vector<std::vector<int>>& partner_;
  std::vector<char> produced_;  // made by some task of the order
  std::vector<char> made_;      // made so far
  std::vector<int> head_;       // per part: the first device waiting for it (-1: none)
  std::vector<int> next_waiter_;
  std::vector<std::size_t> waits_on_;
  std::vector<std::size_t> pos_;
  std::vector<std::vector<char>> ran_;  // an F that ran early in a cell
  std::set<int> at_unready_f_;          // devices waiting at a cell for its F's part
};

} // namespace

CombinedOrder combine_forward_backward(const Schedule& schedule) {
  for (const auto& tasks : schedule.order)
    for (const Task& t : tasks)
      if (t.kind == Kind::FB) return {.schedule = schedule};
  if (schedule.slice_count() > 1)
    throw ConfigError("--overlap: Combined 1F1B of a sliced schedule (--slices) is not modelled");
  std::vector<std::vector<int>> partner;
  partner.reserve(schedule.order.size());
  for (const auto& tasks : schedule.order) partner.push_back(pair_candidates(tasks));
  PairingCheck check(schedule, partner);
  CombinedOrder out{.schedule = schedule};
  out.kept_apart = check.run();
  // An order that deadlocks by itself is returned as it is, for the run to say where.
  if (!check.finished()) return {.schedule = schedule};
  for (std::size_t d = 0; d < schedule.order.size(); ++d) {
    const auto& tasks = schedule.order[d];
    std::vector<char> moved(tasks.size(), 0);
    for (const int j : partner[d])
      if (j >= 0) moved[ix(j)] = 1;
    std::vector<Task> combined;
    combined.reserve(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (moved[i] != 0) continue;
      const Task& t = tasks[i];
      const int j = partner[d][i];
      if (j < 0) {
        combined.push_back(t);
        continue;
      }
      const Task& f = tasks[ix(j)];
      combined.push_back(Task::overlapped(f.stage, f.microbatch, t.kind, t.stage, t.microbatch));
      ++out.cells;
    }
    out.schedule.order[d] = std::move(combined);
  }
  return out;
}

} // namespace ppsim
