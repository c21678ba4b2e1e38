// DualPipe and DualPipeV (DeepSeek-V3 report; deepseek-ai/DualPipe): pipelines of overlapped F&B.
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <fmt/format.h>

namespace ppsim {

namespace {

// One of a device's two directions, as DualPipe's reference calls them: "phase 0" is the stage
// this device's route reaches first, "phase 1" the other; each runs its micro-batches in order.
struct Phase {
  int stage{0};
  int position{0};  // index of the stage on its route
  std::vector<int> microbatches;
};

// One device's task list, written phase by phase. Split backwards queue their W first in,
// first out, as the reference's WeightGradStore does.
class DeviceOrder {
public:
  DeviceOrder(const std::array<Phase, 2>& phases, std::vector<Task>& out)
      : phases_(phases), out_(out) {}

  void forward(int ph) { out_.push_back(Task::make(Kind::F, stage(ph), next_f(ph))); }
  // split: B now and its W later (weight()); otherwise the fused BW.
  void backward(int ph, bool split) {
    const int mb = next_b(ph);
    out_.push_back(Task::make(split ? Kind::B : Kind::BW, stage(ph), mb));
    if (split) deferred_w_.push_back(Task::make(Kind::W, stage(ph), mb));
  }
  void weight() {
    out_.push_back(deferred_w_.front());
    deferred_w_.pop_front();
  }
  // The F of phase f_ph overlapped with the fused backward of phase b_ph.
  void forward_backward(int f_ph, int b_ph) {
    const int f_mb = next_f(f_ph);
    out_.push_back(Task::overlapped(stage(f_ph), f_mb, Kind::BW, stage(b_ph), next_b(b_ph)));
  }

private:
  int stage(int ph) const { return phases_[ix(ph)].stage; }
  int next_f(int ph) { return phases_[ix(ph)].microbatches[ix(f_[ix(ph)]++)]; }
  int next_b(int ph) { return phases_[ix(ph)].microbatches[ix(b_[ix(ph)]++)]; }

  const std::array<Phase, 2>& phases_;
  std::vector<Task>& out_;
  std::array<int, 2> f_{0, 0};
  std::array<int, 2> b_{0, 0};
  std::deque<Task> deferred_w_;
};

// The eight steps of DualPipe's reference step(), for a device `r` places from its nearer end
// of a pipeline of `n` such places per direction, with `c` micro-batches per phase (c >= 2n).
// DualPipe: n = p/2, r = min(d, p-1-d), c = m/2. DualPipeV: n = p, r = d, c = m.
void write_dualpipe_steps(DeviceOrder& o, int n, int r, int c) {
  // step 1: nF0, fill the pipeline of this device's first direction
  for (int i = 0; i < 2 * (n - r - 1); ++i) o.forward(0);
  // step 2: nF0F1, the second direction starts
  for (int i = 0; i < r + 1; ++i) {
    o.forward(0);
    o.forward(1);
  }
  // step 3: nB1W1F1, zero bubble: each B's W right away
  for (int i = 0; i < n - r - 1; ++i) {
    o.backward(1, true);
    o.weight();
    o.forward(1);
  }
  // step 4 (main): nF0B1F1B0, two overlapped pairs
  for (int i = 0; i < c - 2 * n + r + 1; ++i) {
    if (i == 0 && r == n - 1) {
      // NOTE: as the reference, the middle device does not overlap its first pair.
      o.forward(0);
      o.backward(1, false);
    } else {
      o.forward_backward(0, 1);
    }
    o.forward_backward(1, 0);
  }
  // step 5: nB1F1B0
  for (int i = 0; i < n - r - 1; ++i) {
    o.backward(1, false);
    o.forward_backward(1, 0);
  }
  // step 6: nB1B0, the later half (r+1) of these 2(r+1) backwards split with their W deferred
  for (int t = 0; t < 2 * (r + 1); ++t) o.backward(t % 2 == 0 ? 1 : 0, t >= r + 1);
  // step 7: nWB0, each deferred W makes room for one more split B
  for (int i = 0; i < n - r - 1; ++i) {
    o.weight();
    o.backward(0, true);
  }
  // step 8: nW, the rest of the W
  for (int i = 0; i < r + 1; ++i) o.weight();
}

// Fills s.order: each device's two stages become phases 0 and 1 by their place on their routes.
void build_dualpipe(Schedule& s, int half_ranks) {
  const Topology topo(s);
  std::vector<std::vector<Phase>> phases(ix(s.devices));
  for (std::size_t route = 0; route < s.routes.size(); ++route) {
    std::vector<int> mbs;
    for (int j = 0; j < s.microbatches; ++j)
      if (topo.route_of(j) == static_cast<int>(route)) mbs.push_back(j);
    const auto& stages = s.routes[route];
    for (std::size_t k = 0; k < stages.size(); ++k)
      phases[ix(topo.device_of(stages[k]))].push_back(
          Phase{stages[k], static_cast<int>(k), mbs});
  }
  for (int d = 0; d < s.devices; ++d) {
    auto& mine = phases[ix(d)];
    std::sort(mine.begin(), mine.end(),
              [](const Phase& a, const Phase& b) { return a.position < b.position; });
    const std::array<Phase, 2> two{mine[0], mine[1]};
    const int per_phase = static_cast<int>(two[0].microbatches.size());
    DeviceOrder o(two, s.order[ix(d)]);
    write_dualpipe_steps(o, half_ranks, two[0].position, per_phase);
  }
}

} // namespace

// DualPipe (DeepSeek-V3 technical report, sec. 3.2.1; deepseek-ai/DualPipe), p = 4, m = 8:
// two replicas of the model fed from both ends. Route 0 runs stages 0..3 on devices 0..3 and
// carries micro-batches 0..3; route 1 runs stages 4..7 on devices 3..0 and carries 4..7. Each
// device holds one stage of each replica (the V placement's map, over two routes), so costs are
// per device-stage, undivided. Compact form: 7F4 = F of stage 7 for micro-batch 4, (0F3;7BW5)
// = that F overlapped with a fused backward, B/W = split backward:
//   d0: 0F0 0F1 0F2 7F4 7B4 7W4 7F5 (0F3;7BW5) (7F6;0BW0) 7BW6 (7F7;0BW1) 7BW7 0B2 0W2 0B3 0W3
//   d1: 1F0 6F4 1F1 6F5 1F2 6BW4 (6F6;1BW0) (1F3;6BW5) (6F7;1BW1) 6BW6 1BW2 6B7 1B3 6W7 1W3
//   d2: 5F4 2F0 5F5 2F1 5F6 2BW0 (2F2;5BW4) (5F7;2BW1) (2F3;5BW5) 2BW2 5BW6 2B3 5B7 2W3 5W7
//   d3: 4F4 4F5 4F6 3F0 3B0 3W0 3F1 (4F7;3BW1) (3F2;4BW4) 3BW2 (3F3;4BW5) 3BW3 4B6 4W6 4B7 4W7
// Steps per device, n = p/2 places per direction, r = min(d, p-1-d), c = m/2 micro-batches per
// direction: 1 nF0 = 2(n-r-1); 2 nF0F1 = r+1; 3 nB1W1F1 = n-r-1; 4 nF0B1F1B0 = c-2n+r+1;
// 5 nB1F1B0 = n-r-1; 6 nB1B0 = r+1 (later half split); 7 nWB0 = n-r-1; 8 nW = r+1.
// README: bubble (p/2-1)(F&B + BW - 3W), activation p+1 micro-batches per device. The peak
// always holds; the bubble exactly at comm 0 when F = B >= W and F&B = F + BW, the proportions
// of the README's figure (tests/schedules/dualpipe_test.cpp has what it is otherwise).
void check_dualpipe(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  const int p = spec.devices, m = spec.microbatches;
  if (spec.chunks > 1)
    throw ConfigError(fmt::format("{}: supports chunks=1 only, one stage of each of two model "
                                  "replicas per device (got chunks={})",
                                  name, spec.chunks));
  if (p % 2 != 0)
    throw ConfigError(fmt::format("{}: needs an even number of devices (got devices={})", name, p));
  if (m % 2 != 0 || m < 2 * p)
    throw ConfigError(fmt::format("{}: needs microbatches even and >= 2*devices (got "
                                  "microbatches={}, devices={})",
                                  name, m, p));
}

Schedule make_dualpipe(const ScheduleSpec& spec) {
  constexpr std::string_view name = "dualpipe";
  check_dualpipe(name, spec);
  const int p = spec.devices, m = spec.microbatches;
  Schedule s = make_pipeline(std::string(name), p, m, vshape_placement(p));
  // Two routes, a replica each: stages 0..p-1 (devices 0..p-1) and p..2p-1 (devices p-1..0).
  std::vector<int> forward_route, reverse_route;
  for (int k = 0; k < p; ++k) {
    forward_route.push_back(k);
    reverse_route.push_back(p + k);
  }
  s.routes = {std::move(forward_route), std::move(reverse_route)};
  for (int j = 0; j < m; ++j) s.microbatch_route[ix(j)] = j < m / 2 ? 0 : 1;
  build_dualpipe(s, p / 2);
  return s;
}

// DualPipeV (Sea AI Lab's "cut-in-half" DualPipe; deepseek-ai/DualPipe dualpipev.py), p = 4,
// m = 8: one replica on the V placement (device d holds chunk 0 = stage d and chunk 1 =
// stage 7-d); DualPipe's two directions become the two chunks, so the same eight steps apply
// with n = p, r = d, c = m. In the compact form above:
//   d0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7B0 7W0 7F1 7B1 7W1 7F2 7B2 7W2 7F3 (0F7;7BW3)
//       (7F4;0BW0) 7BW4 (7F5;0BW1) 7BW5 (7F6;0BW2) 7BW6 (7F7;0BW3) 7BW7 0B4 0W4 ... 0B7 0W7
//   d3: 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 3F4 4BW0 (4F4;3BW0) (3F5;4BW1) (4F5;3BW1) (3F6;4BW2)
//       (4F6;3BW2) (3F7;4BW3) (4F7;3BW3) 4BW4 3BW4 4BW5 3BW5 4B6 3B6 4B7 3B7 4W6 3W6 4W7 3W7
// README: bubble (p-1)(F&B + BW - 3W) with per-chunk costs (its PP = 2p stages), activation
// 2p+1 chunks per device; both hold as for DualPipe.
void check_dualpipe_v(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  if (spec.chunks != 0 && spec.chunks != 2)
    throw ConfigError(fmt::format("{}: supports chunks=2 only, a V of two chunks per device "
                                  "(got chunks={})",
                                  name, spec.chunks));
  if (spec.microbatches < 2 * spec.devices)
    throw ConfigError(fmt::format("{}: needs microbatches >= 2*devices (got microbatches={}, "
                                  "devices={})",
                                  name, spec.microbatches, spec.devices));
}

Schedule make_dualpipe_v(const ScheduleSpec& spec) {
  constexpr std::string_view name = "dualpipe-v";
  check_dualpipe_v(name, spec);
  const int p = spec.devices, m = spec.microbatches;
  Schedule s = make_pipeline(std::string(name), p, m, vshape_placement(p));
  build_dualpipe(s, p);
  return s;
}

} // namespace ppsim
