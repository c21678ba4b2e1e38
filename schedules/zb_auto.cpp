// The automatic zero-bubble scheduler (zb-auto, zb-1p, zb-2p) over the greedy machinery it shares
// with zb-v: Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3.1 and App. G.
#include "schedules/detail/generators.hpp"
#include "schedules/detail/greedy.hpp"
#include "sim/errors.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace ppsim {


namespace {

CostModel costs_for(const ScheduleSpec& spec, const Schedule& skeleton) {
  static const CostSpec unit{};
  return cost_model_for(spec.costs != nullptr ? *spec.costs : unit, skeleton);
}

// zb-auto on one stage per device; `limit_in_p` > 0 fixes the limit to that many p*M_B.
Schedule make_zb_auto_named(std::string_view name, const ScheduleSpec& spec, double limit_in_p) {
  require_single_chunk_shape(name, spec);
  const int p = spec.devices, m = spec.microbatches;
  const Schedule skeleton = make_pipeline(std::string(name), p, m, loop_placement(p, 1));
  const CostModel costs = costs_for(spec, skeleton);
  const double mb = detail::device_microbatch_memory(skeleton, costs);
  double limit = limit_in_p > 0 ? limit_in_p * p * mb : spec.mem_limit;
  if (limit_in_p <= 0 && spec.mem_limit < 0) limit = p * mb;
  if (!std::isfinite(limit))
    throw ConfigError(fmt::format("{}: memory limit must be a finite number (got {})", name, limit));
  // the handcrafted schedules join the search, so zb-auto is never worse than them
  std::vector<Schedule> seeds;
  const ScheduleSpec plain{.devices = p, .microbatches = m};
  seeds.push_back(make_zb_h1(plain));
  if (m >= 2 * p) seeds.push_back(make_zb_h2(plain));
  return detail::search_best(name, skeleton, costs, limit, seeds);
}

} // namespace

// zb-auto at p*M_B (ZB-1p), p = 4, m = 8, F = B = W (cost 54, as ZB-H1; at 2p*M_B, ZB-2p, the
// warm-up grows to ZB-H2's and the cost is the ideal 48):
//   rank0: 0F0 0F1 0F2 0F3 0B0 0W0 0B1 0F4 0B2 0F5 0B3 0W1 0F6 0W2 0B4 0F7 0B5 0W3 ... 0B7 0W7
//   rank3: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3W0 3W1 3F4 3B4 3F5 3B5 3W2 3W3 3F6 ... 3W6 3W7
// Heuristic (sec. 3.1): warm-up F within the limit, stopping before the first B can arrive (flag:
// allow one F to overrun it); steady state B first (flag prioritize_b: hold back an F that would
// delay it), W into gaps that fit a whole W (flag no_bubble_greedy: also smaller ones); flush
// the W. ppsim adds knobs (1F1B's rhythm of one F per B, eager W, chunk order), seeds ZB-H1 and
// ZB-H2, and refines the best by swapping neighbours: never worse than any candidate.
Schedule make_zb_auto(const ScheduleSpec& spec) { return make_zb_auto_named("zb-auto", spec, 0); }
Schedule make_zb_1p(const ScheduleSpec& spec) { return make_zb_auto_named("zb-1p", spec, 1); }
Schedule make_zb_2p(const ScheduleSpec& spec) { return make_zb_auto_named("zb-2p", spec, 2); }

} // namespace ppsim
