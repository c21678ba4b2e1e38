// PyTorch's fixed-order schedules (torch.distributed.pipelining): interleaved zero bubble and ZB-V.
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace ppsim {

namespace {

constexpr std::optional<Task> kIdle = std::nullopt;

// The chunks v of interleaved-zb (0 = the default 2).
int zb_chunks(const ScheduleSpec& spec) { return spec.chunks == 0 ? 2 : spec.chunks; }

// PyTorch's "flex-PP" rounds: max(1, m / p) rounds of m / rounds micro-batches each.
struct Rounds {
  int count;
  int per_round;
};
Rounds rounds_of(int p, int m) {
  const int count = std::max(1, m / p);
  return {count, m / count};
}

Schedule from_slots(std::string name, int p, int m, std::vector<int> placement,
                    const std::vector<PaddedRow>& slots) {
  Schedule s = make_pipeline(std::move(name), p, m, std::move(placement));
  for (int d = 0; d < p; ++d)
    for (const auto& slot : slots[ix(d)])
      if (slot) s.order[ix(d)].push_back(*slot);
  return s;
}

// PyTorch's lock-step replay (`_add_bubbles_to_actions`): at each tick every rank, in rank
// order, takes its next slot; a forward whose input (the F of the stage before, same
// micro-batch) was not taken at an earlier tick waits, and an idle slot is written in its place.
// Producers of the same tick do not count. NOTE: PyTorch's replay also delays a full backward
// (its B) for the next stage's, but the zero-bubble order has none, so only F ever waits.
std::vector<PaddedRow> add_bubbles(const std::vector<PaddedRow>& rows, int stages, int m) {
  std::vector<PaddedRow> out(rows.size());
  std::vector<std::size_t> next(rows.size(), 0);
  std::vector<bool> forward_done(ix(stages) * ix(m), false);
  const auto done = [&](int stage, int mb) { return forward_done[ix(stage) * ix(m) + ix(mb)]; };
  std::vector<std::size_t> taken_now;  // indices into forward_done, merged after the tick
  while (true) {
    bool any_left = false, advanced = false;
    taken_now.clear();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (next[r] >= rows[r].size()) continue;
      any_left = true;
      const auto& slot = rows[r][next[r]];
      const bool waits = slot && slot->kind == Kind::F && slot->stage > 0 &&
                         !done(slot->stage - 1, slot->microbatch);
      if (waits) {
        out[r].push_back(kIdle);  // a bubble: wait for the input
        continue;
      }
      out[r].push_back(slot);
      if (slot && slot->kind == Kind::F)
        taken_now.push_back(ix(slot->stage) * ix(m) + ix(slot->microbatch));
      ++next[r];
      advanced = true;
    }
    if (!any_left) break;
    // Every forward's input is taken by some rank's earlier slot, so some rank always advances.
    if (!advanced) throw std::logic_error("interleaved-zb: the lock-step replay made no progress");
    for (const std::size_t i : taken_now) forward_done[i] = true;
  }
  return out;
}

} // namespace

void check_interleaved_zb(std::string_view name, const ScheduleSpec& spec) {
  check_chunk_count(name, spec, zb_chunks(spec));
  const Rounds rounds = rounds_of(spec.devices, spec.microbatches);
  if (spec.microbatches % rounds.count != 0)
    throw ConfigError(fmt::format(
        "{}: needs microbatches to be a multiple of the rounds max(1, microbatches / devices) "
        "(got microbatches={}, devices={}, rounds={})",
        name, spec.microbatches, spec.devices, rounds.count));
}

// PyTorch's ScheduleInterleavedZeroBubble (torch.distributed.pipelining, the ZB1P of Qi et al.,
// Zero Bubble Pipeline Parallelism, ICLR 2024, on Megatron's loop placement). p = 4, v = 2,
// m = 8: device d holds stages d and 4+d; `_` is one of PyTorch's idle slots (I = our B):
//   d0: 0F0 0F1 0F2 0F3 4F0 4F1 4F2 _   _   _   4F3 4I0 4W0 0F4 4I1 4W1 0F5 4I2 4W2 ...
//   d1: _   1F0 1F1 1F2 1F3 5F0 5F1 _   _   5F2 5I0 5F3 5I1 5W0 1F4 5I2 5W1 1F5 5I3 ...
//   d2: _   _   2F0 2F1 2F2 2F3 6F0 _   6F1 6I0 6F2 6I1 6F3 6I2 6W0 2F4 6I3 6W1 2F5 ...
//   d3: _   _   _   3F0 3F1 3F2 3F3 7F0 7I0 7F1 7I1 7F2 7I2 7F3 7I3 7W0 3F4 3I0 7W1 ...
// Micro-batches go in rounds of m / max(1, m / p) ("flex-PP": m need not be a multiple of p); a
// device's forwards switch chunk every round, 0, 1, ..., v-1, 0, ...; its backwards likewise from
// the last chunk down. Each stage numbers its own F, B and W in issue order.
std::vector<PaddedRow> interleaved_zb_slots(const ScheduleSpec& spec) {
  const int p = spec.devices, m = spec.microbatches, v = zb_chunks(spec);
  const int per_round = rounds_of(p, m).per_round;
  std::vector<PaddedRow> rows(ix(p));
  for (int d = 0; d < p; ++d) {
    PaddedRow& row = rows[ix(d)];
    // warm-up: (v-1) rounds of forwards and one more per hop to the last device (Megatron's
    // interleaved 1F1B takes two per hop; the deferred W fill what the second would)
    const int warmup = std::min((v - 1) * per_round + (p - 1 - d), v * m);
    const auto forward_stage = [&](int k) { return ((k / per_round) % v) * p + d; };
    const auto backward_stage = [&](int k) {
      return (v - 1 - ((k - warmup) / per_round) % v) * p + d;
    };
    std::vector<int> f(ix(v), 0), b(ix(v), 0), w(ix(v), 0);  // per chunk: next micro-batch
    std::vector<int> backwards;  // the stage of each backward issued, for the W queue
    std::size_t weights = 0;
    const auto emit = [&](Kind kind, int stage, std::vector<int>& count) {
      row.push_back(Task::make(kind, stage, count[ix(stage / p)]++));
    };
    const auto emit_w = [&] { emit(Kind::W, backwards[weights++], w); };
    row.assign(ix(d), kIdle);  // lock-step: device d starts d slots late
    for (int k = 0; k < v * m + warmup; ++k) {
      if (k < warmup) {
        emit(Kind::F, forward_stage(k), f);
        // wait for the first backward to come back
        if (k == warmup - 1) row.insert(row.end(), ix(p - 1 - d), kIdle);
        continue;
      }
      // steady: F, B (and W); cool-down: B (and W)
      if (k < v * m) emit(Kind::F, forward_stage(k), f);
      backwards.push_back(backward_stage(k));
      emit(Kind::B, backwards.back(), b);
      // the W of the oldest backward without one: device d defers W by d backwards
      if (k - warmup >= d) emit_w();
    }
    // flush: the d deferred W
    while (weights < backwards.size()) emit_w();
  }
  // Only with m < p does a forward ever reach its slot before its input: then PyTorch's replay
  // inserts idle slots (p = 4, v = 2, m = 2: two per device).
  return add_bubbles(rows, v * p, m);
}

Schedule make_interleaved_zb(const ScheduleSpec& spec) {
  constexpr std::string_view name = "interleaved-zb";
  check_interleaved_zb(name, spec);
  return from_slots(std::string(name), spec.devices, spec.microbatches,
                    loop_placement(spec.devices, zb_chunks(spec)), interleaved_zb_slots(spec));
}

void check_zbv_pytorch(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  if (spec.chunks != 0 && spec.chunks != 2)
    throw ConfigError(fmt::format("{}: supports chunks=2 only, a V of two chunks per device "
                                  "(got chunks={})",
                                  name, spec.chunks));
}

// PyTorch's ScheduleZBVZeroBubble (torch.distributed.pipelining; the ZB-V of Qi et al., Zero
// Bubble Pipeline Parallelism, ICLR 2024, sec. 6, as a fixed construction). p = 4, m = 8, V
// placement (device d holds chunk 0 = stage d and chunk 1 = stage 7-d), I = our B:
//   d0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3 7I3 7W3 0F7 0I0 ...
//   d1: _   1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6I0 6W0 6F2 6I1 6W1 6F3 6I2 6W2 1F6 1I0 1W0 6F4 ...
//   d2: _   _   2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5I0 5W0 5F3 5I1 5W1 2F5 2I0 2W0 5F4 5I2 5W2 ...
//   d3: _   _   _   3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4I0 4W0 3F4 3I0 3W0 4F4 4I1 4W1 3F5 3I1 ...
// The phases are built for n = max(2p-1, m) micro-batches; with m < 2p-1 every task of a
// micro-batch >= m becomes an idle slot, as PyTorch masks them (so the order of the rest stays).
std::vector<PaddedRow> zbv_pytorch_slots(const ScheduleSpec& spec) {
  const int p = spec.devices, m = spec.microbatches;
  const int n = std::max(2 * p - 1, m);
  std::vector<PaddedRow> rows(ix(p));
  for (int d = 0; d < p; ++d) {
    PaddedRow& row = rows[ix(d)];
    const int c0 = d, c1 = 2 * p - 1 - d;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    const auto put = [&](Kind kind, int stage, int mb) {
      row.push_back(mb < m ? std::optional<Task>(Task::make(kind, stage, mb)) : kIdle);
    };
    row.assign(ix(d), kIdle);  // lock-step: device d starts d slots late
    // warm-up 1: chunk-0 forwards down the V
    for (int i = 0; i < 2 * (p - d) - 1; ++i) put(Kind::F, c0, f0++);
    // warm-up 2: F1 F0, the chunk-1 forwards coming back up the V
    for (int i = 0; i < d; ++i) {
      put(Kind::F, c1, f1++);
      put(Kind::F, c0, f0++);
    }
    // warm-up 3: F1 B1 W1, the first backwards at the turn
    for (int i = 0; i < p - d; ++i) {
      put(Kind::F, c1, f1);
      put(Kind::B, c1, b1);
      put(Kind::W, c1, b1);
      ++f1, ++b1;
    }
    // steady: F0 B0 W0 F1 B1 W1 until the chunk-1 forwards catch up
    while (f1 < f0 || f0 < n) {
      if (f0 < n) put(Kind::F, c0, f0++);
      put(Kind::B, c0, b0);
      put(Kind::W, c0, b0);
      ++b0;
      put(Kind::F, c1, f1);
      put(Kind::B, c1, b1);
      put(Kind::W, c1, b1);
      ++f1, ++b1;
    }
    // cool-down: B0 B1, then B0 W0 (W counting on from the steady state), then the other W
    int w0 = b0, w1 = b1;
    for (int i = 0; i < d; ++i) {
      put(Kind::B, c0, b0++);
      put(Kind::B, c1, b1++);
    }
    for (int i = 0; i < p - d; ++i) {
      put(Kind::B, c0, b0++);
      put(Kind::W, c0, w0++);
    }
    while (w1 < b1) put(Kind::W, c1, w1++);
    while (w0 < b0) put(Kind::W, c0, w0++);
  }
  return rows;
}

Schedule make_zbv_pytorch(const ScheduleSpec& spec) {
  constexpr std::string_view name = "zbv-pytorch";
  check_zbv_pytorch(name, spec);
  return from_slots(std::string(name), spec.devices, spec.microbatches,
                    vshape_placement(spec.devices), zbv_pytorch_slots(spec));
}

} // namespace ppsim
