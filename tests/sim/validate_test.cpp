// Tests of validate(): each kind of violation, reported with the marked grid.
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/validate.hpp"

#include <catch2/catch.hpp>
#include <random>

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
  REQUIRE(v.total == 1);
  REQUIRE(v.first.size() == 1);
  CHECK(v.first[0].what == "missing 1W1 (device 1)");
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

TEST_CASE("validate describes the first problems and counts the rest exactly", "[sim][robust]") {
  // A schedule that declares 64 x 512 parts and lists none of them.
  Schedule empty = make_pipeline("empty", 64, 512, loop_placement(64, 1));
  const auto v = validate(empty);
  CHECK(v.total == 64u * 512u * 3u);
  REQUIRE(v.first.size() == limits::kMaxReportedProblems);
  CHECK(v.first[0].what == "missing 0F0 (device 0)");
  CHECK(v.first[3].what == "missing 1F0 (device 1)");
  const auto text = format_violations(empty, v);
  CHECK_THAT(text, Catch::Contains("is invalid: 98304 problems"));
  CHECK_THAT(text, Catch::Contains("... and 98264 more"));
  CHECK(validate(empty, 0).first.empty());
  CHECK(validate(empty, 0).total == v.total);
}

TEST_CASE("the count of problems does not depend on how many are described",
          "[sim][robust][property]") {
  const auto seed = GENERATE(range(1, 25));
  CAPTURE(seed);
  std::mt19937 rng(static_cast<unsigned>(seed));
  const char* names[] = {"zb-h1", "1f1b", "zb-v", "dualpipe-v", "interleaved-1f1b"};
  Schedule s = make_schedule(names[seed % 5], {.devices = 4, .microbatches = 8});
  // Break it at random: drop tasks, duplicate tasks, move tasks, fuse or split backwards.
  for (int k = 0; k < 1 + seed % 7; ++k) {
    auto& row = s.order[rng() % s.order.size()];
    if (row.empty()) continue;
    const auto i = rng() % row.size();
    switch (rng() % 4) {
    case 0: row.erase(row.begin() + static_cast<long>(i)); break;
    case 1: row.push_back(row[i]); break;
    case 2: s.order[rng() % s.order.size()].push_back(row[i]); break;
    default:
      if (row[i].kind == Kind::B) row[i].kind = Kind::BW;
      else if (row[i].kind == Kind::BW) row[i].kind = Kind::B;
      break;
    }
  }
  // In PyTorch's vocabulary a (stage, micro-batch) without B and W is one problem, not two.
  s.notation = seed % 2 == 0 ? Notation::ppsim : Notation::pytorch;
  CAPTURE(s.notation == Notation::pytorch);
  const auto all = validate(s, 1'000'000);
  REQUIRE(all.first.size() == all.total);
  for (const std::size_t describe : {0u, 1u, 2u, 5u, 40u}) {
    CAPTURE(describe);
    const auto some = validate(s, describe);
    CHECK(some.total == all.total);
    REQUIRE(some.first.size() == std::min<std::size_t>(describe, all.total));
    for (std::size_t i = 0; i < some.first.size(); ++i)
      CHECK(some.first[i].what == all.first[i].what);
  }
  // The same counts when the schedule declares far more micro-batches than it lists, which
  // switches validate to its sparse table.
  Schedule wide = s;
  wide.microbatches = 100'000;
  wide.microbatch_route.assign(100'000, 0);
  // Counted, not described: describing each of its hundreds of thousands of problems would be
  // the slowest part of the suite and prove nothing the dense case above has not.
  const auto sparse_all = validate(wide, 0);
  CHECK(validate(wide, 3).total == sparse_all.total);
  CHECK(sparse_all.total > all.total);
}

TEST_CASE("a prerequisite on another device's stage is no order problem of this device",
          "[sim]") {
  // Device 0's B needs 1B0, produced later in device order but on device 1: valid.
  const Schedule s = make_schedule("1f1b", {.devices = 3, .microbatches = 5});
  CHECK(validate(s).total == 0);
}
