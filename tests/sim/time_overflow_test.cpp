// Issue 11, item 4: times the parser accepts (up to 1e12 ms each) must never overflow Ticks.
// Every run's durations and messages are bounded in sum before any is added up, so no end time,
// sum of busy times or product of them can wrap; what is over the bound is bad input (exit 3).
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/optimum.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;

TEST_CASE("costs whose sum would overflow nanoseconds are refused before the simulation",
          "[sim][robust]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  // 1f1b at F = B = W = 1e12 ms used to end in a "deadlock" (the end times had wrapped).
  const CostModel big = cost_model_for(parse_costs("F=1e12,B=1e12,W=1e12"), s);
  CHECK_THROWS_AS(simulate(s, big), ConfigError);
  CHECK_THROWS_WITH(simulate(s, big), Catch::Contains("1f1b: the durations and messages add up "
                                                      "to 9.6e+13 ms, too much to time in "
                                                      "nanoseconds"));
  // A message per task counts too.
  const CostModel comm = cost_model_for(parse_costs("F=0,B=0,W=0,comm=1e12"), s);
  CHECK_THROWS_AS(simulate(s, comm), ConfigError);
  // Just below the bound the times are exact.
  const Schedule one = make_schedule("1f1b", {.devices = 1, .microbatches = 1});
  const Run r = run_schedule(one, parse_costs("F=1e12,B=1e12,W=1e1"));
  CHECK(r.metrics.cost == 2'000'000'000'010'000'000LL);  // 2e12 ms + 10 ms, to the ns
  CHECK(r.metrics.idle_fraction == 0.0);
}

TEST_CASE("metrics stay true when devices x makespan exceeds the range of Ticks",
          "[sim][robust]") {
  // 4096 devices, one micro-batch: the makespan is the whole chain, 4096 x 3e6 ms = 1.2e16 ns,
  // and 4096 x that wrapped (idle_fraction was far outside [0, 1]).
  const Schedule s = make_schedule("1f1b", {.devices = 4096, .microbatches = 1});
  const Run r = run_schedule(s, parse_costs("F=1e6,B=1e6,W=1e6"));
  CHECK(r.metrics.makespan == 4096LL * 3'000'000 * 1'000'000);
  CHECK(r.metrics.idle_fraction == Approx(1.0 - 1.0 / 4096));
  CHECK(r.metrics.bubble_rate == Approx(1.0 - 1.0 / 4096));
}

TEST_CASE("optimizer steps and iterations count towards the bound", "[sim][robust]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1"), s);
  // --iterations 100 --optimizer-step 1e12 used to report a deadlock.
  const IterationOptions o{.count = 100, .optimizer_step = ms_to_ticks(1e12, "step")};
  CHECK_THROWS_AS(simulate_iterations(s, c, o), ConfigError);
  CHECK_THROWS_WITH(simulate_iterations(s, c, o), Catch::Contains("too much to time"));
  const IterationOptions fits{.count = 2, .optimizer_step = ms_to_ticks(1e11, "step")};
  const IterationTimeline it = simulate_iterations(s, c, fits);
  CHECK(it.iteration_time > ms_to_ticks(1e11, "step"));
}

TEST_CASE("the automatic schedulers refuse costs that would overflow their clocks",
          "[schedules][robust]") {
  const CostSpec costs = parse_costs("F=1e12,B=1e12,W=1e12");
  for (const char* name : {"zb-auto", "zb-1p", "zb-2p", "zb-v", "v-half", "v-min"}) {
    CAPTURE(name);
    ScheduleSpec spec{.devices = 4, .microbatches = 8};
    spec.costs = &costs;
    CHECK_THROWS_AS(make_schedule(name, spec), ConfigError);
    CHECK_THROWS_WITH(make_schedule(name, spec), Catch::Contains("too much to time"));
  }
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  CHECK_THROWS_AS(optimal_zero_bubble(4, 8, cost_model_for(costs, s), 4), ConfigError);
}

TEST_CASE("searches that add up the spans of all devices bound devices x the total",
          "[schedules][robust]") {
  // At p = 4096, m = 1 the durations add up to 4096 x 3 x 1.8e8 ms = 2.2e12 ms: within one
  // clock's bound, but zb-auto's and zb-v's scores add up 4096 spans of up to that each, about
  // 3e21 ns, far past the range of Ticks.
  const CostSpec costs = parse_costs("F=1.8e8,B=1.8e8,W=1.8e8");
  for (const char* name : {"zb-auto", "zb-v"}) {
    CAPTURE(name);
    ScheduleSpec spec{.devices = 4096, .microbatches = 1};
    spec.costs = &costs;
    CHECK_THROWS_AS(make_schedule(name, spec), ConfigError);
    CHECK_THROWS_WITH(make_schedule(name, spec),
                      Catch::Contains("too much to time in nanoseconds for a search that adds up "
                                      "the spans of 4096 devices"));
  }
  // Well inside the bound the search runs as before.
  const CostSpec small = parse_costs("F=1e6,B=1e6,W=1e6");
  ScheduleSpec spec{.devices = 4, .microbatches = 8};
  spec.costs = &small;
  CHECK(validate(make_schedule("zb-auto", spec)).empty());
}
