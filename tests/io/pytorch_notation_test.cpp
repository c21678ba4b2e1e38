// Tests of PyTorch's vocabularies in CSV files: messages in the file's own notation, and the old
// notation (B = backward for the input) detected, named and read.
#include "ppsim/io/schedule_file.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"

#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::string fixture(const std::string& name) {
  return std::string(PPSIM_SOURCE_DIR) + "/data/examples/schedules/" + name;
}


std::string report(const Schedule& s) { return format_violations(s, validate(s)); }

} // namespace

TEST_CASE("tasks are written in ppsim's, PyTorch's and PyTorch's old vocabulary",
          "[sim][schedule-io][pytorch]") {
  const Task b = Task::make(Kind::B, 1, 3), bw = Task::make(Kind::BW, 1, 3);
  const Task fb = Task::overlapped(0, 7, Kind::B, 7, 3);
  CHECK(to_string(b, Notation::ppsim) == "1B3");
  CHECK(to_string(bw, Notation::ppsim) == "1BW3");
  CHECK(to_string(b, Notation::pytorch) == "1I3");
  CHECK(to_string(bw, Notation::pytorch) == "1B3");
  CHECK(to_string(Task::make(Kind::W, 1, 3), Notation::pytorch) == "1W3");
  CHECK(to_string(fb, Notation::pytorch) == "(0F7;7I3)OVERLAP_F_B");
  CHECK(to_string(Task::overlapped(0, 7, Kind::BW, 7, 3), Notation::pytorch) ==
        "(0F7;7B3)OVERLAP_F_B");
  CHECK(to_string(b, Notation::pytorch_old) == "1B3");
  CHECK(to_string(bw, Notation::pytorch_old) == "1B3");
}

TEST_CASE("a PyTorch CSV's problems are told in its own vocabulary", "[sim][schedule-io][pytorch]") {
  SECTION("a duplicated full backward is one problem, named by its cell") {
    const Schedule s = parse_pytorch_csv("0F0,0B0,0B0\n", "dup.csv");
    CHECK(s.notation == Notation::pytorch);
    const auto v = validate(s);
    REQUIRE(v.total == 1);
    CHECK(v.first[0].what == "0B0: duplicate of 0B0 (already at device 0, position 1)");
    CHECK_THAT(report(s), Catch::Contains("rank0: 0F0 0B0 [0B0]  <-- here"));
  }
  SECTION("a backward split into I and W") {
    const Schedule s = parse_pytorch_csv("0F0,0W0,0I0\n", "wi.csv");
    CHECK_THAT(report(s), Catch::Contains("0W0: runs before its prerequisite 0I0") &&
                              Catch::Contains("rank0: 0F0 [0W0] 0I0  <-- here"));
  }
  SECTION("a full backward that also has its W, or its I") {
    const auto w = validate(parse_pytorch_csv("0F0,0B0,0W0,0F1,0I1,0W1\n", "fused.csv"));
    REQUIRE(w.total == 1);
    CHECK(w.first[0].what == "0W0: duplicate of 0B0 (already at device 0, position 1)");
    const auto i = validate(parse_pytorch_csv("0F0,0I0,0B0\n", "fused.csv"));
    REQUIRE(i.total == 2);
    CHECK(i.first[0].what == "0B0: duplicate of 0I0 (already at device 0, position 1)");
    CHECK(i.first[1].what == "0B0 is fused, but 0I0 is also scheduled on its own");
  }
  SECTION("a deadlock names the cells it waits for") {
    const Schedule s = load_schedule_file(fixture("deadlock.csv"));
    const auto msg =
        message_of<ScheduleError>([&] { (void)run_schedule(s, parse_costs("F=1,B=1,W=1")); });
    CHECK_THAT(msg, Catch::Contains("device 0: blocked at position 1 on 0B0; waits for 1B0 "
                                    "(device 1, position 3, not yet run)"));
    CHECK_THAT(msg, !Catch::Contains("BW") && !Catch::Contains("1I0"));
  }
  SECTION("ppsim's own schedules keep ppsim's words") {
    Schedule s = make_pipeline("mine", 1, 1, loop_placement(1, 1));
    s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::BW, 0, 0),
                  Task::make(Kind::BW, 0, 0)};
    CHECK_THAT(report(s), Catch::Contains("0BW0: duplicate of 0B0") &&
                              Catch::Contains("0BW0: duplicate of 0W0"));
  }
}

TEST_CASE("a CSV in PyTorch's old notation is detected, and the error names the flag that reads it",
          "[sim][schedule-io][pytorch]") {
  // The fixture is interleaved-zb at p = 2, v = 2, m = 2 with every I written B, as PyTorch's
  // schedules wrote backward-input before I existed.
  const auto path = fixture("old-notation-zb1p-p2.csv");
  const auto msg = message_of<ConfigError>([&] { (void)load_schedule_file(path); });
  CHECK(msg == path + ":1:7: '2W0' follows '2B0' (" + path +
                   ":1:6) of its stage and micro-batch, and no cell is an I: the file looks "
                   "written in PyTorch's old notation, where B was the backward for the input "
                   "and W followed it (now B is the full backward); read it with "
                   "--pytorch-notation old");

  // Read as old, B followed by its W is our B, and the file is interleaved-zb.
  const Schedule s = load_schedule_file(path, PytorchNotation::old);
  CHECK(s.notation == Notation::pytorch_old);
  CHECK(validate(s).empty());
  const Schedule ours = make_schedule("interleaved-zb", {.devices = 2, .microbatches = 2});
  CHECK(s.order == ours.order);
  CHECK(s.stage_device == ours.stage_device);
}

TEST_CASE("in the old notation a B without a W is the full backward, and there is no I",
          "[sim][schedule-io][pytorch]") {
  const Schedule s =
      parse_pytorch_csv("0F0,0F1,0B0,0W0,0B1\n", "mixed.csv", PytorchNotation::old);
  CHECK(s.order[0] == std::vector<Task>{Task::make(Kind::F, 0, 0), Task::make(Kind::F, 0, 1),
                                        Task::make(Kind::B, 0, 0), Task::make(Kind::W, 0, 0),
                                        Task::make(Kind::BW, 0, 1)});
  CHECK(validate(s).empty());
  CHECK_THAT(message_of<ConfigError>(
                 [] { (void)parse_pytorch_csv("0F0,0I0,0W0\n", "i.csv", PytorchNotation::old); }),
             Catch::StartsWith("i.csv:1:2: cannot read '0I0': I is not in PyTorch's old "
                               "notation") &&
                 Catch::Contains("drop --pytorch-notation old"));
  CHECK_THAT(message_of<ConfigError>(
                 [] { (void)parse_pytorch_csv("0F0,0X0\n", "x.csv", PytorchNotation::old); }),
             Catch::Contains("(expected F, B or W, PyTorch's old notation)"));
}

TEST_CASE("an old-notation file's problems are told in the old vocabulary",
          "[sim][schedule-io][pytorch]") {
  const Schedule s = load_schedule_file(fixture("old-notation-w-before-b.csv"), PytorchNotation::old);
  const auto v = validate(s);
  REQUIRE(v.total == 1);
  CHECK(v.first[0].what == "0W0: runs before its prerequisite 0B0 (position 2 on device 0)");
  CHECK_THAT(report(s), Catch::Contains("rank0: 0F0 [0W0] 0B0 0F1 0B1 0W1  <-- here"));
  // and read in the current notation it is taken for the old one
  CHECK_THAT(message_of<ConfigError>(
                 [] { (void)load_schedule_file(fixture("old-notation-w-before-b.csv")); }),
             Catch::Contains(":1:6: '0W1' follows '0B1'") &&
                 Catch::Contains("--pytorch-notation old"));
}

TEST_CASE("a current-notation file with an I is never taken for the old notation",
          "[sim][schedule-io][pytorch]") {
  // A W after a full backward B is then the file's own mistake, for validate() to report.
  const Schedule s = parse_pytorch_csv("0F0,0B0,0W0,0F1,0I1,0W1\n", "mistake.csv");
  CHECK_FALSE(validate(s).empty());
  // and a W before the B is no sign of the old notation either
  CHECK_NOTHROW(parse_pytorch_csv("0F0,0W0,0B0\n", "w-first.csv"));
}

TEST_CASE("an old-notation file writes out in the current notation", "[sim][schedule-io][pytorch]") {
  const Schedule s = load_schedule_file(fixture("old-notation-zb1p-p2.csv"), PytorchNotation::old);
  std::ostringstream csv;
  write_pytorch_csv(csv, s);
  CHECK(csv.str() == "0F0,0F1,2F0,2F1,2I0,2W0,2I1,2W1,0I0,0W0,0I1,0W1\n"
                     "1F0,1F1,3F0,3I0,3F1,3I1,3W0,1I0,3W1,1I1,1W0,1W1\n");
  Schedule back = parse_pytorch_csv(csv.str(), "old-notation-zb1p-p2.csv");
  CHECK(back.order == s.order);
  CHECK(back.notation == Notation::pytorch);
}

TEST_CASE("the values of --pytorch-notation are new and old", "[sim][schedule-io][pytorch]") {
  CHECK(parse_pytorch_notation("new") == PytorchNotation::current);
  CHECK(parse_pytorch_notation("old") == PytorchNotation::old);
  CHECK_THROWS_MATCHES(parse_pytorch_notation("v2"), ConfigError,
                       Catch::Message("--pytorch-notation 'v2': expected new (I = backward for the "
                                      "input, B = full backward) or old (B = backward for the "
                                      "input)"));
}
