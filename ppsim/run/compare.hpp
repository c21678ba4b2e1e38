// `ppsim compare`'s decisions: run every schedule, keep going past one that does not fit the
// memory limit (its row says why and the least limit that would work), and the exit status.
#pragma once

#include "ppsim/run/request.hpp"
#include "ppsim/sim/progress.hpp"
#include "ppsim/sim/run.hpp"

#include <span>
#include <string>
#include <vector>

namespace ppsim {

/// One schedule of a comparison: its run, or why it could not run.
struct CompareRow {
  std::string schedule;        ///< as asked
  int devices{0};              ///< p as asked; 0 for a schedule file
  int microbatches{0};         ///< m as asked; 0 for a schedule file
  int chunks{0};               ///< v as asked; 0 = the schedule's default
  int run{-1};                 ///< when it ran: its index in Comparison::runs
  std::string reason;          ///< when it did not: the InfeasibleError's message
  double least_mem_limit{-1};  ///< when it did not: the least limit (M_B) it runs under; < 0 unknown
  bool out_of_memory{false};   ///< it did not run because a device exceeds its capacity in bytes
  /// It did not run because its generator refuses the shape (zb-h2 with m < 2p, dualpipe with
  /// m < 2p): `reason` is the constraint, as a sweep's rejected point.
  bool rejected{false};

  [[nodiscard]] bool ok() const { return run >= 0; }
};

/// The rows of a comparison, in the order asked, and the runs of those that ran (in the same
/// order, for the writers that take runs).
struct Comparison {
  std::vector<CompareRow> rows;
  std::vector<Run> runs;

  [[nodiscard]] bool any_ran() const { return !runs.empty(); }
  [[nodiscard]] const Run& run_of(const CompareRow& row) const {
    return runs[static_cast<std::size_t>(row.run)];
  }
  /// The outcome of the whole: fine when at least one schedule ran; an InfeasibleError (exit 5,
  /// as a single run) naming each schedule's least limit when none did.
  void require_any_ran() const;
};

/// Runs each request. One that is infeasible (InfeasibleError: above the memory limit, or no
/// schedule within it) keeps its row with the reason and least_mem_limit(); one whose generator
/// refuses the shape (a ConfigError once the names are known good) keeps its row as rejected;
/// an unknown schedule name is thrown before anything runs, an invalid schedule as from
/// run_request. With jitter, each run's
/// samples also count its wins over the others' samples (SampleSummary::wins). Each schedule
/// started is
/// reported to `progress` ("schedules").
[[nodiscard]] Comparison run_compare(std::span<const RunRequest> requests,
                                     Progress* progress = nullptr);

/// The least memory limit, M_B units, under which the request runs (its --mem-limit ignored):
/// a handcrafted schedule's (or a file's) own peak, over all iterations; for an automatic one,
/// the least limit at which its generator finds a schedule (a bisection over limits, each a
/// generation, ending on the peak of the schedule found when that limit works too). -1 when
/// none is found up to 2^30 times the asked limit.
[[nodiscard]] double least_mem_limit(const RunRequest& request);

} // namespace ppsim
