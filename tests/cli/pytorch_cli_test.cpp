// Tests of the PyTorch side of the command line: --pytorch-notation reads the old notation.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::string fixture(const std::string& name) {
  return source_path("data/examples/schedules/" + name);
}

} // namespace

TEST_CASE("a file in PyTorch's old notation is named, and --pytorch-notation old reads it",
          "[cli][pytorch]") {
  const auto file = fixture("old-notation-zb1p-p2.csv");
  const auto refused = cli({"validate", file});
  CHECK(refused.code == 3);
  CHECK_THAT(refused.err, Catch::StartsWith("ppsim: error: validate: " + file + ":1:7: '2W0'") &&
                              Catch::Contains("read it with --pytorch-notation old"));

  const auto ok = cli({"validate", "--pytorch-notation", "old", file});
  CHECK(ok.code == 0);
  CHECK(ok.out == file + ": valid: 24 tasks on 2 devices, 4 stages, 2 micro-batches\n");

  for (const std::string cmd : {"simulate", "compare"}) {
    CAPTURE(cmd);
    CHECK(cli({cmd, "-s", file, "--costs", "F=1,B=1,W=1"}).code == 3);
    CHECK(cli({cmd, "-s", file, "--pytorch-notation", "old", "--costs", "F=1,B=1,W=1"}).code == 0);
  }
  const auto exported =
      cli({"export", "-s", file, "--pytorch-notation", "old", "--format", "pytorch-csv"});
  CHECK(exported.code == 0);
  CHECK(exported.out == "0F0,0F1,2F0,2F1,2I0,2W0,2I1,2W1,0I0,0W0,0I1,0W1\n"
                        "1F0,1F1,3F0,3I0,3F1,3I1,3W0,1I0,3W1,1I1,1W0,1W1\n");

  const auto bad_value = cli({"validate", "--pytorch-notation", "older", file});
  CHECK(bad_value.code == 2);
  CHECK_THAT(bad_value.err, Catch::Contains("--pytorch-notation"));
}

TEST_CASE("validate tells an old-notation file's problems in its vocabulary", "[cli][pytorch]") {
  const auto r = cli({"validate", "--pytorch-notation", "old", fixture("old-notation-w-before-b.csv")});
  CHECK(r.code == 4);
  CHECK_THAT(r.err, Catch::Contains("0W0: runs before its prerequisite 0B0") &&
                        Catch::Contains("rank0: 0F0 [0W0] 0B0 0F1 0B1 0W1  <-- here"));
}
