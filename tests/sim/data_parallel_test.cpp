// Tests of the data-parallel tail: ring times, the per-device comm stream after each stage's
// last backward, what the other stages' compute hides, ZeRO-1's gather, and several iterations.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/sim/data_parallel.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/run.hpp"
#include "tests/sim/sim_fixtures.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace ppsim;

namespace {

using ppsim::test::ms;

// Two replicas on a link of 1 GB/s (a byte per ns) and no latency: an all-reduce of X bytes
// takes 2 (n - 1) X / (n 1 GB/s) = X ns, a reduce-scatter or all-gather X / 2 ns.
DataParallelSync two_replicas(bool shard = false) {
  return {.replicas = 2, .shard = shard, .latency = 0, .gbytes_per_s = 1};
}

// F = B = W = 1 ms, and per stage the parameters given (fp32 gradients: 4 bytes each).
CostSpec costs_with_params(const std::vector<double>& params) {
  CostSpec spec = parse_costs("F=1,B=1,W=1");
  const StageCosts one = spec.stages.front();
  spec.stages.assign(params.size(), one);
  for (std::size_t s = 0; s < params.size(); ++s) spec.stages[s].params = params[s];
  return spec;
}

// One device holding stages 0 and 1 (a loop of two chunks), one micro-batch:
//   0F0 [0,1] 1F0 [1,2] 1B0 [2,3] 1W0 [3,4] 0B0 [4,5] 0W0 [5,6]
// stage 1's gradients are ready at 4, stage 0's at 6: a gap of 2 ms.
Schedule one_device_two_stages() {
  Schedule s = make_pipeline("tiny-v2", 1, 1, loop_placement(1, 2));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::F, 1, 0), Task::make(Kind::B, 1, 0),
                Task::make(Kind::W, 1, 0), Task::make(Kind::B, 0, 0), Task::make(Kind::W, 0, 0)};
  return s;
}

} // namespace

TEST_CASE("ring collectives: 2 (n - 1) steps for an all-reduce, n - 1 for the others", "[sim][dp]") {
  // 8 ranks, 8 GB over 50 GB/s, 5 us per step: each step moves 1 GB / 50 GB/s = 20 ms
  CHECK(ring_time(CollectiveKind::AllReduce, 8e9, 8, 5'000, 50) == 14 * (5'000 + 20'000'000));
  CHECK(ring_time(CollectiveKind::ReduceScatter, 8e9, 8, 5'000, 50) == 7 * (5'000 + 20'000'000));
  CHECK(ring_time(CollectiveKind::AllGather, 8e9, 8, 5'000, 50) == 7 * (5'000 + 20'000'000));
  CHECK(ring_time(CollectiveKind::AllReduce, 8e9, 1, 5'000, 50) == 0);
  CHECK(ring_time(CollectiveKind::AllReduce, 1e6, 2, 0, 1) == 1'000'000);
  // no bandwidth given: the latency terms only
  CHECK(ring_time(CollectiveKind::AllReduce, 1e6, 4, 10, 0) == 60);
  CHECK(collective_name(CollectiveKind::ReduceScatter) == "reduce-scatter");
}

TEST_CASE("dp: each stage's reduction starts after its last backward; the iteration ends with the last", "[sim][dp]") {
  // ZB-H1 at p = 2, m = 1 (d0: 0F0 0B0 0W0, d1: 1F0 1B0 1W0), F = B = W = 1 ms:
  //   d0: F [0,1]            B [3,4] W [4,5]   all-reduce of stage 0 [5,7]
  //   d1:     F [1,2] B [2,3] W [3,4]           all-reduce of stage 1 [4,5]
  // 2 MB of stage-0 gradients take 2 ms, 1 MB of stage 1's 1 ms.
  const Run r = run_schedule(test::two_device_pipeline(), costs_with_params({5e5, 2.5e5}), {}, {},
                             two_replicas());
  CHECK(r.metrics.makespan == 5 * ms);  // the tasks' own timeline does not move
  REQUIRE(r.timeline.collectives.size() == 2);
  const CollectiveEvent& c0 = r.timeline.collectives[0];
  const CollectiveEvent& c1 = r.timeline.collectives[1];
  CHECK((c0.device == 0 && c0.stage == 0 && c0.kind == CollectiveKind::AllReduce));
  CHECK((c0.issue == 5 * ms && c0.start == 5 * ms && c0.end == 7 * ms));
  CHECK(c0.bytes == 2e6);
  CHECK((c1.device == 1 && c1.stage == 1 && c1.start == 4 * ms && c1.end == 5 * ms));
  CHECK(r.iterations.iteration_time == 7 * ms);
  CHECK(has_iteration_time(r));
  CHECK(r.metrics.exposed_dp == 2 * ms);
  CHECK(test::device_metrics(r, 0).dp_busy == 2 * ms);
  CHECK(test::device_metrics(r, 0).exposed_dp == 2 * ms);
  CHECK(test::device_metrics(r, 1).dp_busy == 1 * ms);
  CHECK(test::device_metrics(r, 1).exposed_dp == 1 * ms);
}

TEST_CASE("dp: a reduction exactly as long as the device's remaining compute is hidden; twice as long is exposed by the difference", "[sim][dp]") {
  const Schedule s = one_device_two_stages();
  // stage 1 ready at 4, stage 0 at 6 (the device's end); stage 0's reduction takes 1 ms
  const double t0 = 2.5e5;  // 1 MB: 1 ms
  SECTION("2 ms, the gap: hidden") {
    const Run r = run_schedule(s, costs_with_params({t0, 5e5}), {}, {}, two_replicas());
    REQUIRE(r.timeline.collectives.size() == 2);
    CHECK(r.timeline.collectives[0].stage == 1);  // first ready, first served
    CHECK((r.timeline.collectives[0].start == 4 * ms && r.timeline.collectives[0].end == 6 * ms));
    CHECK((r.timeline.collectives[1].start == 6 * ms && r.timeline.collectives[1].end == 7 * ms));
    CHECK(r.metrics.exposed_dp == 1 * ms);  // stage 0's own reduction only
  }
  SECTION("4 ms, twice the gap: 2 ms more exposed") {
    const Run r = run_schedule(s, costs_with_params({t0, 1e6}), {}, {}, two_replicas());
    REQUIRE(r.timeline.collectives.size() == 2);
    CHECK(r.timeline.collectives[0].end == 8 * ms);
    CHECK((r.timeline.collectives[1].start == 8 * ms && r.timeline.collectives[1].end == 9 * ms));
    CHECK(r.metrics.exposed_dp == 3 * ms);
    CHECK(r.iterations.iteration_time == 9 * ms);
  }
}

TEST_CASE("dp with ZeRO-1: reduce-scatter, the optimizer step, then the parameters' all-gather", "[sim][dp]") {
  // stage 1: 1 M parameters (4 MB of gradients: reduce-scatter 2 ms; 2 MB of bf16 weights:
  // all-gather 1 ms); stage 0: 0.5 M (1 ms, 0.5 ms). Step 1 ms.
  //   RS1 [4,6] RS0 [6,7] step [7,8] AG0 [8,8.5] AG1 [8.5,9.5]
  const Run plain = run_schedule(one_device_two_stages(), costs_with_params({5e5, 1e6}));
  const DataParallelTail tail =
      data_parallel_tail(plain.timeline, plain.costs, two_replicas(true), 1 * ms);
  REQUIRE(tail.collectives.size() == 4);
  const auto& c = tail.collectives;
  CHECK((c[0].kind == CollectiveKind::ReduceScatter && c[0].stage == 1 && c[0].end == 6 * ms));
  CHECK((c[1].kind == CollectiveKind::ReduceScatter && c[1].stage == 0 && c[1].end == 7 * ms));
  CHECK(tail.step_start[0] == 7 * ms);
  CHECK((c[2].kind == CollectiveKind::AllGather && c[2].stage == 0));
  CHECK((c[2].start == 8 * ms && c[2].end == 8'500'000));
  CHECK((c[3].stage == 1 && c[3].start == 8'500'000 && c[3].end == 9'500'000));
  CHECK(tail.end[0] == 9'500'000);
  CHECK(tail.iteration_end == 9'500'000);
}

TEST_CASE("dp: one replica changes nothing", "[sim][dp]") {
  const CostSpec costs = costs_with_params({5e5, 2.5e5});
  const Run plain = run_schedule(test::two_device_pipeline(), costs);
  const Run one = run_schedule(test::two_device_pipeline(), costs, {}, {},
                               {.replicas = 1, .gbytes_per_s = 1});
  CHECK(one.timeline.collectives.empty());
  CHECK_FALSE(has_iteration_time(one));
  CHECK(one.metrics.makespan == plain.metrics.makespan);
  CHECK(one.parameters == plain.parameters);
  const DataParallelTail tail = data_parallel_tail(plain.timeline, plain.costs, {}, 2 * ms);
  CHECK(tail.collectives.empty());
  CHECK(tail.iteration_end == 7 * ms);  // the last task's end + the step
}

TEST_CASE("dp over several iterations: every iteration ends with its tail, each a shifted copy", "[sim][dp]") {
  // as above, a step of 1 ms: d0 ends at 7 + 1 = 8, d1 at 5 + 1 = 6: 8 ms per iteration
  const IterationOptions three{.count = 3, .optimizer_step = 1 * ms, .sync = SyncMode::AllReduce};
  const Run r = run_iterations(test::two_device_pipeline(), costs_with_params({5e5, 2.5e5}), three,
                               {}, two_replicas());
  CHECK(r.iterations.iteration_time == 8 * ms);
  const Run plain = run_iterations(test::two_device_pipeline(), costs_with_params({5e5, 2.5e5}), three);
  CHECK(plain.iterations.iteration_time == 6 * ms);
  REQUIRE(r.timeline.collectives.size() == 6);
  CHECK(r.timeline.collectives[4].start == 5 * ms + 2 * 8 * ms);  // iteration 2's, device 0
  // iteration 1 starts when iteration 0's tail has ended
  const auto d0 = r.timeline.device_runs(0);
  CHECK(d0[3].start == 8 * ms);
  CHECK(r.metrics.exposed_dp == 2 * ms);
  const IterationOptions pv{.count = 2, .optimizer_step = 0, .sync = SyncMode::PostValidation};
  CHECK_THROWS_AS(run_iterations(test::two_device_pipeline(), costs_with_params({1, 1}), pv, {},
                                 two_replicas()),
                  ConfigError);
}

TEST_CASE("dp: bad settings are refused", "[sim][dp]") {
  const Run plain = run_schedule(test::two_device_pipeline(), costs_with_params({1, 1}));
  CHECK_THROWS_AS(data_parallel_tail(plain.timeline, plain.costs, {.replicas = 0}, 0), ConfigError);
  CHECK_THROWS_AS(data_parallel_tail(plain.timeline, plain.costs,
                                     {.replicas = 2, .gbytes_per_s = -1}, 0),
                  ConfigError);
}
