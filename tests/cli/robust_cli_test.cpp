// Issue 11 through the command line: hostile inputs get exit 2 or 3 with where and what, bounded
// messages, bounded memory, and no partial or misplaced output file.
#include "ppsim/sim/limits.hpp"
#include "tests/cli/bounded_child.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;
namespace fs = std::filesystem;

namespace {

// A ppsim.schedule/1 document declaring `devices` devices (one stage each) and `microbatches`
// micro-batches, with every task list empty: a few kilobytes that ask for millions of tasks.
std::string empty_schedule_json(int devices, int microbatches) {
  std::string placement, route, order;
  for (int d = 0; d < devices; ++d) {
    const char* sep = d == 0 ? "" : ",";
    placement += fmt::format("{}{}", sep, d);
    route += fmt::format("{}{}", sep, d);
    order += fmt::format("{}[]", sep);
  }
  return fmt::format(R"({{"schema": "ppsim.schedule/1", "devices": {}, "microbatches": {},
"placement": [{}], "routes": [[{}]], "order": [{}]}})",
                     devices, microbatches, placement, route, order);
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

constexpr std::size_t kMiB = std::size_t{1} << 20;

} // namespace

TEST_CASE("validate of a small file declaring millions of missing tasks costs what it prints",
          "[cli][robust]") {
  TempDir dir("robust");
  // 1024 devices x 4096 micro-batches: 12,582,912 missing parts, in 14 KB. Describing each one
  // took gigabytes; under 256 MiB more address space the old validate ran out of memory.
  const std::string file = dir.file("declared.json", empty_schedule_json(1024, 4096));
  const auto r = in_child({.extra_address_space = 256 * kMiB},
                          [&] { return run_ppsim({"validate", file}); });
  CHECK(r.code == 4);
  CHECK_THAT(r.err, Catch::Contains("is invalid: 12582912 problems"));
  CHECK_THAT(r.err, Catch::Contains("missing 0F0 (device 0)"));
  CHECK_THAT(r.err, Catch::Contains(fmt::format("... and {} more",
                                                12582912 - limits::kMaxReportedProblems)));
  CHECK(r.err.size() < 200'000);

  // One task that names micro-batch 999,999 declares a million of them: 999,999 missing F and
  // a million missing backwards (in PyTorch's vocabulary one B, or I and W: one problem each).
  const std::string csv = dir.file("one.csv", "0F999999\n");
  const auto c = in_child({.extra_address_space = 256 * kMiB},
                          [&] { return run_ppsim({"validate", csv}); });
  CHECK(c.code == 4);
  CHECK_THAT(c.err, Catch::Contains("is invalid: 1999999 problems"));
}

TEST_CASE("a schedule file with more routes than the limit is refused before any work",
          "[cli][robust]") {
  TempDir dir("robust");
  std::string routes;
  for (int i = 0; i < 40'000; ++i) routes += i == 0 ? "[0]" : ",[0]";
  const std::string file = dir.file(
      "routes.json", R"({"schema": "ppsim.schedule/1", "devices": 1, "microbatches": 1,
"placement": [0], "routes": [)" + routes + R"(], "microbatch_routes": [0], "order": [["0F0", "0B0", "0W0"]]})");
  const auto r = run_ppsim({"validate", file});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("/routes: 40000 routes: at most 4096"));
}

TEST_CASE("deeply nested JSON of the wrong type is bad input, not a stack overflow",
          "[cli][robust]") {
  TempDir dir("robust");
  const std::string deep = nested(100'000);
  const auto costs = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file",
                          dir.file("deep.json", deep)});
  CHECK(costs.code == 3);
  CHECK_THAT(costs.err, Catch::Contains("deep.json: line 1, column 65: nested deeper than 64 levels"));
  const auto schedule =
      run_ppsim({"validate", dir.file("s.json", R"({"schema": )" + deep + "}")});
  CHECK(schedule.code == 3);
  CHECK_THAT(schedule.err, Catch::Contains("s.json: line 1, column 75: nested deeper than 64"));
  const auto baseline =
      run_ppsim({"check", "--baseline", dir.file("b.json", R"({"schema": )" + deep + "}")});
  CHECK(baseline.code == 3);
  CHECK_THAT(baseline.err, Catch::Contains("b.json: line 1, column 75: nested deeper than 64"));
  // Within the depth limit, a large value of the wrong type is shown by a bounded excerpt.
  std::string wide = "[";
  for (int i = 0; i < 100'000; ++i) wide += i == 0 ? "[1]" : ",[1]";
  wide += "]";
  const auto shown = run_ppsim({"validate", dir.file("w.json", R"({"schema": )" + wide + "}")});
  CHECK(shown.code == 3);
  CHECK_THAT(shown.err, Catch::Contains("/schema: expected \"ppsim.schedule/1\", got [[1],[1],"));
  CHECK(shown.err.size() < 300);
}

TEST_CASE("a number beyond a double is bad input with the file and its place", "[cli][robust]") {
  TempDir dir("robust");
  const std::string file =
      dir.file("c.json", "{\"schema\": \"ppsim.costs/1\",\n \"stages\": [{\"F\": 1e400, \"B\": 1, \"W\": 1}]}");
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file", file});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("c.json: line 2, column 19: the number 1e400 is out of range"));
  CHECK_THAT(r.err, !Catch::Contains("internal error"));
}

TEST_CASE("endless input is cut at the input limit, not read until memory runs out",
          "[cli][robust]") {
  TempDir dir("robust");
  const auto costs = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file",
                          "/dev/zero"});
  CHECK(costs.code == 3);
  CHECK_THAT(costs.err, Catch::Contains("/dev/zero: the cost file is larger than 32 MiB"));
  // A schedule file must end in .json or .csv: a link to the endless device.
  fs::create_symlink("/dev/zero", dir / "zero.json");
  const auto schedule = run_ppsim({"validate", dir / "zero.json"});
  CHECK(schedule.code == 3);
  CHECK_THAT(schedule.err, Catch::Contains("the schedule file is larger than 32 MiB"));
}

TEST_CASE("sweep refuses a grid over the point limit at once, naming its size", "[cli][robust]") {
  std::string many;
  for (int i = 1; i <= 3000; ++i) many += (i == 1 ? "" : ",") + std::to_string(i);
  const auto big = run_ppsim({"sweep", "-s", "1f1b", "-p", many, "-m", many});
  CHECK(big.code == 3);
  CHECK_THAT(big.err, Catch::Contains("1 schedules x 3000 p x 1 v x 1 limits x 3000 m = 9000000 "
                                      "points; at most 100000"));
  // 3000^4 x 2 schedules: the product itself would overflow a vector's reserve.
  const auto huge = run_ppsim({"sweep", "-s", "1f1b,zb-h1", "-p", many, "-m", many, "-v", many,
                         "--mem-limit", many});
  CHECK(huge.code == 3);
  CHECK_THAT(huge.err, Catch::Contains("= 162000000000000 points"));
  CHECK_THAT(huge.err, !Catch::Contains("internal error"));
}

TEST_CASE("output through a symbolic link replaces the link's target and keeps the link",
          "[cli][robust]") {
  TempDir dir("robust");
  fs::create_directory(dir / "real");
  fs::create_symlink("real/t.json", dir / "link.json");
  const auto r = run_ppsim({"export", "-s", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o",
                      dir / "link.json"});
  REQUIRE(r.code == 0);
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK_THAT(slurp(dir / "real/t.json"), Catch::Contains("ppsim.schedule/1"));
  // Once more, now that the target exists; no temporary is left beside either.
  REQUIRE(run_ppsim({"export", "-s", "1f1b", "-p", "2", "-m", "4", "--format", "json", "-o",
               dir / "link.json"})
              .code == 0);
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK_THAT(slurp(dir / "real/t.json"), Catch::Contains("\"microbatches\": 4"));
  CHECK(dir.entries() == 2);
  CHECK(std::distance(fs::directory_iterator(dir / "real"), {}) == 1);
  // `-o -` is standard output.
  const auto out = run_ppsim({"export", "-s", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o", "-"});
  CHECK(out.code == 0);
  CHECK_THAT(out.out, Catch::StartsWith("{") && Catch::Contains("ppsim.schedule/1"));
  CHECK_FALSE(fs::exists("-"));
}

TEST_CASE("output to a FIFO or device is written into it, never renamed over it",
          "[cli][robust]") {
  // As root, renaming a temporary over `-o /dev/null` replaced the device with a regular file.
  TempDir dir("robust");
  const std::string fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) return;
    char buf[4096];
    for (int waited = 0; waited < 500; ++waited) {  // at most 5 s
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) got.append(buf, static_cast<std::size_t>(n));
      else if (n == 0 && !got.empty()) break;  // the writer closed it
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(fd);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reader has it open
  const auto r = run_ppsim({"export", "-s", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o", fifo});
  reader.join();
  CHECK(r.code == 0);
  CHECK(fs::is_fifo(fifo));
  CHECK_THAT(got, Catch::Contains("ppsim.schedule/1"));
  CHECK(dir.entries() == 1);
}

TEST_CASE("a write that fails says why and leaves no file", "[cli][robust]") {
  const auto full = run_ppsim({"export", "-s", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o",
                         "/dev/full"});
  CHECK(full.code == 3);
  CHECK_THAT(full.err, Catch::Contains("/dev/full: cannot write (No space left on device)"));
  // A file that may not grow past 100 bytes fails in the middle of the write.
  TempDir dir("robust");
  const std::string path = dir / "s.json";
  const auto r = in_child({.file_size = 100}, [&] {
    return run_ppsim({"export", "-s", "1f1b", "-p", "4", "-m", "8", "--format", "json", "-o", path});
  });
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("s.json: cannot write (File too large)"));
  CHECK(dir.entries() == 0);
}

TEST_CASE("values that were accepted without a word are refused", "[cli][robust]") {
  const std::vector<std::string> run{"simulate", "-s", "1f1b", "-p", "2", "-m", "2"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = run;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_ppsim(a);
  };
  const auto mb = with({"--costs", "MB=1e308", "--json"});
  CHECK(mb.code == 3);
  CHECK_THAT(mb.err, Catch::Contains("--costs MB: 1e308 is too large"));
  for (const char* option : {"--costs", "--trace", "--costs-file", "--mem-limit"}) {
    CAPTURE(option);
    const auto empty = with({option, ""});
    CHECK(empty.code == 3);
    CHECK_THAT(empty.err, Catch::Contains(fmt::format("{}: empty value", option)));
  }
  const auto o = run_ppsim({"export", "-s", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o", ""});
  CHECK(o.code == 3);
  CHECK_THAT(o.err, Catch::Contains("--output: empty value"));
  const auto twice = with({"--costs", "F=1,F=7"});
  CHECK(twice.code == 3);
  CHECK_THAT(twice.err, Catch::Contains("'F' is given twice"));
  const auto chunks = with({"-v", "-1"});
  CHECK(chunks.code == 2);
  CHECK_THAT(chunks.err, Catch::Contains("--chunks"));
  const auto sweep_chunks = run_ppsim({"sweep", "-s", "1f1b", "-p", "2", "-m", "2", "-v", "-1"});
  CHECK(sweep_chunks.code == 3);
  CHECK_THAT(sweep_chunks.err, Catch::Contains("--chunks '-1': -1 is out of range (expected 0..4096)"));
  const auto unknown = run_ppsim({"nosuchcmd"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown command 'nosuchcmd' (valid: ") &&
                              Catch::Contains("simulate"));
}

TEST_CASE("costs the parser accepts never overflow into a deadlock or a false metric",
          "[cli][robust]") {
  // Each used to be signed 64-bit overflow: a "deadlock" (exit 4), or idle_fraction 1.69 with
  // exit 0. Now the sum of all durations and messages is bounded first: exit 3, with the sum.
  const std::vector<std::vector<std::string>> cases = {
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1e12,B=1e12,W=1e12"},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=5e11,B=5e11,W=5e11", "--json"},
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--iterations", "100", "--optimizer-step",
       "1e12"},
      {"simulate", "-s", "zb-auto", "-p", "4", "-m", "8", "--costs", "F=1e12,B=1e12,W=1e12"},
      {"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--costs", "F=1e12"},
  };
  for (const auto& args : cases) {
    CAPTURE(args);
    const auto r = run_ppsim(args);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains("too much to time in nanoseconds"));
    CHECK_THAT(r.err, !Catch::Contains("deadlock"));
    CHECK(r.out.find("idle_fraction") == std::string::npos);
  }
}

TEST_CASE("a 10 MB bad CSV cell is quoted by an excerpt", "[cli][robust]") {
  TempDir dir("robust");
  const std::string file = dir.file("cell.csv", "0F0," + std::string(10'000'000, 'x') + "\n");
  const auto r = run_ppsim({"validate", file});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("cell.csv:1:2: cannot read 'xxxx") &&
                        Catch::Contains("... (10000000 bytes)'"));
  CHECK(r.err.size() < 1000);
}

TEST_CASE("a CSV row of millions of empty cells costs no more than its bytes", "[cli][robust]") {
  TempDir dir("robust");
  // 8 MB of commas: one cell object per comma took 40 bytes each.
  const std::string file = dir.file("commas.csv", "0F0,0I0,0W0" + std::string(8'000'000, ',') + "\n");
  const auto r = in_child({.extra_address_space = 128 * kMiB},
                          [&] { return run_ppsim({"validate", file}); });
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("valid: 3 tasks on 1 devices"));
}

TEST_CASE("execute checks its output paths before any rank starts", "[cli][robust][exec]") {
  TempDir dir("robust");
  const auto r = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "2", "--dim", "8", "--tokens",
                      "4", "--blocks", "1", "--costs", "F=1", "--trace",
                      dir / "missing-dir/t.json"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("--trace ") && Catch::Contains("missing-dir/t.json: the "
                                                                   "directory") &&
                        Catch::Contains("does not exist"));
  CHECK_THAT(r.err, !Catch::Contains("mpirun"));
  const auto hosts = run_ppsim({"execute", "-s", "1f1b", "-p", "2", "-m", "2", "--dim", "8",
                          "--tokens", "4", "--blocks", "1", "--hostfile", dir / "no-hosts"});
  CHECK(hosts.code == 3);
  CHECK_THAT(hosts.err, Catch::Contains("no-hosts: cannot open the hostfile"));
}

TEST_CASE("a sweep or plan over the work bound is refused before any run, naming the bound",
          "[cli][robust]") {
  std::string devices, microbatches;
  for (int i = 1; i <= 100; ++i) devices += fmt::format("{}{}", i == 1 ? "" : ",", i);
  for (int i = 1; i <= 1000; ++i) microbatches += fmt::format("{}{}", i == 1 ? "" : ",", i);
  // 100,000 points (the point cap) of 1F1B: about 1.5e10 tasks, several minutes on one core
  const auto sweep = run_ppsim({"sweep", "-s", "1f1b", "-p", devices, "-m", microbatches});
  CHECK(sweep.code == 3);
  CHECK(sweep.out.empty());
  CHECK_THAT(sweep.err, Catch::StartsWith("ppsim: error: sweep: 100000 points: about 1.5e+10 tasks "
                                          "to simulate") &&
                            Catch::Contains("at most 5e+08 in one command (split it"));
  // 72 candidates at p = 2048 (with p = 4096 it ran past 300 s and 3 GB)
  const auto plan = run_ppsim({"plan", "-p", "2048", "--global-batch", "32", "--model", "zb-1.5b"});
  CHECK(plan.code == 3);
  CHECK(plan.out.empty());
  CHECK_THAT(plan.err, Catch::Contains("plan: -p 2048: about") &&
                           Catch::Contains("tasks to simulate (72 candidates") &&
                           Catch::Contains("fewer devices, a smaller --global-batch"));
  // just inside the bound, a sweep runs
  CHECK(run_ppsim({"sweep", "-s", "1f1b", "-p", "1,2,3,4", "-m", "1,2,4,8", "--csv"}).code == 0);
}

TEST_CASE("a V schedule over the stage limit is refused before it is generated",
          "[cli][robust]") {
  // two stages per device: 2 x 4096 x 1024 stage-micro-batches (this ran 112 s before the
  // simulator refused it)
  for (const char* name : {"zb-v", "v-half", "v-min"}) {
    const auto r = run_ppsim({"simulate", "-s", name, "-p", "4096", "-m", "1024"});
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains(fmt::format(
                          "{}: 2 stages x devices=4096 x microbatches=1024 is too large to "
                          "simulate (at most 4194304 stages x micro-batches)",
                          name)));
  }
}
