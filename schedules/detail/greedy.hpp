// Private machinery of zb-v: a memory-limited greedy list
// scheduler over any placement, and a search that keeps the best candidate by simulated cost.
#pragma once

#include "sim/cost_model.hpp"
#include "sim/metrics.hpp"
#include "sim/schedule.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace ppsim::detail {

/// The decisions of the zero-bubble heuristic (Qi et al., ICLR 2024, sec. 3.1) as flags, plus
/// the extra knobs ppsim searches over.
struct GreedyOptions {
  bool allow_overrun{false};     ///< a warm-up F may end after the first B could arrive
  bool prioritize_b{false};      ///< a device >= 2 F ahead skips an F that would delay a B
  bool no_bubble_greedy{false};  ///< a W may go into a gap shorter than W
  bool deep_first{true};         ///< among ready F, the one furthest along its route first
  bool eager_w{false};           ///< run a pending W whenever nothing else is ready
  bool keep_inflight{false};     ///< steady state: an F before a ready B while fewer micro-batches
                                 ///< are in flight than at the end of the warm-up (1F1B's rhythm)
};

/// The least per-device memory limit any schedule on this placement can meet: every device
/// holds the activations of one micro-batch on all of its stages at once.
[[nodiscard]] double least_memory_limit(const Schedule& skeleton, const CostModel& costs);

/// Per device, the sum of its stages' M_B (the memory one micro-batch leaves on it).
[[nodiscard]] double device_microbatch_memory(const Schedule& skeleton, const CostModel& costs);

/// Builds one schedule on `skeleton`'s placement (its order is ignored) whose per-device peak
/// memory stays within `limit`; nullopt when the greedy gets stuck.
[[nodiscard]] std::optional<Schedule> greedy_schedule(const Schedule& skeleton,
                                                      const CostModel& costs, double limit,
                                                      const GreedyOptions& options);

/// A candidate with its simulated metrics.
struct Evaluated {
  Schedule schedule;
  Metrics metrics;
};

/// Simulates and measures; nullopt when it deadlocks or its peak memory exceeds `limit`.
[[nodiscard]] std::optional<Evaluated> evaluate(const Schedule& schedule, const CostModel& costs,
                                                double limit);

/// Runs the greedy under every option combination, then `seeds` (each kept only when it meets
/// the limit; of equal (cost, sum of spans) the first wins), then swaps neighbouring tasks while
/// that lowers (cost, sum of spans), within a budget of simulated tasks (deterministic). Throws
/// InfeasibleError when the limit is below least_memory_limit(). The result is named `name`.
[[nodiscard]] Schedule search_best(std::string_view name, const Schedule& skeleton,
                                   const CostModel& costs, double limit,
                                   const std::vector<Schedule>& seeds);

} // namespace ppsim::detail
