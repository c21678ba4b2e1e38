// zb-auto's search over the zero-bubble heuristic (detail/zb_greedy.hpp), private to schedules/
// and its tests: which candidates it weighs, and how many threads weigh them.
#pragma once

#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/detail/search.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"

#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace ppsim::detail {

/// Knobs of the search that do not change its result (only how it is reached), and the search
/// space, for tests and measurements.
struct ZbAutoOptions {
  unsigned threads{0};   ///< 0 = the hardware's; the result is the same for any count
  bool variants{true};   ///< ppsim's rule variants besides the authors' rules
  unsigned variant_mask{~0u};  ///< which variants (bit i: the i-th after the authors' rules)
  bool seeds{true};      ///< the handcrafted schedules of the placement
  bool ladder{true};     ///< every lower limit too (false: the requested limit only)
};

/// What a search did, for measurements: which candidate won and how much it ran.
struct ZbAutoReport {
  std::string winner;  ///< "seed:zb-h1", "heuristic" (the authors' rules), "variant:..."
  double limit{0};     ///< the limit the winning heuristic run was made at
  long long runs{0};   ///< heuristic runs (abandoned ones too; depends on the thread count)
  long long placed{0};  ///< tasks those runs placed
};

/// The skeleton with each device's tasks: F, B and W of every micro-batch on each of its stages,
/// in no particular order (for cost_lower_bound, which depends on the set only).
[[nodiscard]] Schedule with_every_task(Schedule skeleton);

/// ZB-H1's peak memory on the spec's model and costs: the default limit of zb-auto and zb-v (p M_B
/// when M_W <= M_B; 2p M_B for the seed's MLP, where B raises memory). Costs given per virtual
/// stage of a model cut into `pieces` x p (the loop's v, the V's 2) are merged, `pieces` at a time,
/// into ZB-H1's device-stages.
[[nodiscard]] double zb_h1_peak(const ScheduleSpec& spec, int pieces);

/// A schedule's (cost, sum of spans) and peak memory, by timing its order as the simulator would
/// (DESIGN.md's dependencies, asynchronous sends) without its generality: F, B, W and BW on one
/// route through the stages in order. nullopt when the order deadlocks or holds an FB, or as
/// soon as it cannot end better than `must_beat`.
struct OrderTiming {
  Score score;
  double peak{0};
};
[[nodiscard]] std::optional<OrderTiming> time_order(
    const Schedule& schedule, const CostModel& costs,
    const Score& must_beat = {std::numeric_limits<Ticks>::max(), 0});

/// The best schedule zb-auto finds on `skeleton`'s loop placement within `limit` (M_B per device),
/// named `name`. Throws InfeasibleError naming the least limit that works when none fits.
[[nodiscard]] Schedule zb_auto_search(std::string_view name, const Schedule& skeleton,
                                      const CostSpec& spec, double limit,
                                      const ZbAutoOptions& options = {},
                                      ZbAutoReport* report = nullptr);

} // namespace ppsim::detail
