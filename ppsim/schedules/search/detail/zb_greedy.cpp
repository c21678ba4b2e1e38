// The zero-bubble heuristic (Qi et al., ICLR 2024, sec. 3.1): warm-up forwards, then rounds of
// one F and one B per device with W filling the gaps, placed and timed in the same pass.
#include "ppsim/schedules/search/detail/zb_greedy.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/time.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace ppsim::detail {

namespace {

constexpr int kF = 0, kB = 1, kW = 2;
constexpr std::uint8_t kAllowBit = 1, kPrioritizeBit = 2, kGreedyBit = 4;

} // namespace

std::array<ZbFlags, 8> zb_flag_combinations() {
  std::array<ZbFlags, 8> out{};
  std::size_t i = 0;
  for (const bool allow : {true, false})
    for (const bool prioritize : {true, false})
      for (const bool greedy : {true, false}) out[i++] = ZbFlags{allow, prioritize, greedy};
  return out;
}

ZbProblem::ZbProblem(const Schedule& skeleton, const CostModel& costs, int group)
    : p_(skeleton.devices), v_(skeleton.chunks()), m_(skeleton.microbatches),
      comm_(costs.comm) {
  if (p_ < 1 || m_ < 1 || v_ < 1 || skeleton.stage_device != loop_placement(p_, v_))
    throw ConfigError(fmt::format("{}: the zero-bubble heuristic needs a loop placement with at "
                                  "least one device and micro-batch (got devices={}, chunks={}, "
                                  "microbatches={})",
                                  skeleton.name, p_, v_, m_));
  group_ = group <= 0 ? p_ : std::min(group, m_);
  const int S = p_ * v_;
  dur_.resize(ix(3 * S));
  mem_.resize(ix(3 * S));
  busy_.assign(ix(p_), 0);
  // NOTE: every clock the heuristic computes is a sum of durations and latencies along one
  // chain of tasks, and its scores add up the spans of all devices: bounding the total (times
  // the devices) keeps all of them far from overflow.
  long double total = 0;
  for (int st = 0; st < S; ++st) {
    const Kind kinds[3] = {Kind::F, Kind::B, Kind::W};
    for (int k = 0; k < 3; ++k) {
      dur_[ix(st * 3 + k)] = costs.duration(Task::make(kinds[k], st, 0));
      mem_[ix(st * 3 + k)] = costs.memory_delta(kinds[k], st);
      total += static_cast<long double>(dur_[ix(st * 3 + k)]) * m_;
    }
  }
  total += static_cast<long double>(comm_) * 2 * S * m_;
  check_total_ticks(total, skeleton.name, p_);
  // only now in Ticks: dur x m of 1e12 ms overflowed before the check
  for (int st = 0; st < S; ++st)
    for (int k = 0; k < 3; ++k) busy_[ix(st % p_)] += dur_[ix(st * 3 + k)] * m_;
  // the chunk order: groups of `group_` micro-batches, chunk by chunk (backwards last chunk first)
  const int n = v_ * m_;
  std::vector<int> pos_f(ix(n)), pos_b(ix(n));
  f_chunk_.resize(ix(n));
  f_mb_.resize(ix(n));
  b_chunk_.resize(ix(n));
  b_mb_.resize(ix(n));
  int k = 0;
  for (int g0 = 0; g0 < m_; g0 += group_) {
    const int size = std::min(group_, m_ - g0);
    for (int c = 0; c < v_; ++c)
      for (int o = 0; o < size; ++o, ++k) {
        f_chunk_[ix(k)] = c;
        f_mb_[ix(k)] = g0 + o;
        pos_f[ix(c * m_ + g0 + o)] = k;
        b_chunk_[ix(k)] = v_ - 1 - c;
        b_mb_[ix(k)] = g0 + o;
        pos_b[ix((v_ - 1 - c) * m_ + g0 + o)] = k;
      }
  }
  f_prev_.resize(ix(n));
  b_prev_.resize(ix(n));
  b_own_f_.resize(ix(n));
  for (k = 0; k < n; ++k) {
    const int fc = f_chunk_[ix(k)], fm = f_mb_[ix(k)];
    f_prev_[ix(k)] = fc > 0 ? pos_f[ix((fc - 1) * m_ + fm)] : -1;
    const int bc = b_chunk_[ix(k)], bm = b_mb_[ix(k)];
    b_prev_[ix(k)] = bc < v_ - 1 ? pos_b[ix((bc + 1) * m_ + bm)] : -1;
    b_own_f_[ix(k)] = pos_f[ix(bc * m_ + bm)];
  }
}

Ticks ZbProblem::busiest() const { return *std::max_element(busy_.begin(), busy_.end()); }

double ZbProblem::warmup_memory() const {
  const int base = (v_ - 1) * std::min(group_, m_) + 1;
  double most = 0;
  for (int d = 0; d < p_; ++d) {
    double mem = 0;
    for (int k = 0; k < base; ++k) mem += mem_[ix((f_chunk_[ix(k)] * p_ + d) * 3 + kF)];
    mem += std::max(0.0, mem_[ix((b_chunk_[0] * p_ + d) * 3 + kB)]);
    most = std::max(most, mem);
  }
  return most;
}

Ticks ZbProblem::memory_bound(double limit) const {
  const int S = p_ * v_;
  Ticks bound = busiest();
  Ticks trip = 0;  // from F(st) to the end of B(st), alone on the pipeline
  for (int st = S - 1; st >= 0; --st) {
    trip += dur_[ix(st * 3 + kF)] + dur_[ix(st * 3 + kB)] + (st + 1 < S && p_ > 1 ? 2 * comm_ : 0);
    if (st >= p_) continue;  // first chunks only
    const double mb = mem_[ix(st * 3 + kF)];
    if (mb <= 0) continue;
    const double held = (limit + limits::kMemEps) / mb;
    if (held < 1) return std::numeric_limits<Ticks>::max();
    const Ticks k = held >= m_ ? m_ : static_cast<Ticks>(held);
    bound = std::max(bound, (m_ - 1) / k * trip + trip + dur_[ix(st * 3 + kW)]);
  }
  return bound;
}

// One run. The authors' names: f, b, w count the F, B, W placed on a device (the index of the
// next one in the device's chunk order), e is its clock, bubble its idle after its first F.
// NOTE: kChunked = false is the one-chunk case, with the chunk lookups compiled away.
template <bool kChunked> class ZbRun {
public:
  ZbRun(const ZbProblem& problem, double limit, const ZbFlags& flags, const ZbRules& rules,
        const ZbCutoff& cutoff, ZbRecord* record, ZbWorkspace& ws)
      : P_(problem), p_(problem.p_), n_(problem.v_ * problem.m_), limit_(limit), flags_(flags),
        rules_(rules), cutoff_(cutoff), record_(record) {
    // NOTE: raw pointers into the workspace, so that the hot loop keeps them in registers
    const auto reset = [&](auto& v, auto value) {
      v.assign(ix(p_), value);
      return v.data();
    };
    f_ = reset(ws.f, 0);
    b_ = reset(ws.b, 0);
    w_ = reset(ws.w, 0);
    req_ = reset(ws.req, 0);
    e_ = reset(ws.e, Ticks{0});
    start_ = reset(ws.start, Ticks{0});
    bubble_ = reset(ws.bubble, Ticks{0});
    mem_ = reset(ws.mem, 0.0);
    // only ever read where placed: no need to clear what an earlier run left
    ws.end_f.resize(ix(p_ * n_));
    ws.end_b.resize(ix(p_ * n_));
    end_f_ = ws.end_f.data();
    end_b_ = ws.end_b.data();
    if (record_ != nullptr) {
      record_->order.assign(ix(p_), {});
      record_->end.assign(ix(p_), {});
      for (int d = 0; d < p_; ++d) {
        record_->order[ix(d)].reserve(ix(3 * n_));
        record_->end[ix(d)].reserve(ix(3 * n_));
      }
    }
  }

  ZbOutcome run() {
    ZbOutcome out;
    lb_cost_ = P_.busiest();
    for (const Ticks busy : P_.busy_) lb_spans_ += busy;
    try {
      if (hopeless()) throw Stop{ZbStatus::abandoned};
      warmup();
      for (int i = 1; i < n_; ++i) round(i);
      // end: every device appends its remaining W
      for (int d = 0; d < p_; ++d)
        while (w_[ix(d)] < n_) put(d, kW);
    } catch (const Stop& stop) {
      out.status = stop.status;
    }
    out.peak = peak_;
    out.accepted = accepted_;
    out.placed = placed_;
    out.decisive = decisive_;
    if (out.status != ZbStatus::ok) return out;
    for (int d = 0; d < p_; ++d) {
      const Ticks span = e_[ix(d)] - start_[ix(d)];
      out.cost = std::max(out.cost, span);
      out.spans += span;
    }
    return out;
  }

private:
  struct Stop {
    ZbStatus status;
  };

  int chunk_of(int kind, int k) const {
    if constexpr (!kChunked) return 0;
    return kind == kF ? P_.f_chunk_[ix(k)] : P_.b_chunk_[ix(k)];
  }
  int stage_of(int d, int kind, int k) const { return chunk_of(kind, k) * p_ + d; }
  Ticks dur(int d, int kind, int k) const { return P_.dur_[ix(stage_of(d, kind, k) * 3 + kind)]; }
  double delta(int d, int kind, int k) const {
    return P_.mem_[ix(stage_of(d, kind, k) * 3 + kind)];
  }
  Ticks comm(int from, int to) const { return from != to ? P_.comm_ : 0; }
  std::size_t at(int d, int k) const { return ix(d * n_ + k); }

  // The limit test; what it accepts is recorded, so the caller knows below which limit the run
  // could differ.
  bool fits(double memory) {
    if (memory > limit_ + limits::kMemEps) return false;
    accepted_ = std::max(accepted_, memory);
    return true;
  }

  // The device and index of the F (or B) that F(d, k) (or B(d, k)) needs from another stage;
  // device -1 when it needs none (the first stage's F, the last stage's B).
  std::pair<int, int> f_input(int d, int k) const {
    if (d > 0) return {d - 1, k};
    if constexpr (!kChunked) return {-1, -1};
    const int prev = P_.f_prev_[ix(k)];
    return prev >= 0 ? std::pair{p_ - 1, prev} : std::pair{-1, -1};
  }
  std::pair<int, int> b_input(int d, int k) const {
    if (d < p_ - 1) return {d + 1, k};
    if constexpr (!kChunked) return {-1, -1};
    const int prev = P_.b_prev_[ix(k)];
    return prev >= 0 ? std::pair{0, prev} : std::pair{-1, -1};
  }
  bool f_input_placed(int d, int k) const {
    const auto [pd, pk] = f_input(d, k);
    return pd < 0 || f_[ix(pd)] > pk;
  }
  // When the input of device d's next F (or B) arrives, or -1 when it needs none.
  Ticks f_arrival(int d, int k) const {
    const auto [pd, pk] = f_input(d, k);
    return pd < 0 ? -1 : end_f_[at(pd, pk)] + comm(pd, d);
  }
  Ticks b_arrival(int d, int k) const {
    const auto [pd, pk] = b_input(d, k);
    if (pd < 0) return -1;
    if (b_[ix(pd)] <= pk) throw Stop{ZbStatus::stuck};  // (chunks) not placed by the rounds
    return end_b_[at(pd, pk)] + comm(pd, d);
  }

  // Places device d's next task of `kind` as early as its device and its input allow.
  void put(int d, int kind) {
    if (kind == kF) put_kind<kF, true>(d);
    else if (kind == kB) put_kind<kB, true>(d);
    else put_kind<kW, false>(d);
  }

  // kCheck = false where the caller has already made room (a W always fits: it frees memory,
  // and what it leaves was accepted before).
  template <int kKind, bool kCheck> void put_kind(int d) {
    const std::size_t dd = ix(d);
    int& count = kKind == kF ? f_[dd] : kKind == kB ? b_[dd] : w_[dd];
    const int k = count;
    const int chunk = chunk_of(kKind, k);
    const std::size_t si = ix((chunk * p_ + d) * 3 + kKind);
    const Ticks cost = P_.dur_[si];
    const double dm = P_.mem_[si];
    if (kCheck && !fits(mem_[dd] + dm)) throw Stop{ZbStatus::cannot_fit};
    const Ticks no_bubble = e_[dd] + cost;
    Ticks end = no_bubble;
    if constexpr (kKind == kF) {
      const auto [pd, pk] = f_input(d, k);
      if (pd >= 0) {
        if (f_[ix(pd)] <= pk) throw Stop{ZbStatus::stuck};
        end = std::max(end, end_f_[at(pd, pk)] + comm(pd, d) + cost);
      }
    } else if constexpr (kKind == kB) {
      const auto [pd, pk] = b_input(d, k);
      if (pd >= 0) {
        if (b_[ix(pd)] <= pk) throw Stop{ZbStatus::stuck};
        end = std::max(end, end_b_[at(pd, pk)] + comm(pd, d) + cost);
      } else if (f_[dd] <= (kChunked ? P_.b_own_f_[ix(k)] : k)) {
        throw Stop{ZbStatus::stuck};
      }
    }
    if (f_[dd] > 0) {
      if (end != no_bubble) {
        bubble_[dd] += end - no_bubble;
        max_bubble_ = std::max(max_bubble_, bubble_[dd]);
        lb_cost_ = std::max(lb_cost_, P_.busy_[dd] + bubble_[dd]);
        lb_spans_ += end - no_bubble;
        if (hopeless()) throw Stop{ZbStatus::abandoned};
      }
    } else {
      start_[dd] = end - cost;
    }
    e_[dd] = end;
    if constexpr (kKind == kF) end_f_[at(d, k)] = end;
    if constexpr (kKind == kB) end_b_[at(d, k)] = end;
    mem_[dd] += dm;
    peak_ = std::max(peak_, mem_[dd]);
    ++count;
    ++placed_;
    if (record_ != nullptr) {
      const int mb = kKind == kF ? P_.f_mb_[ix(k)] : P_.b_mb_[ix(k)];
      const Kind kinds[3] = {Kind::F, Kind::B, Kind::W};
      record_->order[dd].push_back(Task::make(kinds[kKind], chunk * p_ + d, mb));
      record_->end[dd].push_back(end);
    }
  }

  bool hopeless() const {
    const ZbCutoff& c = cutoff_;
    return lb_cost_ > c.worse_cost || (lb_cost_ == c.worse_cost && lb_spans_ > c.worse_spans) ||
           lb_cost_ > c.tie_cost || (lb_cost_ == c.tie_cost && lb_spans_ >= c.tie_spans);
  }

  // The memory an F needs: its own, and with rule reserve_b the rise of the device's next B.
  double f_need(int d, int k) const {
    const double own = delta(d, kF, k);
    if (!rules_.reserve_b || b_[ix(d)] >= n_) return own;
    return own + std::max(0.0, delta(d, kB, b_[ix(d)]));
  }

  bool w_pending(int d) const { return w_[ix(d)] < b_[ix(d)]; }

  // The idle a device may still accept: the worst device's bubble minus its own.
  bool within_budget(int d, Ticks gap) const {
    const Ticks room = max_bubble_ - bubble_[ix(d)];
    if (rules_.budget_permille == 1000) return gap <= room;
    return static_cast<long double>(gap) * 1000 <=
           static_cast<long double>(room) * rules_.budget_permille;
  }

  // Before a task whose input arrives at `arrival`: W that end by then, then one more into a
  // shorter gap when the gap is over budget (always) or within it (flag no_bubble_greedy).
  void fill_w(int d, Ticks arrival) {
    while (w_pending(d) && e_[ix(d)] + dur(d, kW, w_[ix(d)]) <= arrival) put(d, kW);
    if (w_pending(d) && e_[ix(d)] < arrival) {
      if (!within_budget(d, arrival - e_[ix(d)])) {
        put(d, kW);
      } else {
        decisive_ |= kGreedyBit;
        if (flags_.no_bubble_greedy) put(d, kW);
      }
    }
  }

  // W (oldest first) until a task needing `need` fits; the authors' "Cannot fit memory".
  void make_room(int d, double need) {
    while (!fits(mem_[ix(d)] + need)) {
      if (!w_pending(d)) throw Stop{ZbStatus::cannot_fit};
      put(d, kW);
    }
  }

  // Whether device 0's warm-up F k has its input among the F the warm-up placed on device p-1.
  // NOTE: with chunks, device 0's F of a later chunk needs device p-1's F of an earlier one; the
  // warm-up places device p-1's first, so device 0's warm-up stops before one it lacks.
  bool loop_keeps_up(int k) const { return !kChunked || P_.f_prev_[ix(k)] < f_[ix(p_ - 1)]; }

  // warm-up: F of the first micro-batch everywhere, extra F while they end before the first B
  // can arrive (and fit), strictly fewer on each later device, then the first B back.
  void warmup() {
    const ZbProblem& P = P_;
    // NOTE: with v chunks, device p-1 needs the last chunk's F of the first micro-batch before
    // its first B: (v-1) * group + 1 F on every device, round robin. One chunk: just F0.
    const int base = (P.v_ - 1) * std::min(P.group_, P.m_) + 1;
    for (int r = 0; r < base; ++r)
      for (int d = 0; d < p_; ++d) put(d, kF);
    std::fill(req_, req_ + p_, 0);
    Ticks last_t = 0;  // when the first B of the device after this one ends, projected
    for (int d = p_ - 1; d >= 0; --d) {
      if (d == p_ - 1) {
        last_t = end_f_[at(d, base - 1)] + dur(d, kB, 0);
        continue;
      }
      double mem = mem_[ix(d)];
      Ticks clock = e_[ix(d)];
      const Ticks arrive = last_t + comm(d + 1, d);
      for (;;) {
        const int k = f_[ix(d)] + req_[ix(d)];
        if (k >= n_) break;
        if (d == 0 && !loop_keeps_up(k)) break;
        const Ticks cost = dur(d, kF, k);
        const bool stop_if_allowed = clock + cost > arrive, stop_otherwise = clock >= arrive;
        if (stop_if_allowed != stop_otherwise) decisive_ |= kAllowBit;
        if (flags_.allow_bubble_before_first_b ? stop_if_allowed : stop_otherwise) break;
        if (!fits(mem + f_need(d, k))) break;
        mem += delta(d, kF, k);
        clock += cost;
        ++req_[ix(d)];
      }
      if (rules_.warmup_offset != 0) {
        int extra = rules_.warmup_offset;
        while (extra < 0 && req_[ix(d)] > 0) {
          --req_[ix(d)];
          ++extra;
        }
        for (; extra > 0; --extra) {
          const int k = f_[ix(d)] + req_[ix(d)];
          if (k >= n_ || (d == 0 && !loop_keeps_up(k)) ||
              !fits(mem + f_need(d, k)))
            break;
          mem += delta(d, kF, k);
          ++req_[ix(d)];
        }
      }
      last_t = std::max(clock, arrive) + dur(d, kB, 0);
    }
    for (int d = 1; d < p_; ++d) {
      while (req_[ix(d)] > 0 && req_[ix(d)] >= req_[ix(d - 1)] && f_[ix(d)] + req_[ix(d)] < n_)
        --req_[ix(d)];
      // NOTE: the authors stop lowering a count that would run all F; when that leaves it above
      // the previous device's, their timing skips a wait for an F not yet placed. Never more
      // than the previous device, so every F's input exists.
      req_[ix(d)] = std::min(req_[ix(d)], f_[ix(d - 1)] + req_[ix(d - 1)] - f_[ix(d)]);
    }
    for (int d = 0; d < p_; ++d)
      for (int r = 0; r < req_[ix(d)]; ++r) put(d, kF);
    for (int d = p_ - 1; d >= 0; --d) put(d, kB);
  }

  // prioritize_b: whether device d, >= 2 F ahead of the next, should skip its F this round
  // because the next device's B is due before the F (and the W it needs) would end, and the
  // idle that leaves is within the budget.
  bool skips_f(int d) {
    // the next device's B arrives after it runs one more F and its B
    const Ticks next_plus_fw = e_[ix(d + 1)] + dur(d + 1, kF, f_[ix(d + 1)]) +
                               dur(d + 1, kB, b_[ix(d + 1)]) + comm(d + 1, d);
    if (e_[ix(d)] >= next_plus_fw) return true;
    const int k = f_[ix(d)];
    Ticks w_cost = 0;
    int w_cnt = 0;
    double mem_with_w = mem_[ix(d)] + f_need(d, k);
    while (!fits(mem_with_w) && w_[ix(d)] + w_cnt < b_[ix(d)]) {
      w_cost += dur(d, kW, w_[ix(d)] + w_cnt);
      mem_with_w += delta(d, kW, w_[ix(d)] + w_cnt);
      ++w_cnt;
    }
    if (e_[ix(d)] + dur(d, kF, k) + w_cost <= next_plus_fw) return false;
    return within_budget(d, next_plus_fw - e_[ix(d)]);
  }

  // Device d's next F, after the W that make room for it and fill the wait for its input.
  void place_f(int d) {
    const int k = f_[ix(d)];
    make_room(d, f_need(d, k));
    const Ticks arrival = f_arrival(d, k);
    if (arrival >= 0) fill_w(d, arrival);
    put_kind<kF, false>(d);  // make_room made room
  }

  // One round: at most one F per device (phases A and B), then one B per device, last first.
  void round(int i) {
    // phase A: which devices take an F
    for (int d = 0; d < p_; ++d) {
      req_[ix(d)] = 0;
      if (f_[ix(d)] >= n_) continue;
      // NOTE: the rule is weighed with the flag off too, so that the run knows whether the flag
      // changed anything (then a run with it flipped would be the same run).
      if (d + 1 < p_ && f_[ix(d)] >= f_[ix(d + 1)] + 2 && skips_f(d)) {
        decisive_ |= kPrioritizeBit;
        if (flags_.prioritize_b) continue;
      }
      req_[ix(d)] = 1;
    }
    // if a device skips its F, so do all before it
    for (int d = p_ - 2; d >= 0; --d) req_[ix(d)] = std::min(req_[ix(d)], req_[ix(d + 1)]);
    // phase B: the F, first device first (each F's input is then placed)
    // NOTE: with one chunk every input is placed by then. With chunks, device 0's F of a later
    // chunk needs device p-1's F of this round: it goes after it, in a second pass (and so on
    // for a device whose input that made wait); W fill the wait.
    // Passes until every F is placed, or one places none (inputs of a later round: skip them).
    bool waiting = true, progress = true;
    while (waiting && progress) {
      waiting = false;
      progress = false;
      for (int d = 0; d < p_; ++d) {
        if (req_[ix(d)] == 0) continue;
        if (!f_input_placed(d, f_[ix(d)])) {
          waiting = true;
          continue;
        }
        place_f(d);
        req_[ix(d)] = 0;
        progress = true;
      }
    }
    // phase C: B i on every device, last first (each B's input is then placed)
    for (int d = p_ - 1; d >= 0; --d) {
      make_room(d, delta(d, kB, i));
      const Ticks arrival = b_arrival(d, i);
      if (arrival >= 0) fill_w(d, arrival);
      // stage 0's B feeds nobody: once its F are done, its W wait no longer
      if (d == 0 && f_[0] == n_ && chunk_of(kB, i) == 0)
        while (w_pending(d)) put(d, kW);
      put_kind<kB, false>(d);  // make_room made room
    }
  }

  const ZbProblem& P_;
  int p_, n_;
  double limit_;
  ZbFlags flags_;
  ZbRules rules_;
  ZbCutoff cutoff_;
  Ticks lb_cost_{0}, lb_spans_{0};  // the least (cost, sum of spans) the run can still end with
  ZbRecord* record_;
  int *f_, *b_, *w_, *req_;
  Ticks *e_, *start_, *bubble_;
  double* mem_;
  Ticks *end_f_, *end_b_;
  Ticks max_bubble_{0};
  double peak_{0};
  double accepted_{0};
  long long placed_{0};
  std::uint8_t decisive_{0};
};

ZbOutcome run_zb(const ZbProblem& problem, double limit, const ZbFlags& flags,
                 const ZbRules& rules, const ZbCutoff& cutoff, ZbRecord* record,
                 ZbWorkspace* workspace) {
  ZbWorkspace local;
  ZbWorkspace& ws = workspace != nullptr ? *workspace : local;
  if (problem.chunks() == 1)
    return ZbRun<false>(problem, limit, flags, rules, cutoff, record, ws).run();
  return ZbRun<true>(problem, limit, flags, rules, cutoff, record, ws).run();
}

Schedule schedule_of(const ZbProblem& problem, ZbRecord record, std::string name) {
  Schedule s = make_pipeline(std::move(name), problem.devices(), problem.microbatches(),
                             loop_placement(problem.devices(), problem.chunks()));
  s.order = std::move(record.order);
  return s;
}

std::optional<ZbChoice> zb_authors_choice(const ZbProblem& problem, double limit) {
  std::optional<ZbChoice> best;
  for (const ZbFlags& flags : zb_flag_combinations()) {
    const ZbOutcome out = run_zb(problem, limit, flags, ZbRules{});
    if (out.status == ZbStatus::ok && (!best || out.cost < best->outcome.cost))
      best = ZbChoice{flags, out};
  }
  return best;
}

} // namespace ppsim::detail
