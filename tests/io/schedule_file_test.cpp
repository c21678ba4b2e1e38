// Tests of schedule files: PyTorch CSV and ppsim JSON, round trips, known orders, bad files.
#include "ppsim/io/schedule_file.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"

#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::string to_json(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(out, s);
  return out.str();
}

std::string to_csv(const Schedule& s) {
  std::ostringstream out;
  write_pytorch_csv(out, s);
  return out.str();
}

// The exception's message when `f` throws E; fails the test when it does not.

bool any_violation_contains(const Violations& v, const std::string& text) {
  for (const auto& x : v)
    if (x.what.find(text) != std::string::npos) return true;
  return false;
}

} // namespace

TEST_CASE("schedule files are recognised by their extension", "[sim][schedule-io]") {
  CHECK(is_schedule_file("x.csv"));
  CHECK(is_schedule_file("dir/My.JSON"));
  CHECK_FALSE(is_schedule_file("1f1b"));
  CHECK_FALSE(is_schedule_file("zb-h1"));
  CHECK_FALSE(is_schedule_file("csv"));
}

TEST_CASE("PyTorch cells map to our kinds: I is our B, B is our BW, OVERLAP_F_B is our FB",
          "[sim][schedule-io]") {
  const auto s = parse_pytorch_csv("0F1,0I1,0W1,0B2,(0F3;0B2)OVERLAP_F_B,(0F4;0I3)OVERLAP_F_B,"
                                   "(0I5;0F6)OVERLAP_F_B\n",
                                   "dir/cells.csv");
  CHECK(s.name == "cells");
  CHECK(s.devices == 1);
  CHECK(s.microbatches == 7);
  CHECK(s.stage_device == std::vector<int>{0});
  CHECK(s.routes == std::vector<std::vector<int>>{{0}});
  REQUIRE(s.order.size() == 1);
  const std::vector<Task> expected{
      Task::make(Kind::F, 0, 1),
      Task::make(Kind::B, 0, 1),
      Task::make(Kind::W, 0, 1),
      Task::make(Kind::BW, 0, 2),
      Task::overlapped(0, 3, Kind::BW, 0, 2),
      Task::overlapped(0, 4, Kind::B, 0, 3),
      Task::overlapped(0, 6, Kind::B, 0, 5),
  };
  CHECK(s.order[0] == expected);
}

TEST_CASE("the PyTorch 1F1B order of DESIGN.md imports to exactly our 1f1b schedule",
          "[sim][schedule-io]") {
  // DESIGN.md, p = 4, m = 8, B = full backward; each row becomes a CSV row `rF0,rF1,...`.
  const char* grid[] = {
      "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
      "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
  };
  std::string csv;
  for (int r = 0; r < 4; ++r) {
    std::istringstream row(grid[r]);
    std::string cell;
    bool first = true;
    while (row >> cell) {
      csv += (first ? "" : ",") + std::to_string(r) + cell;
      first = false;
    }
    csv += '\n';
  }
  Schedule loaded = parse_pytorch_csv(csv, "1f1b.csv");
  const Schedule ours = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  CHECK(loaded.order == ours.order);
  CHECK(loaded.notation == Notation::pytorch);
  loaded.notation = ours.notation;
  CHECK(loaded == ours);

  // The committed example is the same file.
  CHECK(load_schedule_file(example_schedule("1f1b-p4-m8.csv")).order == ours.order);
  // And our writer produces it byte for byte.
  CHECK(to_csv(ours) == csv);
}

TEST_CASE("generated schedules survive JSON and CSV export and import unchanged",
          "[sim][schedule-io][property]") {
  const int p = GENERATE(1, 2, 3, 4, 8);
  const int m = GENERATE(1, 2, 5, 8, 16);
  std::set<std::string> tried;
  for (const auto& info : schedule_registry()) {
    CAPTURE(info.name, p, m);
    Schedule s;
    try {
      s = info.make({.devices = p, .microbatches = m});
    } catch (const ConfigError&) {
      continue;  // a shape this generator does not support (e.g. zb-h2 with m < 2p)
    } catch (const InfeasibleError&) {
      continue;
    }
    tried.insert(std::string(info.name));
    const Schedule from_json = parse_schedule_json(to_json(s), "x.json");
    CHECK(from_json == s);
    CHECK(to_json(from_json) == to_json(s));

    if (s.routes.size() == 1) {
      Schedule from_csv = parse_pytorch_csv(to_csv(s), "x.csv");
      CHECK(from_csv.name == "x");
      from_csv.name = s.name;
      from_csv.notation = s.notation;
      CHECK(from_csv == s);
    } else {
      CHECK_THROWS_AS(to_csv(s), ConfigError);
    }
  }
  for (const char* name : {"gpipe", "1f1b", "zb-h1"}) CHECK(tried.count(name) == 1);
  if (m >= 2 * p) CHECK(tried.count("zb-h2") == 1);
}

TEST_CASE("cells may carry whitespace and empty cells are idle", "[sim][schedule-io]") {
  const Schedule s = load_schedule_file(example_schedule("whitespace-idle.csv"));
  CHECK(s.name == "whitespace-idle");
  CHECK(s.devices == 2);
  CHECK(s.microbatches == 2);
  CHECK(s.order == make_schedule("1f1b", {.devices = 2, .microbatches = 2}).order);
  CHECK(validate(s).empty());
  CHECK(parse_pytorch_csv("\xEF\xBB\xBF" "0F0,0B0\n", "bom.csv").order[0].size() == 2);
}

TEST_CASE("a V-shape CSV with overlapped F&B cells loads, validates, simulates and round-trips",
          "[sim][schedule-io]") {
  const Schedule s = load_schedule_file(example_schedule("v-shape-fb.csv"));
  CHECK(s.stage_device == vshape_placement(2));
  CHECK(s.stages() == 4);
  CHECK(s.order[0][4] == Task::overlapped(3, 1, Kind::B, 0, 0));
  CHECK(s.order[1][3] == Task::overlapped(2, 1, Kind::BW, 2, 0));
  INFO(format_violations(s, validate(s)));
  REQUIRE(validate(s).empty());
  const Run run = run_schedule(s, parse_costs("F=1,B=1,W=1"));
  CHECK(run.metrics.cost > 0);

  CHECK(to_csv(s).find("(3F1;0I0)OVERLAP_F_B") != std::string::npos);
  CHECK(to_csv(s).find("(2F1;2B0)OVERLAP_F_B") != std::string::npos);
  Schedule back = parse_pytorch_csv(to_csv(s), "v-shape-fb.csv");
  CHECK(back == s);
  // JSON is in ppsim's vocabulary, so the schedule read from it speaks ppsim's
  Schedule from_json = parse_schedule_json(to_json(s), "v.json");
  CHECK(from_json.notation == Notation::ppsim);
  from_json.notation = s.notation;
  CHECK(from_json == s);
}

TEST_CASE("a two-route JSON schedule loads and cannot be written as a PyTorch CSV",
          "[sim][schedule-io]") {
  const Schedule s = load_schedule_file(example_schedule("two-routes.json"));
  CHECK(s.name == "two-routes");
  CHECK(s.routes == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  CHECK(s.microbatch_route == std::vector<int>{0, 1});
  CHECK(s.order[1][3] == Task::make(Kind::BW, 2, 1));
  REQUIRE(validate(s).empty());
  CHECK(run_schedule(s, parse_costs("F=1,B=1,W=1")).metrics.cost > 0);
  CHECK(parse_schedule_json(to_json(s), "two-routes.json") == s);
  const auto msg = message_of<ConfigError>([&] { (void)to_csv(s); });
  CHECK_THAT(msg, Catch::Contains("two-routes") && Catch::Contains("2 routes"));
}

TEST_CASE("the JSON writer omits microbatch_routes only when there is one route",
          "[sim][schedule-io]") {
  const Schedule s = make_schedule("zb-h1", {.devices = 2, .microbatches = 3});
  const auto text = to_json(s);
  CHECK(text.find("\"schema\": \"ppsim.schedule/1\"") != std::string::npos);
  CHECK(text.find("microbatch_routes") == std::string::npos);
  CHECK(text.find("[\"0F0\", \"0F1\", \"0B0\"") != std::string::npos);
}

TEST_CASE("structural problems of well-formed files load and are reported by validate",
          "[sim][schedule-io]") {
  SECTION("a missing task") {
    const Schedule s = load_schedule_file(example_schedule("bad-missing-task.csv"));
    const auto v = validate(s);
    // the file's full backward 1B1 is missing: in its vocabulary, not ppsim's 1BW1
    CHECK(any_violation_contains(v, "missing 1B1 (or 1I1 and 1W1) (device 1)"));
    CHECK_FALSE(any_violation_contains(v, "missing 1W1"));
    CHECK_THROWS_AS(run_schedule(s, parse_costs("F=1")), ScheduleError);
  }
  SECTION("a duplicated task, marked at its cell") {
    const Schedule s = load_schedule_file(example_schedule("bad-duplicate.csv"));
    const auto v = validate(s);
    REQUIRE_FALSE(v.empty());
    CHECK(any_violation_contains(v, "duplicate of 0F1"));
    CHECK(v.first.front().at == Slot{0, 3});
    CHECK_THAT(format_violations(s, v), Catch::Contains("<-- here"));
  }
  SECTION("W before its B on a rank") {
    const Schedule s = load_schedule_file(example_schedule("bad-w-before-b.csv"));
    const auto v = validate(s);
    REQUIRE_FALSE(v.empty());
    CHECK(any_violation_contains(v, "0W0: runs before its prerequisite 0I0"));
    CHECK(v.first.front().at == Slot{0, 1});
  }
}

TEST_CASE("CSV files whose stages cannot be placed are ScheduleErrors naming both places",
          "[sim][schedule-io]") {
  const auto two = message_of<ScheduleError>(
      [] { (void)load_schedule_file(example_schedule("bad-stage-two-ranks.csv")); });
  CHECK_THAT(two, Catch::Contains("bad-stage-two-ranks.csv:2:1") &&
                      Catch::Contains("stage 1 on rank 1") && Catch::Contains("rank 0") &&
                      Catch::Contains("bad-stage-two-ranks.csv:1:2"));
  const auto gap = message_of<ScheduleError>(
      [] { (void)load_schedule_file(example_schedule("bad-missing-stage.csv")); });
  CHECK_THAT(gap, Catch::Contains("stage 1 appears in no row"));
}

TEST_CASE("unreadable cells are ConfigErrors naming file, line and cell", "[sim][schedule-io]") {
  const auto msg =
      message_of<ConfigError>([] { (void)load_schedule_file(example_schedule("bad-cell.csv")); });
  CHECK_THAT(msg, Catch::Contains("bad-cell.csv:2:2: cannot read '1X0'"));

  const auto cases = GENERATE(as<std::string>{}, "0F", "F0", "0Q1", "0SEND_F1", "(0F1;0W0)OVERLAP_F_B",
                              "(0F1;0I0)", "(0F1;0I0;0F2)OVERLAP_F_B", "(0F1;0I0", "0F1x",
                              "0F99999999999", "\"0F1", "-1F0", "0F-1", "+1F0", "(0F1;-1I0)OVERLAP_F_B");
  CAPTURE(cases);
  const auto m = message_of<ConfigError>([&] { (void)parse_pytorch_csv("0F0, " + cases, "c.csv"); });
  CHECK_THAT(m, Catch::StartsWith("c.csv:1:2"));
  CHECK_THROWS_AS(parse_pytorch_csv("", "empty.csv"), ConfigError);
  CHECK_THROWS_AS(parse_pytorch_csv(",, ,\n", "idle.csv"), ConfigError);
  CHECK_THROWS_AS(load_schedule_file(example_schedule("does-not-exist.csv")), ConfigError);
}

TEST_CASE("bad JSON schedules are ConfigErrors naming the JSON path", "[sim][schedule-io]") {
  CHECK_THAT(message_of<ConfigError>(
                 [] { (void)load_schedule_file(example_schedule("bad-malformed.json")); }),
             Catch::Contains("bad-malformed.json: not valid JSON"));
  CHECK_THAT(message_of<ConfigError>(
                 [] { (void)load_schedule_file(example_schedule("bad-unknown-key.json")); }),
             Catch::Contains("bad-unknown-key.json: /colour: unknown key"));
  CHECK_THAT(
      message_of<ConfigError>([] { (void)load_schedule_file(example_schedule("bad-schema.json")); }),
      Catch::Contains("bad-schema.json: /schema: expected \"ppsim.schedule/1\""));
  CHECK_THAT(message_of<ConfigError>([] { (void)load_schedule_file(example_schedule("bad-task.json")); }),
             Catch::Contains("bad-task.json: /order/1/1: task '1X0'"));

  const auto base = [](const std::string& extra) {
    return R"({"schema": "ppsim.schedule/1", "devices": 1, "microbatches": 1, "placement": [0],)" +
           extra + "}";
  };
  const auto fails_at = [&](const std::string& doc, const std::string& where) {
    CAPTURE(doc);
    CHECK_THAT(message_of<ConfigError>([&] { (void)parse_schedule_json(doc, "s.json"); }),
               Catch::StartsWith("s.json: " + where + ":"));
  };
  fails_at(base(R"("routes": [[0]])"), "/order");
  fails_at(base(R"("order": [["0F0"]])"), "/routes");
  fails_at(base(R"("routes": [[0]], "order": [["0F0", 3]])"), "/order/0/1");
  fails_at(base(R"("routes": [[0, -1]], "order": [])"), "/routes/0/1");
  fails_at(base(R"("routes": [[0], [0]], "order": [])"), "/microbatch_routes");
  fails_at(base(R"("routes": [[0]], "order": [], "a/b": 1)"), "/a~1b");
  fails_at(R"({"schema": "ppsim.schedule/1", "devices": 1.5})", "/devices");
  fails_at(R"({"schema": "ppsim.schedule/1", "microbatches": 99999999999})", "/microbatches");
  fails_at("[1, 2]", "/");
}

TEST_CASE("a deadlocking order loads and validates, and simulating it names the cycle",
          "[sim][schedule-io]") {
  const Schedule s = load_schedule_file(example_schedule("deadlock.csv"));
  CHECK(validate(s).empty());
  const auto msg =
      message_of<ScheduleError>([&] { (void)run_schedule(s, parse_costs("F=1,B=1,W=1")); });
  CHECK_THAT(msg, Catch::Contains("cycle (each must finish before the next can start): "));
  CHECK_THAT(msg, Catch::Contains("1F1") && Catch::Contains("0B0@dev0"));
  CHECK_THAT(msg, !Catch::Contains("BW"));
}
