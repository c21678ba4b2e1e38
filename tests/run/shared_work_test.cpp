// Tests of items shared over threads and ranks (ppsim/run/shared_work.hpp), and of a plan made on
// several ranks.
#include "ppsim/run/shared_work.hpp"

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/plan.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/run/fake_ranks.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <vector>

using namespace ppsim;

namespace {

std::string square(std::size_t i) { return fmt::format("{}", i * i); }

std::vector<std::string> squares(std::size_t n) {
  std::vector<std::string> want;
  for (std::size_t i = 0; i < n; ++i) want.push_back(square(i));
  return want;
}

// A rank's bytes, as share_work frames them: its results, or its error.
std::string results(const std::vector<std::pair<std::uint64_t, std::string>>& items) {
  detail::ByteWriter w;
  w.put(std::uint8_t{1});
  w.put(static_cast<std::uint64_t>(items.size()));
  for (const auto& [i, bytes] : items) {
    w.put(i);
    w.text(bytes);
  }
  return w.take();
}

std::string failed(std::uint8_t kind, const std::string& what, std::uint64_t item = 1) {
  detail::ByteWriter w;
  w.put(std::uint8_t{2});
  w.put(kind);
  w.put(item);
  w.text(what);
  return w.take();
}

std::vector<std::string> with_peer(std::size_t n, std::string theirs) {
  test::ScriptedPeer ex(std::move(theirs));
  return share_work(n, {.threads = 1, .exchange = &ex}, square, nullptr, "items");
}

} // namespace

TEST_CASE("shared work gives every item's result in order, on any threads and ranks",
          "[run][shared-work]") {
  for (const std::size_t n : {0u, 1u, 7u, 100u}) {
    CAPTURE(n);
    for (const unsigned threads : {1u, 2u, 5u})
      CHECK(share_work(n, {.threads = threads, .exchange = nullptr}, square, nullptr, "items") ==
            squares(n));
    for (const int ranks : {2, 3, 8}) {
      CAPTURE(ranks);
      const auto got = test::run_on_thread_ranks<std::vector<std::string>>(ranks, [&](PointExchange& ex) {
        return share_work(n, {.threads = 2, .exchange = &ex}, square, nullptr, "items");
      });
      for (const auto& on_rank : got) CHECK(on_rank == squares(n));  // every rank has them all
    }
  }
}

TEST_CASE("shared work rethrows the lowest item's error as its kind, on every rank",
          "[run][shared-work][robust]") {
  const auto run = [](std::size_t i) -> std::string {
    if (i == 5) throw ConfigError("item 5 is bad");
    if (i == 6) throw ScheduleError("item 6 deadlocks");
    return square(i);
  };
  CHECK_THROWS_AS(share_work(9, {.threads = 3, .exchange = nullptr}, run, nullptr, "items"),
                  ConfigError);
  CHECK_THROWS_WITH(share_work(9, {.threads = 3, .exchange = nullptr}, run, nullptr, "items"),
                    "item 5 is bad");
  // Item 5 is rank 1's of 2 (and rank 2's of 3): rank 0 names the rank; the rank itself does not.
  for (const int ranks : {2, 3}) {
    CAPTURE(ranks);
    const auto told = test::run_on_thread_ranks<std::string>(ranks, [&](PointExchange& ex) {
      try {
        (void)share_work(9, {.threads = 1, .exchange = &ex}, run, nullptr, "items");
        return std::string("no error");
      } catch (const ConfigError& e) {
        return std::string(e.what());
      } catch (const std::exception& e) {
        return fmt::format("not a ConfigError: {}", e.what());
      }
    });
    const int at = 5 % ranks;
    for (int r = 0; r < ranks; ++r)
      CHECK(told[static_cast<std::size_t>(r)] ==
            (r == at ? std::string("item 5 is bad") : fmt::format("rank {}: item 5 is bad", at)));
  }
}

TEST_CASE("shared work refuses another rank's bytes that are not its items",
          "[run][shared-work][robust]") {
  // n = 3 over 2 ranks: rank 1 has item 1 alone
  CHECK(with_peer(3, results({{1, square(1)}})) == squares(3));
  const auto malformed = Catch::Contains("the results from rank 1 are cut short or malformed");
  CHECK_THROWS_WITH(with_peer(3, ""), malformed);
  CHECK_THROWS_WITH(with_peer(3, std::string(1, '\x09')), malformed);
  CHECK_THROWS_WITH(with_peer(3, results({})), "rank 1 sent 0 results, expected 1");
  CHECK_THROWS_WITH(with_peer(3, results({{1, "a"}, {1, "a"}})), "rank 1 sent 2 results, expected 1");
  CHECK_THROWS_WITH(with_peer(3, results({{2, "a"}})), malformed);   // rank 0's item
  CHECK_THROWS_WITH(with_peer(3, results({{99, "a"}})), malformed);  // no such item
  CHECK_THROWS_WITH(with_peer(3, results({{1, "a"}}) + "x"), malformed);
  const std::string whole = results({{1, "abc"}});
  CHECK_THROWS_WITH(with_peer(3, whole.substr(0, whole.size() - 1)), malformed);
  // its errors, as their kinds
  CHECK_THROWS_AS(with_peer(3, failed(1, "bad value")), ConfigError);
  CHECK_THROWS_AS(with_peer(3, failed(2, "deadlock")), ScheduleError);
  CHECK_THROWS_AS(with_peer(3, failed(3, "too big")), InfeasibleError);
  CHECK_THROWS_WITH(with_peer(3, failed(0, "out of memory")), "rank 1: out of memory");
  CHECK_THROWS_WITH(with_peer(3, failed(7, "?")), malformed);
  CHECK_THROWS_WITH(with_peer(3, failed(0, "x").substr(0, 4)), malformed);
  CHECK_THROWS_WITH(with_peer(3, failed(0, "x", 2)), malformed);  // not its item
  CHECK_THROWS_WITH(with_peer(3, failed(0, "x") + "y"), malformed);
}

TEST_CASE("a plan made on several ranks is the plan of one process", "[run][shared-work][plan]") {
  // llama3-8b on two gh200s: candidates that fit as they are, with recomputation, and with
  // activations offloaded, so every field of a candidate travels.
  PlanRequest rq;
  rq.workload.model = load_model("llama3-8b");
  rq.workload.device = load_device("gh200");
  rq.devices = 2;
  rq.global_batch = 16;
  rq.workers = {.threads = 1, .exchange = nullptr};
  const Plan one = make_plan(rq);
  const auto any = [&](auto pred) { return std::any_of(one.candidates.begin(), one.candidates.end(), pred); };
  REQUIRE(any([](const PlanCandidate& c) { return !c.offload.empty(); }));
  REQUIRE(any([](const PlanCandidate& c) { return !c.recompute.empty(); }));
  REQUIRE(any([](const PlanCandidate& c) { return !c.fits; }));
  const auto got = test::run_on_thread_ranks<Plan>(3, [&](PointExchange& ex) {
    PlanRequest mine = rq;
    mine.workers = {.threads = 2, .exchange = &ex};
    return make_plan(mine);
  });
  for (const Plan& p : got) {
    CHECK(p.best == one.best);
    CHECK(p.why == one.why);
    CHECK(p.slicing == one.slicing);
    CHECK(p.simulated == one.simulated);
    REQUIRE(p.candidates.size() == one.candidates.size());
    for (std::size_t i = 0; i < one.candidates.size(); ++i) {
      const PlanCandidate& a = p.candidates[i];
      const PlanCandidate& b = one.candidates[i];
      CAPTURE(i, b.schedule, b.microbatch_size, b.layout);
      CHECK(a.schedule == b.schedule);
      CHECK(a.chunks == b.chunks);
      CHECK(a.slices == b.slices);
      CHECK(a.microbatches == b.microbatches);
      CHECK(a.microbatch_size == b.microbatch_size);
      CHECK(a.layout == b.layout);
      CHECK(a.mem_limit == b.mem_limit);
      CHECK(a.recompute == b.recompute);
      CHECK(a.without_knob_ms == b.without_knob_ms);
      CHECK(a.offload == b.offload);
      CHECK(a.offloaded_bytes == b.offloaded_bytes);
      CHECK(a.overlap == b.overlap);
      CHECK(a.exposed_comm_ms == b.exposed_comm_ms);
      CHECK(a.task_comm_ms == b.task_comm_ms);
      CHECK(a.exposed_copy_ms == b.exposed_copy_ms);
      CHECK(a.iteration_time_ms == b.iteration_time_ms);
      CHECK(a.exposed_dp_ms == b.exposed_dp_ms);
      CHECK(a.cost_ms == b.cost_ms);
      CHECK(a.bubble_rate == b.bubble_rate);
      CHECK(a.peak_bytes == b.peak_bytes);
      CHECK(a.activation_peak_bytes == b.activation_peak_bytes);
      CHECK(a.device_peak_bytes == b.device_peak_bytes);
      CHECK(a.fits == b.fits);
      CHECK(a.reason == b.reason);
    }
  }
}
