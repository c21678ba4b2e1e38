// The simulator's output: when every task ran, and the messages between devices.
#pragma once

#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/task.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace ppsim {

/// One executed task. Its device is implied by where it lies in Timeline::runs
/// (Timeline::device_of); 40 bytes, so a million runs fit in 40 MB.
struct TaskRun {
  Task task;
  Ticks start{0};
  Ticks end{0};
};

/// A message: the result `part` of run `from`, sent at `send` (the producer's end), on the
/// link from `start` (later than `send` when it queued behind another message, Contention
/// Duplex) until `arrive`, when run `to`, whose half on stage `to_stage` needs it, may use it.
/// `bytes` is what it carries (StageCosts::act_bytes / grad_bytes; 0 when unknown).
struct CommEvent {
  int from{0};
  int to{0};
  Ticks send{0};
  Ticks start{0};
  Ticks arrive{0};
  double bytes{0};
  Part part;
  int to_stage{0};
};

/// A copy on a device's copy stream (ppsim/sim/offload.hpp): an O moves `units` M_B of micro-batch
/// `microbatch`'s activation on `stage` to the host, an R brings them back. Issued at `issue`
/// (an O at its F's end, an R at the start of the task before its backward), on the stream from
/// `start` to `end`. The device's memory drops by `units` at an O's end and rises by them at an
/// R's start; the host holds them from the O's end to the R's end.
enum class CopyKind : std::uint8_t { O, R };
struct CopyEvent {
  int device{0};
  CopyKind kind{CopyKind::O};
  int stage{0};
  int microbatch{0};
  Ticks issue{0};
  Ticks start{0};
  Ticks end{0};
  double units{0};  ///< M_B units moved
  double bytes{0};  ///< units in bytes; 0 when the bytes of M_B are unknown
  /// An R: how long its backward waited for it beyond every other input (exposed copy time).
  Ticks exposed{0};
};

/// A data-parallel collective (ppsim/sim/data_parallel.hpp) on a device's comm stream, for the
/// parameters of `stage` over its replicas: the gradients' all-reduce or reduce-scatter after
/// the stage's last backward, or (ZeRO-1) the parameters' all-gather after the optimizer step.
/// Issued at `issue`, on the stream from `start` to `end`; `bytes` is the whole buffer.
enum class CollectiveKind : std::uint8_t { AllReduce, ReduceScatter, AllGather };
struct CollectiveEvent {
  int device{0};
  int stage{0};
  CollectiveKind kind{CollectiveKind::AllReduce};
  Ticks issue{0};
  Ticks start{0};
  Ticks end{0};
  double bytes{0};
};

/// Runs are grouped by device in each device's execution order: device d owns
/// runs[device_begin[d] .. device_begin[d+1]).
struct Timeline {
  int devices{0};
  std::vector<TaskRun> runs;
  std::vector<int> device_begin;
  std::vector<CommEvent> comms;
  /// With blocking sends (CommMode::Blocking): per run, when its device's stream is free again
  /// after the run's messages were delivered (its end when it sent none). Empty otherwise.
  std::vector<Ticks> sends_done;
  /// With an offload (SimOptions::offload): every copy, in the order the engine issued them
  /// (each device's in the order of its copy stream). Empty otherwise.
  std::vector<CopyEvent> copies;
  /// With data parallelism (Run::data_parallel): the tail's collectives, device by device, each
  /// device's in the order of its stream. Empty otherwise.
  std::vector<CollectiveEvent> collectives;

  /// The device of run `run` (a binary search over device_begin).
  [[nodiscard]] int device_of(int run) const {
    const auto it = std::upper_bound(device_begin.begin(), device_begin.end(), run);
    return static_cast<int>(it - device_begin.begin()) - 1;
  }
  [[nodiscard]] std::span<const TaskRun> device_runs(int device) const {
    const auto b = static_cast<std::size_t>(device_begin[static_cast<std::size_t>(device)]);
    const auto e = static_cast<std::size_t>(device_begin[static_cast<std::size_t>(device) + 1]);
    return std::span<const TaskRun>(runs).subspan(b, e - b);
  }
};

} // namespace ppsim
