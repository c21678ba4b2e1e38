// Times near the largest the parser accepts (1e12 ms per input): every sum of the run is
// checked, so a run too long for int64 nanoseconds is bad input (exit 3), never a wrapped time.
#include "tests/cli/cli_harness.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using ppsim::test::cli;

namespace {

constexpr const char* kTooLong = "the run's time exceeds 9.223e+12 ms";

} // namespace

TEST_CASE("costs at the parser's limit are a run too long to time, not a deadlock", "[cli]") {
  // 8 micro-batches of F + B + W = 3e12 ms on each of 4 devices: more than 9.2e12 ms.
  const auto r = cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--costs",
                      "F=1e12,B=1e12,W=1e12"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: simulate: ") && Catch::Contains(kTooLong));
  CHECK(r.out.empty());
  for (const char* name : {"1f1b", "gpipe", "zb-h2", "interleaved-1f1b", "dualpipe-v"}) {
    CAPTURE(name);
    const auto c = cli({"compare", "-s", name, "-p", "4", "-m", "8", "--costs",
                        "F=1e12,B=1e12,W=1e12"});
    CHECK(c.code == 3);
    CHECK_THAT(c.err, Catch::Contains(kTooLong));
  }
}

TEST_CASE("a makespan near the limit still gives an idle fraction of at most 1", "[cli]") {
  // F = 5e11 ms dominates: the makespan is about (m + p - 1) F = 5.5e12 ms, so devices x
  // makespan (2.2e13 ms) does not fit in int64 ns; it was 1.69 when that product wrapped.
  const auto r = cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--costs", "F=5e11",
                      "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double makespan = j.at("makespan_ms").get<double>();
  CHECK(makespan == Approx(11 * 5e11).epsilon(1e-9));
  double busy = 0;
  for (const auto& d : j.at("per_device")) busy += d.at("busy_ms").get<double>();
  CHECK(busy == Approx(4 * 8 * 5e11).epsilon(1e-9));
  // 1 - 32 F / (4 * 11 F) = 3/11, the idle of 4 devices each waiting 3 F of 11 F.
  const double idle = j.at("idle_fraction").get<double>();
  CHECK(idle == Approx(1.0 - busy / (4 * makespan)).epsilon(1e-12));
  CHECK(idle == Approx(3.0 / 11.0).epsilon(1e-9));
  CHECK(j.at("bubble_rate").get<double>() <= 1.0);
}

TEST_CASE("iterations whose optimizer steps overflow the run are a run too long", "[cli]") {
  // 100 iterations, each ending with a 1e12 ms step: 1e14 ms in all.
  const auto r = cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "100",
                      "--optimizer-step", "1e12"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains(kTooLong));
  const auto pv = cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "100",
                       "--optimizer-step", "1e12", "--sync", "post-validation"});
  CHECK(pv.code == 3);
  CHECK_THAT(pv.err, Catch::Contains(kTooLong));
  // 9 iterations of 1e12 ms steps fit: the iteration time is the makespan plus the step.
  const auto ok = cli({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "9",
                       "--optimizer-step", "1e12", "--json"});
  REQUIRE(ok.code == 0);
  const auto j = nlohmann::json::parse(ok.out);
  CHECK(j.at("iteration_time_ms").get<double>() ==
        Approx(j.at("makespan_ms").get<double>() + 1e12).epsilon(1e-12));
}

TEST_CASE("the ASCII axis of a run lasting 1e12 ms is labelled in order", "[cli]") {
  // A fixed width makes each column 1/60 of the span; column x span used to wrap.
  const auto r = cli({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1e11",
                      "--ascii", "--ascii-width", "60"});
  REQUIRE(r.code == 0);
  const auto lines = ppsim::test::lines_of(r.out);
  REQUIRE(lines.size() > 2);
  CHECK_THAT(lines[1], Catch::StartsWith("time (ms) 0         183333333337        550000000011"));
  CHECK(lines[1].find('-') == std::string::npos);
  CHECK_THAT(r.out, Catch::Contains("scale: 1 column = 18333333333.7 ms, 60 columns"));
}
