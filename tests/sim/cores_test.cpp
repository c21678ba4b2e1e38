// Tests of the cores independent work may use (ppsim/sim/cores.hpp).
#include "ppsim/sim/cores.hpp"

#include <catch2/catch.hpp>
#include <sched.h>
#include <thread>

using namespace ppsim;

TEST_CASE("the usable cores are this process's affinity mask", "[sim][cores]") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK(usable_cores() == static_cast<unsigned>(CPU_COUNT(&set)));
  CHECK(usable_cores() >= 1);
}

TEST_CASE("a pool's worker counts one core, and only while it is one", "[sim][cores]") {
  const unsigned all = usable_cores();
  CHECK(worker_cores() == all);
  {
    const WorkerScope worker;
    CHECK(worker_cores() == 1);
    {
      const WorkerScope nested;
      CHECK(worker_cores() == 1);
    }
    CHECK(worker_cores() == 1);  // still inside the outer one
    // another thread is not a worker because this one is
    unsigned there = 0;
    std::thread([&] { there = worker_cores(); }).join();
    CHECK(there == all);
  }
  CHECK(worker_cores() == all);
}
