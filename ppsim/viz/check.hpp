// The document of `ppsim check --json` (ppsim.check/1): every case's metrics against the
// baseline's, and how many got worse or better.
#pragma once

#include "ppsim/run/check.hpp"

#include <string>
#include <string_view>

namespace ppsim {

/// ppsim.check/1 of `result`, checked against the baseline file `baseline`: the tolerance, per
/// case each metric's expected value (null for a new one), what it gave and its change (`new`,
/// `same`, `worse`, `better`), the regressions and improvements counted over metrics, and
/// whether the baseline was rewritten (`updated`).
[[nodiscard]] std::string check_json(const CheckResult& result, std::string_view baseline,
                                     bool updated);

} // namespace ppsim
