// Costs as text: the `--costs F=1,B=1,W=1,comm=0` option and `ppsim.costs/1` cost files.
#pragma once

#include "ppsim/sim/cost_model.hpp"

#include <string>
#include <string_view>

namespace ppsim {

/// Applies `F=1,B=1,W=1,comm=0,MW=0.5` style overrides to every stage of `spec`.
/// Keys: F, B, W, BW, FB, comm (ms), copy (ms to copy one M_B to or from the host, for
/// --offload), MB, MW (M_B units), act_bytes, grad_bytes (the bytes F sends forward and B sends
/// back). Throws ConfigError.
void apply_costs(CostSpec& spec, std::string_view text);
[[nodiscard]] CostSpec parse_costs(std::string_view text);

/// Reads a `ppsim.costs/1` JSON document; `where` (a file name) prefixes every error.
[[nodiscard]] CostSpec parse_cost_json(std::string_view json, std::string_view where);
[[nodiscard]] CostSpec load_cost_file(const std::string& path);

/// `--slow device=D,factor=X`: device D's tasks take X times as long (0 < X <= 1e6). The range
/// of D against the schedule is checked by cost_model_for. Throws ConfigError naming the key.
[[nodiscard]] SlowDevice parse_slow(std::string_view text);

/// The `ppsim.costs/1` document of `spec` (times in ms, memory in M_B units and bytes when the
/// unit is known, parameters and state bytes when known), which parse_cost_json reads back to
/// the same costs.
[[nodiscard]] std::string cost_spec_json(const CostSpec& spec, const std::string& description);

} // namespace ppsim
