// Tests of the front/full split: which command lines the `ppsim` front runs itself and which it
// hands to ppsim-full (cli/main.cpp; tests/cli/front_test.sh runs the two executables).
#include "cli/cli.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <sstream>

using namespace ppsim;

TEST_CASE("the front runs every command but calibrate, execute, serve, man and completion",
          "[cli][front]") {
  // Every command, from the full command line's own list (this process links the full parts).
  std::ostringstream out, err;
  REQUIRE(run_cli({"no-such-command"}, out, err) == kExitUsage);
  const std::string text = err.str();
  const auto from = text.find("(valid: ") + 8, to = text.find(')', from);
  REQUIRE(to != std::string::npos);
  std::set<std::string> all;
  std::stringstream names(text.substr(from, to - from));
  for (std::string n; std::getline(names, n, ',');) all.insert(n.substr(n.find_first_not_of(' ')));
  const std::set<std::string> full = {"calibrate", "execute", "serve", "man", "completion"};
  CHECK(all.size() == 18);
  for (const std::string& name : all) {
    CAPTURE(name);
    CHECK(runs_without_full_parts({name, "--help"}) == !full.contains(name));
  }
}

TEST_CASE("the front hands on --calibrate, --device cpu, the help of all and unknown commands",
          "[cli][front]") {
  CHECK(runs_without_full_parts({"--version"}));
  CHECK(runs_without_full_parts({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8"}));
  CHECK(runs_without_full_parts({"plan", "--model", "llama3-8b", "--device", "h100"}));
  CHECK_FALSE(runs_without_full_parts({}));
  CHECK_FALSE(runs_without_full_parts({"--help"}));
  CHECK_FALSE(runs_without_full_parts({"-h"}));
  CHECK_FALSE(runs_without_full_parts({"simulat"}));  // the "did you mean" lists every command
  CHECK_FALSE(runs_without_full_parts({"simulate", "-s", "1f1b", "--calibrate", "dim=64"}));
  CHECK_FALSE(runs_without_full_parts({"simulate", "--calibrate=dim=64"}));
  CHECK_FALSE(runs_without_full_parts({"costs", "--model", "zb-1.5b", "--device", "cpu"}));
  CHECK_FALSE(runs_without_full_parts({"costs", "--model", "zb-1.5b", "--device=cpu"}));
}
