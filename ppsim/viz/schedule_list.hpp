// `ppsim list`: the schedules of the registry, with their constraints, references and the
// PyTorch class of the same schedule, as a table for people (write_schedule_list) or as JSON
// (schedule_list_json).
#pragma once

#include "ppsim/schedules/registry.hpp"

#include <ostream>
#include <span>
#include <string>

namespace ppsim {

/// Each schedule's name and aliases, description, constraint, reference and PyTorch class
/// and note, then what a schedule file is and what the PyTorch line means.
void write_schedule_list(std::ostream& out, std::span<const ScheduleInfo> schedules);

/// A JSON array of the same: per schedule its name, aliases, constraint, description,
/// reference, and `pytorch_class` / `pytorch_note` (null where there is none).
[[nodiscard]] std::string schedule_list_json(std::span<const ScheduleInfo> schedules);

} // namespace ppsim
