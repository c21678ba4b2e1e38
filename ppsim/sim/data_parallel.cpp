// The data-parallel tail: ring times, and the per-device comm stream after the last backward.
#include "ppsim/sim/data_parallel.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/task.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace ppsim {

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce: return "all-reduce";
  case CollectiveKind::ReduceScatter: return "reduce-scatter";
  case CollectiveKind::AllGather: return "all-gather";
  }
  return "?";
}

Ticks ring_time(CollectiveKind kind, double bytes, int ranks, Ticks latency, double gbytes_per_s) {
  if (ranks <= 1) return 0;
  const double steps = (kind == CollectiveKind::AllReduce ? 2.0 : 1.0) * (ranks - 1);
  // GB/s is bytes per nanosecond
  const double chunk_ns = gbytes_per_s > 0 ? bytes / (ranks * gbytes_per_s) : 0.0;
  return static_cast<Ticks>(std::llround(steps * (static_cast<double>(latency) + chunk_ns)));
}

// PyTorch DDP's default bucket (bucket_cap_mb = 25).
constexpr double kOverlapBucketBytes = 25e6;

DataParallelTail data_parallel_tail(const Timeline& timeline, const CostModel& costs,
                                    const DataParallelSync& sync, Ticks step) {
  if (sync.replicas < 1)
    throw ConfigError(fmt::format("--dp {}: needs at least 1 replica", sync.replicas));
  if (sync.latency < 0 || !(sync.gbytes_per_s >= 0) || !(sync.grad_bytes_per_param >= 0) ||
      !(sync.param_bytes_per_param >= 0))
    throw ConfigError("data-parallel link: latency, bandwidth and bytes must be >= 0");
  const int P = timeline.devices;
  const int S = static_cast<int>(costs.stage.size());
  DataParallelTail tail;
  tail.compute_end.assign(ix(P), 0);
  tail.step_start.assign(ix(P), 0);
  tail.end.assign(ix(P), 0);
  // Per stage: its device and the end of its last weight-gradient work.
  std::vector<Ticks> ready(ix(S), -1);
  std::vector<int> device_of(ix(S), -1);
  std::vector<Ticks> last_backward(ix(S), -1);  // the start of the stage's last B or BW
  Ticks first = -1;
  for (int d = 0; d < P; ++d) {
    const auto runs = timeline.device_runs(d);
    if (runs.empty()) continue;
    tail.compute_end[ix(d)] = runs.back().end;
    tail.last_end = std::max(tail.last_end, runs.back().end);
    if (first < 0 || runs.front().start < first) first = runs.front().start;
    for (const TaskRun& r : runs) {
      for_each_half(r.task, [&](Kind kind, int stage, int) {
        if (stage < 0 || stage >= S) return;
        device_of[ix(stage)] = d;
        if (kind == Kind::W || kind == Kind::BW) ready[ix(stage)] = std::max(ready[ix(stage)], r.end);
        if (kind == Kind::B || kind == Kind::BW)
          last_backward[ix(stage)] = std::max(last_backward[ix(stage)], r.start);
      });
    }
  }
  const CollectiveKind reduce = sync.shard ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
  for (int d = 0; d < P; ++d) {
    Ticks free = 0;  // the device's data-parallel stream
    Ticks done = tail.compute_end[ix(d)];
    // One collective of stage s's `bytes_per_param` on the stream, issued at `issue`.
    // `after`: what it cannot end before (an overlapped reduction, its last bucket).
    const auto enqueue = [&](CollectiveKind kind, int s, Ticks issue, double bytes_per_param,
                             Ticks after = 0) {
      CollectiveEvent e{.device = d, .stage = s, .kind = kind, .issue = issue};
      e.bytes = costs.stage[ix(s)].params * bytes_per_param;
      e.start = std::max(issue, free);
      e.end = std::max(add_ticks(e.start, ring_time(kind, e.bytes, sync.replicas, sync.latency,
                                                    sync.gbytes_per_s)),
                       after);
      free = e.end;
      done = std::max(done, e.end);
      tail.collectives.push_back(e);
    };
    std::vector<int> mine;
    if (sync.any())
      for (int s = 0; s < S; ++s)
        if (device_of[ix(s)] == d) mine.push_back(s);
    // NOTE: a stage without W or BW (no weight gradients in this order) syncs after the
    // device's last task
    const auto issue_of = [&](int s) { return ready[ix(s)] >= 0 ? ready[ix(s)] : tail.compute_end[ix(d)]; };
    std::stable_sort(mine.begin(), mine.end(), [&](int a, int b) { return issue_of(a) < issue_of(b); });
    for (const int s : mine) {
      if (!sync.overlap || last_backward[ix(s)] < 0) {
        enqueue(reduce, s, issue_of(s), sync.grad_bytes_per_param);
        continue;
      }
      // NOTE: overlapped, as DDP's buckets: the reduction runs beside the last backward, but
      // its last bucket is ready only with the last weight gradients.
      const Ticks last_bucket = add_ticks(
          issue_of(s), ring_time(reduce, std::min(kOverlapBucketBytes, costs.stage[ix(s)].params *
                                                                        sync.grad_bytes_per_param),
                                 sync.replicas, sync.latency, sync.gbytes_per_s));
      enqueue(reduce, s, last_backward[ix(s)], sync.grad_bytes_per_param, last_bucket);
    }
    tail.step_start[ix(d)] = done;
    done = add_ticks(done, step);
    if (sync.shard) {
      std::sort(mine.begin(), mine.end());
      for (const int s : mine) enqueue(CollectiveKind::AllGather, s, done, sync.param_bytes_per_param);
    }
    tail.end[ix(d)] = done;
    tail.iteration_end = std::max(tail.iteration_end, done);
  }
  tail.first_start = std::max<Ticks>(0, first);
  return tail;
}

} // namespace ppsim
