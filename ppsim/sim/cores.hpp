// How many threads independent work may start here: the cores this process may run on (its
// affinity mask, which mpirun's --bind-to narrows), and one inside a worker that already shares
// them (a sweep's or a plan's thread does not start a pool of its own per point).
//
//   const WorkerScope worker;                          // in each thread of a pool
//   const unsigned n = worker_cores();                 // 1 there; the usable cores elsewhere
#pragma once

namespace ppsim {

/// The cores this process may run on (sched_getaffinity; the hardware's where that fails), >= 1.
[[nodiscard]] unsigned usable_cores();

/// usable_cores(), or 1 on a thread inside a WorkerScope.
[[nodiscard]] unsigned worker_cores();

/// Marks the current thread as one of a pool's workers while it lives.
class WorkerScope {
public:
  WorkerScope();
  ~WorkerScope();
  WorkerScope(const WorkerScope&) = delete;
  WorkerScope& operator=(const WorkerScope&) = delete;

private:
  bool outer_;
};

} // namespace ppsim
