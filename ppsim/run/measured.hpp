// A measured run as ppsim's own: the schedule it ran (placement inferred), its timeline on one
// clock (ranks aligned on message pairs), its metrics, the costs fitted from it, and `diff`:
// the same order simulated beside it, with every idle window's cause.
//
//   const MeasuredRun m = measured_run(read_traces(files, {}));
//   const CostFit fit = fit_costs(m);                    // --costs-out
//   const DiffReport d = diff_measured(m, fit.costs);    // ppsim diff
#pragma once

#include "ppsim/io/trace_import.hpp"
#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/run.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// A measured run: `run` holds the measured order (a validated Schedule), the measured timeline
/// (ns from the first start, ranks aligned) and its metrics, memory in M_B from `run.costs`.
struct MeasuredRun {
  Run run;
  std::string format;
  std::vector<std::string> files;
  int iterations{1};
  int iteration{0};
  bool device_time{false};
  /// Per rank, what its clock was moved by to line up with rank 0's (0 when the trace was
  /// consistent: no consumer started before its producer ended).
  std::vector<Ticks> clock_offset;
  std::vector<MeasuredSpan> spans;  ///< optimizer steps and syncs, on the aligned clock
  std::size_t comm_actions_skipped{0};
  std::vector<MeasuredMessage> messages;  ///< the sizes the trace gave (ImportedTrace::messages)
};

/// Builds the measured run. The placement is where each stage's tasks ran (ScheduleError when a
/// stage ran on two ranks); the order is each rank's in time; the schedule is validated
/// (ScheduleError with every violation: a task missing or twice, W before its B). Clocks: when
/// a consumer starts before its producer on another rank ends, that rank's clock is moved to the
/// middle of what its messages both ways allow (equal latency each way), rank by rank from 0.
/// `memory` gives MB/MW (default the cost defaults).
[[nodiscard]] MeasuredRun measured_run(const ImportedTrace& trace, const CostSpec& memory = {});

/// One stage's fitted durations per kind (F, B, W, BW, FB): median, spread and samples.
struct KindFit {
  int samples{0};
  double median_ms{0};
  double p10_ms{0};
  double p90_ms{0};
  /// Median absolute deviation over the median: the noise of this stage's kind.
  double spread{0};
};

struct StageFit {
  int stage{0};
  int device{0};
  std::array<KindFit, 5> kinds;  ///< indexed by Kind
};

/// The link fitted from the waits whose message size is known: wait = latency + bytes /
/// bandwidth, a line through the median wait of each size (weighted by its samples; through 0
/// when the intercept comes out negative). Both need two sizes at least.
struct LinkFit {
  int samples{0};  ///< waits for a message of known size
  int sizes{0};    ///< distinct sizes among them
  bool fitted{false};
  Ticks latency{0};
  double bandwidth{0};  ///< GB/s (bytes per ns)
  /// Median of |latency + bytes / bandwidth - wait| / wait over the samples.
  double residual{0};
  std::string note;  ///< why it is not fitted, when it is not
};

/// Costs fitted from a measured run, and how well they explain it.
struct CostFit {
  /// One entry per stage of the measured schedule: F, B, W (and BW, FB where measured), comm.
  CostSpec costs;
  std::vector<StageFit> stages;
  /// The latency of a message: the median gap between a producer's end and its consumer's
  /// start on another device, over the consumers that waited for it (their device idle, this
  /// message their last input). 0 with no such sample.
  double comm_ms{0};
  int comm_samples{0};
  /// Latency and bandwidth where the sizes allow (then costs.link is sized, and each stage's
  /// act_bytes and grad_bytes are the median sizes of its messages).
  LinkFit link;
  /// Each device's busy time over the mean device's: where a device holds one stage its speed
  /// and its stage's size cannot be told apart, so this is descriptive, not a `--slow` factor.
  std::vector<double> device_load;
  /// The measured order simulated on the fitted costs: its cost against the measured one.
  double replay_cost_ms{0};
  double replay_cost_error{0};  ///< (replay - measured) / measured
};

/// Medians per stage and kind; B and W each where measured; from a run of fused backwards only,
/// B = W = BW / 2 (dX and dW of a GEMM cost the same FLOPs), adding up to the measured BW. comm
/// from the waits.
[[nodiscard]] CostFit fit_costs(const MeasuredRun& measured);

/// The `ppsim.costs/1` document of a fit (what `--costs-file` reads), with a "fit" section:
/// per stage and kind the samples, median, p10, p90 and spread, comm's samples, device loads
/// and the replay error.
[[nodiscard]] std::string fitted_costs_json(const CostFit& fit, const MeasuredRun& measured);

/// Why a device was idle (DESIGN.md, Measured runs).
enum class IdleCause : std::uint8_t {
  warmup,      ///< before the device's first backward: the schedule's own ramp-up
  cooldown,    ///< after its last forward: the drain
  dependency,  ///< waiting for a producer's compute in the steady state
  comm,        ///< waiting for a message: its producer had ended
  straggler,   ///< waiting, directly or through a chain, on a task far above its stage's median
  optimizer,   ///< an optimizer step or a synchronisation
  host,        ///< nothing to wait for: the task was ready (launch or host overhead)
};
inline constexpr int kIdleCauses = 7;
[[nodiscard]] std::string_view idle_cause_name(IdleCause cause);

/// One idle window of one device, on the measured timeline. A gap may be split in several
/// windows (waiting for the producer's compute, then for its message).
struct IdleWindow {
  int device{0};
  Ticks start{0};
  Ticks end{0};
  IdleCause cause{IdleCause::dependency};
  Task next;          ///< the task the device ran after the window
  double memory{0};   ///< activation memory in use (M_B)
  double free{0};     ///< room below the device's own peak (M_B): what a side task may take
};

struct DiffOptions {
  /// A task is a straggler when it takes more than this times its stage's median of its kind.
  double straggler_factor{1.5};
  CommOptions comm;  ///< the comm model of the simulated side
  /// The replay's messages leave when their sender is next inside MPI (ReplayComm): for a trace
  /// of `ppsim execute`'s Open MPI ranks.
  bool sender_progress{false};
};

/// The measured run and its simulations, side by side.
struct DiffReport {
  Run measured;
  Run simulated;  ///< the measured order on the given (or fitted) costs
  Run replayed;   ///< the measured order on its own measured durations and the costs' comm
  double makespan_error{0};  ///< (simulated - measured) / measured
  double cost_error{0};
  double bubble_rate_error{0};  ///< simulated - measured (points of bubble rate)
  double replay_cost_error{0};  ///< (replayed - measured) / measured
  /// Over every task, the simulated start and end against the measured ones (ms).
  double start_error_mean_ms{0};
  double start_error_max_ms{0};
  double end_error_mean_ms{0};
  double end_error_max_ms{0};
  std::vector<double> task_error_ms;  ///< per run of `measured.timeline`: simulated - measured end
  std::vector<IdleWindow> windows;
  std::array<Ticks, kIdleCauses> cause_total{};  ///< idle time per cause
  Ticks idle_total{0};
  std::vector<char> straggler;  ///< per run of the measured timeline: a straggler task
};

/// Simulates the measured order on `costs` (one entry per stage, as fit_costs gives, or any cost
/// file that fits the schedule) and replays it on its measured durations with the latency of
/// `costs.comm`, and classifies every idle window
/// of the measured timeline. ConfigError when the costs do not fit the schedule.
[[nodiscard]] DiffReport diff_measured(const MeasuredRun& measured, const CostSpec& costs,
                                       const DiffOptions& options = {});

/// How the messages of a replay travel. `latency` per message (plus bytes / bandwidth of a
/// sized link in `options`). With `sender_progress`, a message leaves only when its sender is
/// next inside MPI: at once when the sender goes idle after the send, else at the end of the
/// task it starts next (MPI moves a large message, above the eager limit, by a rendezvous that
/// needs the sender's progress; an `isend` returns before it). That is how `ppsim execute`'s
/// Open MPI ranks behave; NCCL's kernels (a PyTorch trace) progress on their own.
struct ReplayComm {
  Ticks latency{0};
  CommOptions options;
  bool sender_progress{false};
};

/// Replays a measured timeline: `schedule` run with each run's own measured duration and the
/// messages as `comm` says (what `execute` and `diff` report as `replayed`).
[[nodiscard]] Run replay_measured(const Schedule& schedule, const Timeline& measured,
                                  const CostModel& memory, const ReplayComm& comm);

} // namespace ppsim
