// Tests of the task text form.
#include "sim/errors.hpp"
#include "sim/task.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;

TEST_CASE("the compact text form of every kind parses back to the same task", "[sim]") {
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

TEST_CASE("malformed task text is a ConfigError that quotes the text", "[sim]") {
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
