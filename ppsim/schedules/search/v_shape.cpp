// V-shape schedules on two chunks per device: ZB-V (Qi et al., ICLR 2024, sec. 6) and V-Half /
// V-Min (Qi et al., Pipeline Parallelism with Controllable Memory, NeurIPS 2024).
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/schedules/detail/in_flight.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/schedules/search/detail/zb_auto.hpp"
#include "ppsim/schedules/search/detail/zbv_greedy.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/metrics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <span>
#include <tuple>
#include <utility>

namespace ppsim {

void check_v_shape(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  if (spec.chunks != 0 && spec.chunks != 2)
    throw ConfigError(
        fmt::format("{}: needs chunks = 2, a V of two stages per device (got chunks={})", name,
                    spec.chunks));
  if (2LL * spec.devices * spec.microbatches > limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format("{}: 2 stages x devices={} x microbatches={} is too large to "
                                  "simulate (at most {} stages x micro-batches)",
                                  name, spec.devices, spec.microbatches,
                                  limits::kMaxStageMicrobatches));
}

namespace {

CostModel costs_for(const ScheduleSpec& spec, const Schedule& skeleton) {
  static const CostSpec unit{};
  return cost_model_for(spec.costs != nullptr ? *spec.costs : unit, skeleton);
}

// ---------------------------------------------------------------------------------------------
// The building-block construction of V-Half and V-Min. Each device repeats one block per
// micro-batch every 6 slots (F, f, B, b, and two slots for W at unit chunk costs); the block's
// offsets per device set the memory. The blocks are then squeezed: from the last micro-batch's
// F on, and in the warm-up, each pass moves every task to the earliest free slot its
// dependencies allow without raising the device's peak memory; then W fill the empty slots.
//
// Slot types per device (the authors' order): F = F of chunk 0, f = F of chunk 1, B = B of
// chunk 1 (met first going back), b = B of chunk 0, W (all W, or the W of chunk 1 when W is
// split per chunk), w = W of chunk 0.
enum BlockSlot : int { kF = 0, kf = 1, kB = 2, kb = 3, kW = 4, kw = 5 };

using Times = std::vector<long long>;        // slot of each micro-batch
using Device = std::vector<Times>;           // per slot type
using Blocks = std::vector<Device>;          // per device

constexpr long long kPeriod = 6;

// V-Min: offsets (in slots) of F, f, B, b on device i; about a third of 1F1B's memory.
std::vector<std::array<long long, 4>> v_min_block(int n) {
  const long long gap = n % 3 == 0 ? 2 : 0;
  std::vector<std::array<long long, 4>> out;
  for (long long i = 0; i < n; ++i)
    out.push_back({i, 2LL * n - i - 1, 2LL * n + gap + i, 4LL * n + gap - i - 1});
  return out;
}

// V-Half: offsets of F, f, B, b on device i; about half of 1F1B's memory.
std::vector<std::array<long long, 4>> v_half_block(int n) {
  const long long gap = n % 2 == 0 ? 3 : 0;
  std::vector<std::array<long long, 4>> out;
  for (long long i = 0; i < n; ++i)
    out.push_back({2 * i, 3LL * n - i - 2, 3LL * n + gap + 2 * i - 1, 6LL * n + gap - i - 2});
  return out;
}

long long last_slot(const Device& dev) {
  long long bound = 0;
  for (const auto& t : dev)
    if (!t.empty()) bound = std::max(bound, t.back());
  return bound;
}

// Visits the device's tasks in slot order: fn(slot or -1 for an empty slot, type, mb) for every
// slot 0..last_slot(dev), considering only the first `types` types.
template <class Fn> void walk_slots(const Device& dev, int types, Fn&& fn) {
  const long long bound = last_slot(dev);
  const long long inf = bound + 1;
  std::vector<std::size_t> head(dev.size(), 0);
  for (long long i = 0; i <= bound; ++i) {
    long long next = inf;
    int type = 0;
    for (int t = 0; t < types; ++t) {
      const auto& v = dev[ix(t)];
      const long long x = head[ix(t)] < v.size() ? v[head[ix(t)]] : inf;
      if (x < next) next = x, type = t;
    }
    if (next == i) {
      fn(true, type, static_cast<int>(head[ix(type)]));
      ++head[ix(type)];
    } else {
      fn(false, 0, 0);
    }
  }
}

// Appends W slots: each empty slot takes one W whose B is done (chunk 1's first when split);
// the rest follow the block.
void put_w(Device& dev, bool split) {
  const long long bound = last_slot(dev);
  dev.resize(split ? 6 : 5);
  std::array<int, 2> pending{0, 0};
  std::vector<std::size_t> head(4, 0);
  const long long inf = bound + 1;
  long long i = 0;
  for (i = 0; i <= bound; ++i) {
    long long next = inf;
    int type = 0;
    for (int t = 0; t < 4; ++t) {
      const auto& v = dev[ix(t)];
      const long long x = head[ix(t)] < v.size() ? v[head[ix(t)]] : inf;
      if (x < next) next = x, type = t;
    }
    if (next == i) {
      ++head[ix(type)];
      if (type == kB || type == kb) ++pending[split ? ix(type - kB) : 0];
    } else {
      for (std::size_t k = 0; k < 2; ++k) {
        if (pending[k] > 0) {
          dev[4 + k].push_back(i);
          --pending[k];
          break;
        }
      }
    }
  }
  --i;
  for (std::size_t k = 0; k < 2; ++k)
    for (; pending[k] > 0; --pending[k]) dev[4 + k].push_back(++i);
}

// Peak memory of one device in chunk units: F and f add one, W frees one; without W slots,
// each empty slot frees one pending W.
int memory_of(const Device& dev) {
  const bool has_w = dev.size() > 4;
  const int types = static_cast<int>(std::min<std::size_t>(dev.size(), 5));
  int cur = 0, peak = 0, pending = 0;
  walk_slots(dev, types, [&](bool busy, int type, int) {
    if (busy) {
      if (type == kF || type == kf) ++cur;
      if (type == kW) --cur;
      if (type == kB || type == kb) ++pending;
    } else if (!has_w && pending > 0) {
      --cur;
      --pending;
    }
    peak = std::max(peak, cur);
  });
  return peak;
}

// The global slot order: (slot, device, type, mb) of each task in turn. A pass moves only the
// task it visits, so the order is that of the slots before the pass.
class Cursor {
public:
  using Item = std::tuple<long long, int, int, int>;

  Cursor(const Blocks& b, int types) {
    // a stable counting sort by slot of the tasks listed by (device, type, mb)
    long long bound = 0;
    std::size_t n = 0;
    for (const auto& dev : b)
      for (int t = 0; t < types; ++t) {
        n += dev[ix(t)].size();
        if (!dev[ix(t)].empty()) bound = std::max(bound, dev[ix(t)].back());
      }
    std::vector<std::size_t> start(ix(bound + 2), 0);
    for (const auto& dev : b)
      for (int t = 0; t < types; ++t)
        for (const long long slot : dev[ix(t)]) ++start[ix(slot + 1)];
    for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    items_.resize(n);
    for (std::size_t d = 0; d < b.size(); ++d)
      for (int t = 0; t < types; ++t)
        for (std::size_t mb = 0; mb < b[d][ix(t)].size(); ++mb) {
          const long long slot = b[d][ix(t)][mb];
          items_[start[ix(slot)]++] = {slot, static_cast<int>(d), t, static_cast<int>(mb)};
        }
  }

  Item next() { return items_[next_++]; }
  [[nodiscard]] std::size_t size() const { return items_.size(); }
  [[nodiscard]] const std::vector<Item>& items() const { return items_; }

private:
  std::vector<Item> items_;
  std::size_t next_{0};
};

// The k-th smallest (from 0) of two ascending vectors.
long long kth_of_two(const Times& a, const Times& b, std::size_t k) {
  // the number i taken from a: the largest with a[i-1] <= b[k-i] ... by binary search
  std::size_t lo = k + 1 > b.size() ? k + 1 - b.size() : 0;
  std::size_t hi = std::min(k + 1, a.size());
  while (lo < hi) {  // find the least i in [lo, hi] with a[i] > b[k-i] (or i == hi)
    const std::size_t i = lo + (hi - lo) / 2;
    if (a[i] < b[k - i]) lo = i + 1;
    else hi = i;
  }
  const std::size_t i = lo;  // i from a, k + 1 - i from b
  long long best = std::numeric_limits<long long>::min();
  if (i > 0) best = std::max(best, a[i - 1]);
  if (k + 1 - i > 0) best = std::max(best, b[k - i]);
  return best;
}

// Slots a squeeze replays for one unit of the work budget: a replayed slot takes about an
// eighth of the time of a task placed by a heuristic's pass.
constexpr long long kSlotsPerUnit = 8;

// Values with an add over a range and the first value at least x in a range, in O(log n)
// each. One array: a node holds the most of its range plus its own pending add (so the add is
// the node's value less its children's most).
class MaxAddTree {
public:
  explicit MaxAddTree(const std::vector<int>& values) : n_(values.size()) {
    while (size_ < n_) size_ *= 2;
    val_.assign(2 * size_, std::numeric_limits<int>::min() / 2);
    std::copy(values.begin(), values.end(), val_.begin() + static_cast<std::ptrdiff_t>(size_));
    for (std::size_t i = size_ - 1; i > 0; --i) val_[i] = std::max(val_[2 * i], val_[2 * i + 1]);
  }

  /// Adds d to every value in [l, r).
  void add(std::size_t l, std::size_t r, int d) { add(1, 0, size_, l, r, d); }

  /// The first index in [l, r) whose value is at least x; -1 when none.
  [[nodiscard]] long long first_at_least(std::size_t l, std::size_t r, int x) const {
    return find(1, 0, size_, l, std::min(r, n_), x, 0);
  }

private:
  [[nodiscard]] int own_add(std::size_t node) const {
    return val_[node] - std::max(val_[2 * node], val_[2 * node + 1]);
  }

  void add(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l, std::size_t r, int d) {
    if (r <= nl || nr <= l) return;
    if (l <= nl && nr <= r) {
      val_[node] += d;
      return;
    }
    const int own = own_add(node);
    const std::size_t mid = nl + (nr - nl) / 2;
    add(2 * node, nl, mid, l, r, d);
    add(2 * node + 1, mid, nr, l, r, d);
    val_[node] = own + std::max(val_[2 * node], val_[2 * node + 1]);
  }

  [[nodiscard]] long long find(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l,
                               std::size_t r, int x, int above) const {
    if (r <= nl || nr <= l || val_[node] + above < x) return -1;
    if (nr - nl == 1) return static_cast<long long>(nl);
    const int inner = above + own_add(node);
    const std::size_t mid = nl + (nr - nl) / 2;
    if (const long long i = find(2 * node, nl, mid, l, r, x, inner); i >= 0) return i;
    return find(2 * node + 1, mid, nr, l, r, x, inner);
  }

  std::size_t n_;
  std::size_t size_{1};
  std::vector<int> val_;
};

// One device's slots for the squeeze, with the memory after each slot (memory_of's rules: F and
// f add one; with W slots W frees one, without them each empty slot frees one pending W). With W
// slots memory is a prefix sum, so a move adds +-1 over the slots it passes: a tree checks and
// applies it in O(log slots). Without them a move is checked by replaying the slots it changes.
class SlotMemory {
public:
  SlotMemory(const Device& dev, int types, bool has_w) : has_w_(has_w) {
    const long long bound = last_slot(dev);
    at_.assign(ix(bound + 1), -1);
    for (int t = 0; t < types; ++t)
      for (const long long slot : dev[ix(t)]) at_[ix(slot)] = t;
    State s;
    if (has_w_) {
      std::vector<int> cur(at_.size());
      for (std::size_t i = 0; i < at_.size(); ++i) cur[i] = (s = step(s, at_[i])).cur;
      tree_.emplace(cur);
      return;
    }
    state_.resize(at_.size());
    for (std::size_t i = 0; i < at_.size(); ++i) {
      s = step(s, at_[i]);
      state_[i] = s;
    }
  }

  [[nodiscard]] bool empty(long long slot) const { return at_[ix(slot)] < 0; }
  /// The work of the last try_move: the slots it replayed (with the tree, as many as a unit of
  /// the work budget: its O(log slots) steps take about as long).
  [[nodiscard]] long long last_work() const { return work_; }

  /// Moves the task of type t from slot `from` to the empty slot `to` < from when the device's
  /// memory then stays within `cap` at every slot: returns -1. Otherwise nothing changes and it
  /// returns the first slot i that would be over `cap`; a move to any empty slot in (to, i]
  /// would be over it at i too (so a search for the earliest slot that works goes on at i + 1):
  /// with or without W slots, memory at i is the F before i less the W (or the pending W freed
  /// by empty slots) before i, and moving the task later and the empty slot earlier never frees
  /// more before i.
  long long try_move(int t, long long from, long long to, int cap) {
    work_ = 1;
    if (has_w_) {
      work_ = kSlotsPerUnit;
      // memory changes by one over [to, from): up for F, down for W, not for B
      const int delta = t == kF || t == kf ? 1 : t == kW ? -1 : 0;
      if (delta > 0)
        if (const long long over = tree_->first_at_least(ix(to), ix(from), cap); over >= 0)
          return over;
      if (delta != 0) tree_->add(ix(to), ix(from), delta);
      at_[ix(to)] = t;
      at_[ix(from)] = -1;
      return -1;
    }
    State s = to > 0 ? state_[ix(to - 1)] : State{};
    std::vector<State>& replay = replay_;
    replay.clear();
    std::size_t i = ix(to);
    for (; i < at_.size(); ++i) {
      const int content = i == ix(to) ? t : i == ix(from) ? -1 : at_[i];
      s = step(s, content);
      ++work_;
      if (s.cur > cap) return static_cast<long long>(i);
      replay.push_back(s);
      if (i >= ix(from) && s == state_[i]) break;
    }
    at_[ix(to)] = t;
    at_[ix(from)] = -1;
    std::copy(replay.begin(), replay.end(), state_.begin() + static_cast<std::ptrdiff_t>(to));
    return -1;
  }

private:
  struct State {
    int cur{0};
    int pending{0};
    friend bool operator==(const State&, const State&) = default;
  };

  [[nodiscard]] State step(State s, int content) const {
    if (content < 0) {
      if (!has_w_ && s.pending > 0) --s.cur, --s.pending;
    } else if (content == kF || content == kf) {
      ++s.cur;
    } else if (content == kW) {
      --s.cur;
    } else if (content == kB || content == kb) {
      ++s.pending;
    }
    return s;
  }

  bool has_w_;
  long long work_{0};
  std::vector<int> at_;  ///< type of the task in each slot, -1 when empty
  std::optional<MaxAddTree> tree_;  ///< with W slots: the memory after each slot
  std::vector<State> state_;        ///< without: the memory and pending W after each slot
  std::vector<State> replay_;
};

std::size_t count_tasks(const Blocks& blocks) {
  std::size_t n = 0;
  for (const auto& dev : blocks)
    for (const auto& t : dev) n += t.size();
  return n;
}

[[noreturn]] void internal_error(std::string_view name, std::string_view what) {
  throw ScheduleError(fmt::format("{}: building block construction failed: {}", name, what));
}

// ASAP start slots at unit cost of every task, visiting them in slot order (the paper's
// "squeeze"); the dependencies are the V's: F rightwards, f leftwards, B rightwards, b leftwards.
Blocks eager_unit(const Blocks& blocks, int types, std::string_view name) {
  const int n = static_cast<int>(blocks.size());
  Blocks end(blocks.size());
  for (std::size_t d = 0; d < blocks.size(); ++d) {
    end[d].resize(ix(types));
    for (int t = 0; t < types; ++t) end[d][ix(t)].assign(blocks[d][ix(t)].size(), -1);
  }
  std::vector<long long> last(blocks.size(), 0);
  Cursor cur(blocks, types);
  const auto get = [&](int d, int t, int mb) {
    const long long e = end[ix(d)][ix(t)][ix(mb)];
    if (e < 0) internal_error(name, "a task comes before its dependency");
    return e;
  };
  for (std::size_t k = count_tasks(blocks); k-- > 0;) {
    const auto [slot, d, t, mb] = cur.next();
    (void)slot;
    long long ready = last[ix(d)];
    if ((t == kF || t == kB) && d > 0) ready = std::max(ready, get(d - 1, t, mb));
    if ((t == kf || t == kb) && d + 1 < n) ready = std::max(ready, get(d + 1, t, mb));
    if (t > kF && t < kW) ready = std::max(ready, get(d, t - 1, mb));
    if (mb > 0) ready = std::max(ready, get(d, t, mb - 1));
    end[ix(d)][ix(t)][ix(mb)] = ready + 1;
    last[ix(d)] = ready + 1;
  }
  for (auto& dev : end)
    for (auto& v : dev)
      for (auto& x : v) --x;  // start slots
  return end;
}

// Moves tasks to earlier free slots where dependencies and the device's peak memory allow: in
// the warm-up (only when W are placed) and after the last micro-batch's first F.
Blocks squeeze(Blocks blocks, bool consider_w, std::string_view name, detail::WorkBudget& budget) {
  int types = 4;
  if (consider_w) {
    for (auto& dev : blocks) put_w(dev, false);
    types = 5;
  }
  int mem_cap = 0;
  for (const auto& dev : blocks) mem_cap = std::max(mem_cap, memory_of(dev));
  const int n = static_cast<int>(blocks.size());
  const int m = static_cast<int>(blocks[0][kF].size());
  std::vector<SlotMemory> slots;
  for (const auto& dev : blocks) slots.emplace_back(dev, types, consider_w);
  Cursor cur(blocks, types);
  long long replayed = 0;  // slots replayed and not yet taken from the budget
  int phase = 0;
  for (std::size_t k = count_tasks(blocks); k-- > 0;) {
    const auto [when, d, t, mb] = cur.next();
    auto& dev = blocks[ix(d)];
    if (t == kb && d == 0 && phase == 0) phase = 1;
    if (phase == 1 || (phase == 0 && !consider_w)) {
      if (phase == 1 && t == kF && mb == m - 1) phase = 2;
      continue;
    }
    long long deps = -1;
    if ((t == kF || t == kB) && d > 0) deps = std::max(deps, blocks[ix(d - 1)][ix(t)][ix(mb)]);
    if ((t == kf || t == kb) && d + 1 < n) deps = std::max(deps, blocks[ix(d + 1)][ix(t)][ix(mb)]);
    if (t > kF && t < kW) deps = std::max(deps, dev[ix(t - 1)][ix(mb)]);
    if (t == kW) deps = std::max(deps, kth_of_two(dev[kB], dev[kb], ix(mb)));
    if (mb > 0) deps = std::max(deps, dev[ix(t)][ix(mb - 1)]);
    ++deps;
    if (deps > when) internal_error(name, "a block slot comes before its dependency");
    // NOTE: every slot before `when` holds a task already visited or nothing, so an empty slot
    // there is free
    for (long long s = deps; s < when; ++s) {
      if (!slots[ix(d)].empty(s)) continue;
      const long long over = slots[ix(d)].try_move(t, when, s, mem_cap);
      replayed += slots[ix(d)].last_work();
      const long long units = replayed / kSlotsPerUnit;
      replayed -= units * kSlotsPerUnit;
      if (!budget.take(units))
        throw detail::WorkBudgetError(fmt::format(
            "{}: the building-block construction needs more than {} units of work at "
            "devices={}, microbatches={} (slots its squeeze replays; the bound on one schedule's "
            "work): use fewer devices or micro-batches, or zb-v, which tries it within the bound",
            name, budget.total(), n, m));
      if (over >= 0) {
        s = over;  // every empty slot up to `over` fails as well
        continue;
      }
      dev[ix(t)][ix(mb)] = s;
      break;
    }
  }
  if (!consider_w)
    for (auto& dev : blocks) put_w(dev, false);
  return eager_unit(blocks, 5, name);
}

// The V-Half / V-Min order as a greedy run on `pb`: blocks, two squeezes, W split per chunk
// into the free slots; each device runs its tasks in slot order, and the slots order all tasks
// topologically (a task's slot follows its inputs').
detail::VRun run_from_blocks(std::string_view name, const detail::VProblem& pb,
                             const std::vector<std::array<long long, 4>>& block,
                             detail::WorkBudget& budget) {
  const int p = pb.devices, m = pb.microbatches;
  Blocks blocks(ix(p));
  for (int d = 0; d < p; ++d) {
    blocks[ix(d)].resize(4);
    for (std::size_t t = 0; t < 4; ++t)
      for (long long j = 0; j < m; ++j) blocks[ix(d)][t].push_back(block[ix(d)][t] + kPeriod * j);
  }
  Blocks r1 = squeeze(blocks, true, name, budget);
  for (auto& dev : r1) dev.resize(4);
  Blocks r2 = squeeze(r1, false, name, budget);
  for (auto& dev : r2) {
    dev.resize(4);
    put_w(dev, true);
  }
  // slot types F f B b W w are the greedy's F0 F1 B0 B1 W0 W1
  static constexpr std::array<int, 6> kVKind{detail::kF0, detail::kF1, detail::kB0,
                                             detail::kB1, detail::kW0, detail::kW1};
  detail::VRun run;
  run.order.resize(ix(p));
  const Cursor order(r2, 6);
  std::vector<double> mem(ix(p), 0);
  for (const auto& [slot, d, t, mb] : order.items()) {
    (void)slot;
    const int kind = kVKind[ix(t)];
    run.place(d, kind, mb, mem[ix(d)], pb.memory[ix(d)][ix(kind)]);
  }
  run.score = detail::retime(pb, run);
  run.bubble.assign(ix(p), 0);
  return run;
}

} // namespace

namespace {

// The variants of the greedy that ppsim searches, in order: the authors' four fill_b x fill_f
// combinations with main's and with arxiv's balancing, each with their re-runs (so zb-v is never
// worse than either), then single adaptive passes that won in a measurement over 720 cases
// (p 3..8, m 2p and 3p, six cost profiles, M_W 0.25/0.5/2, limits 0.75p..3p): more warm-up
// room, which matters most below p M_B where the authors' greedy fails, and deciding as if comm
// were 0 (the paper's pattern), which rarely wins and by little.
std::vector<detail::ZbvVariant> search_variants(int devices) {
  using detail::VBalance;
  struct Row {
    VBalance balance;
    int room;
    bool fill_b, fill_f, comm0, authors;
  };
  static constexpr Row kRows[] = {
      {VBalance::main, 2, true, true, false, true},
      {VBalance::main, 2, true, false, false, true},
      {VBalance::main, 2, false, true, false, true},
      {VBalance::main, 2, false, false, false, true},
      {VBalance::arxiv, 2, true, true, false, true},
      {VBalance::arxiv, 2, true, false, false, true},
      {VBalance::arxiv, 2, false, true, false, true},
      {VBalance::arxiv, 2, false, false, false, true},
      {VBalance::arxiv, 3, false, false, false, false},
      {VBalance::main, 4, false, false, false, false},
      {VBalance::main, 3, true, false, false, false},
      {VBalance::main, 2, true, true, true, false},
  };
  std::vector<detail::ZbvVariant> out;
  for (const Row& r : kRows)
    out.push_back({{.fill_b = r.fill_b, .fill_f = r.fill_f, .balance = r.balance,
                    .warmup_room = r.room},
                   r.comm0, r.authors, std::nullopt});
  // ppsim's list scheduler, which the authors' greedy loses to at 1.5p M_B and more, mostly when
  // B costs more than F: as is, with at most 2p micro-batches in flight, without room for B's
  // raise, and with W into short waits
  const int p2 = 2 * devices;
  for (const detail::VListOptions& o :
       {detail::VListOptions{}, detail::VListOptions{.inflight = p2},
        detail::VListOptions{.reserve_b = false}, detail::VListOptions{.eager_w = true}})
    out.push_back({{}, false, false, o});
  return out;
}

using BlockFn = std::vector<std::array<long long, 4>> (*)(int);

// What a V search needs besides its problem: every task of the placement with the costs, for
// the lower bound it may stop at, and the work budget of the schedule being made.
struct VSearch {
  Schedule tasks;
  const CostModel& costs;
  detail::WorkBudget budget;
  bool blocks_skipped{false};  ///< a building-block candidate needed more than the budget
  /// The one micro-batch at a time V of the problem searched: its peak is the least any split
  /// order needs, and it is a candidate that always fits. Built once, on first use (every
  /// search_v of one schedule is of the same problem).
  std::optional<detail::VRun> one_at_a_time;

  [[nodiscard]] const detail::VRun& least(const detail::VProblem& pb) {
    if (!one_at_a_time) one_at_a_time = detail::v_one_at_a_time(pb);
    return *one_at_a_time;
  }

  [[nodiscard]] Ticks floor(double limit) const {
    return cost_lower_bound(tasks, costs, limit).cost;
  }
  // What the run should tell its reader, if anything.
  void note(const ScheduleSpec& spec) const {
    if (spec.notes == nullptr) return;
    if (budget.ended())
      spec.notes->push_back(fmt::format(
          "ended at its work budget ({} units: tasks placed, slots replayed); the best found "
          "is kept, its gap to the lower bound is shown", budget.total()));
    if (blocks_skipped)
      spec.notes->push_back("V-Half and V-Min were not tried: their construction needs more than "
                            "the work budget at this size");
  }
};

detail::VRun blocks_run(std::string_view name, const detail::VProblem& pb, BlockFn block,
                        VSearch& ctx);

// NOTE: swaps are bounded by re-timed tasks, not wall-clock, so the result is deterministic.
constexpr long long kSwapTasks = 1536;          // problems up to this many tasks get swaps
constexpr long long kSwapEvaluations = 200;     // re-timings per cap at most
constexpr long long kSwapBudget = 300'000;      // re-timed tasks per cap at most

// ppsim's V search at `limit`: the greedy's variants on the ladder, then, unless that reached
// the ideal, the V one micro-batch at a time and the building-block schedules of `blocks` that
// fit; the best by (cost, sum of spans, candidate order).
detail::VRun search_v(std::string_view name, const detail::VProblem& pb, double limit,
                      std::span<const std::pair<std::string_view, BlockFn>> blocks, VSearch& ctx) {
  const double least = ctx.least(pb).peak_memory;
  const double cap = detail::memory_cap(limit);
  if (!(cap >= least))
    throw InfeasibleError(fmt::format(
        "{}: memory limit {:g} M_B is below the least that works, {:g} M_B (one micro-batch's "
        "activations on both stages of a device; devices={}, microbatches={})",
        name, limit, least, pb.devices, pb.microbatches));
  // the ladder's rungs: eighths of p M_B, the grid of --mem-limit 1p, 1.125p, ...
  const double step = pb.devices / 8.0;
  // small problems: every cap's best also improved by swaps (bounded re-timings)
  const long long tasks = 6LL * pb.devices * pb.microbatches;
  const long long swaps = tasks <= kSwapTasks ? std::min(kSwapEvaluations, kSwapBudget / tasks) : 0;
  const Ticks floor = std::max(detail::ideal_cost(pb), ctx.floor(limit));
  auto found = detail::zbv_search(pb, detail::ladder_caps(least, cap, step),
                                  search_variants(pb.devices), swaps, {floor, &ctx.budget});
  std::optional<detail::VRun> best = std::move(found.best);
  if (best && best->score.cost <= floor) return std::move(*best);
  const auto consider = [&](detail::VRun&& r) {
    if (r.peak_memory <= cap && (!best || r.score < best->score)) best = std::move(r);
  };
  consider(detail::VRun(ctx.least(pb)));  // it always fits
  // NOTE: on small problems V-Half and V-Min are their block orders improved by swaps at their
  // own peak, which a search at a larger limit may not reach: taken whole, so that zb-v is never
  // worse than either in the memory they use. On large ones they are the block order or the
  // search at their peak, which the ladder above contains.
  for (const auto& [block_name, fn] : blocks) {
    if (ctx.budget.ended()) {  // the search spent it: a construction cannot be finished
      ctx.blocks_skipped = true;
      break;
    }
    try {
      consider(swaps > 0 ? blocks_run(block_name, pb, fn, ctx)
                         : run_from_blocks(block_name, pb, fn(pb.devices), ctx.budget));
    } catch (const detail::WorkBudgetError&) {
      ctx.blocks_skipped = true;  // the rest of the search stands: the budget is spent
      break;
    }
  }
  return std::move(*best);
}

// V-Half or V-Min: the building-block order, or ppsim's V search at the same peak memory when
// that is better under the real costs (the blocks' order is made for unit costs and no comm),
// improved by swaps on small problems.
detail::VRun blocks_run(std::string_view name, const detail::VProblem& pb, BlockFn block,
                        VSearch& ctx) {
  detail::VRun best = run_from_blocks(name, pb, block(pb.devices), ctx.budget);
  const double peak = best.peak_memory;
  detail::VRun searched = search_v(name, pb, peak, {}, ctx);
  if (searched.score < best.score) best = std::move(searched);
  if (const long long tasks = 6LL * pb.devices * pb.microbatches; tasks <= kSwapTasks)
    detail::improve_by_swaps(pb, best, detail::memory_cap(peak),
                             std::min(kSwapEvaluations, kSwapBudget / tasks));
  return best;
}

Schedule make_from_blocks(std::string_view name, const ScheduleSpec& spec, BlockFn block) {
  const int p = spec.devices, m = spec.microbatches;
  const Schedule skeleton = make_pipeline(std::string(name), p, m, vshape_placement(p));
  const CostModel costs = costs_for(spec, skeleton);
  const detail::VProblem pb = detail::make_v_problem(skeleton, costs);
  VSearch ctx{detail::with_every_task(skeleton), costs, detail::WorkBudget(spec.work_budget),
              false, std::nullopt};
  Schedule s = detail::to_schedule(pb, blocks_run(name, pb, block, ctx), skeleton);
  ctx.note(spec);
  s.name = std::string(name);
  return s;
}

} // namespace

// ZB-V, p = 4, m = 8, F = B = W: V placement (device d holds stage d and, on the way back,
// stage 7-d); rank r starts with 2(p-r)-1 chunk-0 F, then interleaves both chunks' F, B, W with
// no bubble at p M_B (cost 48 = ideal).
//   rank0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7B0 7W0 7F1 7B1 7W1 7F2 7B2 0B0 7W2 7F3 ...
//   rank3: 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4B0 3B0 4W0 3W0 4B1 3B1 4B2 3B2 3F4 4F4 ...
// The authors' greedy (detail/zbv_greedy.hpp) under every combination ppsim searches, at every
// memory limit up to the requested one where the greedy decides differently (so a larger
// limit never gives a worse schedule), with the comm-0 order, V-Half, V-Min and a one
// micro-batch at a time V as further candidates: never worse than the authors' ZB-V, and
// feasible down to one micro-batch's memory.
// NOTE: any m >= 1 is accepted; below 2p-1 micro-batches the warm-up is shorter than the full
// pattern and some bubble remains.
double zb_v_memory_limit(const ScheduleSpec& spec) {
  // NOTE: the V's model is cut into 2p pieces, two per ZB-H1 device-stage
  return spec.mem_limit >= 0 ? spec.mem_limit
                             : detail::zb_h1_peak(spec, spec.devices == 1 ? 1 : 2);
}

Schedule make_zb_v(const ScheduleSpec& spec) {
  check_v_shape("zb-v", spec);
  const int p = spec.devices, m = spec.microbatches;
  const Schedule skeleton = make_pipeline("zb-v", p, m, vshape_placement(p));
  const CostModel costs = costs_for(spec, skeleton);
  const double limit = zb_v_memory_limit(spec);
  if (!std::isfinite(limit))
    throw ConfigError(fmt::format("zb-v: memory limit must be a finite number (got {})", limit));
  const detail::VProblem problem = detail::make_v_problem(skeleton, costs);
  static constexpr std::array<std::pair<std::string_view, BlockFn>, 2> kBlocks{
      {{"v-half", &v_half_block}, {"v-min", &v_min_block}}};
  VSearch ctx{detail::with_every_task(skeleton), costs, detail::WorkBudget(spec.work_budget),
              false, std::nullopt};
  // The memory-minimal orders (detail/in_flight.hpp): F and fused BW with k micro-batches in
  // flight hold k micro-batches' activations, where the split B and W of the search hold what W
  // still needs too (B raises memory); k = 1 holds the least any order can.
  const double one = memory_lower_bound(skeleton, costs);
  const double split_least = ctx.least(problem).peak_memory;
  const int k = std::min(detail::in_flight_within(limit, one), m);
  if (k < 1)
    throw InfeasibleError(fmt::format(
        "zb-v: memory limit {:g} M_B is below the least that works, {:g} M_B (one "
        "micro-batch's activations on both stages of a device; devices={}, microbatches={})",
        limit, one, p, m));
  std::optional<Schedule> fused;
  std::optional<detail::OrderTiming> fused_timing;
  if (k < p || !(detail::memory_cap(limit) >= split_least)) {
    fused = detail::in_flight_order(skeleton, costs, k);
    fused_timing = detail::time_order(*fused, costs);
  }
  Schedule s;
  bool fused_won = true;
  if (!(detail::memory_cap(limit) >= split_least)) {
    s = std::move(*fused);
  } else {
    detail::VRun run = search_v("zb-v", problem, limit, kBlocks, ctx);
    fused_won = fused_timing && fused_timing->score < run.score;
    s = fused_won ? std::move(*fused) : detail::to_schedule(problem, run, skeleton);
    ctx.note(spec);
  }
  if (spec.notes != nullptr && fused_won)
    spec.notes->push_back(fmt::format(
        "the best order within the limit runs F and fused BW with at most {} micro-batch{} in "
        "flight (split B and W hold more: the W a B leaves)",
        k, k == 1 ? "" : "es"));
  s.name = "zb-v";
  return s;
}

// V-Half, p = 4, m = 8, F = B = W: each device repeats a block of F, f, B, b and two W slots
// every 6 slots, offset so that about (p+2)/2 chunk-pairs are live (peak 3 M_B, cost 53):
//   rank0: 0F0 0F1 0F2 0F3 0F4 7F0 7B0 7W0 7F1 7B1 7W1 7F2 0B0 7B2 7W2 7F3 0W0 0F5 ...
//   rank3: 3F0 4F0 3F1 4F1 3F2 4F2 4B0 4W0 3B0 3W0 3F3 4F3 4B1 4W1 3B1 3W1 3F4 4F4 ...
Schedule make_v_half(const ScheduleSpec& spec) {
  check_v_shape("v-half", spec);
  return make_from_blocks("v-half", spec, &v_half_block);
}

// V-Min, p = 4, m = 8, F = B = W: the same construction with tighter offsets, about (p+4)/3
// chunk-pairs live (peak 2 M_B, cost 59):
//   rank0: 0F0 0F1 0F2 7F0 7B0 7W0 7F1 7B1 7W1 0B0 0W0 0F3 7F2 7B2 0B1 7W2 0W1 0F4 ...
//   rank3: 3F0 4F0 3F1 4F1 4B0 3B0 4W0 3W0 3F2 4F2 4B1 3B1 4W1 3W1 3F3 4F3 4B2 3B2 ...
Schedule make_v_min(const ScheduleSpec& spec) {
  check_v_shape("v-min", spec);
  return make_from_blocks("v-min", spec, &v_min_block);
}

} // namespace ppsim
