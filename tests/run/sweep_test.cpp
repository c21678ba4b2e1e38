// Tests of the sweep grid: every combination, in order, and each point's outcome.
#include "ppsim/run/sweep.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/run/fake_ranks.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
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

namespace {

// A grid whose points end every way: run, infeasible under the limit, rejected by the generator.
SweepGrid mixed_grid() {
  SweepGrid g;
  g.schedules = {"1f1b", "zb-h2", "zb-auto", "interleaved-1f1b"};
  g.devices = {2, 4};
  g.microbatches = {2, 4, 8, 9};
  g.mem_limits = {MemLimit{}, parse_mem_limit("0.5p")};
  return g;
}

void check_same_points(const std::vector<SweepPoint>& got, const std::vector<SweepPoint>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("point " << i << ": " << want[i].schedule << " p=" << want[i].devices
                  << " m=" << want[i].microbatches << " limit=" << want[i].mem_limit.text);
    CHECK(got[i].schedule == want[i].schedule);
    CHECK(got[i].devices == want[i].devices);
    CHECK(got[i].microbatches == want[i].microbatches);
    CHECK(got[i].status == want[i].status);
    CHECK(got[i].reason == want[i].reason);
    CHECK(got[i].run_chunks == want[i].run_chunks);
    CHECK(got[i].tasks == want[i].tasks);
    // bit for bit: the same build computes the same doubles on any thread or rank
    CHECK(got[i].makespan_ms == want[i].makespan_ms);
    CHECK(got[i].cost_ms == want[i].cost_ms);
    CHECK(got[i].ideal_ms == want[i].ideal_ms);
    CHECK(got[i].bubble_rate == want[i].bubble_rate);
    CHECK(got[i].bubble_over_ideal == want[i].bubble_over_ideal);
    CHECK(got[i].peak_memory == want[i].peak_memory);
    CHECK(got[i].mem_limit_mb == want[i].mem_limit_mb);
    CHECK(got[i].least_mem_limit == want[i].least_mem_limit);
  }
}

} // namespace

TEST_CASE("a sweep on several threads gives every point as one thread does", "[run][sweep]") {
  const SweepGrid g = mixed_grid();
  const auto one = run_sweep(g, RunRequest{}, nullptr, {.threads = 1, .exchange = nullptr});
  // the grid does end every way
  const auto has = [&](SweepStatus s) {
    return std::any_of(one.begin(), one.end(), [&](const SweepPoint& p) { return p.status == s; });
  };
  CHECK(has(SweepStatus::ok));
  CHECK(has(SweepStatus::infeasible));
  CHECK(has(SweepStatus::rejected));
  for (const unsigned threads : {2u, 3u, 64u}) {
    INFO(threads << " threads");
    check_same_points(run_sweep(g, RunRequest{}, nullptr, {.threads = threads, .exchange = nullptr}),
                      one);
  }
}

TEST_CASE("a sweep's progress counts up in order on several threads", "[run][sweep]") {
  struct Seen : Progress {
    std::mutex lock;
    std::vector<std::size_t> done;
    void step(std::string_view, std::size_t d, std::size_t) override {
      const std::lock_guard hold(lock);
      done.push_back(d);
    }
  } seen;
  const SweepGrid g = mixed_grid();
  const auto points = run_sweep(g, RunRequest{}, &seen, {.threads = 3, .exchange = nullptr});
  REQUIRE(seen.done.size() == points.size() + 1);
  for (std::size_t i = 0; i < seen.done.size(); ++i) CHECK(seen.done[i] == i);
}

TEST_CASE("a sweep shared among ranks gathers on rank 0 the points of one process", "[run][sweep]") {
  const SweepGrid g = mixed_grid();
  const auto one = run_sweep(g, RunRequest{}, nullptr, {.threads = 1, .exchange = nullptr});
  for (const int n : {2, 3, 5}) {
    INFO(n << " ranks");
    const auto got = test::run_on_thread_ranks<std::vector<SweepPoint>>(n, [&](PointExchange& ex) {
      return run_sweep(g, RunRequest{}, nullptr, {.threads = 2, .exchange = &ex});
    });
    check_same_points(got[0], one);
    for (int r = 1; r < n; ++r) CHECK(got[static_cast<std::size_t>(r)].empty());
  }
}

TEST_CASE("a sweep point's outcome round-trips as bytes, and malformed bytes are refused",
          "[run][sweep][robust]") {
  const SweepGrid g = mixed_grid();
  const auto one = run_sweep(g, RunRequest{}, nullptr, {.threads = 1, .exchange = nullptr});
  auto fresh = expand_sweep_grid(g);
  for (std::size_t i = 0; i < one.size(); ++i)
    decode_sweep_outcome(encode_sweep_outcome(one[i]), fresh[i], "rank 1");
  check_same_points(fresh, one);
  const auto infeasible = std::find_if(one.begin(), one.end(), [](const SweepPoint& p) {
    return p.status == SweepStatus::infeasible;
  });
  REQUIRE(infeasible != one.end());
  const std::string bytes = encode_sweep_outcome(*infeasible);
  const auto refused = [&](const std::string& b) {
    SweepPoint pt;
    CHECK_THROWS_WITH(decode_sweep_outcome(b, pt, "rank 1"),
                      "the results from rank 1 are cut short or malformed");
  };
  refused("");
  refused(bytes.substr(0, bytes.size() - 1));  // cut short (in the reason)
  refused(bytes.substr(0, 10));                // cut short (in the numbers)
  refused(bytes + "x");                        // trailing bytes
  refused(std::string(1, '\x07') + bytes.substr(1));  // no such status
}
