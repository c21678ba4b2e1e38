// Tests over the whole registry: every schedule, for every shape it accepts, runs each part once,
// validates and simulates; every shape it refuses is refused with the registry's reason.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace ppsim;
using namespace ppsim::test;

TEST_CASE("every schedule runs each task once, validates and simulates for every shape it accepts",
          "[schedules][property]") {
  const auto& registry = schedule_registry();
  const auto entry = GENERATE_COPY(range(std::size_t{0}, registry.size()));
  const ScheduleInfo& info = registry[entry];
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 4, 7, 8, 12, 16);
  const int v = GENERATE(0, 1, 2, 3);
  const std::string name(info.name);
  CAPTURE(name, p, m, v);
  const CostSpec costs = parse_costs("F=1,B=1.3,W=0.6,FB=2.1,comm=0.05");
  ScheduleSpec spec{.devices = p, .microbatches = m, .chunks = v};
  spec.costs = &costs;
  const std::string why = rejection(info, spec);
  if (!why.empty()) {
    CHECK_THROWS_MATCHES(make_schedule(name, spec), ConfigError, Catch::Message(why));
    return;
  }
  const Schedule s = make_schedule(name, spec);
  CHECK(s.devices == p);
  CHECK(s.microbatches == m);
  // The chunks a request assembles a model's costs for before building (v, or the default).
  CHECK(s.chunks() == built_chunks(info, spec));
  if (v > 0) CHECK(s.chunks() == v);
  const auto violations = validate(s);
  INFO(format_violations(s, violations));
  REQUIRE(violations.empty());
  check_each_part_once(s);
  const Run r = run_schedule(s, costs);  // throws on deadlock
  CHECK(r.metrics.cost >= busiest_work(s, r.costs));
  CHECK(r.metrics.cost >= r.metrics.ideal);
  CHECK(r.metrics.makespan >= r.metrics.cost);
}

TEST_CASE("every registry name and alias finds its entry, and an unknown one lists them all",
          "[schedules]") {
  for (const ScheduleInfo& info : schedule_registry()) {
    CHECK(find_schedule(info.name) == &info);
    for (const auto alias : info.aliases) CHECK(find_schedule(alias) == &info);
    CHECK(info.check != nullptr);
    CHECK(info.make != nullptr);
  }
  CHECK(find_schedule("no-such-schedule") == nullptr);
  CHECK_THROWS_WITH(make_schedule("no-such-schedule", {.devices = 4, .microbatches = 8}),
                    Catch::Contains("unknown schedule 'no-such-schedule' (valid: gpipe, 1f1b"));
}
