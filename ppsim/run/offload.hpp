// Activation offload of a run request: the --offload spec resolved against its schedule and
// costs into the copies the engine adds (ppsim/sim/offload.hpp), and `auto`'s search for the
// smallest fraction that fits the memory limit.
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/offload_text.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/offload.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/schedule.hpp"

#include <string_view>

namespace ppsim {

/// The cost of a copy: --costs copy= (ms per M_B, no latency) when given, else the device's
/// host link (its latency, and the bytes of M_B over its bandwidth). ConfigError `where: ...`
/// naming what is missing: the copy key, the device's host link, or the bytes of M_B. The plan
/// has no fractions yet.
[[nodiscard]] OffloadPlan copy_costs(const CostSpec& costs, const DeviceSpec* device,
                                     std::string_view where);

/// The plan of a fraction spec on `schedule`: its fraction on each selected stage (those in
/// its stage range and its chunk range; every stage without either), 0 elsewhere. ConfigError
/// for a stage or chunk beyond the schedule, or a spec that selects no stage.
[[nodiscard]] OffloadPlan offload_plan(const OffloadSpec& spec, const Schedule& schedule,
                                       const CostSpec& costs, const DeviceSpec* device);

/// The plan a request runs `schedule` with (an empty one without --offload): a fraction spec as
/// offload_plan gives it; `auto` the smallest fraction of every activation on the grid 0,
/// 0.05, ..., 1 at which every device's peak fits `mem_limit` (M_B, < 0 = none) and the
/// request's capacity in bytes, InfeasibleError naming the device when even 1 does not fit.
/// ConfigError for `auto` without a limit or a capacity, and for an offload with iterations,
/// jitter or a host link shared with pipeline messages (not modelled yet).
[[nodiscard]] OffloadPlan request_offload(const RunRequest& request, const Schedule& schedule,
                                          const CostSpec& costs, double mem_limit);

/// After a run with an offload: its "offload" parameter, and OutOfMemoryError when a device
/// holds more on the host than the device's host_memory_gib (when known).
void finish_offload_run(Run& run, const RunRequest& request);

} // namespace ppsim
