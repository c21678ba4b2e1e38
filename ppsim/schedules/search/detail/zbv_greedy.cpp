// The zero-bubble authors' ZB-V greedy (Qi et al., ICLR 2024, sec. 6; their `v_schedule.py`
// on branch arxiv and `zbv.py` on main), re-implemented on ppsim's V placement: tasks are
// placed and timed in one pass, in integer ticks, with ppsim's per-stage costs.
#include "ppsim/schedules/search/detail/zbv_greedy.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/time.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <utility>

namespace ppsim::detail {

namespace {

/// Passes of one option combination at most: the authors re-run while the largest bubble
/// strictly falls, which in practice stops after 2 or 3 passes.
constexpr int kMaxPasses = 64;

int cat_of(int k) {
  return k / 2;
}
int chunk_of(int k) {
  return k % 2;
}

/// What every V pass keeps of one device while it places tasks.
struct VDevice {
  std::array<int, kVKinds> count{}; ///< tasks placed per kind: the next one's micro-batch
  Ticks cur{0};                     ///< when its last task ends
  Ticks first_start{-1};
  double mem{0};
  std::vector<std::uint8_t> pending; ///< chunks of the B whose W is still to place, FIFO
  std::size_t pending_head{0};
  Ticks work{0};     ///< the durations of all its tasks
  double reserve{0}; ///< room an F leaves for one B's raise (reserve_b)

  [[nodiscard]] bool has_pending() const { return pending_head < pending.size(); }
  /// The chunk of the next W to place.
  [[nodiscard]] int next_w_chunk() const { return pending[pending_head]; }
  /// Kind k of micro-batch count[k] is placed: a B leaves its W to place, a W takes it.
  void count_placed(int k) {
    if (cat_of(k) == 1)
      pending.push_back(static_cast<std::uint8_t>(chunk_of(k)));
    else if (cat_of(k) == 2)
      ++pending_head;
    ++count[ix(k)];
  }
};

/// The devices of a pass on `pb` and the run they fill, set up alike: each device's work and
/// reserve, the run's orders, bubbles and placement sequence sized for every task.
template <class Device>
std::vector<Device> v_devices(const VProblem& pb, bool reserve_b, VRun& run) {
  const int p = pb.devices, m = pb.microbatches;
  std::vector<Device> dev(ix(p));
  run.order.resize(ix(p));
  run.bubble.assign(ix(p), 0);
  run.sequence.reserve(6 * ix(p) * ix(m));
  for (int d = 0; d < p; ++d) {
    VDevice& s = dev[ix(d)];
    run.order[ix(d)].reserve(6 * ix(m));
    s.pending.reserve(2 * ix(m));
    for (int k = 0; k < kVKinds; ++k)
      s.work += pb.duration[ix(d)][ix(k)] * m;
    if (reserve_b)
      s.reserve = std::max({0.0, pb.memory[ix(d)][kB0], pb.memory[ix(d)][kB1]});
  }
  return dev;
}

/// A finished pass's (cost, sum of spans): each device's span from its first start to its end.
template <class Device> Score v_score(const std::vector<Device>& dev) {
  Ticks cost = 0, spans = 0;
  for (const VDevice& s : dev) {
    const Ticks span = s.cur - s.first_start;
    cost = std::max(cost, span);
    spans += span;
  }
  return Score{cost, spans};
}

/// One greedy pass (the authors' try_v_schedule without its recursion).
class Pass {
public:
  Pass(const VProblem& pb, double cap, const ZbvOptions& o, const std::vector<Ticks>* approved,
       Ticks abort_at, WorkBudget* budget = nullptr)
      : pb_(pb), p_(pb.devices), m_(pb.microbatches), cap_(cap), o_(o), approved_(approved),
        abort_at_(abort_at), budget_(budget), dev_(v_devices<Device>(pb, o.reserve_b, run_)),
        ends_(4 * ix(pb.devices) * ix(pb.microbatches), 0) {
    if (approved_ != nullptr && !approved_->empty())
      max_approved_ = *std::max_element(approved_->begin(), approved_->end());
  }

  /// The pass's result, or nullopt when it fails; either way valid() and used() describe it.
  std::optional<VRun> run() {
    if (!complete()) {
      used_.adaptive = true; // a failure is never what the other mode does
      return std::nullopt;
    }
    run_.score = v_score(dev_);
    run_.max_bubble = max_bubble_;
    return std::move(run_);
  }

  [[nodiscard]] const LimitRange& valid() const { return valid_; }
  [[nodiscard]] const VKnobsUsed& used() const { return used_; }

private:
  bool complete() {
    if (!warmup() || !balance() || !rounds())
      return false;
    for (int d = 0; d < p_; ++d)
      while (has_pending(d))
        if (!put_w(d))
          return false;
    for (const Device& s : dev_)
      for (int k = 0; k < kVKinds; ++k)
        if (s.count[ix(k)] != m_)
          return false;
    return true;
  }

  using Device = VDevice;

  // -- memory tests: each one narrows the range of caps that take the same decisions
  bool fits(double x) {
    if (x <= cap_) {
      valid_.from = std::max(valid_.from, x);
      return true;
    }
    valid_.below = std::min(valid_.below, x);
    return false;
  }

  /// Where the authors' code fails: the adaptive pass skips and goes on, theirs stops.
  bool skip() {
    used_.adaptive = true;
    return o_.adaptive;
  }

  Ticks& end_of(int k, int d, int j) { return ends_[(ix(k) * ix(p_) + ix(d)) * ix(m_) + ix(j)]; }
  bool placed(int k, int d, int j) const { return dev_[ix(d)].count[ix(k)] > j; }
  bool has_pending(int d) const { return dev_[ix(d)].has_pending(); }
  bool all_placed(int k, int d) const { return dev_[ix(d)].count[ix(k)] >= m_; }

  /// The cross-device producer of a task of kind k on device d: chunk 0 comes from d - 1,
  /// chunk 1 from d + 1; W and the turns of the V have none.
  int producer_device(int k, int d) const {
    if (cat_of(k) == 2)
      return -1;
    const int src = chunk_of(k) == 0 ? d - 1 : d + 1;
    return src >= 0 && src < p_ ? src : -1;
  }

  /// Whether the next task of kind k on device d has its inputs placed (the authors assert it).
  bool inputs_placed(int k, int d) const {
    const Device& s = dev_[ix(d)];
    const int j = s.count[ix(k)];
    if (j >= m_)
      return false;
    const int cat = cat_of(k), chunk = chunk_of(k);
    // the same-device predecessor: F0 -> F1 -> B0 -> B1 per micro-batch, W after its B
    if (cat < 2 && k > 0 && s.count[ix(k - 1)] <= j)
      return false;
    if (cat == 2 && s.count[ix(2 + chunk)] <= j)
      return false;
    const int src = producer_device(k, d);
    return src < 0 || placed(k, src, j);
  }

  /// The memory after the next task of kind k on device d (plus, for an F, the room it must
  /// leave for a B's raise).
  double memory_with(int k, int d) const {
    const Device& s = dev_[ix(d)];
    return s.mem + pb_.memory[ix(d)][ix(k)] + (cat_of(k) == 0 ? s.reserve : 0.0);
  }

  /// Whether the next task of kind k fits on device d and has its inputs placed.
  bool can_put(int k, int d) { return fits(memory_with(k, d)) && inputs_placed(k, d); }

  /// Places the next task of kind k on device d, as soon as the device and its producer allow.
  /// False where the authors assert (no such task, over the limit, an input not placed).
  bool put(int k, int d) {
    if (!can_put(k, d))
      return false;
    Device& s = dev_[ix(d)];
    const int j = s.count[ix(k)];
    const Ticks dur = pb_.duration[ix(d)][ix(k)];
    const Ticks no_wait = s.cur + dur;
    Ticks end = no_wait;
    if (const int src = producer_device(k, d); src >= 0)
      end = std::max(end, end_of(k, src, j) + pb_.comm + dur);
    // NOTE: as the authors, the wait before a device's first F0 is not bubble
    if (s.count[kF0] > 0 && end > no_wait) {
      run_.bubble[ix(d)] += end - no_wait;
      max_bubble_ = std::max(max_bubble_, run_.bubble[ix(d)]);
      // the device's span is at least its work plus the idle so far
      if ((d == 0 || !o_.abort_on_first_device) && s.work + run_.bubble[ix(d)] >= abort_at_)
        return false;
    }
    if (s.first_start < 0)
      s.first_start = end - dur;
    if (cat_of(k) < 2)
      end_of(k, d, j) = end;
    s.cur = end;
    run_.place(d, k, j, s.mem, pb_.memory[ix(d)][ix(k)]);
    s.count_placed(k);
    ++placed_;
    return true;
  }

  bool put_w(int d) {
    if (!has_pending(d))
      return false;
    return put(kW0 + dev_[ix(d)].next_w_chunk(), d);
  }

  /// Places W until the next task of kind k fits on device d. False when no W is left to
  /// place while it still does not fit.
  bool make_room(int k, int d) {
    while (!fits(memory_with(k, d)))
      if (!has_pending(d) || !put_w(d))
        return false;
    return true;
  }

  Ticks next_w_duration(int d) const {
    const Device& s = dev_[ix(d)];
    return pb_.duration[ix(d)][ix(kW0 + s.next_w_chunk())];
  }

  /// The bubble device d may still accept: the worst device's so far, or the previous pass's
  /// worst minus this device's (the approved bubbles), less what d already has.
  Ticks allowance(int d) const {
    Ticks budget = max_bubble_;
    if (approved_ != nullptr)
      budget = std::max(budget, max_approved_ - (*approved_)[ix(d)]);
    return budget - run_.bubble[ix(d)];
  }

  /// Before the task of kind k on device d: W into the wait for its input while whole W fit,
  /// then one more W when the remaining wait is over the device's allowance and `fill` says so
  /// (`flag`, when given, records that the option decided).
  bool fill_gap(int k, int d, bool fill, bool* flag) {
    const int src = producer_device(k, d);
    // NOTE: with no cross-device producer the authors read end_time[-1] (Python's last slot,
    // a W that is never placed yet at this point): an arrival of -1 in their time unit, here
    // one tick.
    const Ticks arrival = (src >= 0 ? end_of(k, src, dev_[ix(d)].count[ix(k)]) : -1) + pb_.comm;
    if (src >= 0)
      while (has_pending(d) && arrival >= dev_[ix(d)].cur + next_w_duration(d))
        if (!put_w(d))
          return false;
    if (has_pending(d) && arrival - dev_[ix(d)].cur > allowance(d)) {
      if (flag != nullptr)
        *flag = true;
      if (fill && !put_w(d))
        return false;
    }
    return true;
  }

  // -- warm-up: F0 of micro-batch 0 everywhere, then from the last device back as many more F0
  // as memory (keeping room for 2 + 2d chunk activations) and the arrival of F1 from d + 1 allow
  bool warmup() {
    for (int d = 0; d < p_; ++d)
      if (!put(kF0, d))
        return false;
    for (int d = p_ - 1; d >= 0; --d) {
      if (d < p_ - 1) {
        const Ticks arrival = end_of(kF1, d + 1, 0) + pb_.comm;
        const double f0 = pb_.memory[ix(d)][kF0];
        while (true) {
          const Device& s = dev_[ix(d)];
          const bool in_time = s.cur + pb_.duration[ix(d)][kF0] <= arrival && s.count[kF0] < m_;
          const bool more = fits(s.mem + f0 * (o_.warmup_room + 2 * d)) && in_time;
          for (int r = 0; r < 8; ++r)
            if (((s.mem + f0 * (r + 2 * d) <= cap_) && in_time) != more)
              used_.rooms = static_cast<std::uint8_t>(used_.rooms & ~(1u << r));
          if (!more)
            break;
          if (o_.adaptive && !every_f0_fits(d)) {
            used_.adaptive = true;
            break;
          }
          for (int e = 0; e <= d; ++e)
            if (!put(kF0, e))
              return false;
        }
      }
      if (!put(kF1, d))
        return false;
    }
    return true;
  }

  /// Whether devices 0..d each fit one more F0 (and d its F1 after it).
  bool every_f0_fits(int d) {
    for (int e = 0; e <= d; ++e)
      if (dev_[ix(e)].count[kF0] >= m_ || !fits(memory_with(kF0, e)))
        return false;
    return fits(memory_with(kF0, d) + pb_.memory[ix(d)][kF1]);
  }

  // -- balancing: sweeps from the last device down to d, alternating the chunk, until device d
  // has at least as many forwards as d - 1 (main: and more chunk-1 forwards)
  bool balance() {
    int chunk = 0;
    for (int d = 1; d < p_; ++d) {
      const auto total = [&](int e) { return dev_[ix(e)].count[kF0] + dev_[ix(e)].count[kF1]; };
      const auto behind = [&] {
        const int f1 = dev_[ix(d)].count[kF1], prev = dev_[ix(d - 1)].count[kF1];
        const bool extra = f1 <= prev && prev < m_;
        if (total(d) < total(d - 1))
          return true;
        if (extra)
          used_.balance = true;
        return o_.balance == VBalance::main && extra;
      };
      int idle_sweeps = 0;
      while (behind()) {
        bool any = false;
        for (int e = p_ - 1; e >= d; --e) {
          if (all_placed(chunk, e))
            continue;
          if (o_.adaptive && !can_put(chunk, e)) {
            used_.adaptive = true;
            continue;
          }
          if (!put(chunk, e))
            return false;
          any = true;
        }
        chunk = 1 - chunk;
        // NOTE: where the authors' loop would spin forever, the pass fails (adaptive: moves on)
        idle_sweeps = any ? 0 : idle_sweeps + 1;
        if (idle_sweeps >= 2) {
          if (!skip())
            return false;
          break;
        }
      }
    }
    return true;
  }

  // -- steady state: the authors' 2m rounds of one B, then one F, per device (adaptive: as many
  // rounds as it takes)
  bool rounds() {
    const std::size_t total = 6 * ix(p_) * ix(m_);
    for (int r = 0;; ++r) {
      if (r == 2 * m_ && !o_.adaptive)
        return true;
      if (o_.adaptive && all_b_placed())
        return true;
      // NOTE: an adaptive pass may take many rounds that place little, each visiting every
      // device (p = 256, m = 256: 22,724 rounds): they count against the budget too
      if (o_.adaptive && budget_ != nullptr && !budget_->take(p_))
        return false;
      const std::size_t before = placed_;
      if (!b_part() || !f_part())
        return false;
      if (placed_ == before || placed_ >= total)
        return placed_ >= total;
    }
  }

  bool all_b_placed() const {
    for (int d = 0; d < p_; ++d)
      if (!all_placed(kB0, d) || !all_placed(kB1, d))
        return false;
    return true;
  }

  // a round's backward part: every device one B, chunk-1 B from the last device down first,
  // then chunk-0 B from device 0 up, so that each producer is placed before its consumer
  bool b_part() {
    choice_.assign(ix(p_), 0);
    for (int d = 0; d < p_; ++d) {
      const Device& s = dev_[ix(d)];
      int c = 0;
      if (s.count[kB1] < s.count[kB0]) {
        if (d == p_ - 1 || placed(kB1, d + 1, s.count[kB1]) || s.count[kB0] >= m_)
          c = 1;
      }
      choice_[ix(d)] = kB0 + c;
      if (all_placed(kB0 + c, d)) {
        if (!skip())
          return false;
        choice_[ix(d)] = -1;
      }
    }
    // memory before B (only binds when B raises memory, M_W > M_B)
    for (int d = 0; d < p_; ++d) {
      if (choice_[ix(d)] < 0 || make_room(choice_[ix(d)], d))
        continue;
      if (!skip())
        return false;
      choice_[ix(d)] = -1;
    }
    for (int d = p_ - 1; d >= 0; --d)
      if (choice_[ix(d)] == kB1 && !place_b(d, kB1))
        return false;
    for (int d = 0; d < p_; ++d)
      if (choice_[ix(d)] == kB0 && !place_b(d, kB0))
        return false;
    return true;
  }

  bool place_b(int d, int k) {
    if (!inputs_placed(k, d))
      return skip();
    if (!fill_gap(k, d, k == kB1 || o_.fill_b, k == kB0 ? &used_.fill_b : nullptr))
      return false;
    if (o_.adaptive && !can_put(k, d))
      return skip();
    return put(k, d);
  }

  // a round's forward part: each device, from 0 up, at most one F: chunk 1 when its input is
  // placed, else chunk 0 when its input is placed
  bool f_part() {
    for (int d = 0; d < p_; ++d) {
      const Device& s = dev_[ix(d)];
      if (s.count[kF1] >= m_)
        continue;
      int k = -1;
      if (s.count[kF1] >= s.count[kF0]) {
        k = kF0;
      } else if (d == p_ - 1 || placed(kF1, d + 1, s.count[kF1])) {
        k = kF1;
      } else if (s.count[kF0] < m_ && (d == 0 || placed(kF0, d - 1, s.count[kF0]))) {
        k = kF0;
      }
      if (k < 0)
        continue;
      if (!make_room(k, d)) {
        if (!skip())
          return false;
        continue;
      }
      if (!inputs_placed(k, d)) {
        if (!skip())
          return false;
        continue;
      }
      if (!fill_gap(k, d, o_.fill_f, &used_.fill_f))
        return false;
      if (o_.adaptive && !can_put(k, d)) {
        used_.adaptive = true;
        continue;
      }
      if (!put(k, d))
        return false;
    }
    return true;
  }

  const VProblem& pb_;
  int p_, m_;
  double cap_;
  ZbvOptions o_;
  const std::vector<Ticks>* approved_;
  Ticks abort_at_;
  WorkBudget* budget_;
  Ticks max_approved_{0};
  VRun run_; ///< before dev_, which v_devices sets up with it
  std::vector<Device> dev_;
  std::vector<Ticks> ends_; ///< end of F0, F1, B0, B1 of [kind][device][micro-batch]
  std::vector<int> choice_;
  std::size_t placed_{0};
  Ticks max_bubble_{0};
  LimitRange valid_;
  VKnobsUsed used_;
};

LimitRange intersect(const LimitRange& a, const LimitRange& b) {
  return {std::max(a.from, b.from), std::min(a.below, b.below)};
}

} // namespace

VProblem make_v_problem(const Schedule& skeleton, const CostModel& costs) {
  const Topology topo(skeleton);
  VProblem pb;
  pb.devices = skeleton.devices;
  pb.microbatches = skeleton.microbatches;
  pb.comm = costs.comm;
  pb.stage.resize(ix(pb.devices));
  pb.duration.resize(ix(pb.devices));
  pb.memory.resize(ix(pb.devices));
  long double total = 0;
  for (int d = 0; d < pb.devices; ++d) {
    const auto stages = topo.device_stages(d);
    // F of chunk c is the device's stage c; B and W of the greedy's chunk c the other one
    for (int k = 0; k < kVKinds; ++k) {
      const int real_chunk = cat_of(k) == 0 ? chunk_of(k) : 1 - chunk_of(k);
      const int st = stages[ix(real_chunk)];
      const Kind kind = cat_of(k) == 0 ? Kind::F : cat_of(k) == 1 ? Kind::B : Kind::W;
      pb.stage[ix(d)][ix(k)] = st;
      pb.duration[ix(d)][ix(k)] = costs.duration(Task::make(kind, st, 0));
      pb.memory[ix(d)][ix(k)] = costs.memory_delta(kind, st);
      total += static_cast<long double>(pb.duration[ix(d)][ix(k)]) + (cat_of(k) < 2 ? pb.comm : 0);
    }
  }
  total *= static_cast<long double>(pb.microbatches);
  // NOTE: every end time is at most the sum of all durations and messages, and scores add up
  // the spans of all devices; keep them far from the end of Ticks so that bubbles and
  // differences of them cannot overflow either
  check_total_ticks(total, skeleton.name, pb.devices);
  return pb;
}

VOutcome zbv_greedy(const VProblem& problem, double cap, const ZbvOptions& options) {
  // try_v_schedule: re-run with the last pass's bubbles approved while the largest bubble
  // strictly falls; the answer is the last pass before it stopped falling
  VOutcome out;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    const std::vector<Ticks>* approved =
        pass == 0 ? nullptr : &out.passes[static_cast<std::size_t>(out.best)].bubble;
    Pass greedy(problem, cap, options, approved, std::numeric_limits<Ticks>::max());
    std::optional<VRun> r = greedy.run();
    out.valid = intersect(out.valid, greedy.valid());
    const VKnobsUsed& u = greedy.used();
    out.used.fill_b = out.used.fill_b || u.fill_b;
    out.used.fill_f = out.used.fill_f || u.fill_f;
    out.used.balance = out.used.balance || u.balance;
    out.used.adaptive = out.used.adaptive || u.adaptive;
    out.used.rooms = static_cast<std::uint8_t>(out.used.rooms & u.rooms);
    if (!r) { // the authors' assert fails the whole combination
      out.best = -1;
      return out;
    }
    const bool falls =
        out.best < 0 || r->max_bubble < out.passes[static_cast<std::size_t>(out.best)].max_bubble;
    out.passes.push_back(std::move(*r));
    if (!falls)
      break;
    out.best = static_cast<int>(out.passes.size()) - 1;
  }
  return out;
}

std::optional<VRun> zbv_pass(const VProblem& problem, double cap, const ZbvOptions& options,
                             Ticks abort_at, LimitRange* range, VKnobsUsed* used,
                             WorkBudget* budget) {
  Pass greedy(problem, cap, options, nullptr, abort_at, budget);
  std::optional<VRun> r = greedy.run();
  if (range != nullptr)
    *range = greedy.valid();
  if (used != nullptr)
    *used = greedy.used();
  return r;
}

std::optional<VRun> zbv_authors(const VProblem& problem, double cap, VBalance balance) {
  std::optional<VRun> best;
  for (const bool fill_b : {true, false})
    for (const bool fill_f : {true, false}) {
      VOutcome o =
          zbv_greedy(problem, cap, {.fill_b = fill_b, .fill_f = fill_f, .balance = balance});
      const VRun* r = o.result();
      if (r != nullptr && (!best || r->max_bubble < best->max_bubble))
        best = *r;
    }
  return best;
}

Ticks ideal_cost(const VProblem& pb) {
  Ticks most = 0;
  for (const auto& d : pb.duration) {
    Ticks busy = 0;
    for (const Ticks t : d)
      busy += t;
    most = std::max(most, busy * pb.microbatches);
  }
  return most;
}

namespace {

/// A variant already run at one cap: what it decided is what any variant decides that differs
/// only in options this run never used, at any cap in its range (for the room: only at its cap).
struct Ran {
  ZbvOptions options;
  double cap;
  LimitRange valid;
  VKnobsUsed used;
  bool failed{false};

  [[nodiscard]] bool covers(const ZbvOptions& o, double c) const {
    if (!(c >= valid.from && c < valid.below))
      return false;
    if (o.fill_b != options.fill_b && used.fill_b)
      return false;
    if (o.fill_f != options.fill_f && used.fill_f)
      return false;
    if (o.balance != options.balance && used.balance)
      return false;
    if (o.adaptive != options.adaptive && used.adaptive)
      return false;
    if (o.reserve_b != options.reserve_b)
      return false;
    if (o.warmup_room != options.warmup_room &&
        !(c == cap && o.warmup_room >= 0 && o.warmup_room < 8 &&
          (used.rooms >> o.warmup_room & 1u) != 0))
      return false;
    return true;
  }
};

} // namespace

ZbvFound zbv_search(const VProblem& problem, const std::vector<double>& caps,
                    const std::vector<ZbvVariant>& variants, long long swaps_per_cap,
                    const ZbvStops& stops) {
  ZbvFound found;
  const Ticks ideal = std::max(ideal_cost(problem), stops.floor);  // nothing can beat it
  const long long tasks = 6LL * problem.devices * problem.microbatches;
  // a pass places at most every task once: it runs only when the budget has room for that
  // the search ends as soon as its best meets what nothing can beat
  const auto at_ideal = [&] { return found.best && found.best->score.cost <= ideal; };
  const auto room = [&] {
    if (stops.budget == nullptr || stops.budget->take(tasks)) return true;
    found.budget_ended = true;
    return false;
  };
  VProblem no_comm = problem;
  no_comm.comm = 0;
  bool b_raises = false;
  for (const auto& d : problem.memory)
    b_raises = b_raises || d[kB0] > 0 || d[kB1] > 0;
  // runs so far, by (decision comm real / 0) x (the authors' passes / ppsim's adaptive pass)
  std::array<std::vector<Ran>, 4> ran;
  // with swaps, every cap's own best is improved by them; no pass is dropped early, so that a
  // cap's best does not depend on what larger caps found (a larger limit never finds worse)
  const bool swaps = swaps_per_cap > 0;
  const Ticks never = std::numeric_limits<Ticks>::max();
  std::optional<VRun> cap_best;
  const auto consider = [&](VRun&& r, bool comm0, std::size_t variant, double cap) {
    if (comm0)
      r.score = retime(problem, r);
    if (swaps && (!cap_best || r.score < cap_best->score))
      cap_best = r;
    if (!found.best || r.score < found.best->score) {
      found.best = std::move(r);
      found.variant = static_cast<int>(variant);
      found.cap = cap;
    }
  };
  for (auto c_it = caps.rbegin(); c_it != caps.rend(); ++c_it) {
    const double c = *c_it;
    cap_best.reset();
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const ZbvVariant& v = variants[i];
      const bool comm0 = v.comm0 && problem.comm > 0;
      const VProblem& decide = comm0 ? no_comm : problem;
      // NOTE: with swaps a cap's best must not depend on other caps, so nothing is skipped
      const auto covered = [&](const std::vector<Ran>& done, const ZbvOptions& o) {
        return !swaps &&
               std::any_of(done.begin(), done.end(), [&](const Ran& r) { return r.covers(o, c); });
      };
      // the authors' passes with this variant's options
      ZbvOptions faithful = v.options;
      faithful.adaptive = false;
      faithful.reserve_b = false;
      auto& done = ran[comm0 ? 1 : 0];
      bool failed = true;
      if (v.authors && !covered(done, faithful)) {
        if (!room()) return found;
        VOutcome o = zbv_greedy(decide, c, faithful);
        found.passes += static_cast<int>(o.passes.size()) + (o.best < 0 ? 1 : 0);
        if (stops.budget != nullptr && o.passes.size() > 1)  // the re-runs
          stops.budget->charge(tasks * static_cast<long long>(o.passes.size() - 1));
        // NOTE: when only a re-run failed, ppsim's pass would repeat the authors' first one
        failed = o.passes.empty();
        for (VRun& r : o.passes)
          consider(std::move(r), comm0, i, c);
        done.push_back({faithful, c, o.valid, o.used, failed});
      } else if (v.authors) {
        const auto it = std::find_if(done.begin(), done.end(),
                                     [&](const Ran& r) { return r.covers(faithful, c); });
        failed = it->failed;
      }
      if (at_ideal())
        return found;
      if (v.list) {
        if (!room()) return found;
        const Ticks bar = found.best && !swaps && !comm0 ? found.best->score.cost : never;
        std::optional<VRun> r = v_list_pass(decide, c, *v.list, bar);
        ++found.passes;
        if (r)
          consider(std::move(*r), comm0, i, c);
        if (at_ideal())
          return found;
        continue;
      }
      if (!failed)
        continue;
      // where they fail: one adaptive pass, dropped once it cannot beat the best so far
      ZbvOptions adaptive = v.options;
      adaptive.adaptive = true;
      adaptive.reserve_b = b_raises;
      auto& tried = ran[comm0 ? 3 : 2];
      if (covered(tried, adaptive))
        continue;
      if (!room()) return found;
      LimitRange range;
      VKnobsUsed used;
      const Ticks bar = found.best && !swaps ? found.best->score.cost : never;
      // NOTE: a comm-0 pass is timed without comm; comm delays every task, and device 0 starts at
      // 0 either way, so only device 0's span bounds the real cost from below
      adaptive.abort_on_first_device = comm0;
      std::optional<VRun> r = zbv_pass(decide, c, adaptive, bar, &range, &used, stops.budget);
      if (stops.budget != nullptr && stops.budget->ended()) {
        found.budget_ended = true;
        return found;  // the pass did not finish: its range and knobs are not known
      }
      ++found.passes;
      if (r)
        consider(std::move(*r), comm0, i, c);
      tried.push_back({adaptive, c, range, used});
      if (at_ideal())
        return found;
    }
    if (cap_best && improve_by_swaps(problem, *cap_best, c, swaps_per_cap))
      consider(std::move(*cap_best), false, variants.size(), c);
    if (at_ideal())
      return found;
  }
  return found;
}

std::vector<double> ladder_caps(double least, double cap, double step) {
  std::vector<double> caps{least};
  // NOTE: a rung is the cap of the limit k * step, exactly as a limit on the grid is given
  if (step > 0)
    for (double k = std::floor(least / step) + 1; memory_cap(k * step) < cap; ++k)
      caps.push_back(memory_cap(k * step));
  if (cap > caps.back())
    caps.push_back(cap);
  return caps;
}

namespace {

/// The devices by wake time, earliest first and the lowest index among equals (what a scan
/// over the devices in index order finds): a tournament tree, so choosing the next device costs
/// log p instead of p, which made large V passes quadratic (p = 1024, m = 1024: minutes).
class WakeQueue {
public:
  explicit WakeQueue(int devices) {
    while (leaves_ < devices) leaves_ *= 2;
    node_.assign(2 * ix(leaves_), Key{kNone, -1});
  }
  /// The device that wakes first, or -1 when none has a wake time.
  [[nodiscard]] int top() const { return node_[1].first == kNone ? -1 : node_[1].second; }
  void set(int device, Ticks wake) {
    std::size_t n = ix(leaves_ + device);
    node_[n] = Key{wake, device};
    for (; n > 1; n /= 2) node_[n / 2] = std::min(node_[n], node_[n ^ 1]);
  }

private:
  using Key = std::pair<Ticks, int>;
  static constexpr Ticks kNone = std::numeric_limits<Ticks>::max();
  int leaves_{1};
  std::vector<Key> node_;
};

/// ppsim's list scheduler on the V: time moves forward device by device (the device that can
/// act earliest acts); a device runs a backward as soon as one is ready, else a forward that
/// fits in memory, else a W into the wait, else waits for the next input it knows of.
class ListPass {
public:
  ListPass(const VProblem& pb, double cap, const VListOptions& o, Ticks abort_at)
      : pb_(pb), p_(pb.devices), m_(pb.microbatches), cap_(cap), o_(o), abort_at_(abort_at),
        dev_(v_devices<Device>(pb, o.reserve_b, run_)),
        ends_(4 * ix(pb.devices) * ix(pb.microbatches), -1), wakes_(pb.devices) {
    for (int d = 0; d < p_; ++d) wakes_.set(d, 0);
  }

  std::optional<VRun> run() {
    const std::size_t total = 6 * ix(p_) * ix(m_);
    while (placed_ < total) {
      const int d = wakes_.top();
      if (d < 0)
        return std::nullopt; // every device waits for news that never comes
      const int r = decide(d);
      if (r < 0)
        return std::nullopt;
    }
    run_.score = v_score(dev_);
    run_.max_bubble = 0;
    for (const Ticks b : run_.bubble)
      run_.max_bubble = std::max(run_.max_bubble, b);
    return std::move(run_);
  }

private:
  static constexpr Ticks kNever = std::numeric_limits<Ticks>::max();

  struct Device : VDevice {
    Ticks wake{0}; ///< when it looks again
  };

  Ticks& end_of(int k, int d, int j) { return ends_[(ix(k) * ix(p_) + ix(d)) * ix(m_) + ix(j)]; }
  bool has_pending(int d) const { return dev_[ix(d)].has_pending(); }

  /// When the next task of kind k on device d can start (its inputs' arrival), kNever when an
  /// input is not placed yet, -1 when no such task is left or its same-device input is missing.
  Ticks ready(int k, int d) {
    const Device& s = dev_[ix(d)];
    const int j = s.count[ix(k)];
    if (j >= m_)
      return -1;
    if (k > 0 && cat_of(k) < 2 && s.count[ix(k - 1)] <= j)
      return -1;
    if (cat_of(k) == 2)
      return s.count[ix(2 + chunk_of(k))] > j ? s.cur : -1;
    const int src = chunk_of(k) == 0 ? d - 1 : d + 1;
    if (src < 0 || src >= p_)
      return s.cur;
    const Ticks e = end_of(k, src, j);
    return e < 0 ? kNever : std::max(s.cur, e + pb_.comm);
  }

  bool fits(int d, double x) const { return dev_[ix(d)].mem + x <= cap_; }

  void place(int k, int d, Ticks start) {
    Device& s = dev_[ix(d)];
    const int j = s.count[ix(k)];
    const Ticks end = start + pb_.duration[ix(d)][ix(k)];
    if (s.first_start < 0)
      s.first_start = start;
    else
      run_.bubble[ix(d)] += start - s.cur;
    if (cat_of(k) < 2)
      end_of(k, d, j) = end;
    s.cur = end;
    wake(d, end);
    run_.place(d, k, j, s.mem, pb_.memory[ix(d)][ix(k)]);
    s.count_placed(k);
    ++placed_;
    // news for the device that consumes it: it looks again from now on
    if (const int to = cat_of(k) == 2 ? -1 : chunk_of(k) == 0 ? d + 1 : d - 1; to >= 0 && to < p_)
      wake(to, std::min(dev_[ix(to)].wake, std::max(dev_[ix(to)].cur, start)));
    if (s.work + run_.bubble[ix(d)] >= abort_at_)
      failed_ = true;
  }

  /// One decision of device d at its wake time: 1 placed, 0 waits, -1 failed.
  int decide(int d) {
    Device& s = dev_[ix(d)];
    const Ticks t = std::max(s.cur, s.wake);
    Ticks next = kNever; // the earliest known arrival after t
    // a backward: the older micro-batch first, chunk order by option
    int best_b = -1;
    for (const int k : {o_.b1_first ? kB1 : kB0, o_.b1_first ? kB0 : kB1}) {
      const Ticks r = ready(k, d);
      if (r < 0)
        continue;
      if (r > t) {
        next = std::min(next, r);
        continue;
      }
      if (best_b < 0 || s.count[ix(k)] < s.count[ix(best_b)])
        best_b = k;
    }
    if (best_b >= 0 && fits(d, pb_.memory[ix(d)][ix(best_b)])) {
      place(best_b, d, t);
      return failed_ ? -1 : 1;
    }
    if (best_b >= 0 && has_pending(d)) { // B raises memory (M_W > M_B): make room first
      place(kW0 + s.next_w_chunk(), d, t);
      return failed_ ? -1 : 1;
    }
    // a forward that fits, leaving room for a backward's raise
    int best_f = -1;
    bool blocked = false;
    for (const int k : {o_.f1_first ? kF1 : kF0, o_.f1_first ? kF0 : kF1}) {
      const Ticks r = ready(k, d);
      if (r < 0 || r == kNever)
        continue;
      if (k == kF0 && o_.inflight > 0 && s.count[kF0] - s.count[kB1] >= o_.inflight)
        continue;
      if (!fits(d, pb_.memory[ix(d)][ix(k)] + s.reserve)) {
        blocked = blocked || r <= t;
        continue;
      }
      if (r > t) {
        next = std::min(next, r);
        continue;
      }
      if (best_f < 0)
        best_f = k;
    }
    if (best_f >= 0) {
      place(best_f, d, t);
      return failed_ ? -1 : 1;
    }
    // a W into the wait (or to make room)
    if (has_pending(d)) {
      const Ticks w = pb_.duration[ix(d)][ix(kW0 + s.next_w_chunk())];
      if (blocked || next == kNever || o_.eager_w || next - t >= w) {
        place(kW0 + s.next_w_chunk(), d, t);
        return failed_ ? -1 : 1;
      }
    }
    wake(d, next); // kNever: until another device places something
    return 0;
  }

  // Every change of a device's wake time goes through here, so the queue follows it.
  void wake(int d, Ticks t) {
    dev_[ix(d)].wake = t;
    wakes_.set(d, t);
  }

  const VProblem& pb_;
  int p_, m_;
  double cap_;
  VListOptions o_;
  Ticks abort_at_;
  VRun run_; ///< before dev_, which v_devices sets up with it
  std::vector<Device> dev_;
  std::vector<Ticks> ends_;
  WakeQueue wakes_;
  std::size_t placed_{0};
  bool failed_{false};
};

} // namespace

std::optional<VRun> v_list_pass(const VProblem& problem, double cap, const VListOptions& options,
                                Ticks abort_at) {
  return ListPass(problem, cap, options, abort_at).run();
}

VRun v_one_at_a_time(const VProblem& problem) {
  const int p = problem.devices, m = problem.microbatches;
  VRun run;
  run.order.resize(ix(p));
  run.sequence.reserve(6 * ix(p) * ix(m));
  std::vector<double> mem(ix(p), 0);
  const auto put = [&](int k, int d, int j) { run.place(d, k, j, mem[ix(d)], problem.memory[ix(d)][ix(k)]); };
  for (int j = 0; j < m; ++j) {
    for (int d = 0; d < p; ++d)
      put(kF0, d, j);
    for (int d = p - 1; d >= 0; --d)
      put(kF1, d, j);
    for (int d = 0; d < p; ++d) {
      put(kB0, d, j);
      put(kW0, d, j);
    }
    for (int d = p - 1; d >= 0; --d) {
      put(kB1, d, j);
      put(kW1, d, j);
    }
  }
  run.score = retime(problem, run);
  run.bubble.assign(ix(p), 0);
  return run;
}

Score retime(const VProblem& pb, const VRun& run) {
  const int p = pb.devices, m = pb.microbatches;
  std::vector<Ticks> ends(4 * ix(p) * ix(m), 0);
  std::vector<Ticks> cur(ix(p), 0), first(ix(p), -1);
  std::vector<std::size_t> next(ix(p), 0);
  for (const std::int32_t d : run.sequence) {
    const std::uint32_t code = run.order[ix(d)][next[ix(d)]++];
    const int k = v_kind_of(code), j = v_microbatch_of(code);
    Ticks start = cur[ix(d)];
    if (cat_of(k) < 2) {
      const int src = chunk_of(k) == 0 ? d - 1 : d + 1;
      if (src >= 0 && src < p)
        start = std::max(start, ends[(ix(k) * ix(p) + ix(src)) * ix(m) + ix(j)] + pb.comm);
    }
    const Ticks end = start + pb.duration[ix(d)][ix(k)];
    if (cat_of(k) < 2)
      ends[(ix(k) * ix(p) + ix(d)) * ix(m) + ix(j)] = end;
    if (first[ix(d)] < 0)
      first[ix(d)] = start;
    cur[ix(d)] = end;
  }
  Score s;
  for (int d = 0; d < p; ++d) {
    const Ticks span = cur[ix(d)] - first[ix(d)];
    s.cost = std::max(s.cost, span);
    s.spans += span;
  }
  return s;
}

namespace {

/// Times per-device orders as soon as possible; the score, or nullopt when they deadlock.
/// `sequence`, when given, receives the devices in an order that times them (topological).
std::optional<Score> time_orders(const VProblem& pb,
                                 const std::vector<std::vector<std::uint32_t>>& order,
                                 std::vector<Ticks>& ends, std::vector<std::int32_t>* sequence) {
  const int p = pb.devices, m = pb.microbatches;
  ends.assign(4 * ix(p) * ix(m), -1);
  std::vector<Ticks> cur(ix(p), 0), first(ix(p), -1);
  std::vector<std::size_t> next(ix(p), 0);
  if (sequence != nullptr)
    sequence->clear();
  std::size_t left = 0;
  for (const auto& o : order)
    left += o.size();
  while (left > 0) {
    bool progress = false;
    for (int d = 0; d < p; ++d) {
      const auto& o = order[ix(d)];
      for (std::size_t& i = next[ix(d)]; i < o.size(); ++i) {
        const int k = v_kind_of(o[i]), j = v_microbatch_of(o[i]);
        Ticks start = cur[ix(d)];
        if (cat_of(k) < 2) {
          const int src = chunk_of(k) == 0 ? d - 1 : d + 1;
          if (src >= 0 && src < p) {
            const Ticks e = ends[(ix(k) * ix(p) + ix(src)) * ix(m) + ix(j)];
            if (e < 0)
              break; // its input is not timed yet
            start = std::max(start, e + pb.comm);
          }
        }
        const Ticks end = start + pb.duration[ix(d)][ix(k)];
        if (cat_of(k) < 2)
          ends[(ix(k) * ix(p) + ix(d)) * ix(m) + ix(j)] = end;
        if (first[ix(d)] < 0)
          first[ix(d)] = start;
        cur[ix(d)] = end;
        if (sequence != nullptr)
          sequence->push_back(d);
        --left;
        progress = true;
      }
    }
    if (!progress)
      return std::nullopt;
  }
  Score s;
  for (int d = 0; d < p; ++d) {
    const Ticks span = cur[ix(d)] - first[ix(d)];
    s.cost = std::max(s.cost, span);
    s.spans += span;
  }
  return s;
}

// NOTE: the re-timing checks only inputs from other devices, so two tasks of one micro-batch
// (F0 -> F1 at the V's turn, F1 -> B0 at the loss, B -> W) never trade places, nor two of one
// kind (their micro-batch order).
// NOTE: the re-timing checks only inputs from other devices, so two tasks of one micro-batch
// (F0 -> F1 at the V's turn, F1 -> B0 at the loss, B -> W) never trade places, nor two of one
// kind (their micro-batch order).
bool may_swap(std::uint32_t a, std::uint32_t b) {
  return v_kind_of(a) != v_kind_of(b) && v_microbatch_of(a) != v_microbatch_of(b);
}

} // namespace

bool improve_by_swaps(const VProblem& pb, VRun& run, double cap, long long evaluations) {
  std::vector<Ticks> ends;
  bool improved_any = false;
  bool improved = true;
  while (improved && evaluations > 0) {
    improved = false;
    for (std::size_t d = 0; d < run.order.size() && evaluations > 0; ++d) {
      auto& o = run.order[d];
      double mem = 0; // before position i
      for (std::size_t i = 0; i + 1 < o.size() && evaluations > 0; ++i) {
        const auto delta = [&](std::uint32_t code) { return pb.memory[d][ix(v_kind_of(code))]; };
        if (may_swap(o[i], o[i + 1]) && mem + delta(o[i + 1]) <= cap) {
          std::swap(o[i], o[i + 1]);
          --evaluations;
          const auto s = time_orders(pb, run.order, ends, nullptr);
          if (s && *s < run.score) {
            run.score = *s;
            improved = improved_any = true;
          } else {
            std::swap(o[i], o[i + 1]);
          }
        }
        mem += delta(o[i]);
      }
    }
  }
  if (improved_any) {
    (void)time_orders(pb, run.order, ends, &run.sequence);
    double peak = 0;
    for (std::size_t d = 0; d < run.order.size(); ++d) {
      double cur = 0;
      for (const std::uint32_t code : run.order[d]) {
        cur += pb.memory[d][ix(v_kind_of(code))];
        peak = std::max(peak, cur);
      }
    }
    run.peak_memory = peak;
  }
  return improved_any;
}

Schedule to_schedule(const VProblem& problem, const VRun& run, const Schedule& skeleton) {
  static constexpr std::array<Kind, 3> kKind{Kind::F, Kind::B, Kind::W};
  Schedule s = skeleton;
  for (int d = 0; d < problem.devices; ++d) {
    auto& out = s.order[ix(d)];
    out.clear();
    out.reserve(run.order[ix(d)].size());
    for (const std::uint32_t code : run.order[ix(d)]) {
      const int k = v_kind_of(code), j = v_microbatch_of(code);
      out.push_back(Task::make(kKind[ix(cat_of(k))], problem.stage[ix(d)][ix(k)], j));
    }
  }
  return s;
}

} // namespace ppsim::detail
