// GPipe and 1F1B (PipeDream-flush), and the builder the zero-bubble handcrafted schedules share.
#include "schedules/detail/generators.hpp"
#include "schedules/detail/one_f_one_b.hpp"
#include "sim/errors.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

Schedule build_1f1b_family(std::string name, int p, int m, const OneFOneBShape& shape) {
  Schedule s = make_pipeline(std::move(name), p, m, loop_placement(p, 1));
  for (int d = 0; d < p; ++d) {
    auto& out = s.order[static_cast<std::size_t>(d)];
    out.reserve(static_cast<std::size_t>(shape.split ? 3 * m : 2 * m));
    const int warmup = std::clamp(shape.warmup(p, d), 1, m);
    const int delay = shape.w_delay(p, d);
    int f = 0, b = 0, w = 0;
    // warm-up: forwards only
    for (; f < warmup; ++f) out.push_back(Task::make(Kind::F, d, f));
    // steady and cool-down: 1 backward, maybe 1 W, 1 forward while any are left
    while (b < m) {
      out.push_back(Task::make(shape.split ? Kind::B : Kind::BW, d, b++));
      if (shape.split && b - w > delay) out.push_back(Task::make(Kind::W, d, w++));
      if (f < m) out.push_back(Task::make(Kind::F, d, f++));
    }
    // flush: the deferred W
    if (shape.split)
      for (; w < m; ++w) out.push_back(Task::make(Kind::W, d, w));
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

} // namespace ppsim
