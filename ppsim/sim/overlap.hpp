// Overlap inside a task: an F and a backward of other micro-batches run as one cell (DualPipe's
// overlapped F&B, Megatron-Core's Combined 1F1B), each a chain of sub-operations on the device's
// compute stream and its comm streams, so that one micro-batch's all-to-all runs under the
// other's compute.
//
//   std::vector<SubOp> f = {{.share = 0.5, .comm = false}, {.share = 0.5, .comm = true}};
//   Ticks t = overlapped_cell(chain_of(f, 2'000'000), chain_of(b, 4'000'000), 0);
#pragma once

#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/time.hpp"

#include <span>
#include <vector>

namespace ppsim {

/// One sub-operation of a task: its share of the task's time, and whether it is communication
/// (an expert-parallel all-to-all, a tensor-parallel collective: on a comm stream) or compute.
struct SubOp {
  double share{0};
  bool comm{false};

  friend bool operator==(const SubOp&, const SubOp&) = default;
};

/// A task's sub-operations in the order they run, with their times (ns).
struct TimedOp {
  Ticks time{0};
  bool comm{false};
};

/// The chain of `ops` for a task of `total` ns: each its share of it (rounded to the ns).
[[nodiscard]] std::vector<TimedOp> chain_of(std::span<const SubOp> ops, Ticks total);

/// How long two chains take overlapped on one device: one compute stream that both share, and
/// comm streams: each chain its own (`comm_streams` 0 or >= 2), or one for both (1: two
/// collectives never run at once, as under CUDA_DEVICE_MAX_CONNECTIONS=1). Each chain runs in
/// its order; a stream runs whichever ready operation became ready first (the first chain's on a
/// tie), never idling while one is ready. NOTE: concurrent collectives each run at their full
/// time (ppsim does not share one link's bandwidth between them).
[[nodiscard]] Ticks overlapped_cell(std::span<const TimedOp> first, std::span<const TimedOp> second,
                                    int comm_streams);

/// Where an operation of an overlapped cell ran: from the cell's start, its chain (0 the first)
/// and its stream (0 compute; 1 the first chain's comm stream, or the one both share; 2 the
/// second's).
struct PlacedOp {
  Ticks start{0};
  Ticks time{0};
  int chain{0};
  int stream{0};
};

/// The operations of overlapped_cell(first, second, comm_streams) as it places them, in the order
/// it does (each chain's in its own order).
[[nodiscard]] std::vector<PlacedOp> place_cell(std::span<const TimedOp> first,
                                               std::span<const TimedOp> second, int comm_streams);

/// Megatron-Core's Combined 1F1B of an order, and how many of its backwards it paired.
struct CombinedOrder {
  Schedule schedule;
  int cells{0};       ///< backwards that run as one cell with the F after them
  int kept_apart{0};  ///< backwards left alone because their cell would have deadlocked
};

/// Megatron-Core's Combined 1F1B of any order: on every device each backward (B or BW) and the
/// next F after it become one overlapped FB task, the W tasks between them after it. So every
/// device runs one more F before its first backward (the extra warm-up micro-batch of
/// Megatron's combined schedule, one more M_B at the peak), and F(i + 1) of a stage never
/// waits for the B(i) that waits for it downstream. A cell waits for what both halves need, so
/// in some orders (the V shapes: an F of the second chunk that waits, through the other
/// devices, for the backward it is paired with) pairing every backward deadlocks. The pairs
/// are then checked by running the order without time: when every device waits and one waits
/// at a cell whose F is not ready, the lowest such device's cell is parted again (the backward
/// in its place, the F where it was) and the run goes on, so the order returned never
/// deadlocks when the given one does not, and keeps every cell that does not cause one. Orders
/// that already have FB tasks are returned as they are.
[[nodiscard]] CombinedOrder combine_forward_backward(const Schedule& schedule);

} // namespace ppsim
