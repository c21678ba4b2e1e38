// Which results cross devices, derived from the dependency rules of ppsim/sim/dependencies.hpp.
#include "exec/plan.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim::exec {

std::string part_text(const Part& p) {
  return to_string(Task::make(p.kind, p.stage, p.microbatch));
}

int message_tag(const Part& part, int stages) {
  return static_cast<int>(part_index(part, stages));
}

ExecPlan make_plan(const Schedule& schedule) {
  const Topology topo(schedule);
  ExecPlan plan;
  plan.stages = schedule.stages();
  plan.microbatches = schedule.microbatches;
  plan.devices.resize(ix(schedule.devices));

  // Where each part is produced: (device, index in its order).
  struct Where {
    int device{-1};
    int index{-1};
  };
  std::vector<Where> producer(parts_size(plan.stages, plan.microbatches));
  for (int d = 0; d < schedule.devices; ++d) {
    const auto& order = schedule.order[ix(d)];
    plan.devices[ix(d)].tasks.resize(order.size());
    plan.devices[ix(d)].slots.assign(ix(plan.stages), 0);
    for (std::size_t i = 0; i < order.size(); ++i)
      for_each_product(order[i], [&](const Part& p) {
        producer[part_index(p, plan.stages)] = Where{d, static_cast<int>(i)};
      });
  }

  for (int d = 0; d < schedule.devices; ++d) {
    auto& dev = plan.devices[ix(d)];
    const auto& order = schedule.order[ix(d)];
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Task& task = order[i];
      // Each half of an FB needs what its own kind needs on its own stage.
      const auto half = [&](Kind kind, int stage, int mb) {
        for_each_dependency_simple(topo, kind, stage, mb, [&](const Part& p) {
          if (p.stage == stage) return;  // the stage's own state (B on F, W on B)
          const Where w = producer[part_index(p, plan.stages)];
          if (w.device < 0)
            throw ScheduleError(fmt::format(
                "device {} task {} ({}): needs {}, which no task produces", d, i,
                to_string(task), part_text(p)));
          const Message m{p, w.device, d, stage};
          dev.tasks[i].receives.push_back(m);
          auto& sends = plan.devices[ix(w.device)].tasks[ix(w.index)].sends;
          if (std::find(sends.begin(), sends.end(), m) == sends.end()) sends.push_back(m);
          if (w.device != d) dev.incoming.push_back(m);
        });
      };
      for_each_half(task, half);
    }
    // Activations held per stage: from the F's start to the end of the W (or BW).
    std::vector<int> held(ix(plan.stages), 0);
    const auto step = [&](Kind kind, int stage) {
      auto& h = held[ix(stage)];
      if (kind == Kind::F) dev.slots[ix(stage)] = std::max(dev.slots[ix(stage)], ++h);
      if (kind == Kind::W || kind == Kind::BW) --h;
    };
    for (const Task& t : order)
      for_each_half(t, [&](Kind kind, int stage, int) { step(kind, stage); });
  }
  return plan;
}

double worst_rank_bytes(const ExecPlan& plan, const calibrate::MlpShape& mlp) {
  double worst = 0;
  for (const auto& dev : plan.devices) {
    double bytes = 0;
    for (int n : dev.slots)
      if (n > 0) bytes += calibrate::stage_buffer_bytes(mlp, n);
    worst = std::max(worst, bytes);
  }
  return worst + plan.stages * calibrate::stage_buffer_bytes(mlp);  // rank 0's reference
}

} // namespace ppsim::exec
