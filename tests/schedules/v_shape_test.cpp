// Tests of the V-shape schedules: zb-v, v-half, v-min.
#include "schedules/registry.hpp"
#include "sim/cost_model.hpp"
#include "sim/errors.hpp"
#include "sim/metrics.hpp"
#include "sim/run.hpp"
#include "sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"
#include "io/cost_file.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ppsim;
using namespace ppsim::test;

TEST_CASE("V schedules reproduce the papers' costs at p = 4, m = 8, F = B = W = 2",
          "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0");
  const ScheduleSpec spec{.devices = 4, .microbatches = 8};
  const Metrics zbv = metrics_of("zb-v", spec, costs);
  CHECK(zbv.ideal == 48 * ms);
  CHECK(zbv.cost == 48 * ms);
  CHECK(metrics_of("v-half", spec, costs).cost == 53 * ms);
  CHECK(metrics_of("v-min", spec, costs).cost == 59 * ms);
}

TEST_CASE("ZB-V at unit chunk costs idles 3 at most and ends at 51", "[schedules][v-shape][zb-v]") {
  // F = B = W = 1 per chunk is 2 per device-stage
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0");
  const Metrics m = metrics_of("zb-v", {.devices = 4, .microbatches = 8}, costs);
  CHECK(m.makespan == 51 * ms);
  CHECK(m.makespan - m.ideal == 3 * ms);
}

TEST_CASE("ZB-V uses the V placement and rank r starts with 2(p-r)-1 chunk-0 forwards",
          "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8};
  spec.costs = &costs;
  const Schedule s = make_schedule("zb-v", spec);
  CHECK(s.stage_device == std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0});
  CHECK(s.chunks() == 2);
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const auto& order = s.order[static_cast<std::size_t>(r)];
    int lead = 0;
    while (order[static_cast<std::size_t>(lead)].kind == Kind::F &&
           order[static_cast<std::size_t>(lead)].stage == r)
      ++lead;
    CHECK(lead == 2 * (4 - r) - 1);
  }
}

TEST_CASE("ZB-V holds p M_B; V-Half and V-Min about a half and a third of it",
          "[schedules][v-shape]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  for (const int p : {4, 6, 8}) {
    CAPTURE(p);
    const ScheduleSpec spec{.devices = p, .microbatches = 3 * p};
    const double zbv = metrics_of("zb-v", spec, costs).peak_memory;
    const double half = metrics_of("v-half", spec, costs).peak_memory;
    const double min = metrics_of("v-min", spec, costs).peak_memory;
    CHECK(zbv <= p);
    CHECK(half <= (p + 3) / 2);  // ceil((p+2)/2) chunk-pairs
    CHECK(min <= (p + 6) / 3);   // ceil((p+4)/3)
    CHECK(min < half);
    CHECK(half < zbv);
  }
}

TEST_CASE("zb-v follows its memory limit and rejects one below a micro-batch",
          "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 2};
  spec.costs = &costs;
  const Metrics m = run_schedule(make_schedule("zb-v", spec), costs).metrics;
  CHECK(m.peak_memory <= 2.0);
  spec.mem_limit = 0.9;
  CHECK_THROWS_AS(make_schedule("zb-v", spec), InfeasibleError);
  CHECK_THROWS_WITH(make_schedule("zb-v", spec), Catch::Contains("least that works, 1 M_B"));
}

TEST_CASE("V schedules reject chunks other than 2, naming the value", "[schedules][v-shape]") {
  for (const char* name : {"zb-v", "v-half", "v-min"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH(make_schedule(name, {.devices = 4, .microbatches = 8, .chunks = 3}),
                      Catch::Contains(std::string(name) + ": needs chunks = 2") &&
                          Catch::Contains("got chunks=3"));
    CHECK_THROWS_AS(make_schedule(name, {.devices = 4, .microbatches = 0}), ConfigError);
  }
}

TEST_CASE("V schedules run each task once, simulate, and the automatic one fits its limit",
          "[schedules][v-shape][property]") {
  const auto name = GENERATE(as<std::string>{}, "zb-v", "v-half", "v-min");
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=1,comm=0.3");
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 7, 8, 16);
  CAPTURE(name, costs_text, p, m);
  const CostSpec costs = parse_costs(costs_text);
  ScheduleSpec spec{.devices = p, .microbatches = m};
  spec.costs = &costs;
  const Schedule s = make_schedule(name, spec);
  REQUIRE(validate(s).empty());
  const Metrics got = run_schedule(s, costs).metrics;  // throws on deadlock
  CHECK(got.cost >= got.ideal);
  if (name == "zb-v") CHECK(got.peak_memory <= p + 1e-9);
}

TEST_CASE("zb-v with comm is never worse than its comm-0 order under the same comm",
          "[schedules][v-shape][zb-v]") {
  // The comm-0 order is the paper's ZB-V pattern; zb-v seeds its search with it, so re-simulating
  // that order with the real comm bounds zb-v's cost from above. The exact values pin the gain
  // over the greedy alone (before: 53 ms and 153.2 ms).
  struct Case {
    int p, m;
    const char* costs;
    const char* no_comm;
    Ticks expected;
  };
  for (const Case& c : {Case{4, 8, "F=2,B=2,W=2,comm=0.1", "F=2,B=2,W=2,comm=0", 50'800'000},
                        Case{8, 32, "F=1,B=2,W=1,comm=0.2", "F=1,B=2,W=1,comm=0", 149'400'000}}) {
    CAPTURE(c.p, c.m, c.costs);
    const CostSpec costs = parse_costs(c.costs);
    const CostSpec no_comm = parse_costs(c.no_comm);
    ScheduleSpec spec{.devices = c.p, .microbatches = c.m};
    spec.costs = &no_comm;
    Schedule paper_order = make_schedule("zb-v", spec);
    const Metrics fixed = run_schedule(paper_order, costs).metrics;
    const Metrics got = metrics_of("zb-v", {.devices = c.p, .microbatches = c.m}, costs);
    CHECK(got.cost <= fixed.cost);
    CHECK(got.peak_memory <= c.p + 1e-9);
    CHECK(got.cost == c.expected);
  }
}
