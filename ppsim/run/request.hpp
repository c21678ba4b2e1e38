// A run request: what a user asks to simulate (from the command line, a baseline case, a sweep
// point or Python), and its resolution into a Run: the memory limit, the schedule, the
// infeasibility rule.
#pragma once

#include "ppsim/io/mem_limit_text.hpp"
#include "ppsim/io/offload_text.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/slicing_text.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/schedule.hpp"

#include <optional>
#include <string>

namespace ppsim {

struct ScheduleInfo;  // ppsim/schedules/registry.hpp

/// One schedule to simulate, as asked.
///
///   RunRequest rq{.schedule = "zb-h1", .devices = 4, .microbatches = 8};
///   Run r = run_request(rq);
struct RunRequest {
  std::string schedule;             ///< a registry name or a schedule file (*.csv, *.json)
  std::optional<int> devices;       ///< p; a schedule file carries its own
  std::optional<int> microbatches;  ///< m; likewise
  int chunks{0};                    ///< v; 0 = the schedule's default
  CostSpec costs;
  /// A model on a device (--model, --device): then the costs come from it, for this request's
  /// devices and chunks, with `cost_overrides` (the --costs text) on top.
  std::optional<WorkloadSpec> workload;
  std::string cost_overrides;
  MemLimit mem_limit;  ///< parse_mem_limit(`2p`, `1.5p`, `12`, `3GiB`); none by default
  IterationOptions iterations;
  /// --comm-mode and --link; where they size no link, a cost file's link sizes the messages
  /// (linked_request, applied by resolve_request and run_unchecked).
  CommOptions comm;
  OffloadSpec offload;  ///< --offload (ppsim/run/offload.hpp resolves it); none by default
  JitterOptions jitter;  ///< --jitter, --seed, --samples (the slow devices are in costs)
  /// Bytes a device has (weights, gradients, optimizer state and activations); 0 = no check.
  double mem_capacity_bytes{0};
  /// Without mem_limit: a search that takes a limit (zb-auto, zb-v) runs under all the
  /// activation memory this capacity leaves beside the fullest device's state (plan), instead of
  /// its own default cut to the room mem_capacity_bytes leaves. 0 = not asked.
  double fill_capacity_bytes{0};
  PytorchNotation pytorch_notation{PytorchNotation::current};  ///< how a *.csv file is read
  /// Sequence slices per micro-batch (--slices; seq1f1b), how they are cut (--slicing) and
  /// attention's share of F (--attn-share; else the workload model's, else 0).
  int slices{1};
  SlicingSpec slicing;
  std::optional<double> attention_share;
};

/// The error of a schedule name that is no schedule: `WHERE: unknown schedule 'x' (did you
/// mean 'zb-h1'?) (valid: ...)`, the name quoted by an excerpt; `where` may be empty.
[[nodiscard]] ConfigError unknown_schedule(std::string_view name, std::string_view where = "");

/// The tasks one run of `schedule` at (p, v, m) simulates, as the work bound of a command
/// counts them: p x v x m x 3 (v = 2 when the schedule picks), x limits::kSearchWeight for an
/// automatic schedule (its search runs many passes).
[[nodiscard]] double estimated_run_tasks(std::string_view schedule, int p, int v, int m);

/// ConfigError when `tasks` (a sum of estimated_run_tasks) is over limits::kMaxCommandTasks:
/// `WHAT: about 1.5e10 tasks to simulate (HOW); at most 5e8 in one command (ADVICE)`.
void check_command_work(double tasks, std::string_view what, std::string_view how,
                        std::string_view advice);

/// The costs of a request for `devices` devices: the workload's (then `cost_overrides`), or
/// `costs` as given, with the slices' shares when it asks for slices (ppsim/run/slicing.hpp). The one
/// place a request's costs are assembled.
/// With `time_parts`, also where each stage's time goes (Run::time_parts; left empty where
/// the costs are not a model's on a device that knows its kernels, or are overridden).
[[nodiscard]] CostSpec request_costs(const RunRequest& request, int devices,
                                     std::vector<StageTimeParts>* time_parts = nullptr);

/// The chunks a model's layout is cut for: the request's own, or, for a named schedule that
/// chooses its own count (looped and V schedules: two), that count; 0 = one stage a device.
[[nodiscard]] int request_chunks(const RunRequest& request);

/// The data-parallel synchronisation of a request: with a workload of `--dp N` (N > 1), per
/// stage a ring over its N replicas on the device's link (its latency per step, its bandwidth),
/// of fp32 gradients (4 bytes per parameter, as the memory model keeps them), and with `--zero 1`
/// a reduce-scatter and, after the step, an all-gather of the model-dtype parameters. None (one
/// replica) without a workload or with --dp 1.
[[nodiscard]] DataParallelSync request_data_parallel(const RunRequest& request);

/// What planning costs are for: building a schedule, or bounding its cost from below.
enum class Planning : std::uint8_t { schedule, bound };

/// The costs the generators and the lower bound plan with: the run's communication (`comm`:
/// blocking sends, a sized link) folded into the model they know, per virtual stage of
/// `placed` (whose placement decides which messages cross devices). Blocking: each stage that
/// sends to another device takes that long longer (its stream is held until delivery) and comm
/// is 0, which is exact. A sized link: comm is the longest cross-device message (Planning::
/// schedule) or the shortest (Planning::bound, so the bound stays a bound); exact when the
/// messages are equal. Contention is not planned for. `costs` as given when comm is the default.
[[nodiscard]] CostSpec planning_costs(const CostSpec& costs, const CommOptions& comm,
                                      const Schedule& placed, Planning use);

/// A memory limit in M_B units for a run of `devices` devices on `costs` (the run's own, from
/// request_costs: a model knows the bytes of M_B); -1 for none. ConfigError when the limit is in
/// bytes and the costs do not know bytes.
[[nodiscard]] double mem_limit_units(const MemLimit& limit, int devices, const CostSpec& costs);

/// A request resolved into what it runs: the schedule (loaded, or generated under the limit),
/// the costs it runs on and the limit in M_B units (< 0 = none), which may be the room a device
/// capacity leaves (RunRequest::fill_capacity_bytes, mem_capacity_bytes).
struct ResolvedRequest {
  Schedule schedule;
  CostSpec costs;
  double mem_limit{-1};
  /// The registry's entry of a schedule by name; nullptr for a file.
  const ScheduleInfo* info{nullptr};
  /// What its generator said (ScheduleSpec::notes).
  std::vector<std::string> notes;
  /// Where each stage's time goes, for the report (request_costs).
  std::vector<StageTimeParts> time_parts;
  /// With --overlap, its F and backward pairs were combined into overlapped cells
  /// (combine_forward_backward): the lower bound of separate tasks does not hold.
  [[nodiscard]] bool combined() const { return cells > 0; }
  /// The cells, and the backwards left alone because their cell would have deadlocked.
  int cells{0};
  int kept_apart{0};
};

/// Every command and API that runs or writes a schedule goes through this: costs assembled
/// once, the limit resolved once against them, the capacity applied, the schedule built.
///
///   const ResolvedRequest r = resolve_request(rq);   // export writes r.schedule
/// The request with its cost file's link where its own options size none (with_cost_link,
/// ppsim/sim/comm.hpp); nullopt when that changes nothing.
[[nodiscard]] std::optional<RunRequest> linked_request(const RunRequest& request);

[[nodiscard]] ResolvedRequest resolve_request(const RunRequest& request);

/// Builds (or loads) and simulates one schedule under its memory limit (resolved against the
/// schedule's own device count); InfeasibleError names the device and its peak when the
/// schedule exceeds the limit. With iterations it runs run_iterations() (K-fold schedule and
/// timeline, first-iteration metrics) and checks the limit against the peak over all iterations.
/// With a capacity, a device whose peak_bytes exceed it is an OOM: InfeasibleError naming the
/// device, its state and activation bytes.
[[nodiscard]] Run run_request(const RunRequest& request);

/// run_request without its memory checks (what `--recompute auto` probes); `auto` itself must be
/// resolved first (ppsim/run/recompute.hpp).
[[nodiscard]] Run run_unchecked(const RunRequest& request);
/// run_request's memory checks of a run of `request`: InfeasibleError above the limit,
/// OutOfMemoryError above the capacity.
void check_memory(const RunRequest& request, const Run& run);

} // namespace ppsim
