// GPipe and 1F1B (PipeDream-flush), and the builder the zero-bubble handcrafted schedules share.
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/schedules/detail/one_f_one_b.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

Schedule build_1f1b_family(std::string name, int p, int m, const OneFOneBShape& shape,
                           int slices) {
  const int k = slices, units = m * k;
  Schedule s = make_pipeline(std::move(name), p, units, loop_placement(p, 1));
  s.slices = k;
  for (int d = 0; d < p; ++d) {
    auto& out = s.order[static_cast<std::size_t>(d)];
    out.reserve(static_cast<std::size_t>(shape.split ? 3 * units : 2 * units));
    const int warmup = std::clamp(shape.warmup(p, d) + k - 1, 1, units);
    const int delay = shape.w_delay(p, d);
    int f = 0, b = 0, w = 0;
    // warm-up: forwards only
    for (; f < warmup; ++f) out.push_back(Task::make(Kind::F, d, f));
    // steady and cool-down: 1 backward, maybe 1 W, 1 forward while any are left
    while (b < units) {
      out.push_back(Task::make(shape.split ? Kind::B : Kind::BW, d, backward_unit(b++, k)));
      if (shape.split && b - w > delay) out.push_back(Task::make(Kind::W, d, backward_unit(w++, k)));
      if (f < units) out.push_back(Task::make(Kind::F, d, f++));
    }
    // flush: the deferred W
    if (shape.split)
      for (; w < units; ++w) out.push_back(Task::make(Kind::W, d, backward_unit(w, k)));
  }
  return s;
}

// GPipe, p = 4, m = 4 (F forward, X fused backward):
//   d0: F0 F1 F2 F3 .  .  .  .  .  .  X0 X1 X2 X3
//   d3: .  .  .  F0 F1 F2 F3 X0 X1 X2 X3
Schedule make_gpipe(const ScheduleSpec& spec) {
  require_single_chunk_shape("gpipe", spec);
  const int p = spec.devices, m = spec.microbatches;
  Schedule s = make_pipeline("gpipe", p, m, loop_placement(p, 1));
  for (int d = 0; d < p; ++d) {
    auto& out = s.order[static_cast<std::size_t>(d)];
    for (int j = 0; j < m; ++j) out.push_back(Task::make(Kind::F, d, j));
    for (int j = 0; j < m; ++j) out.push_back(Task::make(Kind::BW, d, j));
  }
  return s;
}

// 1F1B (PipeDream-flush, Megatron), p = 4, m = 8; the order PyTorch, Megatron and DeepSpeed run:
//   rank0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7
//   rank1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7
//   rank2: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7
//   rank3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7
// (B here is the fused BW.) Warm-up p-1-d forwards, then 1F1B (one F, one BW), then the cool-down
// backwards. NOTE: the builder counts the steady state's first F with the warm-up, so it asks
// for p-d forwards before the first backward.
Schedule make_1f1b(const ScheduleSpec& spec) {
  require_single_chunk_shape("1f1b", spec);
  return build_1f1b_family("1f1b", spec.devices, spec.microbatches,
                           {.warmup = [](int p, int d) { return p - d; },
                            .w_delay = [](int, int) { return 0; },
                            .split = false});
}

void check_seq1f1b(std::string_view name, const ScheduleSpec& spec) {
  require_single_chunk_shape(name, spec);
  check_slice_count(name, spec);
}

void check_slice_count(std::string_view name, const ScheduleSpec& spec) {
  if (spec.slices < 1 || spec.slices > limits::kMaxSlices)
    throw ConfigError(fmt::format("{}: needs 1 <= slices <= {} (got slices={})", name,
                                  limits::kMaxSlices, spec.slices));
  if (static_cast<long long>(spec.microbatches) * spec.slices > limits::kMaxMicrobatches)
    throw ConfigError(fmt::format("{}: microbatches={} x slices={} is over {} micro-batch slices",
                                  name, spec.microbatches, spec.slices,
                                  limits::kMaxMicrobatches));
}

// Seq1F1B (Sun et al., NAACL 2025), 1F1B over sequence slices, p = 4, m = 2, 2 slices (a.b is
// micro-batch a's slice b, X the fused backward):
//   rank0: F0.0 F0.1 F1.0 F1.1 X0.1 X0.0 X1.1 X1.0
//   rank1: F0.0 F0.1 F1.0 F1.1 X0.1 X0.0 X1.1 X1.0
//   rank2: F0.0 F0.1 F1.0 X0.1 F1.1 X0.0 X1.1 X1.0
//   rank3: F0.0 F0.1 X0.1 F1.0 X0.0 F1.1 X1.1 X1.0
// Device d runs min(p - d - 2 + s, m s) slices' F first (1F1B's p - d - 1 plus the slices
// after the first), then one F and one backward, then the rest of the backwards: 1F1B's
// builder over the slices. The order of the zero-bubble authors' seq1f1b.py (main branch),
// written anew.
Schedule make_seq1f1b(const ScheduleSpec& spec) {
  check_seq1f1b("seq1f1b", spec);
  return build_1f1b_family("seq1f1b", spec.devices, spec.microbatches,
                           {.warmup = [](int p, int d) { return p - d; },
                            .w_delay = [](int, int) { return 0; },
                            .split = false},
                           spec.slices);
}

// ZB-H1 over sequence slices: Seq1F1B's order with B and W split, device d keeping d W behind
// its B as ZB-H1 does (p = 4, m = 2, 2 slices):
//   rank0: F0.0 F0.1 F1.0 F1.1 B0.1 W0.1 B0.0 W0.0 B1.1 W1.1 B1.0 W1.0
//   rank3: F0.0 F0.1 B0.1 F1.0 B0.0 F1.1 B1.1 B1.0 W0.1 W0.0 W1.1 W1.0
// With one slice it is ZB-H1 exactly. ppsim's own: the zero-bubble authors' token-level
// zero-bubble scheduler (token_level_zero_bubble.py on their main branch) is an empty file.
Schedule make_seq_zb_h1(const ScheduleSpec& spec) {
  check_seq1f1b("seq-zb-h1", spec);
  return build_1f1b_family("seq-zb-h1", spec.devices, spec.microbatches,
                           {.warmup = [](int p, int d) { return p - d; },
                            .w_delay = [](int, int d) { return d; },
                            .split = true},
                           spec.slices);
}

} // namespace ppsim
