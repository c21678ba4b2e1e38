// Writers of measured runs: `ppsim import`'s summary and JSON, `ppsim diff`'s table and JSON,
// the bubble inventory (CSV) and the measured and simulated timelines on one time axis (Chrome
// trace for Perfetto).
#pragma once

#include "ppsim/run/measured.hpp"

#include <iosfwd>
#include <string>

namespace ppsim {

/// `{"schema": "ppsim.import/1", "source": {...}, "measured": <ppsim.metrics/1>, "fit": {...}}`.
[[nodiscard]] std::string import_json(const MeasuredRun& measured, const CostFit& fit);

/// The text summary: where the run came from, its metrics, the fitted costs per stage and how
/// well they explain it.
void write_import_report(std::ostream& out, const MeasuredRun& measured, const CostFit& fit);

/// `{"schema": "ppsim.diff/1", "measured", "simulated", "replayed" (ppsim.metrics/1 each),
/// "errors": {makespan_error, cost_error, bubble_rate_error, replay_cost_error,
/// start_error_mean_ms, ...}, "idle": {"total_ms", "causes": {NAME: {ms, share}}, "windows"}}`.
[[nodiscard]] std::string diff_json(const DiffReport& diff);

/// The text table: measured / simulated / replayed side by side, the errors, the causes.
void write_diff_report(std::ostream& out, const DiffReport& diff);

/// The bubble inventory: `device,start_ms,end_ms,length_ms,cause,next_task,memory_M_B,free_M_B`,
/// one row per idle window, device by device in time order.
void write_idle_csv(std::ostream& out, const DiffReport& diff);

/// One Chrome trace with both timelines on one time axis: the measured devices first
/// (processes 1..p, "measured device d", each task with its simulated end's error in args and a
/// colour by its size, the idle windows on a thread "idle" named by cause), then the simulated
/// ones (processes p+1..2p, "simulated device d").
void write_diff_trace(std::ostream& out, const DiffReport& diff);

} // namespace ppsim
