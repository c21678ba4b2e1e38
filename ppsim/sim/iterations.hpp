// Several training iterations back to back, with an optimizer step after each and either an
// all-reduce barrier or the zero-bubble paper's post-validation (no barrier) between them.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/data_parallel.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/timeline.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace ppsim {

struct Run;

/// How devices synchronise at the optimizer step.
///  * AllReduce: a global barrier (gradient all-reduce, grad-norm sync): no device starts
///    iteration i+1 before every device has ended iteration i, plus the step:
///    start(i+1) >= max_d end_d(i) + step.
///  * PostValidation (ZB paper, arXiv 2401.10241, §4): no barrier. Each device runs its step
///    right after its own last task of iteration i (the step occupies that device only and delays
///    no result other devices wait for), then its iteration-(i+1) tasks as soon as their data
///    allow, so early stages start the next F while later stages are still in the tail.
enum class SyncMode : std::uint8_t { AllReduce, PostValidation };

/// "allreduce" or "post-validation" (io/comm_text parses them back).
[[nodiscard]] std::string_view sync_name(SyncMode mode);

/// What `--iterations K --optimizer-step MS --sync MODE` asks for.
struct IterationOptions {
  int count{1};              ///< K >= 1 iterations
  Ticks optimizer_step{0};   ///< per device, after its last task of each iteration
  SyncMode sync{SyncMode::AllReduce};

  /// Whether this differs from one plain iteration (count 1, no step, all-reduce).
  [[nodiscard]] bool requested() const {
    return count != 1 || optimizer_step != 0 || sync != SyncMode::AllReduce;
  }
  friend bool operator==(const IterationOptions&, const IterationOptions&) = default;
};

/// Throws ConfigError for K < 1, a negative step, or K x microbatches too large to simulate
/// (more than 1,000,000 micro-batches or 50,000,000 stage x micro-batch pairs, like the
/// generators' size guard), naming the values.
void check_iterations(const IterationOptions& options, const Schedule& one_iteration);

/// The schedule repeated `count` times: iteration i's tasks follow iteration i-1's on every
/// device, with micro-batch ids offset by i*m (so micro-batch j of iteration i is j + i*m and
/// takes micro-batch j's route). It validates whenever `one_iteration` does.
[[nodiscard]] Schedule repeat_schedule(const Schedule& one_iteration, int count);

/// What follows an iteration (a data-parallel tail, ppsim/sim/data_parallel.hpp): per device the time
/// from its last task's end to the end of its iteration (`after`: the collectives and the
/// optimizer step), and the delay from the iteration's last task end to the next iteration's
/// start (`barrier`). Empty `after`: the optimizer step on every device, and as the delay.
struct IterationTail {
  std::vector<Ticks> after;
  Ticks barrier{0};

  /// Device d's time after its last task: `after[d]`, or the optimizer step when empty.
  [[nodiscard]] Ticks after_of(std::size_t d, Ticks step) const {
    return after.empty() ? step : after[d];
  }
};

/// The engine options of the K-fold run (see SimOptions): a pause of `optimizer_step` (or the
/// device's `tail.after`) after every device's last task of each iteration; with AllReduce also
/// one barrier per iteration boundary, released at the last end of iteration i plus the step (or
/// `tail.barrier`), gating each device's first task of iteration i+1. Runs are indexed like the Timeline of
/// repeat_schedule().
[[nodiscard]] SimOptions iteration_sim_options(const Schedule& one_iteration,
                                               const IterationOptions& options,
                                               const IterationTail& tail = {});

/// When each iteration of a K-fold timeline ended (into `ends`: its devices' last end plus the
/// step, or their `tail.after`) and the steady-state iteration time: between the ends of the last two
/// iterations (the first end minus the first start for K = 1).
Ticks iteration_ends(const Timeline& k_fold, const IterationOptions& options,
                     std::vector<Ticks>& ends, const IterationTail& tail = {});

/// The K-fold timeline and when each iteration ended.
struct IterationTimeline {
  Timeline timeline;                ///< all K iterations, on repeat_schedule()'s runs
  std::vector<Ticks> iteration_end;  ///< E_i = max_d (end of d's last task of iteration i) + step
  /// The steady-state iteration time: E_{K-1} - E_{K-2} (the last two iterations); with K = 1,
  /// E_0 - first start = makespan + step. With AllReduce every iteration is a copy of the first
  /// shifted by makespan + step, so this is exactly makespan + step; with PostValidation it is
  /// at most that, and smaller when a device other than the one that starts the next iteration
  /// finishes last (its tail overlaps the next iteration's first F).
  Ticks iteration_time{0};
};

/// Simulates `options.count` iterations of `one_iteration` (which must be valid).
///
///   IterationTimeline it = simulate_iterations(s, costs, {.count = 4, .optimizer_step = 2'000'000,
///                                                         .sync = SyncMode::PostValidation});
[[nodiscard]] IterationTimeline simulate_iterations(const Schedule& one_iteration,
                                                    const CostModel& costs,
                                                    const IterationOptions& options,
                                                    const CommOptions& comm = {},
                                                    const IterationTail& tail = {});

/// What a Run records about its iterations (Run::iterations); count 1 and a zero step for a
/// plain single-iteration run.
struct IterationSummary {
  IterationOptions options;
  Ticks iteration_time{0};  ///< steady state, see IterationTimeline
  /// Per device, the peak activation memory over all K iterations (post-validation may overlap
  /// iterations and so hold more than one iteration's peak), M_B units.
  std::vector<double> peak_memory;
};

/// Like run_schedule(), for K iterations. The Run's schedule and timeline are the K-fold ones
/// (so traces and grids show every iteration); its metrics are those of the first iteration
/// alone, which is exactly the single-iteration run (later iterations cannot change it); its
/// parameters name one iteration's shape plus iterations, optimizer step and sync.
///
///   Run r = run_iterations(make_schedule("1f1b", {4, 8}), parse_costs("F=1"), {.count = 3});
/// With data parallelism (`data_parallel`, AllReduce only: ConfigError for PostValidation) the
/// first iteration's tail (data_parallel_tail with the step) follows every iteration: each
/// iteration is the first shifted by the iteration time, its collectives too.
[[nodiscard]] Run run_iterations(Schedule one_iteration, const CostSpec& costs,
                                 const IterationOptions& options, const CommOptions& comm = {},
                                 const DataParallelSync& data_parallel = {});

} // namespace ppsim
