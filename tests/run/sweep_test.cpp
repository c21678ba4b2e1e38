// Tests of the sweep grid: every combination, in order, and each point's outcome.
#include "run/sweep.hpp"
#include "sim/errors.hpp"

#include <catch2/catch.hpp>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

using namespace ppsim;

TEST_CASE("a sweep grid expands every combination with m innermost", "[run][sweep]") {
  SweepGrid g;
  g.schedules = {"1f1b", "zb-h2"};
  g.devices = {2, 4};
  g.microbatches = {8, 16, 32};
  g.mem_limits = {MemLimit{}, parse_mem_limit("2p")};
  const auto points = expand_sweep_grid(g);
  REQUIRE(points.size() == 2 * 2 * 3 * 2);
  CHECK(points[0].schedule == "1f1b");
  CHECK(points[0].devices == 2);
  CHECK(points[0].microbatches == 8);
  CHECK(points[1].microbatches == 16);
  CHECK(points[2].microbatches == 32);
  CHECK(points[3].mem_limit.text == "2p");
  CHECK(points[6].devices == 4);
  CHECK(points[12].schedule == "zb-h2");
  for (const auto& pt : points) CHECK(pt.ok());
  g.microbatches.clear();
  CHECK_THROWS_AS(expand_sweep_grid(g), ConfigError);
}

TEST_CASE("a sweep grid over the point limit is refused before it is built", "[run][sweep][robust]") {
  SweepGrid g;
  g.schedules = {"1f1b"};
  g.devices.assign(1000, 2);
  g.microbatches.assign(1000, 4);
  CHECK(sweep_grid_points(g) == 1'000'000);
  CHECK_THROWS_WITH(expand_sweep_grid(g),
                    Catch::Contains("1 schedules x 1000 p x 1 v x 1 limits x 1000 m = 1000000 "
                                    "points; at most 100000"));
  // A product beyond 64 bits saturates instead of wrapping.
  g.chunks.assign(100'000, 0);
  g.mem_limits.assign(100'000, MemLimit{});
  g.schedules.assign(100'000, "1f1b");
  CHECK(sweep_grid_points(g) == std::numeric_limits<long long>::max());
  CHECK_THROWS_WITH(expand_sweep_grid(g), Catch::Contains("more than 9e18 points"));
}

TEST_CASE("a sweep reports its progress after every point", "[run][sweep][robust]") {
  // 3000 x 3000 points printed nothing for minutes; now each point is told to a Progress.
  struct Seen : Progress {
    std::vector<std::pair<std::size_t, std::size_t>> steps;
    void step(std::string_view what, std::size_t done, std::size_t total) override {
      CHECK(what == "points");
      steps.emplace_back(done, total);
    }
  } seen;
  SweepGrid g;
  g.schedules = {"1f1b", "zb-h2"};
  g.devices = {2};
  g.microbatches = {2, 4, 8};
  const auto points = run_sweep(g, RunRequest{}, &seen);
  REQUIRE(points.size() == 6);
  // before each point (0..5 done), then all 6
  REQUIRE(seen.steps.size() == 7);
  for (std::size_t i = 0; i < seen.steps.size(); ++i) {
    CHECK(seen.steps[i].first == i);
    CHECK(seen.steps[i].second == 6);
  }
}
