// Private helper of the writers (not installed): the ppsim.costs/1 document as a value, for a
// writer that adds sections of its own (the fit) before it is written once.
#pragma once

#include "ppsim/io/cost_file.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace ppsim::detail {

/// What cost_spec_json writes, before it is written (no "model" section).
[[nodiscard]] nlohmann::ordered_json cost_spec_document(const CostSpec& spec,
                                                        const std::string& description);

} // namespace ppsim::detail
