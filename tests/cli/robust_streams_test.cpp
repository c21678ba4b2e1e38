// Issue 22 through the command line: no input or output path hangs, derived output names stay
// beside a file, plan's bad input is exit 3, long values are quoted by an excerpt, and values
// out of range are refused by every command alike.
#include "cli/serve.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <fmt/format.h>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace ppsim::test;
namespace fs = std::filesystem;
using Catch::Contains;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TEST_CASE("an input FIFO that nothing writes is exit 3 after the wait, not a hang",
          "[cli][robust]") {
  TempDir dir("streams");
  const std::string fifo = dir / "f.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = cli({"validate", fifo});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("f.json: the schedule file (a FIFO or device) did not end within 5 s"));
  CHECK(seconds_since(start) < 10);
}

TEST_CASE("an output FIFO that nothing reads is exit 3 at once", "[cli][robust]") {
  TempDir dir("streams");
  const std::string fifo = dir / "out.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = cli({"export", "-s", "1f1b", "-p", "4", "-m", "8", "--format", "json", "-o", fifo});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("out.json: cannot write (a FIFO that nothing reads)"));
  CHECK(seconds_since(start) < 2);
  CHECK(fs::is_fifo(fifo));
}

