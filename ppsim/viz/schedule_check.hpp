// The documents of `ppsim validate --json` (ppsim.validate/1) and `ppsim export -o F --json`
// (ppsim.export/1): a schedule file's outcome and what was written.
#pragma once

#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/validate.hpp"

#include <string>
#include <string_view>

namespace ppsim {

/// ppsim.validate/1 of `schedule`, read from `file`: its shape, `valid` (no `error`), the
/// violations described (each with its device, index where it has one, and what) and how many
/// there are in all, and the error when there is one.
[[nodiscard]] std::string validate_json(const Schedule& schedule, std::string_view file,
                                        const Violations& violations, std::string_view error);

/// ppsim.export/1: the file written, the schedule's name, the format and its shape.
[[nodiscard]] std::string export_json(const Schedule& schedule, std::string_view file,
                                      std::string_view format);

} // namespace ppsim
