// The script and style of the report and of `ppsim serve`'s page, embedded at build time from
// ppsim/viz/page/ (cmake/embed_assets.cmake), so every report is one self-contained file.
#pragma once

#include <string_view>

namespace ppsim {

/// ppsim/viz/page/report.js: draws a ppsim.report/1 or ppsim.sweep-report/2 document
/// (`ppsim.render(element, data)`); shared by the report files and the playground.
[[nodiscard]] std::string_view report_script();
/// ppsim/viz/page/report.css.
[[nodiscard]] std::string_view report_style();
/// ppsim/viz/page/playground.js: the playground's controls, the API calls and the redraws.
[[nodiscard]] std::string_view playground_script();
/// data/published/megatron-2021.json: the published runs `ppsim validate-model` checks by
/// default (ppsim/run/published.hpp), embedded like the page's files so that an installed ppsim has it.
[[nodiscard]] std::string_view published_megatron_2021();

} // namespace ppsim
