// The zero-bubble paper's handcrafted schedules ZB-H1 and ZB-H2 (Qi et al., ICLR 2024, sec. 3).
#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/schedules/detail/one_f_one_b.hpp"
#include "ppsim/sim/errors.hpp"

#include <fmt/format.h>

namespace ppsim {

// ZB-H1, p = 4, m = 8 (F = B = W): 1F1B's warm-up, with device d holding back d W so that
// they fill the cool-down instead of bubbles; the F in flight, hence the memory, are 1F1B's.
//   d0: F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7
//   d3: F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 ... B7 W4 W5 W6 W7
// Bubble (p-1)(F+B-W) instead of 1F1B's (p-1)(F+B+W).
Schedule make_zb_h1(const ScheduleSpec& spec) {
  require_single_chunk_shape("zb-h1", spec);
  return build_1f1b_family("zb-h1", spec.devices, spec.microbatches,
                           {.warmup = [](int p, int d) { return p - d; },
                            .w_delay = [](int, int d) { return d; },
                            .split = true});
}

// ZB-H2, p = 4: device d runs 2(p-1-d) more warm-up forwards than the last one, so the first
// B arrives exactly when its forwards end, and defers 2d W; at F = B = W nothing idles after the
// warm-up: zero bubble at (2p-1) M_B on device 0.
//   d0: F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 ...
//   d3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 ... W7
void check_zb_h2(std::string_view name, const ScheduleSpec& spec) {
  require_single_chunk_shape(name, spec);
  if (spec.microbatches < 2 * spec.devices)
    throw ConfigError(fmt::format("{}: needs microbatches >= 2*devices (got microbatches={}, "
                                  "devices={})",
                                  name, spec.microbatches, spec.devices));
}

Schedule make_zb_h2(const ScheduleSpec& spec) {
  check_zb_h2("zb-h2", spec);
  return build_1f1b_family("zb-h2", spec.devices, spec.microbatches,
                           {.warmup = [](int p, int d) { return 2 * (p - d) - 1; },
                            .w_delay = [](int, int d) { return 2 * d; },
                            .split = true});
}

} // namespace ppsim
