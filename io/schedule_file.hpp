// Schedule files: PyTorch's compute-only CSV (torch.distributed.pipelining) and ppsim's own JSON.
#pragma once

#include "sim/schedule.hpp"

#include <iosfwd>
#include <string>
#include <string_view>

namespace ppsim {

/// Whether `-s` names a file rather than a generator: the text ends with `.csv` or `.json`.
[[nodiscard]] bool is_schedule_file(std::string_view name_or_path);

/// Reads a `.csv` (PyTorch compute-only) or `.json` (`ppsim.schedule/1`) schedule, by extension.
/// Unreadable or unparseable files throw ConfigError naming `file:line:cell` or the JSON path.
/// A CSV whose stages cannot be placed (a stage on two ranks, a stage that never appears)
/// throws ScheduleError. Other structural problems (missing or duplicated tasks, W before its
/// B, ...) are left to validate(); deadlocks to simulate().
///
///   Schedule s = load_schedule_file("data/examples/schedules/1f1b-p4-m8.csv");
///   require_valid(s);
[[nodiscard]] Schedule load_schedule_file(const std::string& path);

/// PyTorch's `_PipelineScheduleRuntime` compute-only CSV: row r is rank r's actions in order.
/// Cells: `0F1` forward, `2I1` backward for the input (our B), `0W3` weights (our W), `0B3`
/// full backward (our BW), `(0F7;7B3)OVERLAP_F_B` (our FB; inner `B` = BW, inner `I` = B).
/// Empty cells are idle and skipped; whitespace around a cell is ignored. The placement comes
/// from which rank runs each stage; stages = max stage + 1, micro-batches = max id + 1, one route
/// 0..S-1. The name is the stem of `where` (a file name, also the prefix of every error).
[[nodiscard]] Schedule parse_pytorch_csv(std::string_view text, std::string_view where);

/// ppsim's JSON (`"schema": "ppsim.schedule/1"`, see write_schedule_json). Every key is checked;
/// unknown keys are rejected with their JSON path (`file.json: /order/2/5: ...`).
[[nodiscard]] Schedule parse_schedule_json(std::string_view text, std::string_view where);

/// Writes `{"schema": "ppsim.schedule/1", "name", "devices", "microbatches", "placement",
/// "routes", ["microbatch_routes",] "order"}` with tasks in the compact text form (`0F0`,
/// `1BW3`, `(0F7;7B3)`). `microbatch_routes` is written unless every micro-batch is on the only
/// route. parse_schedule_json() reads it back to an equal Schedule.
void write_schedule_json(std::ostream& out, const Schedule& schedule);

/// Writes the PyTorch compute-only CSV (our B -> `I`, BW -> `B`, FB -> `(sFj;sBk)OVERLAP_F_B`
/// with `I` or `B` inside). Throws ConfigError when the format cannot express the schedule:
/// several routes, a route other than 0..S-1, or a placement the rows do not determine.
void write_pytorch_csv(std::ostream& out, const Schedule& schedule);

} // namespace ppsim
