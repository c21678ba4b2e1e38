// Tests of the comparison: it keeps going past infeasible schedules, names the least limit that
// works, and decides the outcome.
#include "ppsim/run/compare.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/sim/errors.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <string>
#include <vector>

using namespace ppsim;

namespace {

RunRequest limited_request(const std::string& name, int p, int m, const std::string& limit,
                   const std::string& costs = "F=2,B=2,W=2") {
  RunRequest rq;
  rq.schedule = name;
  rq.devices = p;
  rq.microbatches = m;
  rq.costs = parse_costs(costs);
  rq.mem_limit = parse_mem_limit(limit);
  return rq;
}

// Whether the request runs under `limit` M_B.
bool runs_at(RunRequest rq, double limit) {
  rq.mem_limit = MemLimit::of_units(limit);
  try {
    (void)run_request(rq);
    return true;
  } catch (const InfeasibleError&) {
    return false;
  }
}

} // namespace

TEST_CASE("a comparison keeps going past a schedule above the limit and marks its row",
          "[run][compare]") {
  const std::vector<RunRequest> rqs = {limited_request("1f1b", 4, 8, "1p"), limited_request("zb-h2", 4, 8, "1p"),
                                       limited_request("zb-auto", 4, 8, "1p")};
  const Comparison c = run_compare(rqs);
  REQUIRE(c.rows.size() == 3);
  REQUIRE(c.runs.size() == 2);
  CHECK(c.rows[0].ok());
  CHECK(c.run_of(c.rows[0]).schedule.name == "1f1b");
  CHECK_FALSE(c.rows[1].ok());
  CHECK(c.rows[1].schedule == "zb-h2");
  CHECK(c.rows[1].devices == 4);
  CHECK(c.rows[1].microbatches == 8);
  CHECK_THAT(c.rows[1].reason, Catch::Contains("device 0 peaks at 7 M_B"));
  CHECK(c.rows[1].least_mem_limit == 7.0);  // ZB-H2's (2p - 1) M_B
  CHECK(c.rows[2].ok());
  CHECK(c.run_of(c.rows[2]).metrics.cost == 54'000'000);
  CHECK(c.any_ran());
  CHECK_NOTHROW(c.require_any_ran());
}

TEST_CASE("a comparison where nothing fits is infeasible and names every least limit",
          "[run][compare]") {
  const std::vector<RunRequest> rqs = {limited_request("zb-h2", 4, 8, "0.5"), limited_request("zb-auto", 4, 8, "0.5")};
  const Comparison c = run_compare(rqs);
  CHECK_FALSE(c.any_ran());
  CHECK(c.rows[0].least_mem_limit == 7.0);
  CHECK(c.rows[1].least_mem_limit == 1.0);  // one micro-batch per device, as zb-auto says
  CHECK_THROWS_AS(c.require_any_ran(), InfeasibleError);
  CHECK_THROWS_WITH(c.require_any_ran(),
                    Catch::Contains("zb-h2 7 M_B") && Catch::Contains("zb-auto 1 M_B"));
  // Other errors are not the comparison's to swallow: a schedule file that cannot be read. (A
  // shape a generator refuses, zb-h2 at m < 2p, is a rejected row: issue 23.)
  const std::vector<RunRequest> bad = {limited_request("1f1b", 4, 8, "1p"), limited_request("missing.csv", 4, 8, "1p")};
  CHECK_THROWS_AS(run_compare(bad), ConfigError);
}

TEST_CASE("the least limit that works works, and a little less does not", "[run][compare]") {
  struct Case {
    const char* name;
    const char* costs;
    const char* limit;
  };
  for (const Case& k : {Case{"zb-h2", "F=2,B=2,W=2", "1p"}, Case{"zb-h1", "F=1,B=1,W=1,MW=2", "1p"},
                        Case{"zb-auto", "F=1,B=1,W=1,MW=0.3", "0.9"},
                        Case{"zb-auto", "F=1,B=2,W=1,MW=1.5", "0.9"},
                        Case{"zb-v", "F=1,B=1,W=1,MW=3", "0.9"},
                        Case{"zb-v", "F=1,B=1,W=1,comm=0.2", "0.25"},
                        Case{"zb-2p", "F=1,B=1,W=1", "1p"}}) {
    CAPTURE(k.name, k.costs, k.limit);
    const RunRequest rq = limited_request(k.name, 4, 8, k.limit, k.costs);
    CHECK_THROWS_AS(run_request(rq), InfeasibleError);
    const double least = least_mem_limit(rq);
    REQUIRE(least > 0);
    CHECK(runs_at(rq, least));
    CHECK_FALSE(runs_at(rq, least * (1 - 1e-3)));
  }
  // Known values: zb-h1 with M_W = 2 M_B peaks at 2p M_B; zb-2p holds its own 7.5 M_B whatever
  // the limit asked; zb-auto needs one micro-batch's activations, also when B raises memory
  // (split, that micro-batch would hold 1.5 M_B; with fused BW it holds 1 M_B).
  CHECK(least_mem_limit(limited_request("zb-h1", 4, 8, "1p", "F=1,B=1,W=1,MW=2")) == 8.0);
  CHECK(least_mem_limit(limited_request("zb-2p", 4, 8, "1p", "F=1,B=1,W=1")) == 7.5);
  CHECK(least_mem_limit(limited_request("zb-auto", 4, 8, "0.5", "F=1,B=2,W=1,MW=1.5")) == 1.0);
}

TEST_CASE("with several iterations the least limit covers their overlap", "[run][compare]") {
  RunRequest rq = limited_request("zb-h2", 4, 8, "7");
  rq.iterations.count = 2;
  rq.iterations.sync = SyncMode::PostValidation;
  // Post-validation lets the next iteration's forwards start while the tail runs: more than 7.
  const double least = least_mem_limit(rq);
  CHECK(least >= 7.0);
  CHECK(runs_at(rq, least));
  if (least > 7.0) CHECK_THROWS_AS(run_request(rq), InfeasibleError);
}

TEST_CASE("compare keeps going past a shape its generator refuses, marked as rejected",
          "[run][compare]") {
  const std::vector<RunRequest> rqs{limited_request("1f1b", 8, 8, ""), limited_request("dualpipe", 8, 8, "")};
  const Comparison c = run_compare(rqs);
  REQUIRE(c.rows.size() == 2);
  CHECK(c.rows[0].ok());
  CHECK(c.rows[1].rejected);
  CHECK_THAT(c.rows[1].reason, Catch::Contains("dualpipe"));
  CHECK_NOTHROW(c.require_any_ran());
  // Every shape refused: the command's error is the shape's, exit 3.
  const std::vector<RunRequest> only{limited_request("dualpipe", 8, 8, "")};
  CHECK_THROWS_AS(run_compare(only).require_any_ran(), ConfigError);
  // An unknown name is the whole command's error, before anything runs.
  const std::vector<RunRequest> unknown{limited_request("1f1b", 4, 8, ""), limited_request("nope", 4, 8, "")};
  CHECK_THROWS_WITH(run_compare(unknown), Catch::Contains("unknown schedule 'nope'"));
}
