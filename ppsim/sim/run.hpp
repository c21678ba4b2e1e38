// One simulated schedule with everything a report needs: the schedule, its costs, the timeline
// and the metrics.
#pragma once

#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/data_parallel.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/offload.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/timeline.hpp"
#include "ppsim/sim/variability.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace ppsim {

/// Where one stage's F + B + W (with a recomputed forward) of one micro-batch spend their time,
/// in ms, when its costs come from a model on a device that knows its kernels
/// (ppsim/run/kernel_time.hpp), and the stage's optimizer step.
struct StageTimeParts {
  double gemm{0};       ///< the weight GEMMs
  double attention{0};  ///< the attention core
  double memory{0};     ///< elementwise and reduction kernels, bound by HBM
  double tp_comm{0};    ///< tensor-parallel collectives
  double ep_comm{0};    ///< expert-parallel all-to-alls
  double overhead{0};   ///< the kernels' fixed cost
  double optimizer{0};  ///< the stage's optimizer step (not part of F, B or W)
};

struct Run {
  Schedule schedule;
  CostModel costs;
  Timeline timeline;
  Metrics metrics;
  /// The run's parameters (schedule, devices, micro-batches, costs, ...) in display order.
  std::vector<std::pair<std::string, std::string>> parameters;
  /// The activation memory limit it was generated or checked against, M_B units; < 0 = none.
  double mem_limit{-1};
  /// Several iterations (run_iterations): then schedule and timeline are the K-fold ones, while
  /// metrics stay those of one iteration. Count 1 and no step for a plain run.
  IterationSummary iterations;
  /// The communication model it was simulated under (the default for a plain run).
  CommOptions comm;
  /// The activation offload it was simulated with (none for a plain run).
  OffloadPlan offload;
  /// The data-parallel synchronisation at its tail (Timeline::collectives); none (1 replica)
  /// for a plain run. With replicas, iterations.iteration_time includes it.
  DataParallelSync data_parallel;
  /// With --jitter/--samples: the distribution of the cost (and iteration time) over noisy
  /// samples; the rest of the run is the deterministic one.
  std::optional<SampleSummary> samples;
  /// For an automatic schedule: a lower bound on the cost of every order of its tasks within
  /// the memory limit its generator worked under (`bound_mem_limit`, M_B units), and
  /// optimality_gap = (cost - lower_bound) / cost, at least the distance to the optimum.
  /// lower_bound < 0 for a handcrafted schedule or a file.
  Ticks lower_bound{-1};
  double optimality_gap{0};
  double bound_mem_limit{-1};
  /// What the generator said of its search (a search that ended at its work budget).
  std::vector<std::string> notes;
  /// Per stage, where its model's time goes (the report's breakdown); empty for costs that
  /// are not a model's on a device that knows its kernels, or that --costs overrides.
  std::vector<StageTimeParts> time_parts;

  [[nodiscard]] bool has_lower_bound() const { return lower_bound >= 0; }
};

/// Whether the run has an iteration time beyond its makespan: several iterations, an optimizer
/// step or a data-parallel tail (then run.iterations.iteration_time holds it).
[[nodiscard]] inline bool has_iteration_time(const Run& run) {
  return run.iterations.options.requested() || run.data_parallel.any() ||
         run.iterations.iteration_time > 0;
}

/// The highest peak memory (M_B) of a run over all its iterations (the metrics' one-iteration
/// peak when it ran one).
[[nodiscard]] inline double peak_memory_all_iterations(const Run& run) {
  double peak = run.metrics.peak_memory;
  for (const double p : run.iterations.peak_memory) peak = std::max(peak, p);
  return peak;
}

/// The time of one iteration: iterations.iteration_time where the run has one, else the makespan.
[[nodiscard]] inline Ticks iteration_time(const Run& run) {
  return has_iteration_time(run) ? run.iterations.iteration_time : run.metrics.makespan;
}

/// Validates (ScheduleError with every violation), expands the costs over the schedule's
/// stages, simulates (under `comm`, with `offload`'s copies), adds the data-parallel tail of
/// `data_parallel` (data_parallel_tail) with `optimizer_step` on every device after its last
/// task or collective, and measures.
///
///   Run r = run_schedule(make_schedule("1f1b", {4, 8}), parse_costs("F=1,B=1,W=1"));
[[nodiscard]] Run run_schedule(Schedule schedule, const CostSpec& costs,
                               const CommOptions& comm = {}, const OffloadPlan& offload = {},
                               const DataParallelSync& data_parallel = {},
                               Ticks optimizer_step = 0);

/// Puts `tail` (data_parallel_tail of run's one-iteration timeline under `sync` with an optimizer
/// step of `step`) into the run: its collectives into the timeline, dp_busy and exposed_dp into
/// the metrics, the iteration time (first start to the tail's end) into run.iterations.
void attach_data_parallel(Run& run, const DataParallelSync& sync, const DataParallelTail& tail,
                          Ticks step);

} // namespace ppsim
