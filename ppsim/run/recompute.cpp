// `--recompute auto`: stages step up their ladders until every device fits.
#include "ppsim/run/recompute.hpp"

#include "ppsim/run/transformer.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

namespace ppsim {

std::vector<StageRecompute> recompute_ladder(const ModelSpec& m, int layers) {
  struct Step {
    StageRecompute choice;
    double flops;
  };
  std::vector<Step> steps{{{Recompute::none, -1, Recompute::none}, 0.0}};
  if (layers > 0) {
    const double selective = decoder_layer(m, Recompute::selective).R_flops;
    const double full = decoder_layer(m, Recompute::full).R_flops;
    steps.push_back({{Recompute::selective, -1, Recompute::none}, layers * selective});
    for (int k = 1; k < layers; ++k) {
      steps.push_back({{Recompute::full, k, Recompute::none}, k * full});
      steps.push_back({{Recompute::full, k, Recompute::selective}, k * full + (layers - k) * selective});
    }
    steps.push_back({{Recompute::full, -1, Recompute::none}, layers * full});
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.flops < b.flops; });
  std::vector<StageRecompute> out;
  out.reserve(steps.size());
  for (const Step& s : steps) out.push_back(s.choice);
  return out;
}

RecomputeChoice choose_recompute(const RunRequest& rq) {
  if (!rq.workload) throw ConfigError("--recompute auto: needs --model (a model says what recomputing costs)");
  const double capacity = rq.mem_capacity_bytes > 0 ? rq.mem_capacity_bytes : rq.fill_capacity_bytes;
  if (capacity <= 0 && !rq.mem_limit.given())
    throw ConfigError("--recompute auto: needs memory to fit in: --mem-capacity, a device that "
                      "knows its memory, or --mem-limit");
  const int devices = rq.devices.value_or(0);
  if (devices < 1) throw ConfigError("--recompute auto: needs -p");
  RunRequest probe = rq;
  probe.chunks = request_chunks(rq);  // a chunked schedule's layout has v p stages to choose for
  probe.workload->recompute_auto = false;
  probe.jitter = {};  // the probes need no samples; the final run takes them
  const Layout layout = workload_layout(*probe.workload, devices, probe.chunks);
  const std::size_t n = layout.stages.size();
  std::vector<std::vector<StageRecompute>> ladders;
  for (const StageLayers& st : layout.stages)
    ladders.push_back(recompute_ladder(probe.workload->model, st.decoders + st.mtp));
  std::vector<std::size_t> at(n, 0);
  const auto apply = [&] {
    probe.workload->recompute.clear();
    for (std::size_t i = 0; i < n; ++i) probe.workload->recompute.push_back(ladders[i][at[i]]);
  };
  // Which devices are above their memory in `m`, for a run whose resolved limit is `limit`.
  const auto over = [&](const Metrics& m, double limit) {
    std::vector<bool> out(m.per_device.size(), false);
    for (const DeviceMetrics& d : m.per_device)
      out[static_cast<std::size_t>(d.device)] =
          (capacity > 0 && d.peak_bytes > capacity) ||
          (limit >= 0 && d.peak_memory > limit + 1e-9);
    return out;
  };
  // One step up for each stage marked; false when none could move.
  const auto advance = [&](const std::vector<bool>& move) {
    bool moved = false;
    for (std::size_t i = 0; i < n; ++i)
      if (move[i] && at[i] + 1 < ladders[i].size()) {
        ++at[i];
        moved = true;
      }
    return moved;
  };
  // One step up for every stage that lies (in part) on a device above its memory.
  const auto step = [&](const Schedule& s, const std::vector<bool>& bad) {
    const Topology topo(s);
    std::vector<bool> move(n, false);
    for (int stage = 0; stage < s.stages(); ++stage)
      if (bad[static_cast<std::size_t>(topo.device_of(stage))])
        move[static_cast<std::size_t>(cost_piece(topo, stage, static_cast<int>(n)))] = true;
    return advance(move);
  };
  const auto none_over = [](const std::vector<bool>& bad) {
    return std::none_of(bad.begin(), bad.end(), [](bool b) { return b; });
  };
  std::size_t longest = 0;
  for (const auto& l : ladders) longest = std::max(longest, l.size());
  std::optional<Run> found;
  // NOTE: every round moves at least one stage up, so the rounds end within the ladders.
  for (std::size_t round = 0; round <= longest && !found; ++round) {
    apply();
    Run run;
    try {
      run = run_unchecked(probe);
    } catch (const InfeasibleError&) {
      // A memory-limited search found no order in the room left: recompute everywhere a step.
      if (!advance(std::vector<bool>(n, true))) throw;
      continue;
    }
    std::vector<bool> bad = over(run.metrics, run.mem_limit);
    if (none_over(bad) || !step(run.schedule, bad)) {
      found = std::move(run);
      break;
    }
    // On this run's order a device's peak does not depend on the times: step on until it fits.
    for (;;) {
      apply();
      const CostModel model = cost_model_for(request_costs(probe, devices), run.schedule);
      bad = over(measure(run.timeline, model), run.mem_limit);
      if (none_over(bad) || !step(run.schedule, bad)) break;
    }
  }
  if (!found) {
    apply();
    probe.jitter = rq.jitter;
    Run run = run_unchecked(probe);
    return {probe, std::move(run)};
  }
  // A schedule that searches its order under the memory left (zb-v, zb-auto) fits at every step,
  // but with little room it may find a far slower order than with more recomputation and more
  // room: from the first choice that fits, every stage steps on up its ladder, and the fastest
  // iteration that fits is kept (ties: the less recomputation).
  if (const ScheduleInfo* info = find_schedule(rq.schedule); info != nullptr && takes_mem_limit(*info)) {
    std::vector<std::size_t> best_at = at;
    while (advance(std::vector<bool>(n, true))) {
      apply();
      try {
        Run run = run_unchecked(probe);
        if (none_over(over(run.metrics, run.mem_limit)) && iteration_time(run) < iteration_time(*found)) {
          found = std::move(run);
          best_at = at;
        }
      } catch (const InfeasibleError&) {
        // this step's search found no order: the next steps, with more room, may
      }
    }
    at = best_at;
    apply();
  }
  if (rq.jitter.requested()) {
    probe.jitter = rq.jitter;
    found = run_unchecked(probe);
  }
  return {probe, std::move(*found)};
}

} // namespace ppsim
