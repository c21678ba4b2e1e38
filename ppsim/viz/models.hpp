// The documents about models: `ppsim models --json` (the presets), the ppsim.costs/1 file
// `ppsim costs` writes, with its `model` section, and `ppsim validate-model --json`
// (ppsim.validation/1).
#pragma once

#include "ppsim/io/model_file.hpp"
#include "ppsim/run/published.hpp"
#include "ppsim/run/transformer.hpp"

#include <string>
#include <span>

namespace ppsim {

/// The models as a JSON array, each in ppsim.model/1's key names with its parameter count
/// (and, for a mixture of experts, its active parameters; `mla` and `moe` where they apply).
[[nodiscard]] std::string models_json(std::span<const ModelSpec> models);

/// The ppsim.costs/1 document of `w`'s costs on `devices` devices (cost_spec_json's, described
/// as "MODEL on DEVICE, N devices") with its `model` section: the model's shape as in
/// models_json, where it and the device came from, the layout and the parallelism, and, when
/// `mc` has them, per stage where F's, B's, W's and R's time goes and its optimizer step.
[[nodiscard]] std::string model_costs_json(const WorkloadSpec& w, const ModelCosts& mc,
                                           const Layout& layout, int devices);

/// The published measured runs built in (data/published/megatron-2021.json: Megatron-LM's GPT
/// runs of 2021 on A100), what `ppsim validate-model` predicts without a file.
[[nodiscard]] PublishedRuns builtin_published_runs();

/// ppsim.validation/1: every published run with what ppsim predicts for it, and the error
/// summaries of the runs fitted and of those held out.
[[nodiscard]] std::string validation_json(const PublishedRuns& runs, const Validation& v);

} // namespace ppsim
