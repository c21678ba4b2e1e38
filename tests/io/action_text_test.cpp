// Tests of the task text form: to_string and io/action_text's parse_task.
#include "ppsim/io/action_text.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/task.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;

TEST_CASE("the compact text form of every kind parses back to the same task", "[io]") {
  const Task tasks[] = {Task::make(Kind::F, 2, 0), Task::make(Kind::B, 1, 3),
                        Task::make(Kind::W, 0, 12), Task::make(Kind::BW, 3, 1),
                        Task::overlapped(0, 7, Kind::B, 7, 3), Task::overlapped(1, 2, Kind::BW, 6, 0)};
  for (const Task& t : tasks) {
    CAPTURE(to_string(t));
    CHECK(parse_task(to_string(t)) == t);
  }
  CHECK(to_string(Task::make(Kind::F, 2, 0)) == "2F0");
  CHECK(to_string(Task::make(Kind::BW, 3, 11)) == "3BW11");
  CHECK(to_string(Task::overlapped(0, 7, Kind::B, 7, 3)) == "(0F7;7B3)");
}

TEST_CASE("malformed task text is a ConfigError that quotes the text", "[io]") {
  for (const char* bad : {"", "F0", "2F", "2X0", "-1F0", "2F-1", "2F0x", "(0F7;7W3)", "(0B1;2B3)",
                          "(0F7 7B3)", "(0F7;7B3", "2 F0"}) {
    CAPTURE(bad);
    try {
      (void)parse_task(bad);
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
}

TEST_CASE("task indices are bounded as a schedule's, and a long text is quoted as an excerpt",
          "[io][robust]") {
  const auto message_of = [](std::string_view text) {
    try {
      (void)parse_task(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string top_stage = std::to_string(limits::kMaxStages - 1);
  CHECK(parse_task(top_stage + "F0").stage == limits::kMaxStages - 1);
  CHECK_THAT(message_of(std::to_string(limits::kMaxStages) + "F0"),
             Catch::Contains("stage index too large"));
  CHECK_THAT(message_of("99999999999999999999F0"), Catch::Contains("stage index too large"));
  CHECK_THAT(message_of("0F" + std::to_string(limits::kMaxMicrobatches)),
             Catch::Contains("micro-batch index too large"));
  CHECK_THAT(message_of("(0F1;1B99999999999999)"), Catch::Contains("micro-batch index too large"));
  CHECK_THAT(message_of("2X0"), Catch::Contains("unknown kind 'X'"));
  CHECK_THAT(message_of("(0F7;7W3)"), Catch::Contains("W cannot overlap"));
  const std::string huge = "0F" + std::string(100'000, '7');
  CHECK(message_of(huge).size() < 600);
}
