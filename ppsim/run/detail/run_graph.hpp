// Private to run/: the graph of a timeline's runs (what each needs, the run before it on its
// device), its messages, and small statistics, shared by the measured run, the fit, the replay
// and diff.
#pragma once

#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/timeline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace ppsim::detail {

inline constexpr int kNoRun = -1;

// The run of the measured timeline that produced each part (F, B, W of a stage and micro-batch).
class Producers {
public:
  Producers(const Timeline& t, int stages, int microbatches)
      : index_(stages, microbatches), run_(index_.size(), kNoRun) {
    for (std::size_t r = 0; r < t.runs.size(); ++r)
      for_each_product(t.runs[r].task, [&](const Part& p) { run_[index_(p)] = static_cast<int>(r); });
  }
  [[nodiscard]] int of(const Part& p) const { return run_[index_(p)]; }

private:
  PartIndex index_;
  std::vector<int> run_;
};

// For each run: the runs that produce what it needs, and the run before it on its device.
struct RunGraph {
  std::vector<std::vector<int>> needs;
  std::vector<int> prev;    // kNoRun for a device's first
  std::vector<int> device;  // per run
};

inline RunGraph run_graph(const Schedule& s, const Timeline& t) {
  const Topology topo(s);
  const Producers producers(t, s.stages(), s.microbatches);
  RunGraph g;
  g.needs.resize(t.runs.size());
  g.prev.assign(t.runs.size(), kNoRun);
  g.device.assign(t.runs.size(), 0);
  for (int d = 0; d < t.devices; ++d) {
    const int b = t.device_begin[ix(d)];
    const int e = t.device_begin[ix(d) + 1];
    for (int r = b; r < e; ++r) {
      g.device[ix(r)] = d;
      if (r > b) g.prev[ix(r)] = r - 1;
      for_each_dependency(topo, t.runs[ix(r)].task, [&](const Part& p) {
        const int q = producers.of(p);
        if (q != kNoRun && q != r) g.needs[ix(r)].push_back(q);
      });
    }
  }
  return g;
}

// The cross-device messages of a timeline, each arriving at arrival(producer run, consumer run)
// (no earlier than its send), with the part the consumer needs.
template <class Arrival>
void record_messages(const Schedule& s, const RunGraph& g, Timeline& t, Arrival&& arrival) {
  const Topology topo(s);
  for (std::size_t r = 0; r < t.runs.size(); ++r)
    for (const int q : g.needs[r]) {
      if (g.device[ix(q)] == g.device[r]) continue;
      CommEvent c;
      c.from = q;
      c.to = static_cast<int>(r);
      c.send = t.runs[ix(q)].end;
      c.start = c.send;
      c.arrive = std::max(c.send, arrival(q, static_cast<int>(r)));
      // Which of the producer's parts this consumer needs: F forward, B backward.
      const Task& pt = t.runs[ix(q)].task;
      Part part{Kind::F, pt.stage, pt.microbatch};
      for_each_dependency(topo, t.runs[r].task, [&](const Part& p) {
        bool produced = false;
        for_each_product(pt, [&](const Part& x) {
          produced = produced || (x.kind == p.kind && x.stage == p.stage && x.microbatch == p.microbatch);
        });
        if (produced) part = p;
      });
      c.part = part;
      int to_stage = t.runs[r].task.stage;
      for_each_half(t.runs[r].task, [&](Kind, int stage, int) {
        if (topo.device_of(stage) == g.device[r]) to_stage = stage;
      });
      c.to_stage = to_stage;
      t.comms.push_back(c);
    }
}

// The median (of an even count, the middle of the two middle values; 0 when empty).
template <class T>
T median_of(std::vector<T> v) {
  if (v.empty()) return T{0};
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  const T hi = *mid;
  const T lo = *std::max_element(v.begin(), mid);
  return lo + (hi - lo) / 2;
}

inline Ticks quantile_of(std::vector<Ticks> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[std::min(i, v.size() - 1)];
}

inline double rel_error(double got, double want) {
  if (want == 0) return got == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (got - want) / want;
}

// Durations per (stage, kind) of a timeline; an FB counts for its forward's stage.
inline std::vector<std::array<std::vector<Ticks>, 5>> durations_by_stage(const Run& r) {
  std::vector<std::array<std::vector<Ticks>, 5>> d(ix(r.schedule.stages()));
  for (const TaskRun& tr : r.timeline.runs)
    d[ix(tr.task.stage)][static_cast<std::size_t>(tr.task.kind)].push_back(tr.end - tr.start);
  return d;
}

} // namespace ppsim::detail
