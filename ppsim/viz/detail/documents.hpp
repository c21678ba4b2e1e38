// Private helpers of the writers (not installed): the documents behind metrics_json, import_json,
// diff_json, model_costs_json and validation_json as values, for a writer that nests one in its own document (report, diff, the
// Python module) without writing it out and reading it back.
#pragma once

#include "ppsim/run/measured.hpp"
#include "ppsim/run/published.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/run.hpp"

#include <nlohmann/json.hpp>

namespace ppsim::detail {

/// The `ppsim.metrics/1` object that metrics_json(run) writes.
[[nodiscard]] nlohmann::ordered_json metrics_document(const Run& run);
/// The `ppsim.import/1` document that import_json writes.
[[nodiscard]] nlohmann::ordered_json import_document(const MeasuredRun& measured, const CostFit& fit);
/// The `ppsim.diff/1` document that diff_json writes.
[[nodiscard]] nlohmann::ordered_json diff_document(const DiffReport& diff);
/// The `ppsim.costs/1` document with its `model` section that model_costs_json writes.
[[nodiscard]] nlohmann::ordered_json model_costs_document(const WorkloadSpec& w,
                                                          const ModelCosts& mc,
                                                          const Layout& layout, int devices);
/// The `ppsim.validation/1` document that validation_json writes.
[[nodiscard]] nlohmann::ordered_json validation_document(const PublishedRuns& runs,
                                                         const Validation& v);

} // namespace ppsim::detail
