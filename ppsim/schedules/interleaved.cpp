// Looped schedules on Megatron's loop placement: interleaved 1F1B and breadth-first looped.
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/schedules/detail/one_f_one_b.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

namespace {

// The chunks v of a looped schedule (0 = the default 2).
int looped_chunks(const ScheduleSpec& spec) { return spec.chunks == 0 ? 2 : spec.chunks; }

void check_chunks(std::string_view name, const ScheduleSpec& spec, bool groups_of_p_at_v1) {
  const int v = looped_chunks(spec);
  check_chunk_count(name, spec, v);
  if ((v > 1 || groups_of_p_at_v1) && spec.microbatches % spec.devices != 0)
    throw ConfigError(fmt::format("{}: needs microbatches % devices == 0 (got microbatches={}, "
                                  "devices={}, chunks={})",
                                  name, spec.microbatches, spec.devices, v));
}

// Megatron's interleaved order on the loop placement, p devices x v chunks, over m micro-batches
// of k slices (a unit is mb * k + slice; k = 1: none). Megatron walks "virtual micro-batches"
// i = 0..v*m*k-1 in groups of p per chunk: i -> chunk (i mod pv) / p and the chunk's unit
// j = (i / pv) * p + i mod p; backwards walk the chunks in reverse and each micro-batch's slices
// from the last (backward_unit). Warm-up 2(p-1-d) + (v-1)p + k-1 forwards, clamped; then one F
// one BW; then the cool-down BWs.
Schedule build_interleaved(std::string name, int p, int v, int m, int k) {
  const int units = m * k;
  Schedule s = make_pipeline(std::move(name), p, units, loop_placement(p, v));
  s.slices = k;
  const Topology topo(s);
  const int total = v * units;  // virtual micro-batches per device
  for (int d = 0; d < p; ++d) {
    auto& out = s.order[ix(d)];
    out.reserve(ix(2 * total));
    // Megatron's get_model_chunk_id, and the unit that chunk is at.
    auto task = [&](Kind kind, int i) {
      const int in_group = i % (p * v);
      int chunk = in_group / p;
      if (kind != Kind::F) chunk = v - 1 - chunk;
      const int j = (i / (p * v)) * p + in_group % p;
      return Task::make(kind, topo.device_stages(d)[ix(chunk)], kind == Kind::F ? j : backward_unit(j, k));
    };
    const int warmup = std::min(2 * (p - 1 - d) + (v - 1) * p + (k - 1), total);
    // warm-up: forwards only
    for (int i = 0; i < warmup; ++i) out.push_back(task(Kind::F, i));
    // steady: one F, one BW
    for (int i = 0; i < total - warmup; ++i) {
      out.push_back(task(Kind::F, warmup + i));
      out.push_back(task(Kind::BW, i));
    }
    // cool-down: the backwards still owed
    for (int i = total - warmup; i < total; ++i) out.push_back(task(Kind::BW, i));
  }
  return s;
}

} // namespace

void check_chunk_count(std::string_view name, const ScheduleSpec& spec, int v) {
  require_shape(name, spec);
  if (v < 1 || v > 64)
    throw ConfigError(
        fmt::format("{}: needs 1 <= chunks <= 64 (got chunks={})", name, spec.chunks));
  if (static_cast<long long>(v) * spec.devices * spec.microbatches > limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format("{}: devices={} x chunks={} x microbatches={} is too large to "
                                  "simulate",
                                  name, spec.devices, v, spec.microbatches));
}

// NOTE: with one chunk Megatron runs its non-interleaved 1F1B, which needs no groups of p.
void check_interleaved(std::string_view name, const ScheduleSpec& spec) {
  check_chunks(name, spec, false);
}
void check_looped_bfs(std::string_view name, const ScheduleSpec& spec) {
  check_chunks(name, spec, true);
}

// Interleaved 1F1B (Megatron-LM's virtual pipeline; Narayanan et al., SC 2021, fig. 4),
// p = 4, v = 2, m = 8, loop placement (device d holds stages d and 4+d). Megatron walks
// "virtual micro-batches" k = 0..v*m-1 in groups of p per chunk: k -> chunk (k mod pv) / p and
// micro-batch (k / pv) * p + k mod p; backwards walk the chunks in reverse. Compact form (4BW2 =
// fused backward of stage 4, micro-batch 2):
//   d0: 0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 0F4 0F5 0F6 4BW0 0F7 4BW1 4F4 4BW2 ...
//   d3: 3F0 3F1 3F2 3F3 7F0 7BW0 7F1 7BW1 7F2 7BW2 7F3 7BW3 3F4 3BW0 ...
// Warm-up 2(p-1-d) + (v-1)p forwards (10/8/6/4), clamped to v*m; then one F one BW; then the
// cool-down BWs. Bubble (p-1)(F+BW)/v, exactly so at comm 0 with equal stages: the chunks cut
// 1F1B's bubble by v, at v times the messages.
// NOTE: with one chunk Megatron runs its non-interleaved 1F1B; so do we (and then m % p is not
// needed). Some Megatron-LM versions run m == p as all forwards then all backwards; we keep the
// clamped formula for every m, so at m == p the later devices still alternate F and BW.
Schedule make_interleaved_1f1b(const ScheduleSpec& spec) {
  constexpr std::string_view name = "interleaved-1f1b";
  check_interleaved(name, spec);
  const int v = looped_chunks(spec);
  const int p = spec.devices, m = spec.microbatches;
  if (v == 1)
    return build_1f1b_family(std::string(name), p, m,
                             {.warmup = [](int pp, int d) { return pp - d; },
                              .w_delay = [](int, int) { return 0; },
                              .split = false});
  return build_interleaved(std::string(name), p, v, m, 1);
}

void check_interleaved_seq1f1b(std::string_view name, const ScheduleSpec& spec) {
  const int v = looped_chunks(spec);
  check_chunk_count(name, spec, v);
  check_slice_count(name, spec);
  const long long units = static_cast<long long>(spec.microbatches) * spec.slices;
  if (static_cast<long long>(v) * spec.devices * units > limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format("{}: devices={} x chunks={} x microbatches={} x slices={} is "
                                  "too large to simulate",
                                  name, spec.devices, v, spec.microbatches, spec.slices));
  // NOTE: each chunk walks its units in groups of p and each group's backwards from its
  // micro-batches' last slices down, so a group must hold whole micro-batches: s divides p.
  if (v > 1 && spec.devices % spec.slices != 0)
    throw ConfigError(fmt::format("{}: needs devices % slices == 0 for chunks >= 2 (a group of "
                                  "p slices holds whole micro-batches; got devices={}, slices={})",
                                  name, spec.devices, spec.slices));
  if (v > 1 && units % spec.devices != 0)
    throw ConfigError(fmt::format("{}: needs microbatches x slices % devices == 0 (got "
                                  "microbatches={}, slices={}, devices={}, chunks={})",
                                  name, spec.microbatches, spec.slices, spec.devices, v));
}

// Interleaved Seq1F1B (Sun et al., NAACL 2025; thunlp/Seq1F1B's interleaved schedule, written
// anew): Megatron's interleaved 1F1B over the m s slices of the micro-batches (a unit is
// mb * s + slice), each chunk's forwards in unit order in groups of p, its backwards from each
// micro-batch's last slice down, and s - 1 more warm-up forwards (a micro-batch's backward
// starts at its last slice). p = 2, v = 2, m = 2, 2 slices (a.b: micro-batch a, slice b; X the
// fused backward; device 0 holds stages 0 and 2):
//   d0: 0F0.0 0F0.1 2F0.0 2F0.1 0F1.0 0F1.1 2X0.1 2F1.0 2X0.0 2F1.1 0X0.1 ...
// With one chunk it is seq1f1b.
Schedule make_interleaved_seq1f1b(const ScheduleSpec& spec) {
  constexpr std::string_view name = "interleaved-seq1f1b";
  check_interleaved_seq1f1b(name, spec);
  const int v = looped_chunks(spec);
  if (v == 1) {
    Schedule one = make_seq1f1b(spec);
    one.name = std::string(name);
    return one;
  }
  return build_interleaved(std::string(name), spec.devices, v, spec.microbatches, spec.slices);
}

// Breadth-first looped (Lamy-Poirier, Breadth-First Pipeline Parallelism, MLSys 2023),
// p = 4, v = 2, m = 4, loop placement: every micro-batch through chunk 0, then chunk 1, ...;
// the backwards in reverse, last chunk first:
//   d0: 0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 4BW0 4BW1 4BW2 4BW3 0BW0 0BW1 0BW2 0BW3
//   d1: 1F0 1F1 1F2 1F3 5F0 5F1 5F2 5F3 5BW0 5BW1 5BW2 5BW3 1BW0 1BW1 1BW2 1BW3
// With m >= p a chunk's micro-batches cover the p-step trip around the loop, so the only
// bubbles are the fill and the drain: (p-1)(F+BW)/v, as interleaved 1F1B. Memory is GPipe's:
// every device holds all v*m chunk activations (m M_B) at the turn from forwards to backwards.
// The schedule exists for what it does to data parallelism: each chunk's gradients are final
// early and a whole chunk's all-reduce overlaps the remaining backwards.
Schedule make_looped_bfs(const ScheduleSpec& spec) {
  constexpr std::string_view name = "looped-bfs";
  check_looped_bfs(name, spec);
  const int v = looped_chunks(spec);
  const int p = spec.devices, m = spec.microbatches;

  Schedule s = make_pipeline(std::string(name), p, m, loop_placement(p, v));
  const Topology topo(s);
  for (int d = 0; d < p; ++d) {
    auto& out = s.order[ix(d)];
    out.reserve(ix(2 * v * m));
    // forward: breadth first, chunk by chunk
    for (int c = 0; c < v; ++c)
      for (int j = 0; j < m; ++j) out.push_back(Task::make(Kind::F, topo.device_stages(d)[ix(c)], j));
    // backward: breadth first, last chunk first
    for (int c = v - 1; c >= 0; --c)
      for (int j = 0; j < m; ++j)
        out.push_back(Task::make(Kind::BW, topo.device_stages(d)[ix(c)], j));
  }
  return s;
}

} // namespace ppsim
