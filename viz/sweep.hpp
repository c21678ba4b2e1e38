// `ppsim sweep`: the grid of (schedule, p, v, memory limit, m) points and its writers (text
// table, CSV, JSON, HTML with bubble-vs-m and bubble-vs-memory curves).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace ppsim {

/// The axes of a sweep; every combination is one point.
struct SweepGrid {
  std::vector<std::string> schedules;
  std::vector<int> stages;
  std::vector<int> microbatches;
  std::vector<int> chunks{0};               ///< 0 = the schedule's default
  std::vector<std::string> mem_limits{""};  ///< --mem-limit texts; "" = none
};

/// One point: its coordinates, then its outcome. A point that could not run keeps its place
/// with status `infeasible` (exit 5 of a run), `invalid` (4) or `rejected` (3: the generator
/// refuses the shape, e.g. zb-h2 with m < 2p) and the reason.
struct SweepPoint {
  std::string schedule;
  int stages{0};
  int microbatches{0};
  int chunks{0};  ///< as asked (0 = default); `run_chunks` is what the schedule used
  std::string mem_limit;

  std::string status{"ok"};
  std::string reason;
  int run_chunks{0};
  std::size_t tasks{0};
  double makespan_ms{0};
  double cost_ms{0};
  double ideal_ms{0};
  double bubble_rate{0};
  double bubble_over_ideal{0};
  double peak_memory{0};  ///< M_B units
  double mem_limit_mb{-1};  ///< the resolved limit in M_B units; < 0 = none

  [[nodiscard]] bool ok() const { return status == "ok"; }
};

/// Every combination, in the order schedule, p, v, memory limit, m (m innermost: one curve of
/// bubble-vs-m is a run of consecutive points). Throws ConfigError for an empty axis.
[[nodiscard]] std::vector<SweepPoint> expand_sweep_grid(const SweepGrid& grid);

/// One line per point; the reason of a failed point is its last column.
void write_sweep_table(std::ostream& out, std::span<const SweepPoint> points);

/// RFC 4180 CSV with a header line:
/// `schedule,p,m,v,mem_limit,status,chunks,tasks,makespan_ms,cost_ms,ideal_ms,bubble_rate,`
/// `bubble_over_ideal,peak_memory,reason` (metrics empty for a point that did not run).
void write_sweep_csv(std::ostream& out, std::span<const SweepPoint> points);

/// `{"schema": "ppsim.sweep/1", "points": [...]}`.
[[nodiscard]] std::string sweep_json(std::span<const SweepPoint> points);

/// A self-contained HTML page: bubble rate against m (one curve per schedule, p, v and memory
/// limit), bubble rate against peak memory (one curve per schedule, p, v and m: its points are the
/// memory limits), and the table of all
/// points including those that did not run. `costs` names where the costs came from.
void write_sweep_html(std::ostream& out, std::span<const SweepPoint> points,
                      const std::string& costs);

} // namespace ppsim
