// Tests of the sweep grid: every combination, in order, and each point's outcome.
#include "run/sweep.hpp"
#include "sim/errors.hpp"

#include <algorithm>
#include <barrier>
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

// Ranks as threads of one process: gather hands every rank's bytes to rank 0.
struct SharedGather {
  explicit SharedGather(int n) : slots(static_cast<std::size_t>(n)), sync(n) {}
  std::vector<std::string> slots;
  std::barrier<> sync;
};

class ThreadRank final : public PointExchange {
public:
  ThreadRank(SharedGather& shared, int rank) : shared_(shared), rank_(rank) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int ranks() const override { return static_cast<int>(shared_.slots.size()); }
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) override {
    shared_.slots[static_cast<std::size_t>(rank_)] = mine;
    shared_.sync.arrive_and_wait();
    std::vector<std::string> all;
    if (rank_ == 0) all = shared_.slots;
    shared_.sync.arrive_and_wait();
    return all;
  }

private:
  SharedGather& shared_;
  int rank_;
};

// Rank 0 of two, whose rank 1 sends `theirs`.
class ScriptedPeer final : public PointExchange {
public:
  explicit ScriptedPeer(std::string theirs) : theirs_(std::move(theirs)) {}
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int ranks() const override { return 2; }
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) override {
    return {mine, theirs_};
  }

private:
  std::string theirs_;
};

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
    SharedGather shared(n);
    std::vector<std::vector<SweepPoint>> got(static_cast<std::size_t>(n));
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r)
      ranks.emplace_back([&, r] {
        ThreadRank ex(shared, r);
        got[static_cast<std::size_t>(r)] =
            run_sweep(g, RunRequest{}, nullptr, {.threads = 2, .exchange = &ex});
      });
    for (std::thread& t : ranks) t.join();
    check_same_points(got[0], one);
    for (int r = 1; r < n; ++r) CHECK(got[static_cast<std::size_t>(r)].empty());
  }
}

TEST_CASE("sweep outcomes round-trip as bytes, and malformed bytes are refused", "[run][sweep][robust]") {
  const SweepGrid g = mixed_grid();
  const auto one = run_sweep(g, RunRequest{}, nullptr, {.threads = 1, .exchange = nullptr});
  std::vector<std::size_t> all(one.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::string bytes = encode_sweep_outcomes(one, all);
  auto fresh = expand_sweep_grid(g);
  decode_sweep_outcomes(bytes, fresh, [](std::size_t) { return true; }, "rank 1");
  check_same_points(fresh, one);

  const auto refused = [&](std::string_view b) {
    auto pts = expand_sweep_grid(g);
    CHECK_THROWS_WITH(decode_sweep_outcomes(b, pts, [](std::size_t i) { return i % 2 == 1; }, "rank 1"),
                      "sweep: the outcomes from rank 1 are cut short or malformed");
  };
  refused("");                                   // nothing
  refused(std::string_view(bytes).substr(0, bytes.size() - 1));  // cut short
  refused(bytes + "x");                          // trailing bytes
  refused(std::string(1, '\x07') + bytes.substr(1));  // not an outcome list
  refused(bytes);  // index 0 is not this rank's
  std::string huge = bytes;
  huge[1] = '\xff';  // claims more outcomes than points
  refused(huge);
}

TEST_CASE("a sweep tells on rank 0 what went wrong on another rank", "[run][sweep][robust]") {
  SweepGrid g;
  g.schedules = {"1f1b"};
  g.devices = {2};
  g.microbatches = {2, 4, 8};
  const auto run_with = [&](std::string theirs) {
    ScriptedPeer ex(std::move(theirs));
    return run_sweep(g, RunRequest{}, nullptr, {.threads = 1, .exchange = &ex});
  };
  // rank 1's own points (index 1), as it would send them
  const auto one = run_sweep(g, RunRequest{}, nullptr, {.threads = 1, .exchange = nullptr});
  check_same_points(run_with(encode_sweep_outcomes(one, {1})), one);
  // its error
  std::string failed(1, '\x02');
  const std::string what = "out of memory";
  const auto len = static_cast<std::uint32_t>(what.size());
  failed.append(reinterpret_cast<const char*>(&len), sizeof len);
  failed += what;
  CHECK_THROWS_WITH(run_with(failed), "sweep: rank 1 failed: out of memory");
  // too few, the wrong ones, or the same one twice
  CHECK_THROWS_WITH(run_with(encode_sweep_outcomes(one, {})),
                    "sweep: rank 1 sent 0 outcomes, expected 1");
  CHECK_THROWS_WITH(run_with(encode_sweep_outcomes(one, {2})),
                    Catch::Contains("from rank 1 are cut short or malformed"));
  CHECK_THROWS_WITH(run_with(encode_sweep_outcomes(one, {1, 1})),
                    Catch::Contains("from rank 1 are cut short or malformed"));
  CHECK_THROWS_WITH(run_with("\x02"), Catch::Contains("from rank 1 are cut short or malformed"));
}
