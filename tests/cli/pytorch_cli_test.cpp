// Tests of the PyTorch side of the command line: `list` names PyTorch's classes, export writes
// PyTorch's CSV with its idle cells, and --pytorch-notation reads the old notation.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::string without_cr(std::string text) {
  std::erase(text, '\r');
  return text;
}

} // namespace

TEST_CASE("list names the PyTorch class of each schedule, or none", "[cli][pytorch]") {
  const auto text = run_ppsim({"list"});
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("interleaved-zb\n") &&
                           Catch::Contains("    pytorch: ScheduleInterleavedZeroBubble (its order "
                                           "and its idle slots)\n") &&
                           Catch::Contains("    pytorch: ScheduleGPipe\n") &&
                           Catch::Contains("    pytorch: -\n") &&
                           Catch::Contains("    pytorch: - (PyTorch's ScheduleZBVZeroBubble is a "
                                           "fixed order: zbv-pytorch)\n"));

  const auto json = run_ppsim({"list", "--json"});
  CHECK(json.code == 0);
  const auto all = nlohmann::json::parse(json.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& e : all) by_name[e.at("name").get<std::string>()] = e;
  CHECK(by_name.at("gpipe").at("pytorch_class") == "ScheduleGPipe");
  CHECK(by_name.at("gpipe").at("pytorch_note").is_null());
  CHECK(by_name.at("zb-h1").at("pytorch_class") == "ScheduleInterleavedZeroBubble");
  CHECK(by_name.at("zbv-pytorch").at("pytorch_class") == "ScheduleZBVZeroBubble");
  CHECK(by_name.at("zb-auto").at("pytorch_class").is_null());
  CHECK(by_name.at("looped-bfs").at("pytorch_note").get<std::string>().find("m-1..0") !=
        std::string::npos);
}

TEST_CASE("export of a PyTorch-named schedule is PyTorch's compute-only CSV, idle cells and all",
          "[cli][pytorch]") {
  const auto r = run_ppsim({"export", "-s", "interleaved-zb", "-p", "4", "-m", "8", "-v", "2",
                      "--format", "pytorch-csv"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  // PyTorch's csv.writer ends its rows in \r\n, ppsim's in \n
  CHECK(r.out == without_cr(slurp(source_path(
                     "data/golden/pytorch/ScheduleInterleavedZeroBubble_pp4_v2_m8.csv"))));

  const auto zbv = run_ppsim({"export", "-s", "zbv-pytorch", "-p", "4", "-m", "4", "--format",
                        "pytorch-csv"});
  CHECK(zbv.code == 0);
  CHECK(zbv.out ==
        without_cr(slurp(source_path("data/golden/pytorch/ScheduleZBVZeroBubble_pp4_v2_m4.csv"))));

  // ppsim's own schedules carry no idle slots: their CSV has no empty cells
  const auto own = run_ppsim({"export", "-s", "zb-h1", "-p", "4", "-m", "8", "--format", "pytorch-csv"});
  CHECK(own.code == 0);
  CHECK(own.out.find(",,") == std::string::npos);
  // and neither does JSON
  const auto js = run_ppsim({"export", "-s", "interleaved-zb", "-p", "4", "-m", "8", "--format", "json"});
  CHECK(js.code == 0);
  CHECK_THAT(js.out, Catch::Contains("\"name\": \"interleaved-zb\""));
}

TEST_CASE("a file in PyTorch's old notation is named, and --pytorch-notation old reads it",
          "[cli][pytorch]") {
  const auto file = example_schedule("old-notation-zb1p-p2.csv");
  const auto refused = run_ppsim({"validate", file});
  CHECK(refused.code == 3);
  CHECK_THAT(refused.err, Catch::StartsWith("ppsim: error: validate: " + file + ":1:7: '2W0'") &&
                              Catch::Contains("read it with --pytorch-notation old"));

  const auto ok = run_ppsim({"validate", "--pytorch-notation", "old", file});
  CHECK(ok.code == 0);
  CHECK(ok.out == file + ": valid: 24 tasks on 2 devices, 4 stages, 2 micro-batches\n");

  for (const std::string cmd : {"simulate", "compare"}) {
    CAPTURE(cmd);
    CHECK(run_ppsim({cmd, "-s", file, "--costs", "F=1,B=1,W=1"}).code == 3);
    CHECK(run_ppsim({cmd, "-s", file, "--pytorch-notation", "old", "--costs", "F=1,B=1,W=1"}).code == 0);
  }
  const auto exported =
      run_ppsim({"export", "-s", file, "--pytorch-notation", "old", "--format", "pytorch-csv"});
  CHECK(exported.code == 0);
  CHECK(exported.out == "0F0,0F1,2F0,2F1,2I0,2W0,2I1,2W1,0I0,0W0,0I1,0W1\n"
                        "1F0,1F1,3F0,3I0,3F1,3I1,3W0,1I0,3W1,1I1,1W0,1W1\n");

  const auto bad_value = run_ppsim({"validate", "--pytorch-notation", "older", file});
  CHECK(bad_value.code == 2);
  CHECK_THAT(bad_value.err, Catch::Contains("--pytorch-notation"));
}

TEST_CASE("validate tells an old-notation file's problems in its vocabulary", "[cli][pytorch]") {
  const auto r = run_ppsim({"validate", "--pytorch-notation", "old", example_schedule("old-notation-w-before-b.csv")});
  CHECK(r.code == 4);
  CHECK_THAT(r.err, Catch::Contains("0W0: runs before its prerequisite 0B0") &&
                        Catch::Contains("rank0: 0F0 [0W0] 0B0 0F1 0B1 0W1  <-- here"));
}
