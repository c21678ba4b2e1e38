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

} // namespace

TEST_CASE("an input FIFO that nothing writes is exit 3 after the wait, not a hang",
          "[cli][robust]") {
  TempDir dir("streams");
  const std::string fifo = dir / "f.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_ppsim({"validate", fifo});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("f.json: the schedule file (a FIFO or device) did not end within 5 s"));
  CHECK(seconds_since(start) < 10);
}

TEST_CASE("an output FIFO that nothing reads is exit 3 at once", "[cli][robust]") {
  TempDir dir("streams");
  const std::string fifo = dir / "out.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_ppsim({"export", "-s", "1f1b", "-p", "4", "-m", "8", "--format", "json", "-o", fifo});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("out.json: cannot write (a FIFO that nothing reads)"));
  CHECK(seconds_since(start) < 2);
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("several files are never derived from a device, a FIFO or standard output",
          "[cli][robust]") {
  TempDir dir("streams");
  const std::string fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& trace : {std::string("/dev/full"), std::string("/dev/null"),
                                   std::string("-"), fifo}) {
    CAPTURE(trace);
    const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--trace", trace});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("--trace " + trace + ": several files are written"));
    CHECK_THAT(r.err, Contains("Run 'ppsim compare --help' for usage."));
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(trace + "-1f1b"));
    CHECK_FALSE(fs::exists(trace + "-1f1b.json"));
  }
  CHECK(dir.entries() == 1);
  // One schedule: one file, written into the device as before.
  CHECK(run_ppsim({"compare", "-s", "1f1b", "-p", "4", "-m", "8", "--trace", "/dev/null"}).code == 0);
  // execute writes two traces (measured and predicted): the same rule, before any rank starts.
  const auto exec = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "2", "--dim", "8", "--tokens",
                         "4", "--blocks", "1", "--costs", "F=1", "--trace", "/dev/null"});
  CHECK(exec.code == 2);
  CHECK_THAT(exec.err, Contains("several files are written") && !Contains("mpirun"));
}

TEST_CASE("derived trace names keep or gain the suffix beside the given name", "[cli][robust]") {
  TempDir dir("streams");
  REQUIRE(run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--trace", dir / "t"}).code == 0);
  CHECK(fs::is_regular_file(dir / "t-1f1b.json"));
  CHECK(fs::is_regular_file(dir / "t-zb-h1.json"));
  REQUIRE(run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--trace", dir / "u.trace.json"})
              .code == 0);
  CHECK(fs::is_regular_file(dir / "u.trace-1f1b.json"));
  fs::create_directory(dir / "d.x");
  REQUIRE(run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--trace", dir / "d.x/.t"})
              .code == 0);
  CHECK(fs::is_regular_file(dir / "d.x/.t-zb-h1.json"));
  CHECK(dir.entries() == 5);
}

TEST_CASE("plan reports bad input as exit 3 on stderr, like every command", "[cli][robust]") {
  const auto many = run_ppsim({"plan", "-p", "4097", "--global-batch", "32", "--model", "zb-1.5b"});
  CHECK(many.code == 3);
  CHECK(many.out.empty());
  CHECK_THAT(many.err, Contains("ppsim: error: plan: -p 4097: expected 1 to 4096 devices"));
  const auto costs = run_ppsim({"plan", "-p", "4", "--global-batch", "32", "--model", "zb-1.5b",
                          "--costs", "F=-1"});
  CHECK(costs.code == 3);
  CHECK(costs.out.empty());
  CHECK_THAT(costs.err, Contains("--costs F"));
}

TEST_CASE("a long value is quoted by an excerpt wherever it is refused", "[cli][robust]") {
  const std::string huge(100000, 'x');
  const std::vector<std::vector<std::string>> calls = {
      {"simulate", "-s", huge, "-p", "4", "-m", "8"},
      {"compare", "-s", "1f1b," + huge, "-p", "4", "-m", "8"},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model", huge},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model", huge + ".json"},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model", "zb-1.5b", "--device", huge},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--link", huge + "=1"},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--slow", huge},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", huge},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", huge + "=1"},
      {"sweep", "-s", huge, "-p", "4", "-m", "8"},
      {"plan", "-p", "4", "--global-batch", "32", "--model", "zb-1.5b", "--schedules", huge},
  };
  for (const auto& args : calls) {
    CAPTURE(args[0], args.size());
    const auto r = run_ppsim(args);
    CHECK(r.code == 3);
    CHECK(r.err.size() < 1200);
    CHECK_THAT(r.err, Contains("bytes)"));
  }
}

TEST_CASE("a long name inside a schedule file is refused with an excerpt", "[cli][robust]") {
  TempDir dir("streams");
  const std::string file = dir.file(
      "s.json", R"({"schema": "ppsim.schedule/1", "name": ")" + std::string(100000, 'n') +
                    R"(", "devices": 1, "microbatches": 1, "placement": [0], "routes": [[0]],
"order": [["F0.0", "B0.0", "W0.0"]]})");
  const auto r = run_ppsim({"validate", file});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("/name: 'nnn") && Contains("(100000 bytes)"));
  CHECK(r.err.size() < 1200);
}

TEST_CASE("values out of range are refused by costs and execute as by the other commands",
          "[cli][robust]") {
  for (const std::string capacity : {"nan", "80XB", "-1GiB", "1e30"}) {
    CAPTURE(capacity);
    const auto r = run_ppsim({"costs", "-p", "4", "--model", "zb-1.5b", "--mem-capacity", capacity});
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Contains("--mem-capacity"));
    // simulate says the same
    const auto s = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model", "zb-1.5b",
                        "--mem-capacity", capacity});
    CHECK(s.code == 3);
  }
  const auto chunks = run_ppsim({"costs", "-p", "4", "-v", "-1", "--model", "zb-1.5b"});
  CHECK(chunks.code == 2);
  CHECK_THAT(chunks.err, Contains("--chunks"));
  CHECK(chunks.code == run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "-v", "-1"}).code);
  // a device count beyond the limit is refused before a layout is made for it (it was a
  // billion-stage layout, gigabytes, before the model's own check)
  const auto devices = run_ppsim({"costs", "-p", "1000000000", "--model", "zb-1.5b"});
  CHECK(devices.code == 3);
  CHECK_THAT(devices.err, Contains("devices=1000000000 (expected 1..4096)"));
  const auto seed = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "2", "--dim", "8", "--tokens",
                         "4", "--blocks", "1", "--seed", "-1"});
  CHECK(seed.code == 3);
  CHECK_THAT(seed.err, Contains("--seed: -1 is out of range") && !Contains("mpirun"));
  const auto jitter_seed = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--jitter", "0.1",
                                "--seed", "-1"});
  CHECK(jitter_seed.code == 3);
  CHECK_THAT(jitter_seed.err, Contains("--seed: -1 is out of range"));
}

TEST_CASE("a duplicated key in a file given to a command is exit 3 naming it", "[cli][robust]") {
  TempDir dir("streams");
  const std::string costs = dir.file(
      "c.json", "{\"schema\": \"x\",\n\"schema\": \"ppsim.costs/1\", \"F\": 1, \"B\": 1, \"W\": 1}");
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file", costs});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("c.json: line 2, column 1: duplicate key \"schema\""));
  const std::string device = dir.file(
      "d.json", R"({"schema": "ppsim.device/1", "peak_tflops": 1, "link": {"gbytes_per_s": 0}})");
  const auto d = run_ppsim({"costs", "-p", "4", "--model", "zb-1.5b", "--device", device});
  CHECK(d.code == 3);
  CHECK_THAT(d.err, Contains("/link/gbytes_per_s: 0: expected a positive GB/s"));
}

TEST_CASE("a second serve on a port in use exits 3 naming the port", "[cli][robust][serve]") {
  ppsim::cli::ServeConfig config;
  ppsim::cli::PlaygroundServer first(config);
  const int port = first.bind("127.0.0.1", 0);
  REQUIRE(port > 0);
  // Bound, not yet serving: the port is taken all the same.
  const auto second = run_ppsim({"serve", "--port", std::to_string(port)});
  CHECK(second.code == 3);
  CHECK_THAT(second.err, Contains(fmt::format("--port {}: cannot listen on 127.0.0.1:{}", port, port)));
  ppsim::cli::PlaygroundServer other(config);
  CHECK_THROWS_WITH(other.bind("127.0.0.1", port), Contains(std::to_string(port)));
}

TEST_CASE("execute checks the hostfile's syntax and hosts before launching", "[cli][robust][exec]") {
  TempDir dir("streams");
  const auto execute = [&](const std::string& hostfile) {
    return run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "2", "--dim", "8", "--tokens", "4",
                "--blocks", "1", "--costs", "F=1", "--hostfile", hostfile});
  };
  const auto empty = execute(dir.file("empty", "# only a comment\n\n"));
  CHECK(empty.code == 3);
  CHECK_THAT(empty.err, Contains("no host in the hostfile") && !Contains("mpirun"));
  const auto garbage = execute(dir.file("garbage", "localhost slots=2\n@@ !!\n"));
  CHECK(garbage.code == 3);
  CHECK_THAT(garbage.err, Contains("garbage:2: '@@' is not a host name"));
  const auto option = execute(dir.file("option", "localhost slots=two\n"));
  CHECK(option.code == 3);
  CHECK_THAT(option.err, Contains("option:1: 'slots=two': expected KEY=N"));
  const auto unknown = execute(dir.file("unknown", "no-such-host.invalid slots=1\n"));
  CHECK(unknown.code == 3);
  CHECK_THAT(unknown.err, Contains("unknown:1: unknown host 'no-such-host.invalid'") &&
                              !Contains("ssh"));
}
