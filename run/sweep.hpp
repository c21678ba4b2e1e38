// `ppsim sweep`'s grid: every combination of schedule, p, v, memory limit and m, each point run
// through run_request() and kept with its outcome, also when it could not run.
#pragma once

#include "run/request.hpp"
#include "sim/progress.hpp"

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

/// The processes of a distributed run (`mpirun -np N ppsim sweep ...`) that share a sweep's
/// points: rank r runs the points i with i % ranks == r, and rank 0 gathers them all. Over MPI
/// in exec/ (exec/point_exchange.hpp); the library itself knows no MPI.
class PointExchange {
public:
  virtual ~PointExchange() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int ranks() const = 0;
  /// Collective (every rank calls it once): every rank's `mine` on rank 0, in rank order;
  /// an empty list on the other ranks.
  [[nodiscard]] virtual std::vector<std::string> gather(const std::string& mine) = 0;
};

/// Where a sweep's points run. Whatever the threads and ranks, each point's outcome is the
/// one a single thread computes: the points are independent and deterministic.
struct SweepWorkers {
  unsigned threads{1};               ///< threads of this process; 0 = one per core
  PointExchange* exchange{nullptr};  ///< several processes share the points; nullptr = one
};

/// Expands the grid and runs every point with `base`'s costs and iterations (its schedule and
/// shape are the point's). A point's InfeasibleError, ScheduleError or ConfigError becomes its
/// status and reason; an unknown schedule name or a malformed memory limit, wrong for every
/// point, is thrown (ConfigError) before anything runs. Each finished point is reported to
/// `progress` ("points"; with an exchange, this rank's points). With an exchange of several
/// ranks, rank 0 returns every point and the other ranks an empty list; any other error on any
/// rank reaches rank 0 (std::runtime_error naming the rank) instead of leaving it waiting.
[[nodiscard]] std::vector<SweepPoint> run_sweep(const SweepGrid& grid, const RunRequest& base,
                                                Progress* progress = nullptr,
                                                SweepWorkers workers = {});

/// The outcomes of `points[i]` for the i in `indices`, as bytes for another process (the same
/// build: doubles travel as their bits, so the gathered sweep equals a one-process run's).
[[nodiscard]] std::string encode_sweep_outcomes(const std::vector<SweepPoint>& points,
                                                const std::vector<std::size_t>& indices);
/// Writes the outcomes `bytes` holds into `points`. Every index must be below points.size() and
/// satisfy `accept`; std::runtime_error (naming `from`) when the bytes are not such a list.
void decode_sweep_outcomes(std::string_view bytes, std::vector<SweepPoint>& points,
                           const std::function<bool(std::size_t)>& accept, std::string_view from);

} // namespace ppsim
