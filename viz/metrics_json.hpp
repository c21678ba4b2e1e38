// The `ppsim.metrics/1` JSON document of a run, and the text tables of `simulate` / `compare`.
#pragma once

#include "sim/run.hpp"

#include <iosfwd>
#include <span>
#include <string>

namespace ppsim {

/// One `ppsim.metrics/1` object (DESIGN.md), pretty-printed with a stable key order.
[[nodiscard]] std::string metrics_json(const Run& run);
/// A JSON array of such objects, for `compare --json`.
[[nodiscard]] std::string metrics_json_array(std::span<const Run> runs);

/// `simulate`'s human-readable report: parameters, metrics, one row per device.
void write_run_report(std::ostream& out, const Run& run);
/// `compare`'s table: one row per schedule.
void write_compare_table(std::ostream& out, std::span<const Run> runs);

} // namespace ppsim
