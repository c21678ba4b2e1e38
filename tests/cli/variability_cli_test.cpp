// Tests of --jitter, --seed, --samples and --slow on the command line: the JSON's samples, the
// tables, compare's wins, determinism, and the errors of bad values.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using ppsim::test::run_ppsim;

namespace {

std::vector<std::string> zb(const std::vector<std::string>& extra) {
  return ppsim::test::args_with(
      {"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--costs", "F=1,B=1,W=1,comm=0.1"}, extra);
}

} // namespace

TEST_CASE("jittered samples appear in the JSON with the issue's fields", "[cli][jitter]") {
  const auto r = run_ppsim(zb({"--jitter", "0.2", "--seed", "5", "--samples", "300", "--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& s = j.at("samples");
  CHECK(s.at("count") == 300);
  CHECK(s.at("seed") == 5);
  CHECK(s.at("cv") == 0.2);
  std::vector<std::string> keys;
  const auto ordered = nlohmann::ordered_json::parse(r.out);
  for (const auto& [k, v] : ordered.at("samples").at("cost_ms").items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"mean", "p50", "p90", "p99", "min", "max"});
  CHECK(s.at("cost_ms").at("min") <= s.at("cost_ms").at("p50"));
  CHECK(s.at("cost_ms").at("p99") <= s.at("cost_ms").at("max"));
  CHECK_FALSE(s.contains("wins"));
  // The deterministic metrics are today's.
  const auto plain = nlohmann::json::parse(run_ppsim(zb({"--json"})).out);
  CHECK(j.at("cost_ms") == plain.at("cost_ms"));
  CHECK_FALSE(plain.contains("samples"));
  // Same seed, byte-identical; another seed, other samples.
  CHECK(run_ppsim(zb({"--jitter", "0.2", "--seed", "5", "--samples", "300", "--json"})).out == r.out);
  CHECK(run_ppsim(zb({"--jitter", "0.2", "--seed", "6", "--samples", "300", "--json"})).out != r.out);
  // The text report's lines.
  const auto t = run_ppsim(zb({"--jitter", "0.2", "--samples", "50"}));
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("samples       50 (jitter cv 0.2, seed 1)\n"));
  CHECK_THAT(t.out, Catch::Contains("cost          mean "));
}

TEST_CASE("compare's table and JSON report the samples and the wins", "[cli][jitter]") {
  const std::vector<std::string> args{"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8",
                                      "--costs", "F=1,B=1,W=1", "--jitter", "0.1",
                                      "--samples", "100"};
  auto json_args = args;
  json_args.push_back("--json");
  const auto r = run_ppsim(json_args);
  REQUIRE(r.code == 0);
  const auto a = nlohmann::json::parse(r.out);
  int wins = 0;
  for (const auto& row : a) wins += row.at("samples").at("wins").get<int>();
  CHECK(wins >= 100);
  CHECK(a[0].at("samples").at("wins") == 0);
  const auto t = run_ppsim(args);
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("mean_ms     p50_ms     p90_ms     p99_ms    wins"));
  CHECK_THAT(t.out, Catch::Contains("  0.0%\n"));
}

TEST_CASE("a slow device on the command line stretches its tasks", "[cli][slow]") {
  const auto r = run_ppsim(zb({"--slow", "device=2,factor=2", "--slow", "device=0,factor=1.5", "--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("per_device")[0].at("busy_ms") == 36.0);
  CHECK(j.at("per_device")[1].at("busy_ms") == 24.0);
  CHECK(j.at("per_device")[2].at("busy_ms") == 48.0);
  const auto t = run_ppsim(zb({"--slow", "device=2,factor=2"}));
  CHECK_THAT(t.out, Catch::Contains("slow          device 2 x2\n"));
}

TEST_CASE("bad jitter and slow values are bad input with the value named", "[cli][jitter]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--jitter", "-0.5"}, "--jitter -0.5: the coefficient of variation must be in 0..10"},
      {{"--jitter", "abc"}, "--jitter: expected a number"},
      {{"--jitter", "0.1", "--samples", "0"}, "--samples"},
      {{"--jitter", "0.1", "--samples", "99999999"}, "--samples"},
      {{"--seed", "3"}, "--seed: needs --jitter (or --samples)"},
      {{"--jitter", "0.1", "--seed", "-3"}, "--seed"},
      {{"--slow", "device=4,factor=2"}, "--slow device=4: outside 0..3 (the schedule has 4 devices)"},
      {{"--slow", "device=1,factor=0"}, "--slow factor=0: must be in (0, 1e+06]"},
      {{"--slow", "device=1"}, "needs device=D,factor=X"},
      {{"--slow", "device=1,factor=2", "--slow", "device=1,factor=3"}, "given twice"},
  };
  for (const auto& [extra, message] : cases) {
    CAPTURE(extra, message);
    const auto r = run_ppsim(zb(extra));
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: simulate: ") && Catch::Contains(message));
  }
}
