// V-shape schedules on two chunks per device: ZB-V (Qi et al., ICLR 2024, sec. 6) and V-Half /
// V-Min (Qi et al., Pipeline Parallelism with Controllable Memory, NeurIPS 2024).
#include "schedules/detail/generators.hpp"
#include "schedules/detail/greedy.hpp"
#include "sim/errors.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <tuple>

namespace ppsim {

void check_v_shape(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  if (spec.chunks != 0 && spec.chunks != 2)
    throw ConfigError(
        fmt::format("{}: needs chunks = 2, a V of two stages per device (got chunks={})", name,
                    spec.chunks));
}

namespace {

std::size_t ix(int i) { return static_cast<std::size_t>(i); }
std::size_t ix(long long i) { return static_cast<std::size_t>(i); }

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

// One device's slots for the squeeze, with the memory after each slot, so that a move can be
// checked by replaying only the slots it changes (memory_of's rules: F and f add one; with W
// slots W frees one, without them each empty slot frees one pending W).
class SlotMemory {
public:
  SlotMemory(const Device& dev, int types, bool has_w) : has_w_(has_w) {
    const long long bound = last_slot(dev);
    at_.assign(ix(bound + 1), -1);
    for (int t = 0; t < types; ++t)
      for (const long long slot : dev[ix(t)]) at_[ix(slot)] = t;
    state_.resize(at_.size());
    State s;
    for (std::size_t i = 0; i < at_.size(); ++i) {
      s = step(s, at_[i]);
      state_[i] = s;
    }
  }

  [[nodiscard]] bool empty(long long slot) const { return at_[ix(slot)] < 0; }

  /// Moves the task of type t from slot `from` to the empty slot `to` < from when the device's
  /// memory then stays within `cap` at every slot; false (and nothing changed) otherwise.
  bool try_move(int t, long long from, long long to, int cap) {
    State s = to > 0 ? state_[ix(to - 1)] : State{};
    std::vector<State>& replay = replay_;
    replay.clear();
    std::size_t i = ix(to);
    for (; i < at_.size(); ++i) {
      const int content = i == ix(to) ? t : i == ix(from) ? -1 : at_[i];
      s = step(s, content);
      if (s.cur > cap) return false;
      replay.push_back(s);
      if (i >= ix(from) && s == state_[i]) break;
    }
    at_[ix(to)] = t;
    at_[ix(from)] = -1;
    std::copy(replay.begin(), replay.end(), state_.begin() + static_cast<std::ptrdiff_t>(to));
    return true;
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
  std::vector<int> at_;  ///< type of the task in each slot, -1 when empty
  std::vector<State> state_;
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
Blocks squeeze(Blocks blocks, bool consider_w, std::string_view name) {
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
      if (!slots[ix(d)].empty(s) || !slots[ix(d)].try_move(t, when, s, mem_cap)) continue;
      dev[ix(t)][ix(mb)] = s;
      break;
    }
  }
  if (!consider_w)
    for (auto& dev : blocks) put_w(dev, false);
  return eager_unit(blocks, 5, name);
}

// The V-Half / V-Min order: blocks, two squeezes, W split per chunk into the free slots.
// The V-Half / V-Min order: blocks, two squeezes, W split per chunk into the free slots.
Schedule build_from_blocks(std::string_view name, const ScheduleSpec& spec,
                           const std::vector<std::array<long long, 4>>& block) {
  const int p = spec.devices, m = spec.microbatches;
  Schedule s = make_pipeline(std::string(name), p, m, vshape_placement(p));
  const Topology topo(s);

  Blocks blocks(ix(p));
  for (int d = 0; d < p; ++d) {
    blocks[ix(d)].resize(4);
    for (std::size_t t = 0; t < 4; ++t)
      for (long long j = 0; j < m; ++j) blocks[ix(d)][t].push_back(block[ix(d)][t] + kPeriod * j);
  }
  Blocks r1 = squeeze(blocks, true, name);
  for (auto& dev : r1) dev.resize(4);
  Blocks r2 = squeeze(r1, false, name);
  for (auto& dev : r2) {
    dev.resize(4);
    put_w(dev, true);
  }
  // each device runs its tasks in slot order
  static constexpr std::array<Kind, 6> kKind{Kind::F, Kind::F, Kind::B, Kind::B, Kind::W, Kind::W};
  static constexpr std::array<int, 6> kChunk{0, 1, 1, 0, 1, 0};
  for (int d = 0; d < p; ++d) {
    std::vector<std::tuple<long long, int, int>> tasks;
    for (int t = 0; t < 6; ++t)
      for (std::size_t j = 0; j < r2[ix(d)][ix(t)].size(); ++j)
        tasks.emplace_back(r2[ix(d)][ix(t)][j], t, static_cast<int>(j));
    std::sort(tasks.begin(), tasks.end());
    for (const auto& [slot, t, j] : tasks)
      s.order[ix(d)].push_back(
          Task::make(kKind[ix(t)], topo.device_stages(d)[ix(kChunk[ix(t)])], j));
  }
  return s;
}

} // namespace

// ZB-V, p = 4, m = 8, F = B = W: V placement (device d holds stage d and, on the way back,
// stage 7-d); rank r starts with 2(p-r)-1 chunk-0 F, then interleaves both chunks' F, B, W with
// no bubble at p M_B (cost 48 = ideal).
//   rank0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7B0 7W0 7F1 7B1 7W1 7F2 7B2 0B0 7W2 7F3 ...
//   rank3: 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4B0 3B0 4W0 3W0 4B1 3B1 4B2 3B2 3F4 4F4 ...
// Built by the same greedy as zb-auto on the V placement, every flag combination searched.
// NOTE: any m >= 1 is accepted; below 2p-1 micro-batches the warm-up is shorter than the full
// pattern and some bubble remains.
Schedule make_zb_v(const ScheduleSpec& spec) {
  check_v_shape("zb-v", spec);
  const int p = spec.devices, m = spec.microbatches;
  const Schedule skeleton = make_pipeline("zb-v", p, m, vshape_placement(p));
  const CostModel costs = costs_for(spec, skeleton);
  const double mb = detail::device_microbatch_memory(skeleton, costs);
  const double limit = spec.mem_limit >= 0 ? spec.mem_limit : p * mb;
  if (!std::isfinite(limit))
    throw ConfigError(fmt::format("zb-v: memory limit must be a finite number (got {})", limit));
  // NOTE: with comm, the order the greedy finds for comm 0 (the paper's ZB-V pattern) often
  // beats the one it finds for the real comm, so both join the search as seeds: the result is
  // never worse than either, and the swap search refines the better one under the real costs.
  std::vector<Schedule> seeds{detail::search_best("zb-v", skeleton, costs, limit, {})};
  if (costs.comm > 0) {
    CostModel no_comm = costs;
    no_comm.comm = 0;
    seeds.push_back(detail::search_best("zb-v", skeleton, no_comm, limit, {}));
  }
  return detail::search_best("zb-v", skeleton, costs, limit, seeds);
}

// V-Half, p = 4, m = 8, F = B = W: each device repeats a block of F, f, B, b and two W slots
// every 6 slots, offset so that about (p+2)/2 chunk-pairs are live (peak 3 M_B, cost 53):
//   rank0: 0F0 0F1 0F2 0F3 0F4 7F0 7B0 7W0 7F1 7B1 7W1 7F2 0B0 7B2 7W2 7F3 0W0 0F5 ...
//   rank3: 3F0 4F0 3F1 4F1 3F2 4F2 4B0 4W0 3B0 3W0 3F3 4F3 4B1 4W1 3B1 3W1 3F4 4F4 ...
Schedule make_v_half(const ScheduleSpec& spec) {
  check_v_shape("v-half", spec);
  return build_from_blocks("v-half", spec, v_half_block(spec.devices));
}

// V-Min, p = 4, m = 8, F = B = W: the same construction with tighter offsets, about (p+4)/3
// chunk-pairs live (peak 2 M_B, cost 59):
//   rank0: 0F0 0F1 0F2 7F0 7B0 7W0 7F1 7B1 7W1 0B0 0W0 0F3 7F2 7B2 0B1 7W2 0W1 0F4 ...
//   rank3: 3F0 4F0 3F1 4F1 4B0 3B0 4W0 3W0 3F2 4F2 4B1 3B1 4W1 3W1 3F3 4F3 4B2 3B2 ...
Schedule make_v_min(const ScheduleSpec& spec) {
  check_v_shape("v-min", spec);
  return build_from_blocks("v-min", spec, v_min_block(spec.devices));
}

} // namespace ppsim
