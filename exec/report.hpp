// The measured run next to the simulator's prediction of the same schedule: Runs, errors, JSON.
#pragma once

#include "exec/executor.hpp"
#include "ppsim/sim/run.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace ppsim::exec {

/// A measured iteration and the simulation of the same schedule on the run's costs, as two Runs
/// so that every writer of the simulator (Chrome trace, metrics JSON) serves both.
struct ExecReport {
  Run measured;
  Run predicted;
  /// The schedule replayed on the measured iteration's own durations (ppsim/run/measured.hpp) and the
  /// latency of its own waits for messages: what the order and the messages explain, apart from
  /// the calibration's kernel timings.
  Run replayed;
  int reported_iteration{0};           ///< which measured iteration `measured` is
  std::vector<Ticks> iteration_costs;  ///< measured cost of every iteration
  ExecResult result;
  ModelShape shape;
};

/// The iteration reported: with several iterations the first is a warm-up, and of the rest the
/// one with the median cost (the earlier of two middle ones).
[[nodiscard]] int reported_iteration(const std::vector<Ticks>& costs);

/// Simulates `schedule` on result.costs and wraps the reported measured iteration as a Run
/// (metrics by measure(), memory from the same cost model).
/// The prediction runs under the executed comm mode and the measured link (or `asked`'s link
/// when it is sized; its contention either way), with every message's bytes the activation's.
[[nodiscard]] ExecReport make_report(const Schedule& schedule, const ExecResult& result,
                                     const ModelShape& shape, const CommOptions& asked = {});

/// (predicted − measured) / measured; 0 when both are 0, infinity when only measured is 0.
[[nodiscard]] double relative_error(double predicted, double measured);

/// The `ppsim.execute/1` document: the run, the measured and predicted `ppsim.metrics/1`
/// objects, the error of each metric, the gradient check.
[[nodiscard]] std::string execute_json(const ExecReport& report);

/// The human-readable comparison table.
void write_execute_report(std::ostream& out, const ExecReport& report);

} // namespace ppsim::exec
