// `ppsim plan`'s documents: the ppsim.plan/1 JSON and the ranked table, of one pipeline's plan
// and of a --gpus search over layouts.
#pragma once

#include "ppsim/run/plan.hpp"

#include <iosfwd>
#include <string>

namespace ppsim {

/// The ppsim.plan/1 document of `plan`: its request, every candidate, the winner and why.
[[nodiscard]] std::string plan_json(const Plan& plan, const PlanRequest& request);

/// The ranked table of `plan`'s best `top` candidates (a fitting one shows its layout and
/// knobs, one that does not fit why), then the winner and why.
void write_plan_table(std::ostream& out, const Plan& plan, const PlanRequest& request, int top);

/// The document of `plan --gpus`: the plan of the best layout (ppsim.plan/1's keys, for that
/// layout's request), then every layout with its best candidate or why it does not fit.
[[nodiscard]] std::string parallel_plan_json(const ParallelPlan& plan,
                                             const ParallelRequest& request);

/// The table of `plan --gpus`: the best `top` layouts, the best layout and why, then that
/// layout's plan as write_plan_table() draws it.
void write_parallel_plan_table(std::ostream& out, const ParallelPlan& plan,
                               const ParallelRequest& request, int top);

} // namespace ppsim
