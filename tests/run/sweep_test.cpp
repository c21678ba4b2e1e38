// Tests of the sweep grid: every combination, in order, and each point's outcome.
#include "run/sweep.hpp"
#include "sim/errors.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;

TEST_CASE("a sweep grid expands every combination with m innermost", "[run][sweep]") {
  SweepGrid g;
  g.schedules = {"1f1b", "zb-h2"};
  g.devices = {2, 4};
  g.microbatches = {8, 16, 32};
  g.mem_limits = {"", "2p"};
  const auto points = expand_sweep_grid(g);
  REQUIRE(points.size() == 2 * 2 * 3 * 2);
  CHECK(points[0].schedule == "1f1b");
  CHECK(points[0].devices == 2);
  CHECK(points[0].microbatches == 8);
  CHECK(points[1].microbatches == 16);
  CHECK(points[2].microbatches == 32);
  CHECK(points[3].mem_limit == "2p");
  CHECK(points[6].devices == 4);
  CHECK(points[12].schedule == "zb-h2");
  for (const auto& pt : points) CHECK(pt.ok());
  g.microbatches.clear();
  CHECK_THROWS_AS(expand_sweep_grid(g), ConfigError);
}
