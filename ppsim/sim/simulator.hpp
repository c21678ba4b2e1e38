// The deterministic discrete-event engine: a schedule and a cost model in, a timeline out.
#pragma once

#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/offload.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/timeline.hpp"

#include <memory>
#include <vector>

namespace ppsim {

/// Runs every device's task list in order. A task starts when the task before it on its device
/// has ended and every dependency (DESIGN.md) has ended, plus the comm latency when it crossed
/// devices; sends are asynchronous (SimOptions::comm has the other models). Events are
/// processed in (time, insertion) order.
/// Throws ScheduleError when the schedule cannot progress, naming each device's blocked task,
/// what it waits for, and a cycle of the task graph when there is one.
///
///   const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
///   const Timeline t = simulate(s, cost_model_for(parse_costs("F=1"), s));
[[nodiscard]] Timeline simulate(const Schedule& schedule, const CostModel& costs);

/// Extensions of the engine: multi-iteration runs (ppsim/sim/iterations.hpp), the communication
/// model (ppsim/sim/comm.hpp) and sampled task durations (ppsim/sim/variability.hpp). Per-run vectors are
/// indexed like Timeline::runs (device by device, each in its order) and are either empty (off)
/// or hold one entry per run.
struct SimOptions {
  /// Blocking sends, a link sized by bytes, contention; the default is the plain model.
  CommOptions comm;
  /// Each run's duration instead of the cost model's (a sample of noisy durations).
  std::vector<Ticks> durations;
  /// The device stays busy this long after the run ends (an optimizer step); the run's results
  /// still exist at its end, so no other device waits for the pause.
  std::vector<Ticks> pause_after;
  /// The barrier whose release waits for this run's end, or -1.
  std::vector<int> barrier_member;
  /// The barrier this run may not start before, or -1.
  std::vector<int> barrier_gate;
  /// Per barrier: it releases at the last end of its members plus this delay (at the delay when
  /// it has no members).
  std::vector<Ticks> barrier_delay;
  /// Activation offload and reload on a copy stream per device (Timeline::copies); off when
  /// no stage offloads. ConfigError for a fraction vector whose size is not the stage count, a
  /// fraction outside [0, 1], or a negative copy time.
  OffloadPlan offload;
};

/// simulate() with options; with empty options it gives exactly simulate(schedule, costs).
/// Throws ConfigError when a vector's size does not match the runs or a barrier id is out of range.
[[nodiscard]] Timeline simulate(const Schedule& schedule, const CostModel& costs,
                                const SimOptions& options);

/// The engine as an object that keeps its working memory between runs. Simulating many
/// schedules or samples into one Timeline reuses both: once warm, a run allocates nothing and
/// touches no fresh page (a fresh million-task timeline costs ~20k page faults).
///
///   Simulator sim;
///   Timeline t;
///   for (const Schedule& s : candidates) { sim.run(s, costs, {}, t); ... }
class Simulator {
public:
  Simulator();
  ~Simulator();
  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// simulate(schedule, costs, options) into `out`, replacing what it held. Throws like
  /// simulate(); `out` then holds no meaningful timeline.
  void run(const Schedule& schedule, const CostModel& costs, const SimOptions& options,
           Timeline& out);

  struct Workspace;  ///< the engine's arrays (simulator.cpp)

private:
  std::unique_ptr<Workspace> ws_;
};

} // namespace ppsim
