// A schedule: per-device ordered task lists, a stage->device placement and the routes.
#pragma once

#include "ppsim/sim/task.hpp"

#include <span>
#include <string>
#include <vector>

namespace ppsim {

/// Order only, no time. Stages are virtual stages (S = devices x chunks for one model replica);
/// a micro-batch flows through the stages of its route (normally 0..S-1; DualPipe has two
/// routes over two replicas).
///
///   Schedule s = make_pipeline("mine", 2, 2, loop_placement(2, 1));
///   s.order[0] = {Task::make(Kind::F, 0, 0), ...};
struct Schedule {
  std::string name;
  int devices{0};
  int microbatches{0};  ///< micro-batch indices of the tasks (with slices: m x slices)
  /// Sequence slices per micro-batch (Seq1F1B): the tasks' micro-batch u is slice u % slices of
  /// micro-batch u / slices. On a stage a micro-batch's F run in slice order and its backwards
  /// (B or BW) in reverse: a slice's attention reads the earlier slices' K/V, so their gradients
  /// come from the later slices' backwards. 1 = not sliced.
  int slices{1};
  std::vector<int> stage_device;         ///< placement: stage -> device
  std::vector<std::vector<int>> routes;  ///< each route: the stages in the order data flows
  std::vector<int> microbatch_route;     ///< route index of each micro-batch
  std::vector<std::vector<Task>> order;  ///< per device, the tasks in execution order
  /// How messages write its tasks: the vocabulary of the file it was read from.
  Notation notation{Notation::ppsim};

  [[nodiscard]] int stages() const { return static_cast<int>(stage_device.size()); }
  /// Stages of one route per device: each stage holds 1/chunks of a device-stage's layers.
  [[nodiscard]] int chunks() const;
  [[nodiscard]] std::size_t task_count() const;
  /// Slices per micro-batch, at least 1; a task's micro-batch field `unit` is slice
  /// unit % slice_count() of micro-batch unit / slice_count().
  [[nodiscard]] int slice_count() const { return slices > 1 ? slices : 1; }
  /// Whole micro-batches (`microbatches` counts the slices).
  [[nodiscard]] int whole_microbatches() const { return microbatches / slice_count(); }

  friend bool operator==(const Schedule&, const Schedule&) = default;
};

/// The micro-batches as reports write them: `8 micro-batches`, `1 micro-batch`, or
/// `8 micro-batches of 2 slices` in a sliced schedule.
[[nodiscard]] std::string microbatches_text(const Schedule& s);

/// Stage c*p + d on device d (Megatron's interleaved placement); chunks = 1 is the plain pipeline.
[[nodiscard]] std::vector<int> loop_placement(int devices, int chunks);
/// Two chunks in a V: chunk 0 of device d is stage d, chunk 1 is stage 2p-1-d.
[[nodiscard]] std::vector<int> vshape_placement(int devices);
/// "loop", "vshape" or "explicit", by comparing the placement with the two above.
[[nodiscard]] std::string placement_name(const Schedule& schedule);

/// An empty schedule with one route through every stage in order and all micro-batches on it.
[[nodiscard]] Schedule make_pipeline(std::string name, int devices, int microbatches,
                                     std::vector<int> stage_device);

/// The single owner of topology: which device holds a stage, which stage follows which on the
/// route of a micro-batch. Built once per schedule, O(1) queries. The schedule must outlive it.
class Topology {
public:
  explicit Topology(const Schedule& schedule);

  [[nodiscard]] int device_of(int stage) const { return schedule_->stage_device[idx(stage)]; }
  [[nodiscard]] int route_of(int microbatch) const {
    return schedule_->microbatch_route[idx(microbatch)];
  }
  /// Index of the stage on the route, or -1 when the route does not pass through it.
  [[nodiscard]] int position(int route, int stage) const {
    return position_[idx(route * stages_ + stage)];
  }
  /// The stage before / after `stage` on micro-batch `mb`'s route, or -1 at either end (and
  /// when the route does not pass through `stage`). Table lookups: the engine asks per task.
  [[nodiscard]] int prev_stage(int mb, int stage) const {
    return prev_[idx(route_of(mb) * stages_ + stage)];
  }
  [[nodiscard]] int next_stage(int mb, int stage) const {
    return next_[idx(route_of(mb) * stages_ + stage)];
  }
  /// Whether `stage` is on the route of micro-batch `mb` (false for ids out of range).
  [[nodiscard]] bool on_route(int mb, int stage) const {
    if (mb < 0 || mb >= microbatches_ || stage < 0 || stage >= stages_) return false;
    const int r = route_of(mb);
    return r >= 0 && r < routes_ && position(r, stage) >= 0;
  }
  /// The index of the stage along the route it first appears on (its place in the model).
  [[nodiscard]] int model_position(int stage) const { return model_position_[idx(stage)]; }
  /// Which of its device's chunks the stage is (0 for the first the route meets).
  [[nodiscard]] int chunk_of(int stage) const {
    return schedule_->devices > 0 ? model_position(stage) / schedule_->devices : 0;
  }
  /// The stages device d holds, in the order the model meets them: [c] is its chunk c.
  [[nodiscard]] std::span<const int> device_stages(int device) const {
    const auto b = idx(device_stage_begin_[idx(device)]);
    const auto e = idx(device_stage_begin_[idx(device) + 1]);
    return std::span<const int>(device_stage_list_).subspan(b, e - b);
  }
  [[nodiscard]] int stages() const { return stages_; }
  [[nodiscard]] int chunks() const { return chunks_; }

private:
  static std::size_t idx(int i) { return static_cast<std::size_t>(i); }
  const Schedule* schedule_;
  int stages_;
  int chunks_;
  int microbatches_;  ///< entries of microbatch_route
  int routes_;
  std::vector<int> position_;
  std::vector<int> prev_;  ///< [route * stages + stage]: the stage before it, or -1
  std::vector<int> next_;  ///< [route * stages + stage]: the stage after it, or -1
  std::vector<int> model_position_;
  std::vector<int> device_stage_begin_;  ///< CSR over device_stage_list_
  std::vector<int> device_stage_list_;
};

} // namespace ppsim
