// Overlapped cells of sub-operations and the Combined 1F1B rewrite of an order.
#include "sim/overlap.hpp"

#include "sim/errors.hpp"
#include "sim/index.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

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

} // namespace

Schedule combine_forward_backward(const Schedule& schedule) {
  for (const auto& tasks : schedule.order)
    for (const Task& t : tasks)
      if (t.kind == Kind::FB) return schedule;
  if (schedule.slice_count() > 1)
    throw ConfigError("--overlap: Combined 1F1B of a sliced schedule (--slices) is not modelled");
  Schedule out = schedule;
  for (auto& tasks : out.order) {
    std::vector<Task> combined;
    combined.reserve(tasks.size());
    std::optional<Task> backward;  // a backward waiting for the next F
    std::vector<Task> carried;     // the W tasks that came while it waited
    const auto emit_carried = [&] {
      combined.insert(combined.end(), carried.begin(), carried.end());
      carried.clear();
    };
    for (const Task& t : tasks) {
      if (t.kind == Kind::F && backward) {
        combined.push_back(
            Task::overlapped(t.stage, t.microbatch, backward->kind, backward->stage, backward->microbatch));
        backward.reset();
        emit_carried();
      } else if (is_backward(t.kind)) {
        if (backward) combined.push_back(*backward);
        emit_carried();
        backward = t;
      } else if (backward) {
        carried.push_back(t);
      } else {
        combined.push_back(t);
      }
    }
    if (backward) combined.push_back(*backward);
    emit_carried();
    tasks = std::move(combined);
  }
  return out;
}

} // namespace ppsim
