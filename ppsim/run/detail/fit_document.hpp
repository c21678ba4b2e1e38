// Private helper of the writers (not installed): a cost fit's "fit" section as a value, which
// fitted_costs_json writes into the cost file and the import document carries as it is.
#pragma once

#include "ppsim/run/measured.hpp"

#include <nlohmann/json.hpp>

namespace ppsim::detail {

/// The "fit" section of fitted_costs_json: per stage and kind the samples, median, p10, p90 and
/// spread, comm's samples, device loads and the replay error.
[[nodiscard]] nlohmann::ordered_json fit_section(const CostFit& fit, const MeasuredRun& measured);

} // namespace ppsim::detail
