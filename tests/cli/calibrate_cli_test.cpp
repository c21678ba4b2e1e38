// Tests of `ppsim calibrate` and --calibrate through run_cli: output, files, exit codes.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

using namespace ppsim;
using namespace ppsim::test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSmall = {"calibrate", "--dim", "16", "--tokens", "8", "--repeats", "1"};

std::vector<std::string> small(std::vector<std::string> more) {
  auto args = kSmall;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

} // namespace

TEST_CASE("calibrate --json prints a cost file the loader accepts", "[cli][calibrate]") {
  const auto r = run_ppsim(small({"--blocks", "2", "--stages", "3", "--json"}));
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("schema") == "ppsim.costs/1");
  CHECK(doc.at("stages").size() == 3);
  CHECK(doc.at("gradient_check").at("passed") == true);
  const auto spec = parse_cost_json(r.out, "stdout");
  CHECK(spec.stages.size() == 3);
  CHECK(spec.memory_unit_bytes == 2 * 5 * 16 * 8 * 4);
}

TEST_CASE("calibrate -o writes the file atomically and prints a summary", "[cli][calibrate]") {
  TempDir dir("calibrate-test");
  const auto file = dir / "costs.json";
  const auto r = run_ppsim(small({"--blocks-per-stage", "3,2", "--comm", "0.05", "-o", file}));
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("gradient check") && Catch::Contains("wrote " + file));
  const auto spec = load_cost_file(file);
  REQUIRE(spec.stages.size() == 2);
  CHECK(spec.stages[0].MB == 1.0);
  CHECK(spec.stages[0].MW == 2.0);
  CHECK(spec.stages[1].MB == Approx(2.0 / 3.0));
  CHECK(spec.comm == 50'000);
  // The list form of --blocks is the same thing.
  const auto listed = run_ppsim(small({"--blocks", "3,2,2,3", "--json"}));
  REQUIRE(listed.code == 0);
  CHECK(nlohmann::json::parse(listed.out).at("stages").size() == 4);
}

TEST_CASE("calibrate usage errors exit 2", "[cli][calibrate]") {
  CHECK(run_ppsim({"calibrate", "--tokens", "8", "--blocks", "1"}).code == 2);  // no --dim
  CHECK(run_ppsim({"calibrate", "--dim", "8", "--tokens", "8"}).code == 2);     // no blocks
  CHECK(run_ppsim(small({"--blocks", "1", "--blocks-per-stage", "1,1"})).code == 2);
  const auto r = run_ppsim(small({"--blocks", "1", "--bogus"}));
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--help"));
}

TEST_CASE("calibrate bad values exit 3 with the value named and write nothing",
          "[cli][calibrate]") {
  TempDir dir("calibrate-test");
  const auto file = dir / "never.json";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"calibrate", "--dim", "0", "--tokens", "8", "--blocks", "1"}, "dim=0"},
      {{"calibrate", "--dim", "-3", "--tokens", "8", "--blocks", "1"}, "dim=-3"},
      {{"calibrate", "--dim", "abc", "--tokens", "8", "--blocks", "1"}, "'abc'"},
      {small({"--blocks", "0"}), "blocks"},
      {small({"--blocks", "1", "--dtype", "fp8"}), "fp8"},
      {small({"--blocks", "3,2", "--stages", "4"}), "--stages is 4"},
      {small({"--blocks", "1", "--threads", "0"}), "threads=0"},
      {small({"--blocks", "1", "--comm", "-1"}), "--comm"},
      {{"calibrate", "--dim", "65536", "--tokens", "65536", "--blocks", "4"}, "GiB"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"-o", file});
    CAPTURE(args);
    const auto r = run_ppsim(args);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: calibrate: ") && Catch::Contains(c.says));
    CHECK_FALSE(fs::exists(file));
  }
}

TEST_CASE("simulate and compare calibrate first with --calibrate", "[cli][calibrate]") {
  const auto sim = run_ppsim({"simulate", "-s", "zb-h1", "-p", "2", "-m", "4", "--calibrate",
                        "dim=16,tokens=8,blocks=1,repeats=1", "--json"});
  REQUIRE(sim.code == 0);
  const auto doc = nlohmann::json::parse(sim.out);
  CHECK(doc.at("cost_ms").get<double>() > 0);
  const auto cmp = run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "2", "-m", "4", "--calibrate",
                        "dim=16,tokens=8,blocks=1,repeats=1,comm=0", "--json"});
  REQUIRE(cmp.code == 0);
  CHECK(nlohmann::json::parse(cmp.out).size() == 2);
  const auto bad = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--calibrate",
                        "dim=16,tokens=8"});
  CHECK(bad.code == 3);
  CHECK_THAT(bad.err, Catch::Contains("missing blocks"));
}

TEST_CASE("the shipped example profile drives compare", "[cli][calibrate]") {
  const std::string file = source_path("data/costs/example-mlp.json");
  const auto spec = load_cost_file(file);
  CHECK(spec.stages.size() == 4);
  CHECK(spec.memory_unit_bytes > 0);
  const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8", "--costs-file",
                      file, "--json"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
}
