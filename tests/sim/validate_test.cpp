// Tests of validate(): each kind of violation, reported with the marked grid.
#include "schedules/registry.hpp"
#include "sim/errors.hpp"
#include "sim/validate.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;

namespace {

std::string report(const Schedule& s) { return format_violations(s, validate(s)); }

Schedule good() { return make_schedule("zb-h1", {.devices = 2, .microbatches = 2}); }

} // namespace

TEST_CASE("generated schedules validate cleanly", "[sim]") {
  CHECK(validate(good()).empty());
  CHECK_NOTHROW(require_valid(good()));
}

TEST_CASE("a missing task is reported with its device", "[sim]") {
  Schedule s = good();
  s.order[1].pop_back();  // the last W of device 1
  const auto v = validate(s);
  REQUIRE(v.size() == 1);
  CHECK(v[0].what == "missing 1W1 (device 1)");
  CHECK_THROWS_AS(require_valid(s), ScheduleError);
}

TEST_CASE("a duplicated task is marked in the grid", "[sim]") {
  Schedule s = good();
  s.order[0].push_back(Task::make(Kind::F, 0, 1));
  const auto text = report(s);
  CHECK_THAT(text, Catch::Contains("duplicate of 0F1"));
  CHECK_THAT(text, Catch::Contains("[0F1]"));
  CHECK_THAT(text, Catch::Contains("<-- here"));
}

TEST_CASE("a task on the wrong device is reported", "[sim]") {
  Schedule s = good();
  std::swap(s.order[0].front(), s.order[1].front());
  CHECK_THAT(report(s), Catch::Contains("stage 1 is placed on device 1, not on device 0"));
}

TEST_CASE("W before its B on the same device is reported", "[sim]") {
  Schedule s = make_pipeline("w-first", 1, 1, loop_placement(1, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::W, 0, 0), Task::make(Kind::B, 0, 0)};
  CHECK_THAT(report(s), Catch::Contains("0W0: runs before its prerequisite 0B0"));
}

TEST_CASE("BW mixed with a separate B or W for the same task is reported", "[sim]") {
  Schedule s = make_pipeline("mixed", 1, 1, loop_placement(1, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::BW, 0, 0), Task::make(Kind::W, 0, 0)};
  const auto text = report(s);
  CHECK_THAT(text, Catch::Contains("duplicate of 0W0"));
}

TEST_CASE("stages and micro-batches out of range are reported, not indexed", "[sim]") {
  Schedule s = good();
  s.order[0].push_back(Task::make(Kind::F, 7, 0));
  s.order[1].push_back(Task::make(Kind::F, 1, 9));
  const auto text = report(s);
  CHECK_THAT(text, Catch::Contains("stage 7 outside 0..1"));
  CHECK_THAT(text, Catch::Contains("micro-batch 9 outside 0..1"));
}

TEST_CASE("a malformed placement or route is reported before the tasks", "[sim]") {
  Schedule s = good();
  s.stage_device[1] = 5;
  CHECK_THAT(report(s), Catch::Contains("stage 1 on device 5"));
  Schedule r = good();
  r.routes[0] = {0, 0};
  CHECK_THAT(report(r), Catch::Contains("route 0 passes stage 0 twice"));
  Schedule z = good();
  z.devices = 0;
  z.order.clear();
  CHECK_THAT(report(z), Catch::Contains("needs at least one device"));
}

TEST_CASE("problems come cell by cell, then missing parts, then order, each where it is",
          "[sim]") {
  // One pass records the cells; the order check only revisits cells it could not clear.
  Schedule s = make_pipeline("mixed", 2, 2, loop_placement(2, 1));
  const auto t = [](Kind k, int st, int mb) { return Task::make(k, st, mb); };
  s.order[0] = {t(Kind::F, 0, 0), t(Kind::W, 0, 0), t(Kind::B, 0, 0),
                t(Kind::F, 0, 1), t(Kind::B, 0, 1), t(Kind::W, 0, 1)};
  s.order[1] = {t(Kind::F, 1, 0), t(Kind::B, 1, 0), t(Kind::W, 1, 0),
                t(Kind::F, 1, 1), t(Kind::B, 1, 1), t(Kind::F, 1, 1)};
  const auto v = validate(s);
  REQUIRE(v.size() == 3);
  CHECK(v[0].at == Slot{1, 5});
  CHECK(v[0].what == "1F1: duplicate of 1F1 (already at device 1, position 3)");
  CHECK(v[1].at == Slot{1, -1});
  CHECK(v[1].what == "missing 1W1 (device 1)");
  CHECK(v[2].at == Slot{0, 1});
  CHECK(v[2].what == "0W0: runs before its prerequisite 0B0 (position 2 on device 0)");
}

TEST_CASE("a prerequisite on another device's stage is no order problem of this device",
          "[sim]") {
  // Device 0's B needs 1B0, produced later in device order but on device 1: valid.
  const Schedule s = make_schedule("1f1b", {.devices = 3, .microbatches = 5});
  CHECK(validate(s).empty());
}
