// `--recompute auto`: per stage the cheapest recomputation that lets every device fit (for a
// memory-limited search, the one whose run is fastest).
#pragma once

#include "ppsim/run/request.hpp"

namespace ppsim {

/// The choices of a stage of `layers` decoder layers of `model` in the order `auto` tries them:
/// by the FLOPs of the forward they recompute (ties: none, selective, full:k, full:k+selective,
/// full), from none to full.
[[nodiscard]] std::vector<StageRecompute> recompute_ladder(const ModelSpec& model, int layers);

/// A request with `auto` resolved into one choice per stage of its layout, and the run of it.
struct RecomputeChoice {
  RunRequest request;
  Run run;
};

/// Starts with no recomputation. While a device is above the memory it has (the request's
/// capacity in bytes and/or its --mem-limit), every stage it holds moves one step up its ladder
/// (none, selective, full:N, full:N+selective, full: the choices of the stage ordered by the time their
/// recomputed forward costs), re-measuring the same run's order, which decides a device's peak;
/// then the run is simulated again with the choices (a schedule built from costs may change)
/// and the steps go on from there, at most limits of the ladders. A device that does not fit
/// with everything recomputed is left at full, for run_request to report. A schedule whose
/// search takes the memory limit (takes_mem_limit: zb-v, zb-auto) fits at every step but may
/// find a far slower order in little room: from the first choice that fits, every stage steps on
/// up its ladder and the fastest iteration that fits is kept (ties: the less recomputation).
/// ConfigError when the request has no workload or no memory to fit in.
[[nodiscard]] RecomputeChoice choose_recompute(const RunRequest& request);

} // namespace ppsim
