// Numbers computed from a timeline: makespan, the paper's cost and bubble rate, idle, memory.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/timeline.hpp"

#include <functional>
#include <vector>

namespace ppsim {

struct DeviceMetrics {
  int device{0};
  Ticks busy{0};         ///< sum of task durations
  Ticks span{0};         ///< last end - first start
  Ticks idle{0};         ///< span - busy
  double peak_memory{0};  ///< highest running activation memory, M_B units
  double p2p_bytes_sent{0};   ///< bytes of the messages it sent to other devices
  long long p2p_messages{0};  ///< messages it sent to other devices
  Ticks comm_wait{0};         ///< of its idle, the time spent waiting on communication (CommWait)
  Ticks recompute{0};         ///< of its busy time, the recomputed forwards (CostModel::recompute_part)
  /// Of its busy time, the collectives its compute waited for (CostModel::exposed_comm: with
  /// --overlap, what the cells did not hide and the lone tasks' all of it).
  Ticks exposed_comm{0};
  /// Of its busy time, the collectives inside its tasks, hidden or not (CostModel::task_comm).
  Ticks task_comm{0};
  /// Bytes held whatever the schedule (weights, gradients, optimizer state of its stages).
  double state_bytes{0};
  /// state_bytes + peak_memory in bytes; 0 when neither is known.
  double peak_bytes{0};
  // Activation offload (Timeline::copies; all 0 without one).
  Ticks copy_busy{0};            ///< time its copy stream is busy (sum of its copies)
  double offloaded_memory{0};    ///< M_B units its O moved to the host
  double reloaded_memory{0};     ///< M_B units its R brought back
  double offloaded_bytes{0};     ///< the same in bytes; 0 when the bytes of M_B are unknown
  double reloaded_bytes{0};
  Ticks exposed_copy{0};         ///< time its backwards waited for their R beyond other inputs
  double host_peak_memory{0};    ///< highest M_B units it held on the host
  double host_peak_bytes{0};     ///< the same in bytes; 0 when unknown
  // Data parallelism at the tail (Timeline::collectives; all 0 without replicas).
  Ticks dp_busy{0};     ///< time its data-parallel comm stream is busy (sum of its collectives)
  /// How much later its iteration ends than its last task plus the optimizer step: the part of
  /// its collectives nothing hid.
  Ticks exposed_dp{0};
};

/// DESIGN.md's metrics, following its definitions exactly.
struct Metrics {
  Ticks makespan{0};  ///< last end - first start over all devices
  Ticks cost{0};      ///< max span: the zero-bubble paper's cost
  Ticks ideal{0};     ///< max busy
  double bubble_rate{0};        ///< (cost - ideal) / cost
  double bubble_over_ideal{0};  ///< (cost - ideal) / ideal, Megatron's (p-1)/(v m)
  double idle_fraction{0};      ///< 1 - sum busy / (devices * makespan)
  double peak_memory{0};        ///< max over devices, M_B units
  double peak_memory_bytes{0};  ///< peak_memory * bytes of one M_B; 0 when unknown
  double peak_bytes{0};         ///< max over devices of their peak_bytes
  double total_peak_bytes{0};   ///< sum over devices of their peak_bytes
  Ticks exposed_copy{0};        ///< sum over devices of their exposed copy time
  double host_peak_memory{0};   ///< max over devices of their host peak, M_B units
  double host_peak_bytes{0};    ///< max over devices of their host peak in bytes; 0 when unknown
  /// With data parallelism: how much later the iteration ends than the last task of any device
  /// plus the optimizer step (the collectives' time that the pipeline's tail did not hide).
  Ticks exposed_dp{0};
  std::vector<DeviceMetrics> per_device;
};

///   Metrics m = measure(simulate(s, costs), costs);
[[nodiscard]] Metrics measure(const Timeline& timeline, const CostModel& costs);

/// The peak memory (M_B) of a schedule's order, whatever its timing: per device the running sum
/// of its tasks' deltas in order (an FB's halves summed), the most of any device. What the
/// generators keep within a limit before anything is timed.
[[nodiscard]] double order_peak(const Schedule& schedule, const CostModel& costs);

/// The least peak memory (M_B) any order of the schedule's tasks can have on its worst device,
/// whatever their kinds (a B may be fused with its W): one micro-batch's activations on every
/// stage the device holds. Every F of a micro-batch on a device comes before any of its backward
/// there (the backward starts where the route ends), so that much is held at once in every
/// order; one micro-batch at a time with fused BW holds no more (schedules/detail/in_flight.hpp).
[[nodiscard]] double memory_lower_bound(const Schedule& schedule, const CostModel& costs);

/// A stretch of a device's idle time spent waiting on communication, before run `run`: every
/// input of that task exists but one is still in flight (from the latest of the device's free
/// time and the inputs' sends, to the inputs' arrival), or, with blocking sends, the device's
/// stream waits for the previous task's messages to be delivered. The rest of an idle gap is
/// waiting on compute (an input not yet produced). Idle before a device's first task lies
/// outside its span and is not counted.
struct CommWait {
  int device{0};
  int run{0};
  Ticks begin{0};
  Ticks end{0};
};
/// Calls fn(const CommWait&) for each stretch (non-empty): first the blocking waits, device by
/// device in time order, then the waits for inputs in the order of timeline.comms (a consumer's
/// messages are adjacent there, as the engine and the executor record them).
void for_each_comm_wait(const Timeline& timeline, const std::function<void(const CommWait&)>& fn);

/// A step of a device's activation memory: from `time` on it holds `value` M_B.
struct MemoryPoint {
  Ticks time{0};
  double value{0};
};
/// Per device, the memory steps: a positive delta counts from its task's start, a negative one
/// at its end (an FB applies each half's delta that way). An offload's copies step too: an O's
/// drop at its end (before the task steps of that time), an R's rise at its start (after them).
[[nodiscard]] std::vector<std::vector<MemoryPoint>> memory_series(const Timeline& timeline,
                                                                  const CostModel& costs);

/// Per device, the activation memory it holds on the host (M_B units): from each O's end to
/// its R's end. Empty series (one point at 0) without an offload.
[[nodiscard]] std::vector<std::vector<MemoryPoint>> host_memory_series(const Timeline& timeline);

} // namespace ppsim
