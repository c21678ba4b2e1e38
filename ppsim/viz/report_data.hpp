// The data of the interactive report and of `ppsim serve`'s page: runs as compact JSON
// (`ppsim.report/1`) that the page's script draws.
#pragma once

#include "ppsim/run/compare.hpp"
#include "ppsim/sim/run.hpp"

#include <span>
#include <string>
#include <string_view>

namespace ppsim {

/// `{"schema": "ppsim.report/1", "title", "palette", "span_ms", "metrics": [...], "runs": [...]}`.
/// `metrics` is exactly `compare --json`'s array (one ppsim.metrics/1 object per row, with its
/// status); `runs` holds, in the order of the rows that ran, each timeline in integer time units
/// of `unit_ns` nanoseconds (the greatest common divisor of its times, so they stay exact):
///
///   "dev": per device {"g": gap before each task, "d": durations, "k": kinds (index into
///          "kinds"), "s": stages, "b": micro-batches}; a task starts `g` after the previous
///          one ended (the first: after time 0, the run's first start)
///   "fb":  [[task, kind2, stage2, microbatch2], ...] the backward halves of FB tasks (task =
///          index over all devices' tasks in order)
///   "mem": per device {"g": time since the previous step, "v": M_B held from then on}
///          (memory_series: the one owner of the memory rule)
///   "comm": {"f": producing task, "t": consuming task, "s": send - producer's end,
///          "a": arrive - send} (the engine's CommEvents)
///
/// plus the shape, the chunk and device of every stage, the memory limit and the parameters.
/// Text is escaped so the document can sit inside a `<script>` element (`<` as `\u003c`).
/// Deterministic: the same runs give the same bytes.
[[nodiscard]] std::string report_data_json(const Comparison& comparison, std::string_view title);
/// The same for runs that are not a comparison (every run is an "ok" row).
[[nodiscard]] std::string report_data_json(std::span<const Run> runs, std::string_view title);

} // namespace ppsim
