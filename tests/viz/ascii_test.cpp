// Tests of the ASCII timeline grid, with one approved golden file.
#include "ppsim/viz/ascii.hpp"

#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ppsim;
using namespace ppsim::test;

std::string ascii_text(const Run& run, AsciiOptions options = {}) {
  std::ostringstream os;
  write_ascii(os, run, options);
  return os.str();
}

// The grid cells of a device's row: what lies between "device d |" and the closing "|".
std::string row_of(const std::string& text, int device) {
  const std::string head = "device " + std::to_string(device) + " ";
  for (const std::string& line : lines_of(text)) {
    if (line.rfind(head, 0) != 0) continue;
    const auto open = line.find('|');
    if (open == std::string::npos) continue;
    REQUIRE(line.back() == '|');
    return line.substr(open + 1, line.size() - open - 2);
  }
  FAIL("no grid row for device " << device);
  return {};
}

} // namespace

TEST_CASE("the 1f1b grid draws each task across its columns, idle as dots", "[viz]") {
  // p = 4, m = 4, F = 1, BW = B + W = 2: one column per ms, makespan (m + p - 1)(F + BW) = 21.
  const std::string text = ascii_text(make_run("1f1b", 4, 4, "F=1,B=1,W=1"));
  CAPTURE(text);
  // The last device waits 3 ms for micro-batch 0, then alternates F and BW.
  CHECK(row_of(text, 3) == "...0aa1bb2cc3dd......");
  // Device 2: F2 waits for BW0 (6-8), which waits for device 3's BW0 (4-6).
  CHECK(row_of(text, 2) == "..01..aa2bb3cc.dd....");
  // The first device's BW0 waits for the backward to come back through three devices.
  CHECK(row_of(text, 0).substr(0, 12) == "0123......aa");
  CHECK(row_of(text, 0).size() == 21);
  CHECK(text.find("scale: 1 column = 1 ms, 21 columns") != std::string::npos);
  CHECK(text.find("legend:") != std::string::npos);
}

TEST_CASE("the grid's header is a time axis and its footer the per-device numbers", "[viz]") {
  const std::string text = ascii_text(make_run("1f1b", 4, 4, "F=1,B=1,W=1"));
  const auto lines = lines_of(text);
  REQUIRE(lines.size() > 3);
  CHECK(lines[0].rfind("schedule 1f1b | devices 4", 0) == 0);
  CHECK(lines[1] == "time (ms) 0         10        20");
  CHECK(lines[2] == "          +---------+---------+");
  // busy 4 F + 4 BW = 12 ms on every device; device 0 spans 21 ms, peak 4 M_B.
  bool found = false;
  for (const std::string& line : lines) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words == std::vector<std::string>{"0", "12", "9", "4"}) found = true;
  }
  CHECK(found);
  CHECK(text.find("makespan 21 ms | cost 21 ms | ideal 12 ms") != std::string::npos);
}

TEST_CASE("every micro-batch's F, B and W appear on every device", "[viz]") {
  SECTION("one column per task: digit, lowercase, uppercase") {
    const std::string text = ascii_text(make_run("zb-h1", 4, 8, "F=1,B=1,W=1"));
    for (int d = 0; d < 4; ++d) {
      const std::string row = row_of(text, d);
      CAPTURE(d, row);
      for (int mb = 0; mb < 8; ++mb) {
        CHECK(row.find(static_cast<char>('0' + mb)) != std::string::npos);
        CHECK(row.find(static_cast<char>('a' + mb)) != std::string::npos);
        CHECK(row.find(static_cast<char>('A' + mb)) != std::string::npos);
      }
    }
  }
  SECTION("wider tasks show their names") {
    // One column per ms: F is 1 column (digit), B 3 columns ("B3 "), W 4 ("W3  ").
    const std::string text = ascii_text(make_run("zb-h1", 4, 8, "F=1,B=3,W=4"));
    for (int d = 0; d < 4; ++d) {
      const std::string row = row_of(text, d);
      CAPTURE(d, row);
      for (int mb = 0; mb < 8; ++mb) {
        const std::string n = std::to_string(mb);
        CHECK(row.find(n) != std::string::npos);
        CHECK(row.find("B" + n + " ") != std::string::npos);
        CHECK(row.find("W" + n + " ") != std::string::npos);
      }
    }
  }
}

TEST_CASE("a name shows only with room to spare, else the task's code fills its columns",
          "[viz]") {
  // One column per ms (W = 1). F (3 columns) is "F0 "; B (2 columns) is "aa", not "B0" glued to
  // the next task; W is "A".
  const std::string text = ascii_text(make_run("zb-h1", 2, 2, "F=3,B=2,W=1"));
  CAPTURE(text);
  CHECK(row_of(text, 1) == "...F0 aaF1 bbAB.");
}

TEST_CASE("the grid width is capped and can be chosen", "[viz]") {
  // makespan 3 m + (p - 1)(F + B - W) = 247 ms: more than 200 columns of 1 ms.
  const Run run = make_run("zb-h1", 8, 80, "F=1,B=1,W=1");
  REQUIRE(run.metrics.makespan == 247'000'000);
  SECTION("automatic: at most 200 columns, with the scale stated") {
    const std::string text = ascii_text(run);
    for (int d = 0; d < 8; ++d) CHECK(row_of(text, d).size() == 200);
    CHECK(text.find("scale: 1 column = 1.235 ms, 200 columns") != std::string::npos);
    CHECK(text.find("coarse overview") != std::string::npos);
  }
  SECTION("explicit width") {
    const std::string text = ascii_text(run, {.width = 50});
    for (int d = 0; d < 8; ++d) CHECK(row_of(text, d).size() == 50);
    for (const std::string& line : lines_of(text)) CHECK(line.size() <= 140);
  }
  SECTION("bad widths") {
    CHECK_THROWS_AS(ascii_text(run, {.width = -1}), ConfigError);
    CHECK_THROWS_AS(ascii_text(run, {.width = 10001}), ConfigError);
  }
}

TEST_CASE("a span near the limit of nanoseconds still has a true time axis", "[viz][robust]") {
  // zb-h1 at p = 1, m = 1: F and B of 1e11 ms, W of 1e8 ms: 2001 columns of W, so 200 columns
  // of span / 200 each. Column c's edge was c x span / 200, and c x span overflowed: the axis
  // showed negative times and the row drew F0 three times.
  const Run run = make_run("zb-h1", 1, 1, "F=1e11,B=1e11,W=1e8");
  const std::string text = ascii_text(run);
  CAPTURE(text);
  const std::string row = row_of(text, 0);
  REQUIRE(row.size() == 200);
  CHECK(count(row, "F0") == 1);
  CHECK(count(row, "B0") == 1);
  CHECK(row.rfind("F0", 0) == 0);
  CHECK(row.find("B0") == 100);  // B starts at 1e11 ms of 2.001e11: column 99.95 -> 100
  const std::string axis = lines_of(text)[1];
  CHECK(axis.find('-') == std::string::npos);  // no negative time
  CHECK(axis.rfind("time (ms) 0         10005000000         30015000000", 0) == 0);
}

TEST_CASE("every registered schedule draws one full-width row per device", "[viz][property]") {
  for (const ScheduleInfo& info : schedule_registry()) {
    CAPTURE(info.name);
    const Run run = make_run(info.name, 4, 8, "F=1,B=1,W=1,comm=0.1");
    const std::string text = ascii_text(run, {.width = 60});
    for (int d = 0; d < 4; ++d) CHECK(row_of(text, d).size() == 60);
  }
}

TEST_CASE("the zb-h1 grid at p = 4, m = 8 matches the approved golden file", "[viz][golden]") {
  const std::string text = ascii_text(make_run("zb-h1", 4, 8, "F=1,B=1,W=1"));
  check_golden("data/golden/ascii_zb_h1_p4_m8.txt", text);
}

TEST_CASE("idle spent waiting for a message is drawn as ~, idle waiting on compute as .",
          "[viz][comm]") {
  // 1F1B p=2 m=2, F = 1, BW = 2, comm = 1, blocking sends (tests/sim/comm_test.cpp): device 0
  // waits for its own sends in [1,2) and [3,4), for B0 in [5,6) and B1 in [9,10), on compute in
  // [4,5) and [8,9).
  CommOptions blocking;
  blocking.mode = CommMode::Blocking;
  const Run run = run_schedule(make_schedule("1f1b", {.devices = 2, .microbatches = 2}),
                               parse_costs("F=1,B=1,W=1,comm=1"), blocking);
  const std::string text = ascii_text(run);
  CHECK(row_of(text, 0) == "0~1~.~aa.~bb");
  CHECK(row_of(text, 1) == "..0aa~1bb...");
  CHECK_THAT(text, Catch::Contains("~ = idle waiting for a message in flight"));
  // Without communication time nothing waits on it, and the legend stays as it was.
  const std::string plain = ascii_text(make_run("1f1b", 2, 2, "F=1,B=1,W=1"));
  CHECK(plain.find('~') == std::string::npos);
}
