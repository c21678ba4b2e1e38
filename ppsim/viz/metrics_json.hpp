// The `ppsim.metrics/1` JSON document of a run, and the text tables of `simulate` / `compare`.
#pragma once

#include "ppsim/run/compare.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/task_graph.hpp"

#include <iosfwd>
#include <span>
#include <string>

namespace ppsim {

/// One `ppsim.metrics/1` object (DESIGN.md), pretty-printed with a stable key order.
[[nodiscard]] std::string metrics_json(const Run& run);
/// `simulate --critical-path --json`: that object with "critical_path": {"length_ms", "tasks"},
/// the tasks in time order as `2F0@d1` (action text @ device).
[[nodiscard]] std::string metrics_json(const Run& run, const CriticalPath& path);
/// A JSON array of such objects.
[[nodiscard]] std::string metrics_json_array(std::span<const Run> runs);
/// `compare --json`: one object per row, each with "status": a run's object with "status": "ok",
/// or for a schedule that did not fit {"schema", "schedule", "status": "infeasible", "reason",
/// "least_mem_limit" (M_B, null when unknown)}.
[[nodiscard]] std::string compare_json(const Comparison& comparison);

/// `simulate`'s human-readable report: parameters, metrics, one row per device.
void write_run_report(std::ostream& out, const Run& run);
/// `simulate --critical-path`: "critical path: N tasks, L ms" and its tasks as metrics_json()
/// names them, the first and last 32 of a longer path with how many are left out between.
void write_critical_path(std::ostream& out, const Run& run, const CriticalPath& path);
/// `compare`'s table: one row per schedule; an automatic schedule adds its lower bound and gap,
/// a schedule that did not fit says so and names the least limit that works.
void write_compare_table(std::ostream& out, const Comparison& comparison);
void write_compare_table(std::ostream& out, std::span<const Run> runs);

} // namespace ppsim
