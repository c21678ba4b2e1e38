// `ppsim sweep`'s grid: every combination of schedule, p, v, memory limit and m, each point run
// through run_request() and kept with its outcome, also when it could not run.
#pragma once

#include "ppsim/run/request.hpp"
#include "ppsim/run/shared_work.hpp"
#include "ppsim/sim/progress.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// The axes of a sweep; every combination is one point.
struct SweepGrid {
  std::vector<std::string> schedules;
  std::vector<int> devices;
  std::vector<int> microbatches;
  std::vector<int> chunks{0};               ///< 0 = the schedule's default
  std::vector<MemLimit> mem_limits{MemLimit{}};  ///< parsed limits; MemLimit{} = none
};

/// How a point ended: it ran, or the run's error (exit 5, 4 or 3 of a single run).
enum class SweepStatus : std::uint8_t {
  ok,
  infeasible,  ///< above the memory limit, or no schedule fits it (InfeasibleError)
  invalid,     ///< the schedule is invalid or deadlocks (ScheduleError)
  rejected,    ///< the generator refuses the shape, e.g. zb-h2 with m < 2p (ConfigError)
};
[[nodiscard]] std::string_view sweep_status_name(SweepStatus status);

/// One point: its coordinates, then its outcome. A point that could not run keeps its place
/// with its status and the reason.
struct SweepPoint {
  std::string schedule;
  int devices{0};
  int microbatches{0};
  int chunks{0};  ///< as asked (0 = default); `run_chunks` is what the schedule used
  MemLimit mem_limit;

  SweepStatus status{SweepStatus::ok};
  std::string reason;
  int run_chunks{0};
  std::size_t tasks{0};
  double makespan_ms{0};
  double cost_ms{0};
  double ideal_ms{0};
  double bubble_rate{0};
  double bubble_over_ideal{0};
  double peak_memory{0};    ///< M_B units
  double mem_limit_mb{-1};  ///< the resolved limit in M_B units; < 0 = none
  /// An infeasible point: the least limit (M_B) it runs under (least_mem_limit()); < 0 unknown.
  double least_mem_limit{-1};

  [[nodiscard]] bool ok() const { return status == SweepStatus::ok; }
};

/// How many points the grid has (the product of its axes), saturated at the largest value.
[[nodiscard]] long long sweep_grid_points(const SweepGrid& grid);

/// Every combination, in the order schedule, p, v, memory limit, m (m innermost: one curve of
/// bubble-vs-m is a run of consecutive points). Throws ConfigError for an empty axis, and for
/// a grid of more than limits::kMaxSweepPoints points (before allocating any).
[[nodiscard]] std::vector<SweepPoint> expand_sweep_grid(const SweepGrid& grid);

/// Expands the grid and runs every point with `base`'s costs and iterations (its schedule and
/// shape are the point's). A point's InfeasibleError, ScheduleError or ConfigError becomes its
/// status and reason; an unknown schedule name or a malformed memory limit, wrong for every
/// point, is thrown (ConfigError) before anything runs. Each finished point is reported to
/// `progress` ("points"; with an exchange, this rank's points). With an exchange of several
/// ranks (share_work), rank 0 returns every point and the other ranks an empty list; any other
/// error on any rank is thrown on every rank instead of leaving one waiting.
[[nodiscard]] std::vector<SweepPoint> run_sweep(const SweepGrid& grid, const RunRequest& base,
                                                Progress* progress = nullptr,
                                                Workers workers = {});

/// A point's outcome as bytes for another process of the same build (share_work), and back:
/// decode writes it into `point` (whose coordinates it already has); std::runtime_error naming
/// `from` when the bytes are not one outcome.
[[nodiscard]] std::string encode_sweep_outcome(const SweepPoint& point);
void decode_sweep_outcome(std::string_view bytes, SweepPoint& point, std::string_view from);

} // namespace ppsim
