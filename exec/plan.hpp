// The communication plan of a schedule on real ranks: what each task receives and sends.
#pragma once

#include "model/mlp.hpp"
#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/schedule.hpp"

#include <string>
#include <vector>

namespace ppsim::exec {

/// A part as a task's text: `2F0`, `1B3` (the rank errors name the messages by it).
[[nodiscard]] std::string part_text(const Part& p);

/// A result handed from one stage to another: the output of F(stage, mb) to the next stage's F,
/// or the input gradient of B(stage, mb) to the previous stage's B/BW. `from == to` when both
/// stages are on one device (the data is handed over in memory, not through MPI).
struct Message {
  Part part;
  int from{0};      ///< device that produces it
  int to{0};        ///< device that consumes it
  int to_stage{0};  ///< the stage of the consumer that needs it

  friend bool operator==(const Message& a, const Message& b) {
    return a.part.kind == b.part.kind && a.part.stage == b.part.stage &&
           a.part.microbatch == b.part.microbatch && a.from == b.from && a.to == b.to &&
           a.to_stage == b.to_stage;
  }
};

/// What one task of a device's order needs before it starts and hands on when it ends.
struct TaskPlan {
  std::vector<Message> receives;
  std::vector<Message> sends;
};

/// One device's share of an iteration.
struct DevicePlan {
  std::vector<TaskPlan> tasks;    ///< parallel to schedule.order[device]
  std::vector<Message> incoming;  ///< every message from another device, in first-use order
  /// Per stage: the most micro-batches whose activations the device holds at once (F started,
  /// W or BW not yet ended); 0 for stages on other devices.
  std::vector<int> slots;
};

/// The plan of every device. Built from ppsim/sim/dependencies.hpp only: a message is a dependency of
/// a task on a part of another stage; a dependency on its own stage (B on F, W on B) is state
/// the stage keeps.
///
///   ExecPlan plan = make_plan(make_schedule("zb-h1", {4, 8}));
///   for (const Message& m : plan.devices[1].incoming) ...;
struct ExecPlan {
  std::vector<DevicePlan> devices;
  int stages{0};
  int microbatches{0};
};

/// Throws ScheduleError when a part needed by a task is produced by no task (validate() first).
[[nodiscard]] ExecPlan make_plan(const Schedule& schedule);

/// The most bytes one rank allocates to run `plan` with `mlp` stages: the activation slots of
/// its stages, and on rank 0 also the single-process reference of every stage.
[[nodiscard]] double worst_rank_bytes(const ExecPlan& plan, const calibrate::MlpShape& mlp);

/// The MPI tag of a message: the dense index of its part (unique within an iteration).
[[nodiscard]] int message_tag(const Part& part, int stages);

} // namespace ppsim::exec
