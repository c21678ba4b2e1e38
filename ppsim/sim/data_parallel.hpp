// Data parallelism at the tail of an iteration: each stage's gradient reduction over its
// data-parallel replicas, issued after the stage's last weight-gradient work on a comm stream of
// its device (overlapping what the other stages still compute), the optimizer step once the
// device's reductions are done, and with ZeRO-1 the parameter all-gather after the step.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/time.hpp"
#include "ppsim/sim/timeline.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace ppsim {

/// `replicas` copies of the pipeline train on different data and synchronise their gradients.
/// Each collective is a ring over the replicas of one stage (NCCL's ring algorithm) on a link
/// of `latency` per step and `gbytes_per_s`; every replica runs the same timeline, so a
/// collective starts when its device issues it.
///
///   DataParallelSync dp{.replicas = 8, .latency = 10'000, .gbytes_per_s = 50};
struct DataParallelSync {
  int replicas{1};
  /// ZeRO-1 (Megatron's distributed optimizer): reduce-scatter the gradients, each replica
  /// steps its shard, then all-gather the parameters. Otherwise an all-reduce of the gradients.
  bool shard{false};
  Ticks latency{0};        ///< per ring step
  double gbytes_per_s{0};  ///< per replica and direction (1 GB = 1e9 bytes); 0 = no size term
  double grad_bytes_per_param{4};   ///< what is reduced: fp32 gradients (Megatron's main_grad)
  double param_bytes_per_param{2};  ///< what is gathered: the model's dtype
  /// A stage's reduction starts with its last backward (B or BW) instead of after its last
  /// weight gradients, and ends no earlier than the reduction of its last 25 MB bucket after
  /// them (PyTorch DDP, Megatron's --overlap-grad-reduce).
  bool overlap{false};

  /// True when there is something to synchronise.
  [[nodiscard]] bool any() const { return replicas > 1; }
  friend bool operator==(const DataParallelSync&, const DataParallelSync&) = default;
};

/// "all-reduce", "reduce-scatter" or "all-gather".
[[nodiscard]] std::string_view collective_name(CollectiveKind kind);

/// A ring collective of `bytes` (the whole buffer) over `ranks` ranks: a reduce-scatter or an
/// all-gather takes (n - 1) steps of latency + bytes / (n bandwidth), an all-reduce twice that
/// (Patarasuk and Yuan 2009; NCCL's ring). 0 for one rank. Rounded to the nanosecond.
[[nodiscard]] Ticks ring_time(CollectiveKind kind, double bytes, int ranks, Ticks latency,
                              double gbytes_per_s);

/// The tail of one iteration (data_parallel_tail).
struct DataParallelTail {
  /// Every collective, device by device, each device's in the order of its stream.
  std::vector<CollectiveEvent> collectives;
  Ticks first_start{0};            ///< the first task's start (0 without tasks)
  Ticks last_end{0};               ///< the latest of the devices' last task ends
  std::vector<Ticks> compute_end;  ///< per device: its last task's end
  std::vector<Ticks> step_start;   ///< per device: its optimizer step's start
  std::vector<Ticks> end;          ///< per device: when its iteration is over
  Ticks iteration_end{0};          ///< the latest end: the next iteration's start (all-reduce sync)
};

/// The tail of `timeline` (one iteration, on `costs`, whose stages know their `params`). Per
/// device: the reduction of each stage it holds (StageCosts::params x grad_bytes_per_param
/// bytes) is issued when the stage's last W or BW (an FB's backward half included) ends, and the
/// device's stream serves them first issued first served (a tie: the lower stage first); the
/// optimizer step of `step` starts when the device's last task and its reductions have ended;
/// with `shard`, the all-gather of each of its stages follows the step on the stream, in stage
/// order. Without replicas (replicas 1): no collectives, a device's end is its last task's end
/// plus the step. ConfigError for replicas < 1, a negative latency, bandwidth or byte count.
[[nodiscard]] DataParallelTail data_parallel_tail(const Timeline& timeline, const CostModel& costs,
                                                  const DataParallelSync& sync, Ticks step);

} // namespace ppsim
