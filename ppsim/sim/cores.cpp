#include "ppsim/sim/cores.hpp"

#include <algorithm>
#include <sched.h>
#include <thread>

namespace ppsim {

namespace {
thread_local bool in_worker = false;
} // namespace

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned worker_cores() { return in_worker ? 1u : usable_cores(); }

WorkerScope::WorkerScope() : outer_(in_worker) { in_worker = true; }
WorkerScope::~WorkerScope() { in_worker = outer_; }

} // namespace ppsim
