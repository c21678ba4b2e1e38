// Placement helpers and the topology of a schedule.
#include "ppsim/sim/schedule.hpp"


#include <algorithm>
#include <string>

namespace ppsim {

int Schedule::chunks() const {
  if (devices <= 0 || routes.empty()) return 1;
  return std::max(1, static_cast<int>(routes.front().size()) / devices);
}

std::size_t Schedule::task_count() const {
  std::size_t n = 0;
  for (const auto& device : order) n += device.size();
  return n;
}

std::vector<int> loop_placement(int devices, int chunks) {
  std::vector<int> placement;
  placement.reserve(static_cast<std::size_t>(devices * chunks));
  for (int c = 0; c < chunks; ++c)
    for (int d = 0; d < devices; ++d) placement.push_back(d);
  return placement;
}

std::vector<int> vshape_placement(int devices) {
  std::vector<int> placement(static_cast<std::size_t>(2 * devices));
  for (int d = 0; d < devices; ++d) {
    placement[static_cast<std::size_t>(d)] = d;
    placement[static_cast<std::size_t>(2 * devices - 1 - d)] = d;
  }
  return placement;
}

std::string placement_name(const Schedule& schedule) {
  const int p = schedule.devices;
  if (p > 0 && schedule.stages() % p == 0 &&
      schedule.stage_device == loop_placement(p, schedule.stages() / p))
    return "loop";
  if (p > 0 && schedule.stage_device == vshape_placement(p)) return "vshape";
  return "explicit";
}

Schedule make_pipeline(std::string name, int devices, int microbatches,
                       std::vector<int> stage_device) {
  Schedule s;
  s.name = std::move(name);
  s.devices = devices;
  s.microbatches = microbatches;
  s.stage_device = std::move(stage_device);
  std::vector<int> route(s.stage_device.size());
  for (std::size_t i = 0; i < route.size(); ++i) route[i] = static_cast<int>(i);
  s.routes = {std::move(route)};
  s.microbatch_route.assign(static_cast<std::size_t>(std::max(0, microbatches)), 0);
  s.order.resize(static_cast<std::size_t>(std::max(0, devices)));
  return s;
}

Topology::Topology(const Schedule& schedule)
    : schedule_(&schedule), stages_(schedule.stages()), chunks_(schedule.chunks()),
      microbatches_(static_cast<int>(schedule.microbatch_route.size())),
      routes_(static_cast<int>(schedule.routes.size())) {
  const auto n_routes = schedule.routes.size();
  position_.assign(n_routes * idx(stages_), -1);
  prev_.assign(n_routes * idx(stages_), -1);
  next_.assign(n_routes * idx(stages_), -1);
  model_position_.assign(idx(stages_), 0);
  std::vector<bool> seen(idx(stages_), false);
  for (std::size_t r = 0; r < n_routes; ++r) {
    const auto& route = schedule.routes[r];
    for (std::size_t k = 0; k < route.size(); ++k) {
      const int s = route[k];
      if (s < 0 || s >= stages_) continue;  // validate() reports it
      position_[r * idx(stages_) + idx(s)] = static_cast<int>(k);
      if (k > 0) prev_[r * idx(stages_) + idx(s)] = route[k - 1];
      if (k + 1 < route.size()) next_[r * idx(stages_) + idx(s)] = route[k + 1];
      if (!seen[idx(s)]) {
        seen[idx(s)] = true;
        model_position_[idx(s)] = static_cast<int>(k);
      }
    }
  }
  // Stages by device (CSR), each device's in model order.
  const int P = std::max(0, schedule.devices);
  device_stage_begin_.assign(idx(P) + 1, 0);
  for (int s = 0; s < stages_; ++s) {
    const int d = schedule.stage_device[idx(s)];
    if (d >= 0 && d < P) ++device_stage_begin_[idx(d) + 1];
  }
  for (int d = 0; d < P; ++d) device_stage_begin_[idx(d) + 1] += device_stage_begin_[idx(d)];
  device_stage_list_.resize(idx(device_stage_begin_[idx(P)]));
  std::vector<int> fill(device_stage_begin_.begin(), device_stage_begin_.end() - 1);
  std::vector<int> by_position(idx(stages_));
  for (int s = 0; s < stages_; ++s) by_position[idx(s)] = s;
  std::stable_sort(by_position.begin(), by_position.end(),
                   [&](int a, int b) { return model_position_[idx(a)] < model_position_[idx(b)]; });
  for (const int s : by_position) {
    const int d = schedule.stage_device[idx(s)];
    if (d >= 0 && d < P) device_stage_list_[idx(fill[idx(d)]++)] = s;
  }
}

std::string microbatches_text(const Schedule& s) {
  const int m = s.whole_microbatches();
  std::string text = std::to_string(m) + (m == 1 ? " micro-batch" : " micro-batches");
  if (s.slice_count() > 1) text += " of " + std::to_string(s.slice_count()) + " slices";
  return text;
}

} // namespace ppsim
