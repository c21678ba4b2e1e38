// Tests of the automatic zero-bubble scheduler: zb-auto, zb-1p, zb-2p.
#include "schedules/registry.hpp"
#include "sim/cost_model.hpp"
#include "sim/errors.hpp"
#include "sim/metrics.hpp"
#include "sim/run.hpp"
#include "sim/simulator.hpp"
#include "sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"
#include "io/cost_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace ppsim;
using namespace ppsim::test;

TEST_CASE("zb-1p and zb-2p reproduce the paper's costs at p = 4, m = 8, F = B = W = 2",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0");
  const ScheduleSpec spec{.devices = 4, .microbatches = 8};
  const Metrics one = metrics_of("zb-1p", spec, costs);
  CHECK(one.ideal == 48 * ms);
  CHECK(one.cost == 54 * ms);
  CHECK(one.peak_memory <= 4.0);
  const Metrics two = metrics_of("zb-2p", spec, costs);
  CHECK(two.cost == 48 * ms);
  CHECK(two.peak_memory <= 8.0);
}

TEST_CASE("zb-1p at unit costs has ZB1P's idle of 3 and makespan 27 at p = 4, m = 8",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=1,B=1,W=1,comm=0");
  const Metrics m = metrics_of("zb-1p", {.devices = 4, .microbatches = 8}, costs);
  CHECK(m.makespan == 27 * ms);
  CHECK(m.makespan - m.ideal == 3 * ms);
}

TEST_CASE("zb-auto defaults to a limit of p M_B and emits split B and W only",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8};
  spec.costs = &costs;
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(s.name == "zb-auto");
  CHECK(validate(s).empty());
  for (const auto& dev : s.order)
    for (const Task& t : dev) CHECK((t.kind == Kind::F || t.kind == Kind::B || t.kind == Kind::W));
  const Metrics m = run_schedule(s, costs).metrics;
  CHECK(m.peak_memory <= 4.0);
  CHECK(m.cost == 54 * ms);
}

TEST_CASE("zb-auto follows the memory limit it is given", "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 8};
  CHECK(metrics_of("zb-auto", spec, costs).cost == 48 * ms);
  spec.mem_limit = 2;
  const Metrics tight = metrics_of("zb-auto", spec, costs);
  CHECK(tight.peak_memory <= 2.0);
  CHECK(tight.cost > 54 * ms);
}

TEST_CASE("zb-auto rejects a limit below one micro-batch and names the least that works",
          "[schedules][zb-auto]") {
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 0.5};
  CHECK_THROWS_AS(make_schedule("zb-auto", spec), InfeasibleError);
  CHECK_THROWS_WITH(make_schedule("zb-auto", spec),
                    Catch::Contains("0.5 M_B") && Catch::Contains("least that works, 1 M_B"));
  spec.mem_limit = 1;  // exactly one micro-batch per device still works
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(validate(s).empty());
  const CostSpec unit;
  CHECK(run_schedule(s, unit).metrics.peak_memory <= 1.0);
}

TEST_CASE("zb-auto's least limit counts the W a B leaves when B raises memory",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("MW=1.5");  // B raises memory by 0.5 M_B
  ScheduleSpec spec{.devices = 2, .microbatches = 4, .mem_limit = 1.2};
  spec.costs = &costs;
  CHECK_THROWS_WITH(make_schedule("zb-auto", spec), Catch::Contains("least that works, 1.5 M_B"));
  spec.mem_limit = 1.5;
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(run_schedule(s, costs).metrics.peak_memory <= 1.5);
}

TEST_CASE("zb-auto rejects chunks other than one, naming the value", "[schedules][zb-auto]") {
  CHECK_THROWS_WITH(make_schedule("zb-auto", {.devices = 4, .microbatches = 8, .chunks = 2}),
                    Catch::Contains("zb-auto: supports chunks=1 only (got chunks=2)"));
  CHECK_THROWS_AS(make_schedule("zb-1p", {.devices = 0, .microbatches = 8}), ConfigError);
}

TEST_CASE("zb-auto beats ZB-H1 at the same memory when B is slower than F",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=1,B=2,W=1,comm=0.3");
  const ScheduleSpec spec{.devices = 8, .microbatches = 8};
  const Metrics h1 = metrics_of("zb-h1", spec, costs);
  const Metrics got = metrics_of("zb-1p", spec, costs);
  CHECK(got.peak_memory <= 8.0);
  CHECK(h1.cost == Ticks{53'800'000});
  CHECK(got.cost == Ticks{50'200'000});
}

TEST_CASE("zb-auto is deterministic", "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=1.3,B=2.1,W=0.9,comm=0.2");
  ScheduleSpec spec{.devices = 5, .microbatches = 11};
  spec.costs = &costs;
  CHECK(make_schedule("zb-auto", spec) == make_schedule("zb-auto", spec));
}

TEST_CASE("zb-auto runs each task once, fits its limit and is never worse than ZB-H1/ZB-H2",
          "[schedules][zb-auto][property]") {
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=1,comm=0.3",
                                   "F=2,B=1.5,W=0.5,MW=0.25");
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 7, 8, 16);
  CAPTURE(costs_text, p, m);
  const CostSpec costs = parse_costs(costs_text);
  for (const double limit_in_p : {1.0, 2.0, 0.5}) {
    CAPTURE(limit_in_p);
    ScheduleSpec spec{.devices = p, .microbatches = m, .mem_limit = std::max(1.0, limit_in_p * p)};
    spec.costs = &costs;
    const Schedule s = make_schedule("zb-auto", spec);
    REQUIRE(validate(s).empty());
    const Metrics got = run_schedule(s, costs).metrics;  // throws on deadlock
    CHECK(got.peak_memory <= spec.mem_limit + 1e-9);
    CHECK(got.cost >= got.ideal);
    if (limit_in_p == 1.0) {
      CHECK(got.cost <= metrics_of("zb-h1", {.devices = p, .microbatches = m}, costs).cost);
    }
    if (limit_in_p == 2.0 && m >= 2 * p) {
      spec.mem_limit = 2 * p - 1;
      const Metrics at_h2 = run_schedule(make_schedule("zb-auto", spec), costs).metrics;
      CHECK(at_h2.cost <= metrics_of("zb-h2", {.devices = p, .microbatches = m}, costs).cost);
    }
  }
}
