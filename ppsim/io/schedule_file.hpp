// Schedule files: PyTorch's compute-only CSV (torch.distributed.pipelining) and ppsim's own JSON.
#pragma once

#include "ppsim/io/action_text.hpp"
#include "ppsim/sim/schedule.hpp"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// Whether `-s` names a file rather than a generator: the text ends with `.csv` or `.json`.
[[nodiscard]] bool is_schedule_file(std::string_view name_or_path);

/// Reads a `.csv` (PyTorch compute-only) or `.json` (`ppsim.schedule/1`) schedule, by extension.
/// Unreadable or unparseable files throw ConfigError naming `file:line:cell` or the JSON path.
/// A CSV whose stages cannot be placed (a stage on two ranks, a stage that never appears)
/// throws ScheduleError. Other structural problems (missing or duplicated tasks, W before its
/// B, ...) are left to validate(); deadlocks to simulate(). A CSV's schedule keeps its file's
/// notation, so that their messages name its tasks as the file does (`0I0`, not `0B0`).
///
///   Schedule s = load_schedule_file("data/examples/schedules/1f1b-p4-m8.csv");
///   require_valid(s);
[[nodiscard]] Schedule load_schedule_file(const std::string& path,
                                          PytorchNotation csv = PytorchNotation::current);

/// PyTorch's `_PipelineScheduleRuntime` compute-only CSV: row r is rank r's actions in order.
/// Cells: `0F1` forward, `2I1` backward for the input (our B), `0W3` weights (our W), `0B3`
/// full backward (our BW), `(0F7;7B3)OVERLAP_F_B` (our FB; inner `B` = BW, inner `I` = B).
/// Empty cells are idle and skipped; whitespace around a cell is ignored. The placement comes
/// from which rank runs each stage; stages = max stage + 1, micro-batches = max id + 1, one route
/// 0..S-1. The name is the stem of `where` (a file name, also the prefix of every error).
/// In the current notation, a file without any `I` in which a `W` follows the `B` of its stage
/// and micro-batch is in the old notation: ConfigError names the cells and
/// `--pytorch-notation old`.
[[nodiscard]] Schedule parse_pytorch_csv(std::string_view text, std::string_view where,
                                         PytorchNotation notation = PytorchNotation::current);

/// ppsim's JSON (`"schema": "ppsim.schedule/1"`, see write_schedule_json). Every key is checked;
/// unknown keys are rejected with their JSON path (`file.json: /order/2/5: ...`).
[[nodiscard]] Schedule parse_schedule_json(std::string_view text, std::string_view where);

/// Writes `{"schema": "ppsim.schedule/1", "name", "devices", "microbatches", "placement",
/// "routes", ["microbatch_routes",] "order"}` with tasks in the compact text form (`0F0`,
/// `1BW3`, `(0F7;7B3)`). `microbatch_routes` is written unless every micro-batch is on the only
/// route. parse_schedule_json() reads it back to an equal Schedule.
void write_schedule_json(std::ostream& out, const Schedule& schedule);

/// Writes the PyTorch compute-only CSV in the current notation (our B -> `I`, BW -> `B`, FB ->
/// `(sFj;sBk)OVERLAP_F_B` with `I` or `B` inside), one line per rank ending in `\n`. Throws
/// ConfigError when the format cannot express the schedule: several routes, a route other than
/// 0..S-1, or a placement the rows do not determine. Writes no idle cells: ppsim's orders have
/// no time in them, and PyTorch's runtime skips its `None` cells.
void write_pytorch_csv(std::ostream& out, const Schedule& schedule);

/// The same with PyTorch's idle slots (`None`, an empty cell) where `slots` has them: each row of
/// `slots` must hold exactly its device's tasks in order (ConfigError otherwise). For the
/// generators that reproduce a PyTorch class's lock-step picture (ScheduleInfo::pytorch_slots).
void write_pytorch_csv(std::ostream& out, const Schedule& schedule,
                       std::span<const std::vector<std::optional<Task>>> slots);

} // namespace ppsim
