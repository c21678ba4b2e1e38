// The discrete-event engine. Per device a cursor into its task list; per part the time its
// result exists. The event queue holds task ends, ordered by (time, insertion sequence).
#include "ppsim/sim/simulator.hpp"

#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/task_graph.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <fmt/format.h>
#include <limits>
#include <string_view>

namespace ppsim {

namespace {

struct EndEvent {
  Ticks time;
  std::uint64_t seq;
  int device;
};

// The pending task ends, at most one per device, ordered by (time, insertion sequence): a
// tournament tree over one leaf per device whose nodes hold the smaller key of their subtrees.
// A key packs (time, seq, device) into one unsigned 128-bit number, so setting a leaf replays
// its path to the root with one branch-free minimum per level (log2 P steps whatever the
// times), where a binary heap's sifts take a data-dependent branch per level. Sequence numbers
// are unique, so the order in which ends come out is the (time, seq) order exactly.
class EndQueue {
public:
  explicit EndQueue(int devices) {
    while (leaves_ < devices) leaves_ *= 2;
    node_.assign(2 * ix(leaves_), kEmpty);
  }
  [[nodiscard]] bool empty() const { return node_[1] == kEmpty; }
  /// The device whose task ends first.
  [[nodiscard]] int top() const { return static_cast<int>(node_[1] & kDeviceMask); }
  void set(const EndEvent& e) {
    update(e.device, (static_cast<Key>(e.time) << 64) |
                         (static_cast<Key>(e.seq) << kDeviceBits) |
                         static_cast<Key>(e.device));
  }
  void clear(int device) { update(device, kEmpty); }

private:
  __extension__ typedef unsigned __int128 Key;
  // Devices (limits::kMaxDevices = 4096) take the low 12 bits; sequence numbers (one per run,
  // at most 3 * limits::kMaxStageMicrobatches) the next 52.
  static constexpr int kDeviceBits = 12;
  static_assert(limits::kMaxDevices <= 1 << kDeviceBits);
  static_assert(3 * limits::kMaxStageMicrobatches < (1LL << (64 - kDeviceBits)));
  static constexpr Key kDeviceMask = (Key{1} << kDeviceBits) - 1;
  static constexpr Key kEmpty = ~Key{0};
  void update(int device, Key key) {
    std::size_t n = ix(leaves_ + device);
    node_[n] = key;
    for (; n > 1; n /= 2) {
      const Key sibling = node_[n ^ 1];
      key = sibling < key ? sibling : key;
      node_[n / 2] = key;
    }
  }
  int leaves_{1};
  std::vector<Key> node_;  // [1, leaves): the smallest key of a subtree; [leaves, 2 leaves): leaves
};

// A reusable array of zero-filled T. A first (or larger) request comes from calloc: large ones
// are fresh pages the kernel zeroes on first touch, so creating it costs no pass over the
// memory; a later one of at most the same size is cleared with memset. T must be valid as all
// zero bits.
template <class T> class ZeroedBuffer {
public:
  ZeroedBuffer() = default;
  ZeroedBuffer(const ZeroedBuffer&) = delete;
  ZeroedBuffer& operator=(const ZeroedBuffer&) = delete;
  ~ZeroedBuffer() { std::free(data_); }
  /// n zeroed elements; earlier contents are gone.
  T* reset(std::size_t n) {
    if (n <= capacity_) {
      if (n != 0) std::memset(static_cast<void*>(data_), 0, n * sizeof(T));
      return data_;
    }
    std::free(data_);
    data_ = static_cast<T*>(std::calloc(n, sizeof(T)));
    capacity_ = data_ == nullptr ? 0 : n;
    if (data_ == nullptr) throw std::bad_alloc();
    return data_;
  }

private:
  T* data_{nullptr};
  std::size_t capacity_{0};
};

// Rejects options whose sizes do not match the runs or that name a barrier that does not exist.
void check_options(const SimOptions& o, std::size_t runs, std::size_t stages) {
  const auto sized = [&](std::size_t n, std::string_view what) {
    if (n != 0 && n != runs)
      throw ConfigError(fmt::format("simulator options: {} has {} entries for {} runs", what, n, runs));
  };
  sized(o.pause_after.size(), "pause_after");
  sized(o.barrier_member.size(), "barrier_member");
  sized(o.barrier_gate.size(), "barrier_gate");
  const auto barriers = static_cast<int>(o.barrier_delay.size());
  for (const auto* ids : {&o.barrier_member, &o.barrier_gate})
    for (std::size_t r = 0; r < ids->size(); ++r)
      if ((*ids)[r] < -1 || (*ids)[r] >= barriers)
        throw ConfigError(fmt::format("simulator options: run {} names barrier {} of {}", r,
                                      (*ids)[r], barriers));
  for (Ticks t : o.pause_after)
    if (t < 0) throw ConfigError(fmt::format("simulator options: negative pause {} ns", t));
  for (Ticks t : o.barrier_delay)
    if (t < 0) throw ConfigError(fmt::format("simulator options: negative barrier delay {} ns", t));
  sized(o.durations.size(), "durations");
  if (!o.offload.fraction.empty() && o.offload.fraction.size() != stages)
    throw ConfigError(fmt::format("simulator options: offload has {} fractions for {} stages",
                                  o.offload.fraction.size(), stages));
  for (const double f : o.offload.fraction)
    if (!(f >= 0 && f <= 1))
      throw ConfigError(fmt::format("simulator options: offload fraction {} outside [0, 1]", f));
  if (o.offload.latency < 0 || !(o.offload.ns_per_unit >= 0) ||
      !std::isfinite(o.offload.ns_per_unit))
    throw ConfigError("simulator options: negative or infinite copy time");
  for (Ticks t : o.durations)
    if (t < 0) throw ConfigError(fmt::format("simulator options: negative duration {} ns", t));
  check_comm_options(o.comm);
}

// One record per part, so a lookup touches one cache line. All zero bits is the initial state
// (no result, no waiter), so the records need no initialising pass (ZeroedBuffer).
struct PartState {
  Ticks not_done;  // ~(when the part's result exists), 0 until then
  int producer;    // run that produced it
  int not_waiter;  // ~(first device parked on it, chained through next_waiter), 0 for none
  [[nodiscard]] bool exists() const { return not_done != 0; }
  [[nodiscard]] Ticks done() const { return ~not_done; }
  [[nodiscard]] int waiter() const { return ~not_waiter; }
};

struct DeviceState {
  int cursor{0};  // next run
  int end{0};     // one past its last run
  Ticks free_at{0};
  bool busy{false};
};

} // namespace

// The engine's working memory, kept by a Simulator between runs.
struct Simulator::Workspace {
  ZeroedBuffer<PartState> parts;
  std::vector<DeviceState> device;
  std::vector<int> next_waiter;
  std::vector<std::size_t> part_base;  // per stage: index of its first part
  std::vector<int> prev0, next0;       // a single route's neighbours of each stage
  std::vector<int> barrier_left;
  std::vector<Ticks> barrier_last, barrier_release;
  std::vector<int> barrier_waiter;
  MessageCosts messages;
  // Contention: each part's arrival (set when it is sent), the link of each (route, stage,
  // direction) and when each link is free.
  ZeroedBuffer<Ticks> arrive;
  std::vector<int> link_of;
  std::vector<Ticks> link_free;
  // Offload, per (stage, micro-batch): ~(its O's end), 0 before the O; ~(when its R was asked
  // for before its O existed), 0 for none; ~(index of its R in Timeline::copies), 0 for none.
  // Per stage the M_B units one copy moves and its time; per device when its copy stream is free.
  ZeroedBuffer<Ticks> o_end;
  ZeroedBuffer<Ticks> r_asked;
  ZeroedBuffer<int> r_index;
  std::vector<double> copy_units;
  std::vector<Ticks> copy_time;
  std::vector<Ticks> copy_free;
};

namespace {

// Which optional machinery an instantiation of the engine carries; simulate()'s hot path has
// none of it, so every option branch compiles away there.
struct Features {
  bool options;    // pauses and barriers (SimOptions)
  bool sends;      // work at the sender: blocking sends or contention (SimOptions::comm)
  bool durations;  // per-run durations (SimOptions::durations)
  bool copies;     // activation offload on a copy stream per device (SimOptions::offload)
};

// One run of the engine over a schedule. Every time sum goes through add_ticks, so a run whose
// times do not fit in Ticks is a ConfigError, never a wrapped time that looks like a deadlock.
template <Features kF> class Engine {
public:
  Engine(const Schedule& schedule, const CostModel& costs, const SimOptions* opt,
         Simulator::Workspace& ws)
      : s_(schedule), costs_(costs), opt_(opt), ws_(ws), topo_(schedule) {}

  void run(Timeline& tl) {
    const int P = s_.devices;
    const int S = s_.stages();
    if (P <= 0) throw ScheduleError("schedule: needs at least one device");
    if (P > limits::kMaxDevices)
      throw ConfigError(fmt::format("schedule: {} devices, more than the simulator's limit of {}",
                                    P, limits::kMaxDevices));
    if (static_cast<int>(s_.order.size()) != P)
      throw ScheduleError(
          fmt::format("schedule: {} device task lists for {} devices", s_.order.size(), P));
    if (static_cast<int>(s_.microbatch_route.size()) != s_.microbatches)
      throw ScheduleError("schedule: micro-batch routes do not match the micro-batch count");
    stage_device_ = s_.stage_device.data();
    stage_costs_ = costs_.stage.data();
    if (opt_ != nullptr) check_comm_options(opt_->comm);
    if (static_cast<int>(costs_.stage.size()) == S) {
      ws_.messages = message_costs(costs_, opt_ != nullptr ? opt_->comm.link : LinkModel{});
      forward_time_ = ws_.messages.forward_time.data();
      backward_time_ = ws_.messages.backward_time.data();
    }
    ws_.part_base.resize(ix(S));
    for (int st = 0; st < S; ++st) ws_.part_base[ix(st)] = ix(st) * ix(s_.microbatches) * 3;
    part_base_ = ws_.part_base.data();
    single_route_ = s_.routes.size() == 1;
    if (single_route_) {
      ws_.prev0.assign(ix(S), -1);
      ws_.next0.assign(ix(S), -1);
      const auto& route = s_.routes.front();
      for (std::size_t k = 0; k < route.size(); ++k) {
        if (route[k] < 0 || route[k] >= S) continue;  // validate() reports it
        if (k > 0) ws_.prev0[ix(route[k])] = route[k - 1];
        if (k + 1 < route.size()) ws_.next0[ix(route[k])] = route[k + 1];
      }
      prev0_ = ws_.prev0.data();
      next0_ = ws_.next0.data();
    }

    tl.devices = P;
    tl.device_begin.assign(ix(P) + 1, 0);
    std::size_t n_runs = 0;
    for (int d = 0; d < P; ++d) {
      n_runs += s_.order[ix(d)].size();
      if (n_runs > kMaxRuns)
        throw ConfigError(fmt::format("schedule: more than {} tasks to simulate", kMaxRuns));
      tl.device_begin[ix(d) + 1] = static_cast<int>(n_runs);
    }
    tl.runs.clear();
    tl.runs.reserve(n_runs);
    // Copy the tasks and reject those the engine cannot index (validate() gives the full report)
    // in one pass.
    for (int d = 0; d < P; ++d) {
      for (const Task& t : s_.order[ix(d)]) {
        if (!topo_.on_route(t.microbatch, t.stage) ||
            (t.kind == Kind::FB && !topo_.on_route(t.microbatch2, t.stage2)))
          throw ScheduleError(fmt::format(
              "schedule: device {}: task {} names a stage or micro-batch outside the schedule "
              "(run `ppsim validate` for the full report)",
              d, to_string(t, s_.notation)));
        tl.runs.push_back(TaskRun{t, 0, 0});
      }
    }
    if (static_cast<int>(costs_.stage.size()) != S)
      throw ConfigError(
          fmt::format("cost model has {} stages, the schedule {}", costs_.stage.size(), S));
    runs_ = tl.runs.data();
    tl.sends_done.clear();
    comms_ = &tl.comms;
    tl.comms.clear();
    tl.comms.reserve(n_runs);

    n_parts_ = ix(S) * ix(s_.microbatches) * 3;
    parts_ = ws_.parts.reset(n_parts_);
    ws_.device.assign(ix(P), DeviceState{});
    ws_.next_waiter.assign(ix(P), -1);
    device_ = ws_.device.data();
    next_waiter_ = ws_.next_waiter.data();
    for (int d = 0; d < P; ++d) {
      device_[d].cursor = tl.device_begin[ix(d)];
      device_[d].end = tl.device_begin[ix(d) + 1];
    }
    if constexpr (kF.durations) durations_ = opt_->durations.data();
    if constexpr (kF.sends) {
      blocking_ = opt_->comm.mode == CommMode::Blocking;
      contention_ = opt_->comm.link.contention != Contention::None;
      if (blocking_) {
        tl.sends_done.assign(n_runs, 0);
        sends_done_out_ = tl.sends_done.data();
      }
      if (contention_) {
        arrive_ = ws_.arrive.reset(n_parts_);
        make_links();
      }
    }
    if constexpr (kF.options || kF.sends || kF.durations || kF.copies)
      check_options(*opt_, n_runs, ix(S));
    tl.copies.clear();
    if constexpr (kF.copies) {
      const std::size_t n = ix(S) * ix(s_.microbatches);
      o_end_ = ws_.o_end.reset(n);
      r_asked_ = ws_.r_asked.reset(n);
      r_index_ = ws_.r_index.reset(n);
      ws_.copy_units.assign(ix(S), 0.0);
      ws_.copy_time.assign(ix(S), 0);
      for (int st = 0; st < S; ++st) {
        const double f = opt_->offload.fraction[ix(st)];
        if (f <= 0) continue;
        ws_.copy_units[ix(st)] = f * stage_costs_[st].MB;
        ws_.copy_time[ix(st)] = opt_->offload.copy_time(ws_.copy_units[ix(st)]);
      }
      ws_.copy_free.assign(ix(P), 0);
      copies_ = &tl.copies;
      tl.copies.reserve(2 * n);
    }
    if constexpr (kF.options) {
      const std::size_t nb = opt_->barrier_delay.size();
      ws_.barrier_left.assign(nb, 0);
      ws_.barrier_last.assign(nb, 0);
      ws_.barrier_release.assign(nb, -1);
      ws_.barrier_waiter.assign(nb, -1);
      for (int b : opt_->barrier_member)
        if (b >= 0) ++ws_.barrier_left[ix(b)];
      for (std::size_t b = 0; b < nb; ++b)
        if (ws_.barrier_left[b] == 0) ws_.barrier_release[b] = opt_->barrier_delay[b];
    }

    EndQueue events(P);
    EndEvent ev{};
    for (int d = 0; d < P; ++d)
      if (try_start(d, ev)) events.set(ev);
    while (!events.empty()) {
      const int d = events.top();
      finish(d);
      // The device's next task first, then every device the results woke, in the order they
      // parked: the insertion order that breaks ties between equal times.
      if (try_start(d, ev)) events.set(ev);
      else events.clear(d);
      for (int k = 0; k < n_woken_; ++k) {
        for (int w = woken_[ix(k)]; w >= 0;) {
          const int next = next_waiter_[w];  // try_start(w) may park w again
          if (try_start(w, ev)) events.set(ev);
          w = next;
        }
      }
    }

    bool stuck = false;
    for (int d = 0; d < P; ++d) stuck = stuck || device_[d].cursor != device_[d].end;
    if (stuck) {
      std::vector<int> next(ix(P));
      for (int d = 0; d < P; ++d) next[ix(d)] = device_[d].cursor - tl.device_begin[ix(d)];
      throw ScheduleError(describe_deadlock(s_, next));
    }
  }

private:
  // A cross-device input of the task being started, recorded as a message once it starts. No
  // member initialisers: the engine fills one only when it needs it.
  struct Crossing {
    const PartState* state;
    std::size_t qi;
    Kind kind;
    int stage;
    int microbatch;
    int to_stage;
  };

  // PartIndex's layout (stage-major), with the stage's offset from a table.
  [[nodiscard]] std::size_t part_at(Kind kind, int stage, int mb) const {
    const std::size_t k = kind == Kind::F ? 0 : kind == Kind::B ? 1 : 2;
    return part_base_[stage] + 3 * ix(mb) + k;
  }
  // The stage before / after `stage` on micro-batch mb's route (-1 at the ends).
  [[nodiscard]] int prev_stage(int mb, int stage) const {
    return single_route_ ? prev0_[stage] : topo_.prev_stage(mb, stage);
  }
  [[nodiscard]] int next_stage(int mb, int stage) const {
    return single_route_ ? next0_[stage] : topo_.next_stage(mb, stage);
  }
  // The time of the message carrying part (kind, stage): F forward, B backward.
  [[nodiscard]] Ticks message_time(Kind kind, int stage) const {
    return kind == Kind::F ? forward_time_[stage] : backward_time_[stage];
  }
  // When the message carrying part qi (produced at `done`) arrives.
  [[nodiscard]] Ticks arrival(std::size_t qi, Kind kind, int stage, Ticks done) const {
    if constexpr (kF.sends)
      if (contention_) return arrive_[qi];
    return add_ticks(done, message_time(kind, stage));
  }

  // Contention: one link per directed device pair that carries a message of some route, and
  // for each (route, stage, direction) the link its messages take (-1: none, or within the
  // device).
  void make_links() {
    const int S = s_.stages();
    const auto R = s_.routes.size();
    ws_.link_of.assign(R * ix(S) * 2, -1);
    std::vector<std::pair<int, int>> pairs;  // link id -> (from, to) device
    const auto link = [&](int from, int to) {
      for (std::size_t k = 0; k < pairs.size(); ++k)
        if (pairs[k] == std::pair{from, to}) return static_cast<int>(k);
      pairs.emplace_back(from, to);
      return static_cast<int>(pairs.size()) - 1;
    };
    for (std::size_t r = 0; r < R; ++r) {
      const auto& route = s_.routes[r];
      for (std::size_t k = 0; k < route.size(); ++k) {
        const int st = route[k];
        if (st < 0 || st >= S) continue;
        const int d = stage_device_[st];
        const std::size_t at = (r * ix(S) + ix(st)) * 2;
        if (k + 1 < route.size() && stage_device_[route[k + 1]] != d)
          ws_.link_of[at] = link(d, stage_device_[route[k + 1]]);
        if (k > 0 && stage_device_[route[k - 1]] != d)
          ws_.link_of[at + 1] = link(d, stage_device_[route[k - 1]]);
      }
    }
    ws_.link_free.assign(pairs.size(), 0);
  }

  [[nodiscard]] Ticks duration(const Task& t) const {
    const StageCosts& c = stage_costs_[t.stage];
    switch (t.kind) {
    case Kind::F: return c.F;
    case Kind::B: return c.B;
    case Kind::W: return c.W;
    case Kind::BW: return c.BW;
    case Kind::FB: return costs_.duration(t);
    }
    return 0;
  }

  // What try_start gathers about the inputs of the task it starts.
  struct Inputs {
    Ticks ready;  // when the device is free and every input has arrived
    int n_crossing;
    Crossing crossing[4];  // the cross-device inputs (an FB has at most three inputs)
  };

  // Needs part (kind, stage, mb) for the half on to_stage of device d's next task: false (d
  // parked on it) when it does not exist yet; otherwise `in.ready` covers its arrival.
  [[gnu::always_inline]] bool need(int d, Inputs& in, Kind kind, int stage, int mb,
                                   int to_stage) {
    const std::size_t qi = part_at(kind, stage, mb);
    PartState& st = parts_[qi];
    if (!st.exists()) [[unlikely]] {
      next_waiter_[d] = st.waiter();
      st.not_waiter = ~d;
      return false;
    }
    Ticks avail = st.done();
    if (stage_device_[stage] != d) {
      avail = arrival(qi, kind, stage, avail);
      in.crossing[in.n_crossing++] = Crossing{&st, qi, kind, stage, mb, to_stage};
    }
    in.ready = std::max(in.ready, avail);
    return true;
  }

  // The inputs of one simple half (DESIGN.md), in for_each_dependency_simple's order.
  [[gnu::always_inline]] bool needs(int d, Inputs& in, Kind kind, int stage, int mb) {
    switch (kind) {
    case Kind::F: {
      const int prev = prev_stage(mb, stage);
      return prev < 0 || need(d, in, Kind::F, prev, mb, stage);
    }
    case Kind::B:
    case Kind::BW: {
      const int next = next_stage(mb, stage);
      if (next >= 0 && !need(d, in, Kind::B, next, mb, stage)) return false;
      return need(d, in, Kind::F, stage, mb, stage);
    }
    case Kind::W: return need(d, in, Kind::B, stage, mb, stage);
    case Kind::FB: break;
    }
    return true;
  }

  // Starts device d's next task if every input exists (ev = its end); otherwise parks d on the
  // first missing part (or barrier).
  bool try_start(int d, EndEvent& ev) {
    DeviceState& dev = device_[d];
    if (dev.busy || dev.cursor == dev.end) return false;
    const int r = dev.cursor;
    TaskRun& run = runs_[r];
    const Task& t = run.task;
    Inputs in;
    in.ready = dev.free_at;
    in.n_crossing = 0;
    if (t.kind == Kind::FB) {
      if (!needs(d, in, Kind::F, t.stage, t.microbatch)) return false;
      if (!needs(d, in, t.kind2, t.stage2, t.microbatch2)) return false;
    } else if (!needs(d, in, t.kind, t.stage, t.microbatch)) {
      return false;
    }
    if constexpr (kF.options) {
      const int g = opt_->barrier_gate.empty() ? -1 : opt_->barrier_gate[ix(r)];
      if (g >= 0) {
        if (ws_.barrier_release[ix(g)] < 0) {
          next_waiter_[d] = ws_.barrier_waiter[ix(g)];
          ws_.barrier_waiter[ix(g)] = d;
          return false;
        }
        in.ready = std::max(in.ready, ws_.barrier_release[ix(g)]);
      }
    }
    if constexpr (kF.copies) {
      // The backward waits for its reload; what it waits beyond its other inputs is exposed.
      const auto wait_reload = [&](Kind kind, int stage, int mb) {
        if (kind != Kind::B && kind != Kind::BW) return;
        if (ws_.copy_units[ix(stage)] <= 0) return;
        const std::size_t cp = copy_at(stage, mb);
        if (r_index_[cp] == 0) reload(d, stage, mb, in.ready);  // never asked for: now
        CopyEvent& c = (*copies_)[ix(~r_index_[cp])];
        if (c.end > in.ready) {
          c.exposed = c.end - in.ready;
          in.ready = c.end;
        }
      };
      if (t.kind == Kind::FB) wait_reload(t.kind2, t.stage2, t.microbatch2);
      else wait_reload(t.kind, t.stage, t.microbatch);
    }
    for (int k = 0; k < in.n_crossing; ++k) {
      const Crossing& c = in.crossing[k];
      const Ticks send = c.state->done();
      const Ticks arrive = arrival(c.qi, c.kind, c.stage, send);
      const double bytes = c.kind == Kind::F ? stage_costs_[c.stage].act_bytes
                                             : stage_costs_[c.stage].grad_bytes;
      comms_->push_back(CommEvent{c.state->producer, r, send,
                                  arrive - message_time(c.kind, c.stage), arrive, bytes,
                                  Part{c.kind, c.stage, c.microbatch}, c.to_stage});
    }
    run.start = in.ready;
    if constexpr (kF.durations) run.end = add_ticks(in.ready, durations_[r]);
    else run.end = add_ticks(in.ready, duration(t));
    dev.busy = true;
    ev = EndEvent{run.end, seq_++, d};
    if constexpr (kF.copies) {
      // Prefetch one task ahead: the next task's reload is asked for as this one starts.
      if (r + 1 < dev.end) {
        const Task& n = runs_[r + 1].task;
        if (n.kind == Kind::FB) ask_reload(d, n.kind2, n.stage2, n.microbatch2, run.start);
        else ask_reload(d, n.kind, n.stage, n.microbatch, run.start);
      }
    }
    // The device comes back here after its P - 1 neighbours had their turn: fetch what its next
    // tasks will read now, so the DRAM latency of a hundred interleaved streams hides behind
    // that work (the hardware prefetchers track far fewer).
    if (r + kAhead < dev.end) __builtin_prefetch(&runs_[r + kAhead]);
    const std::size_t ahead = part_at(Kind::F, t.stage, t.microbatch) + 3 * kAhead;
    if (ahead < n_parts_) __builtin_prefetch(&parts_[ahead]);
    return true;
  }

  // Marks a part done at the end of run r and detaches its waiters; with sender-side work,
  // sends it to the device of the stage that needs it.
  void produce(Kind kind, int stage, int mb, int r, Ticks end) {
    const std::size_t qi = part_at(kind, stage, mb);
    PartState& st = parts_[qi];
    st.not_done = ~end;
    st.producer = r;
    if (st.not_waiter != 0) woken_[ix(n_woken_++)] = st.waiter();
    st.not_waiter = 0;
    if constexpr (kF.sends) {
      if (kind == Kind::W) return;
      const bool forward = kind == Kind::F;
      const int to = forward ? next_stage(mb, stage) : prev_stage(mb, stage);
      if (to < 0 || stage_device_[to] == stage_device_[stage]) return;
      Ticks start = end;
      if (contention_) {
        // First sent, first served: ends are processed in time order, so a link takes its
        // messages in the order they were sent.
        const std::size_t at = (ix(s_.microbatch_route[ix(mb)]) * ix(s_.stages()) + ix(stage)) * 2;
        Ticks& free = ws_.link_free[ix(ws_.link_of[at + (forward ? 0 : 1)])];
        start = std::max(start, free);
        free = add_ticks(start, message_time(kind, stage));
        arrive_[qi] = free;
      }
      sends_done_ = std::max(sends_done_, add_ticks(start, message_time(kind, stage)));
    }
  }

  // Offload: the index of (stage, mb) in the per-copy arrays.
  [[nodiscard]] std::size_t copy_at(int stage, int mb) const {
    return ix(stage) * ix(s_.microbatches) + ix(mb);
  }
  // A copy on device d's stream, first issued first served, starting no earlier than `after`.
  CopyEvent& copy(int d, CopyKind kind, int stage, int mb, Ticks issue, Ticks after) {
    Ticks& free = ws_.copy_free[ix(d)];
    const Ticks start = std::max({issue, after, free});
    free = add_ticks(start, ws_.copy_time[ix(stage)]);
    const double units = ws_.copy_units[ix(stage)];
    copies_->push_back(CopyEvent{d, kind, stage, mb, issue, start, free, units,
                                 units * costs_.memory_unit_bytes, 0});
    return copies_->back();
  }
  // The F of (stage, mb) ended at `end` on device d: its offload, then a reload asked for
  // before the offload existed.
  void offload(int d, int stage, int mb, Ticks end) {
    if (ws_.copy_units[ix(stage)] <= 0) return;
    const std::size_t cp = copy_at(stage, mb);
    o_end_[cp] = ~copy(d, CopyKind::O, stage, mb, end, end).end;
    if (r_asked_[cp] != 0) reload(d, stage, mb, ~r_asked_[cp]);
  }
  void reload(int d, int stage, int mb, Ticks issue) {
    const std::size_t cp = copy_at(stage, mb);
    const Ticks o_end = ~o_end_[cp];
    copy(d, CopyKind::R, stage, mb, issue, o_end);
    r_index_[cp] = ~static_cast<int>(copies_->size() - 1);
  }
  // The backward half (kind, stage, mb) asks for its reload at `issue`; before its offload
  // exists (its F is the task before it) the reload follows the offload.
  void ask_reload(int d, Kind kind, int stage, int mb, Ticks issue) {
    if (kind != Kind::B && kind != Kind::BW) return;
    if (ws_.copy_units[ix(stage)] <= 0) return;
    const std::size_t cp = copy_at(stage, mb);
    if (r_index_[cp] != 0) return;
    if (o_end_[cp] == 0) r_asked_[cp] = ~issue;
    else reload(d, stage, mb, issue);
  }

  void produce_half(Kind kind, int stage, int mb, int r, Ticks end) {
    switch (kind) {
    case Kind::F: produce(Kind::F, stage, mb, r, end); break;
    case Kind::B: produce(Kind::B, stage, mb, r, end); break;
    case Kind::W: produce(Kind::W, stage, mb, r, end); break;
    case Kind::BW:
      produce(Kind::B, stage, mb, r, end);
      produce(Kind::W, stage, mb, r, end);
      break;
    case Kind::FB: break;
    }
  }

  // Device d's running task ends: its results exist, its waiters are collected in woken_.
  void finish(int d) {
    DeviceState& dev = device_[d];
    const int r = dev.cursor;
    const TaskRun& run = runs_[r];
    const Task& t = run.task;
    n_woken_ = 0;
    if constexpr (kF.sends) sends_done_ = run.end;
    if (t.kind == Kind::FB) {
      produce_half(Kind::F, t.stage, t.microbatch, r, run.end);
      produce_half(t.kind2, t.stage2, t.microbatch2, r, run.end);
    } else {
      produce_half(t.kind, t.stage, t.microbatch, r, run.end);
    }
    if constexpr (kF.copies)
      if (t.kind == Kind::F || t.kind == Kind::FB) offload(d, t.stage, t.microbatch, run.end);
    dev.busy = false;
    dev.free_at = run.end;
    if constexpr (kF.sends) {
      if (blocking_) {
        dev.free_at = sends_done_;  // isend + wait: the stream waits for its messages
        sends_done_out_[r] = sends_done_;
      }
    }
    if constexpr (kF.options) {
      if (!opt_->pause_after.empty())
        dev.free_at = add_ticks(dev.free_at, opt_->pause_after[ix(r)]);
      const int b = opt_->barrier_member.empty() ? -1 : opt_->barrier_member[ix(r)];
      if (b >= 0) {
        ws_.barrier_last[ix(b)] = std::max(ws_.barrier_last[ix(b)], run.end);
        if (--ws_.barrier_left[ix(b)] == 0) {
          ws_.barrier_release[ix(b)] = add_ticks(ws_.barrier_last[ix(b)], opt_->barrier_delay[ix(b)]);
          if (ws_.barrier_waiter[ix(b)] >= 0) woken_[ix(n_woken_++)] = ws_.barrier_waiter[ix(b)];
          ws_.barrier_waiter[ix(b)] = -1;
        }
      }
    }
    ++dev.cursor;
  }

  static constexpr std::size_t kMaxRuns = 3 * limits::kMaxStageMicrobatches;
  static constexpr int kAhead = 4;  // runs (and micro-batches) a device's prefetch looks ahead

  const Schedule& s_;
  const CostModel& costs_;
  const SimOptions* opt_;
  Simulator::Workspace& ws_;
  Topology topo_;
  // The workspace's arrays, as raw pointers for the hot loop.
  const int* stage_device_{nullptr};
  const StageCosts* stage_costs_{nullptr};
  const Ticks* forward_time_{nullptr};
  const Ticks* backward_time_{nullptr};
  const Ticks* durations_{nullptr};
  bool blocking_{false};
  bool contention_{false};
  Ticks* arrive_{nullptr};
  Ticks sends_done_{0};         // the latest delivery of the ending run's messages
  Ticks* sends_done_out_{nullptr};
  const std::size_t* part_base_{nullptr};
  bool single_route_{false};
  const int* prev0_{nullptr};
  const int* next0_{nullptr};
  TaskRun* runs_{nullptr};
  std::vector<CommEvent>* comms_{nullptr};
  std::vector<CopyEvent>* copies_{nullptr};
  Ticks* o_end_{nullptr};
  Ticks* r_asked_{nullptr};
  int* r_index_{nullptr};
  PartState* parts_{nullptr};
  std::size_t n_parts_{0};
  DeviceState* device_{nullptr};
  int* next_waiter_{nullptr};
  std::uint64_t seq_{0};
  // The waiter chains an end released: one per part an FB produces, plus a barrier.
  std::array<int, 8> woken_{};
  int n_woken_{0};
};

} // namespace

Simulator::Simulator() : ws_(std::make_unique<Workspace>()) {}
Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;

void Simulator::run(const Schedule& schedule, const CostModel& costs, const SimOptions& options,
                    Timeline& out) {
  const bool barriers = !(options.pause_after.empty() && options.barrier_member.empty() &&
                         options.barrier_gate.empty() && options.barrier_delay.empty());
  const bool sends = options.comm.mode == CommMode::Blocking ||
                     options.comm.link.contention != Contention::None;
  const bool copies = options.offload.any();
  const SimOptions* opt = &options;
  // Sliced micro-batches (Seq1F1B) differ in their times: each run takes its slice's, through
  // the per-run durations (the plain engine times a stage's tasks alike).
  SimOptions sliced;
  if (!costs.slices.empty() && options.durations.empty()) {
    sliced = options;
    sliced.durations.reserve(schedule.task_count());
    for (const auto& row : schedule.order)
      for (const Task& t : row) sliced.durations.push_back(costs.duration(t));
    opt = &sliced;
  }
  const bool durations = !opt->durations.empty();
  // Every end time is a chain of distinct runs, each adding its duration and at most one
  // message, pause or barrier delay: their sum is bounded before anything is timed, so that
  // what is over it is bad input named with its sum (the checked additions in the engine stay
  // the backstop for what this sum cannot see, such as a link's sized messages).
  {
    long double total = 0;
    std::size_t tasks = 0;
    for (const auto& row : schedule.order) tasks += row.size();
    if (durations) {
      for (const Ticks t : opt->durations) total += static_cast<long double>(t);
    } else {
      for (const auto& row : schedule.order)
        for (const Task& t : row) total += static_cast<long double>(costs.duration(t));
    }
    total += static_cast<long double>(costs.comm) * static_cast<long double>(tasks);
    for (const Ticks t : options.pause_after) total += static_cast<long double>(t);
    for (const Ticks t : options.barrier_delay) total += static_cast<long double>(t);
    // Each micro-batch of an offloaded stage adds at most its O and its R to a chain.
    if (copies && options.offload.fraction.size() == costs.stage.size())
      for (std::size_t st = 0; st < costs.stage.size(); ++st)
        if (options.offload.fraction[st] > 0)
          total += 2 * static_cast<long double>(schedule.microbatches) *
                   (static_cast<long double>(options.offload.latency) +
                    static_cast<long double>(options.offload.fraction[st] * costs.stage[st].MB) *
                        static_cast<long double>(options.offload.ns_per_unit));
    check_total_ticks(total, schedule.name.empty() ? std::string_view("simulate") : schedule.name);
  }
  const auto go = [&]<Features kF>() { Engine<kF>(schedule, costs, opt, *ws_).run(out); };
  // The combinations as instantiations; the plain one is simulate()'s hot path.
  // NOTE: an offload runs on the general engine (the other options checked at run time),
  // with or without per-run durations: two instantiations, not eight more.
  if (copies && !durations) go.template operator()<Features{true, true, false, true}>();
  else if (copies) go.template operator()<Features{true, true, true, true}>();
  else if (!barriers && !sends && !durations) go.template operator()<Features{false, false, false, false}>();
  else if (!barriers && !sends) go.template operator()<Features{false, false, true, false}>();
  else if (!barriers && !durations) go.template operator()<Features{false, true, false, false}>();
  else if (!barriers) go.template operator()<Features{false, true, true, false}>();
  else if (!sends && !durations) go.template operator()<Features{true, false, false, false}>();
  else if (!sends) go.template operator()<Features{true, false, true, false}>();
  else if (!durations) go.template operator()<Features{true, true, false, false}>();
  else go.template operator()<Features{true, true, true, false}>();
}

Timeline simulate(const Schedule& schedule, const CostModel& costs) {
  return simulate(schedule, costs, SimOptions{});
}

Timeline simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options) {
  Simulator sim;
  Timeline tl;
  sim.run(schedule, costs, options, tl);
  return tl;
}

} // namespace ppsim
