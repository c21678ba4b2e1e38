// Times near the largest the parser accepts (1e12 ms per input): every sum of the run is
// checked, so a run too long for int64 nanoseconds is bad input (exit 3), never a wrapped time.
#include "tests/cli/cli_harness.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using ppsim::test::run_ppsim;

namespace {

// The sum of a run's durations and messages is bounded before it is timed (ppsim/sim/limits.hpp).
constexpr const char* kTooLong = "too much to time in nanoseconds";

} // namespace

TEST_CASE("costs at the parser's limit are a run too long to time, not a deadlock", "[cli]") {
  // 8 micro-batches of F + B + W = 3e12 ms on each of 4 devices: more than 9.2e12 ms.
  const auto r = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--costs",
                      "F=1e12,B=1e12,W=1e12"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: simulate: ") && Catch::Contains(kTooLong));
  CHECK(r.out.empty());
  for (const char* name : {"1f1b", "gpipe", "zb-h2", "interleaved-1f1b", "dualpipe-v"}) {
    CAPTURE(name);
    const auto c = run_ppsim({"compare", "-s", name, "-p", "4", "-m", "8", "--costs",
                        "F=1e12,B=1e12,W=1e12"});
    CHECK(c.code == 3);
    CHECK_THAT(c.err, Catch::Contains(kTooLong));
  }
}

TEST_CASE("iterations whose optimizer steps overflow the run are a run too long", "[cli]") {
  // 100 iterations, each ending with a 1e12 ms step: 1e14 ms in all.
  const auto r = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "100",
                      "--optimizer-step", "1e12"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains(kTooLong));
  const auto pv = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "100",
                       "--optimizer-step", "1e12", "--sync", "post-validation"});
  CHECK(pv.code == 3);
  CHECK_THAT(pv.err, Catch::Contains(kTooLong));
  // 3 iterations of 1e11 ms steps fit: the iteration time is the makespan plus the step.
  const auto ok = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "3",
                       "--optimizer-step", "1e11", "--json"});
  REQUIRE(ok.code == 0);
  const auto j = nlohmann::json::parse(ok.out);
  CHECK(j.at("iteration_time_ms").get<double>() ==
        Approx(j.at("makespan_ms").get<double>() + 1e11).epsilon(1e-12));
}

TEST_CASE("the ASCII axis of a run lasting 5.5e11 ms is labelled in order", "[cli]") {
  // A fixed width makes each column 1/60 of the span; column x span used to wrap.
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=5e10",
                      "--ascii", "--ascii-width", "60"});
  REQUIRE(r.code == 0);
  const auto lines = ppsim::test::lines_of(r.out);
  REQUIRE(lines.size() > 2);
  CHECK_THAT(lines[1], Catch::StartsWith("time (ms) 0         91666666670.3       275000000011        458333333351.7"));
  CHECK(lines[1].find('-') == std::string::npos);
  CHECK_THAT(r.out, Catch::Contains("scale: 1 column = ~9166666667 ms, 60 columns"));
}
