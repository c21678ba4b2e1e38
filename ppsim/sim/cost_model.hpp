// The cost model: task durations, communication latency and memory deltas per stage.
#pragma once

#include "ppsim/sim/link.hpp"
#include "ppsim/sim/overlap.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/task.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// Durations (ns) and memory (in M_B units) of one stage. BW and FB of -1 mean "the sum of the
/// parts" (B + W, and F + the backward half).
struct StageCosts {
  Ticks F{1'000'000};
  Ticks B{1'000'000};
  Ticks W{1'000'000};
  Ticks BW{-1};
  Ticks FB{-1};
  /// Of B's time (and so of BW's and an FB's backward half), the forward this stage recomputes
  /// first (activation recomputation): the same compute stream, nothing between, so the engine
  /// runs it as part of the backward and the views draw it as its own slice.
  Ticks R{0};
  double MB{1.0};  ///< activation memory one micro-batch leaves after F
  double MW{0.5};  ///< of which W still needs after B
  /// Bytes of the message F sends to the next stage (the activation) and B (or BW) sends to
  /// the previous one (the input gradient); used by a sized link (ppsim/sim/comm.hpp). They are the
  /// tensors at the stage's boundary, so a stage cut into chunks keeps them whole.
  double act_bytes{0};
  double grad_bytes{0};
  /// Bytes the stage holds whatever the schedule: weights, gradients, optimizer state.
  double state_bytes{0};
  double params{0};  ///< parameters of the stage (for reports)
  /// Its times are this much longer (an uneven stage; a cost file's `factor`); cost_model_for()
  /// applies it, so a CostModel's stages have 1.
  double factor{1.0};
  /// Overlap inside F and B (--overlap): each task's sub-operations as shares of its time, in
  /// order (F's, B's with its recomputed forward first, BW's layer by layer). Where a stage's F
  /// and the other stage's backward have them, an FB task without a given FB costs the cell
  /// they make overlapped (ppsim/sim/overlap.hpp); empty: no overlap, today's sums.
  std::vector<SubOp> F_ops;
  std::vector<SubOp> B_ops;
  std::vector<SubOp> BW_ops;

  friend bool operator==(const StageCosts&, const StageCosts&) = default;
};

/// A straggler: every task on `device` takes `factor` times as long (`--slow device=D,factor=X`).
struct SlowDevice {
  int device{0};
  double factor{1.0};

  friend bool operator==(const SlowDevice&, const SlowDevice&) = default;
};

/// One sequence slice of a micro-batch (Seq1F1B): its times and memory as fractions of the whole
/// micro-batch's (ppsim/run/slicing.hpp derives them from the slice lengths and attention's share).
struct SliceCosts {
  double F{1.0};
  double B{1.0};
  double W{1.0};
  /// Of M_B: the activations (K/V included) scale with its tokens, attention scores kept for the
  /// backward with its rows times the context they see.
  double MB{1.0};
  double MW{1.0};  ///< of M_W: W's GEMM inputs and gradients, by its tokens

  friend bool operator==(const SliceCosts&, const SliceCosts&) = default;
};

/// Costs as the user gives them: one entry for every device-stage, one per device-stage (the
/// model cut into `devices` pieces), or one per virtual stage of the schedule.
///
///   CostSpec spec = parse_costs("F=1,B=1,W=1,comm=0.1");   // ppsim/io/cost_file.hpp
///   CostModel model = cost_model_for(spec, schedule);
struct CostSpec {
  std::vector<StageCosts> stages{StageCosts{}};
  Ticks comm{0};
  /// A link that sizes each message (latency + bytes / bandwidth, of the stages' act_bytes and
  /// grad_bytes): a cost file's `link`, such as the one `import --costs-out` fits. Unsized (the
  /// default): messages take `comm`. A run takes it where its own options size no link
  /// (with_cost_link, ppsim/sim/comm.hpp); its contention is never read.
  LinkModel link;
  double memory_unit_bytes{0.0};  ///< bytes of one M_B; 0 when unknown
  /// Time to copy one M_B between a device and its host (an offload's O or R, --costs copy=);
  /// -1 = not given (then a device's host link sets it, ppsim/run/offload.hpp).
  Ticks copy{-1};
  std::string source{"default"};  ///< where the numbers came from, for reports
  /// Slow devices (each at most once); cost_model_for() scales the stages they hold.
  std::vector<SlowDevice> slow;
  /// Sequence slices: empty, or one entry per slice, a schedule's micro-batch u then being slice
  /// u % slices of micro-batch u / slices (Schedule::slices).
  std::vector<SliceCosts> slices;
  /// Comm streams of a device for overlapped cells (--streams): 0 = one per chain, 1 = one.
  int comm_streams{0};

  friend bool operator==(const CostSpec&, const CostSpec&) = default;
};

/// The costs of every stage of one schedule, ready for the simulator.
struct CostModel {
  std::vector<StageCosts> stage;  ///< per virtual stage; BW and FB resolved where fixed
  Ticks comm{0};
  double memory_unit_bytes{0.0};
  std::string source;
  std::vector<SliceCosts> slices;  ///< as CostSpec::slices
  /// The overlapped cell of every F and backward a device holds (by the F's stage), where their
  /// stages have sub-operations.
  struct Cell {
    int stage2{0};
    Kind kind2{Kind::B};
    Ticks time{0};
    Ticks exposed{0};  ///< of time, the compute stream waiting for communication
    Ticks comm{0};     ///< the collectives of its two chains, hidden or not
  };
  std::vector<std::vector<Cell>> cells;
  int comm_streams{0};  ///< CostSpec::comm_streams, of the cells
  /// An FB's cell, nullptr when it has none (no sub-operations, or a given scalar FB).
  [[nodiscard]] const Cell* cell_of(const Task& task) const;

  /// Duration of a task; an FB costs its stage's FB, its cell, or the sum of its two parts. With slices,
  /// F, B, W and BW take their slice's share (rounded to the nanosecond).
  [[nodiscard]] Ticks duration(const Task& task) const;
  /// Of a task's duration, the recomputed forward its backward half starts with (StageCosts::R
  /// of a B or BW, or of an FB's backward half; a slice's share of it as of its F, at most the
  /// task's duration); 0 for the others.
  [[nodiscard]] Ticks recompute_part(const Task& task) const;
  /// Of a task's duration, the communication its compute waits for where its stages have
  /// sub-operations (StageCosts::F_ops...): all of a lone task's collectives, what a cell's two
  /// chains cannot hide under each other's compute; 0 for the others.
  [[nodiscard]] Ticks exposed_comm(const Task& task) const;
  /// The collectives of a task whose stages have sub-operations, placed as the task runs them
  /// from its start (PlacedOp: chain 0 a lone task's or a cell's F, 1 a cell's backward; stream
  /// 1 or 2); empty for the others and for an FB of a given scalar cost.
  [[nodiscard]] std::vector<PlacedOp> comm_ops(const Task& task) const;
  /// The time of those collectives, hidden or not (of a lone task: exposed_comm).
  [[nodiscard]] Ticks task_comm(const Task& task) const;
  /// Memory change of one part (F, B, W or BW) in M_B units, of a whole micro-batch.
  [[nodiscard]] double memory_delta(Kind kind, int stage) const;
  /// The same for micro-batch `microbatch` of a schedule: its slice's shares of M_B and M_W
  /// when sliced.
  [[nodiscard]] double memory_delta(Kind kind, int s, int microbatch) const;

private:
  [[nodiscard]] std::size_t slice_index(int microbatch) const {
    return static_cast<std::size_t>(microbatch) % slices.size();
  }
};

/// Which of `pieces` cost entries a virtual stage of `schedule` takes (`topo` is its topology):
/// one entry for all, one per virtual stage, or one per device-stage (the model cut into p
/// pieces; a virtual stage is in the piece its place in the model falls in). The one rule
/// cost_model_for() and whatever maps per-stage choices (--recompute) follow.
[[nodiscard]] int cost_piece(const Topology& topo, int stage, int pieces);

/// Expands `spec` over the stages of `schedule`, dividing device-stage costs by its chunks and
/// multiplying the times of each stage by its `factor` and by the factor of a slow device that
/// holds it (rounded to the nanosecond). ConfigError for a slow device outside the schedule's
/// devices or named twice, or a factor outside (0, limits::kMaxSlowFactor].
[[nodiscard]] CostModel cost_model_for(const CostSpec& spec, const Schedule& schedule);

} // namespace ppsim
