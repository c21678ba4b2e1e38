// `ppsim plan`: the best schedule for a model on a device. Searches schedules (with their chunk
// counts), micro-batch sizes (hence micro-batch counts for the global batch) and layouts (the
// default split, then layers moved off the heavy first and last stages), simulates each
// candidate, and ranks those that fit in memory by iteration time. A shape that does not fit
// is tried again with `--recompute auto` (per stage the cheapest recomputation that fits) and
// with `--offload auto` (the least fraction of every activation on the host that fits); a
// memory-limited search (zb-auto, zb-v, ...) that fits is also tried with selective
// recomputation, which leaves it more room, and kept when that is faster. For long sequences
// seq1f1b is tried with 2, 4 and 8 balanced slices per micro-batch (each of at least
// kMinSliceTokens tokens). A mixture of experts with --ep and no --overlap is also tried with
// `--overlap a2a` (kept when faster).
//
//   Plan plan = make_plan({.workload = w, .devices = 16, .global_batch = 512});
//   const PlanCandidate& best = plan.candidates[plan.best];
#pragma once

#include "ppsim/run/request.hpp"
#include "ppsim/run/shared_work.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/progress.hpp"

#include <string>
#include <vector>

namespace ppsim {

/// The fewest tokens plan gives a sequence slice: the cost model takes a GEMM's efficiency as
/// independent of its shape, which slices much shorter than this would make untrue.
inline constexpr int kMinSliceTokens = 2048;

struct PlanRequest {
  WorkloadSpec workload;
  int devices{0};       ///< p
  int global_batch{0};  ///< sequences per iteration over all data-parallel replicas
  std::vector<std::string> schedules;  ///< empty = every schedule of the registry
  double mem_capacity_bytes{0};        ///< 0 = the device's memory
  std::string cost_overrides;          ///< --costs on top of the model's
  int max_microbatches{1024};          ///< candidates with more micro-batches are skipped
  Progress* progress{nullptr};         ///< told of each simulated candidate ("candidates")
  /// Where the candidates are simulated: every core by default; with an exchange, shared among
  /// the ranks of `mpirun -np N ppsim plan`, each of which then makes the same plan.
  Workers workers{.threads = 0, .exchange = nullptr};
};

struct PlanCandidate {
  std::string schedule;
  int chunks{0};
  /// Sequence slices per micro-batch (seq1f1b, cut by `--slicing balanced`); 1 = none.
  int slices{1};
  int microbatches{0};
  int microbatch_size{0};
  std::string layout;
  /// The --mem-limit a memory-limited search (zb-auto, zb-v) ran under: the activation memory
  /// the device has room for beside its state, in M_B; < 0 = the schedule's own default.
  double mem_limit{-1};
  /// Recomputation (the --recompute text, one choice per stage) when the candidate needs it to
  /// fit; "" = the model's own. Such a candidate follows the same shape without it.
  std::string recompute;
  /// With recompute or offload: the iteration time of the same shape without it.
  double without_knob_ms{0};
  /// Activation offload (the --offload text, a fraction of every activation) when the candidate
  /// needs it to fit; "" = none. Such a candidate follows the same shape without it.
  std::string offload;
  double offloaded_bytes{0};  ///< with offload: the most a device holds on the host
  /// Overlap inside F and B (the --overlap text) when the candidate is faster with it: for a
  /// mixture of experts with --ep, the all-to-alls under the other micro-batch's compute
  /// (Combined 1F1B, DualPipe's cells); "" = as the workload says. Such a candidate follows the
  /// same shape without it.
  std::string overlap;
  /// With overlap: the collectives the compute waited for, summed over the devices
  /// (DeviceMetrics::exposed_comm).
  double exposed_comm_ms{0};
  /// With overlap: the collectives inside its tasks, summed over the devices, hidden or not
  /// (DeviceMetrics::task_comm).
  double task_comm_ms{0};
  double exposed_copy_ms{0};  ///< with offload: the copy time the backwards waited for
  /// One iteration, first start to last end, or with --dp to the end of the data-parallel tail.
  double iteration_time_ms{0};
  double exposed_dp_ms{0};      ///< with --dp: the collectives' time the tail did not hide
  double cost_ms{0};            ///< the paper's cost (max span)
  double bubble_rate{0};
  double peak_bytes{0};                  ///< the fullest device
  double activation_peak_bytes{0};       ///< its activations alone (the most any device holds)
  std::vector<double> device_peak_bytes;
  bool fits{false};
  std::string reason;  ///< why it does not fit or could not run
};

struct Plan {
  /// Fitting candidates by iteration time (then without a knob first, then schedule name,
  /// chunks, micro-batches, layout), then the others.
  std::vector<PlanCandidate> candidates;
  int best{-1};  ///< index of the winner, -1 when nothing fits
  std::string why;  ///< one line on why the winner wins
  /// Where sequence slices were tried: what the best sliced candidate that fits buys against
  /// 1F1B at the same micro-batch size ("seq1f1b, 4 balanced slices (b=1): -11.0% iteration
  /// time, -48.0% activation memory against 1f1b"); "" when none was tried.
  std::string slicing;
  double capacity_bytes{0};
  std::size_t simulated{0};  ///< candidates simulated
};

/// The run request of a candidate (its schedule, chunks, micro-batch size and layout).
[[nodiscard]] RunRequest candidate_request(const PlanRequest& request, const PlanCandidate& candidate);

/// Throws ConfigError for a request that cannot be planned (no devices, a global batch that no
/// micro-batch size divides, an unknown schedule).
[[nodiscard]] Plan make_plan(const PlanRequest& request);

/// One way to lay N devices out: pp pipeline stages x tp tensor-parallel ranks x dp data-parallel
/// replicas = N, and for a mixture of experts ep expert-parallel ranks drawn from the dp x tp
/// ranks of a stage (Megatron-Core's MoE parallel folding).
struct ParallelShape {
  int pp{1};
  int tp{1};
  int dp{1};
  int ep{1};
  friend bool operator==(const ParallelShape&, const ParallelShape&) = default;
};

/// `ppsim plan --gpus N`: the layouts of N devices to plan, each a whole `make_plan` of `base`
/// with its pp, tp, dp and ep. A dimension given (`fixed_*` > 0) is kept; the others are
/// searched: pp over the divisors of N up to the model's layers, tp over the divisors of N / pp
/// within one node (`gpus_per_node`) that divide the heads and the KV heads (Megatron's rule),
/// dp = N / (pp tp) where it divides the global batch, and for a mixture of experts ep over the
/// divisors of dp x tp that divide the experts.
struct ParallelRequest {
  PlanRequest base;  ///< devices, tp, dp and ep are set per layout
  int gpus{0};
  int fixed_pp{0};
  int fixed_tp{0};
  int fixed_dp{0};
  int fixed_ep{0};
};

/// A layout and what plan found for it: its fastest candidate that fits, or why none does.
struct ParallelRow {
  ParallelShape shape;
  bool fits{false};
  PlanCandidate best;  ///< the layout's plan's best (fits), or its first candidate
  std::string reason;  ///< why nothing fits, or why the layout could not be planned
  std::size_t simulated{0};
};

struct ParallelPlan {
  /// Fitting layouts by iteration time (then pp, tp, dp, ep), then the others in search order.
  std::vector<ParallelRow> rows;
  int best{-1};      ///< index into rows, -1 when no layout fits
  std::string why;   ///< one line on the winner against the best other layout
  Plan plan;         ///< the whole plan of the best layout (or of the first row that ran)
  ParallelShape plan_shape;
  std::size_t simulated{0};  ///< candidates simulated over every layout
};

/// `base` on one layout: its pp devices, tp, dp and ep.
[[nodiscard]] PlanRequest layout_request(const PlanRequest& base, const ParallelShape& shape);

/// The layouts make_parallel_plan plans, in search order (pp, then tp, then ep ascending);
/// ConfigError when none exists or there are more than kMaxParallelShapes.
inline constexpr std::size_t kMaxParallelShapes = 96;
[[nodiscard]] std::vector<ParallelShape> parallel_shapes(const ParallelRequest& request);

/// Plans every layout of parallel_shapes(). A layout whose plan refuses it (ConfigError: a
/// global batch its dp does not divide, too much work) is a row with that reason; when every
/// layout is refused the first refusal is thrown.
[[nodiscard]] ParallelPlan make_parallel_plan(const ParallelRequest& request);

} // namespace ppsim
