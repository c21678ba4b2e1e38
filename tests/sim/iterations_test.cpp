// Tests of multi-iteration runs: the repeated schedule, the engine's pauses and barriers, and
// the steady-state iteration time under all-reduce and post-validation.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/sim/sim_fixtures.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace ppsim;

namespace {

using ppsim::test::ms;

using test::two_device_pipeline;

IterationOptions iterations(int k, Ticks step, SyncMode sync) {
  IterationOptions o;
  o.count = k;
  o.optimizer_step = step;
  o.sync = sync;
  return o;
}

Ticks iteration_time(const std::string& name, int p, int m, const std::string& costs, int k,
                     Ticks step, SyncMode sync) {
  const Schedule s = make_schedule(name, {.devices = p, .microbatches = m});
  const CostModel c = cost_model_for(parse_costs(costs), s);
  return simulate_iterations(s, c, iterations(k, step, sync)).iteration_time;
}

} // namespace

TEST_CASE("the repeated schedule offsets micro-batch ids per iteration and validates",
          "[sim][iterations]") {
  const Schedule one = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const Schedule three = repeat_schedule(one, 3);
  CHECK(three.microbatches == 24);
  CHECK(three.task_count() == 3 * one.task_count());
  CHECK(three.stage_device == one.stage_device);
  CHECK(validate(three).empty());
  const auto n = one.order[1].size();
  REQUIRE(three.order[1].size() == 3 * n);
  for (std::size_t j = 0; j < n; ++j) {
    Task t = one.order[1][j];
    t.microbatch += 16;
    CHECK(three.order[1][2 * n + j] == t);
  }
  CHECK(repeat_schedule(one, 1) == one);

  const Schedule dp = make_schedule("dualpipe-v", {.devices = 4, .microbatches = 8});
  const Schedule dp2 = repeat_schedule(dp, 2);
  CHECK(validate(dp2).empty());
  for (const Task& t : dp2.order[0])
    if (t.kind == Kind::FB) CHECK((t.microbatch >= 8) == (t.microbatch2 >= 8));
}

TEST_CASE("empty simulator options give exactly the plain simulation", "[sim][iterations]") {
  const Schedule s = make_schedule("zb-v", {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1.5,W=0.7,comm=0.1"), s);
  const Timeline a = simulate(s, c);
  const Timeline b = simulate(s, c, SimOptions{});
  REQUIRE(a.runs.size() == b.runs.size());
  for (std::size_t r = 0; r < a.runs.size(); ++r) {
    CHECK(a.runs[r].start == b.runs[r].start);
    CHECK(a.runs[r].end == b.runs[r].end);
  }
  CHECK(a.comms.size() == b.comms.size());
}

TEST_CASE("a pause keeps its device busy but does not delay the run's results",
          "[sim][iterations]") {
  const Schedule s = two_device_pipeline();
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1"), s);
  SimOptions o;
  o.pause_after.assign(6, 0);
  o.pause_after[0] = 10 * ms;  // after 0F0
  const Timeline t = simulate(s, c, o);
  const auto d0 = t.device_runs(0), d1 = t.device_runs(1);
  CHECK(d1[0].start == 1 * ms);   // 1F0 still gets 0F0's result at its end
  CHECK(d1[1].end == 3 * ms);
  CHECK(d0[1].start == 11 * ms);  // 0B0 waits for the pause, not for 1B0 (ready at 3)
}

TEST_CASE("a barrier releases at its members' last end plus its delay", "[sim][iterations]") {
  const Schedule s = two_device_pipeline();
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1"), s);
  SimOptions o;
  o.barrier_member = {0, -1, -1, 0, -1, -1};  // 0F0 and 1F0
  o.barrier_gate = {-1, -1, -1, -1, 0, -1};   // 1B0
  o.barrier_delay = {5 * ms};
  const Timeline t = simulate(s, c, o);
  CHECK(t.device_runs(1)[1].start == 7 * ms);  // 1F0 ends at 2, + 5

  o.barrier_delay = {5 * ms, 0};
  o.barrier_gate[5] = 2;  // no such barrier
  CHECK_THROWS_AS(simulate(s, c, o), ConfigError);
  o.barrier_gate.pop_back();
  CHECK_THROWS_AS(simulate(s, c, o), ConfigError);
}

TEST_CASE("with all-reduce the iteration time is makespan plus the step, exactly",
          "[sim][iterations][property]") {
  const auto name = GENERATE(as<std::string>{}, "gpipe", "1f1b", "zb-h1", "zb-h2", "zb-v",
                             "interleaved-1f1b", "dualpipe-v");
  const auto costs = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=0.5,comm=0.3");
  const int k = GENERATE(1, 2, 4);
  CAPTURE(name, costs, k);
  const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(parse_costs(costs), s);
  const Metrics one = measure(simulate(s, c), c);
  const IterationTimeline it =
      simulate_iterations(s, c, iterations(k, 2 * ms, SyncMode::AllReduce));
  CHECK(it.iteration_time == one.makespan + 2 * ms);
  // Every iteration is the first one shifted by makespan + step.
  const Timeline first = simulate(s, c);
  const auto per_iter = first.runs.size();
  REQUIRE(it.timeline.runs.size() == per_iter * static_cast<std::size_t>(k));
  const Ticks shift = one.makespan + 2 * ms;
  for (int d = 0; d < 4; ++d) {
    const auto a = first.device_runs(d);
    const auto b = it.timeline.device_runs(d);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto iter = static_cast<Ticks>(i / a.size());
      CHECK(b[i].start == a[i % a.size()].start + iter * shift);
    }
  }
}

TEST_CASE("post-validation is never slower than all-reduce and the first iteration is unchanged",
          "[sim][iterations][property]") {
  const auto name = GENERATE(as<std::string>{}, "gpipe", "1f1b", "zb-h1", "zb-h2", "zb-1p",
                             "zb-v", "v-half", "interleaved-1f1b", "dualpipe");
  const auto costs = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=0.5,comm=0.3");
  CAPTURE(name, costs);
  const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(parse_costs(costs), s);
  const Timeline single = simulate(s, c);
  const Metrics one = measure(single, c);
  const IterationTimeline pv =
      simulate_iterations(s, c, iterations(4, 2 * ms, SyncMode::PostValidation));
  CHECK(pv.iteration_time <= one.makespan + 2 * ms);
  CHECK(pv.iteration_time >= one.ideal + 2 * ms);  // the busiest device works every iteration
  for (int d = 0; d < 4; ++d) {
    const auto a = single.device_runs(d);
    const auto b = pv.timeline.device_runs(d);
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(b[i].start == a[i].start);
      CHECK(b[i].end == a[i].end);
    }
  }
}

TEST_CASE("post-validation overlaps the next F with the tail of zero-bubble schedules",
          "[sim][iterations]") {
  // ZB-H2 and ZB-V at p = 4, m = 8, F = B = W = 1: the first device ends before the others
  // (their deferred W), so without a barrier the next iteration starts there early, and the
  // iteration time drops from makespan + step to the paper's cost (max span) + step.
  for (const char* name : {"zb-h2", "zb-v"}) {
    CAPTURE(name);
    const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
    const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1"), s);
    const Metrics one = measure(simulate(s, c), c);
    const Ticks ar = iteration_time(name, 4, 8, "F=1,B=1,W=1", 4, 2 * ms, SyncMode::AllReduce);
    const Ticks pv =
        iteration_time(name, 4, 8, "F=1,B=1,W=1", 4, 2 * ms, SyncMode::PostValidation);
    CHECK(ar == one.makespan + 2 * ms);
    CHECK(pv < ar);
    CHECK(pv == one.cost + 2 * ms);
    CHECK(one.cost == 24 * ms);
  }
  CHECK(iteration_time("zb-h2", 4, 8, "F=1,B=1,W=1", 4, 2 * ms, SyncMode::AllReduce) == 29 * ms);
  CHECK(iteration_time("zb-v", 4, 8, "F=1,B=1,W=1", 4, 2 * ms, SyncMode::AllReduce) ==
        27 * ms + ms / 2);
}

TEST_CASE("post-validation gains nothing when the first device also ends the iteration",
          "[sim][iterations]") {
  // 1F1B and ZB-H1: device 0 runs the last backward (it waits for every later stage), so the
  // next iteration cannot start anywhere before device 0's end + step: the same as the barrier.
  for (const char* name : {"1f1b", "zb-h1"}) {
    CAPTURE(name);
    const Ticks ar = iteration_time(name, 4, 8, "F=1,B=1,W=1", 3, 2 * ms, SyncMode::AllReduce);
    const Ticks pv =
        iteration_time(name, 4, 8, "F=1,B=1,W=1", 3, 2 * ms, SyncMode::PostValidation);
    CHECK(pv == ar);
  }
  CHECK(iteration_time("1f1b", 4, 8, "F=1,B=1,W=1", 3, 2 * ms, SyncMode::AllReduce) == 35 * ms);
  CHECK(iteration_time("zb-h1", 4, 8, "F=1,B=1,W=1", 3, 2 * ms, SyncMode::AllReduce) == 29 * ms);
}

TEST_CASE("a hand-derived two-device case with a slow last-stage W", "[sim][iterations]") {
  // F = B = 1 everywhere, W = 1 on stage 0 and 10 on stage 1, step s = 2, comm 0.
  // Iteration 0: d0 F[0,1] B[3,4] W[4,5]; d1 F[1,2] B[2,3] W[3,13]. E0 = 13 + 2 = 15.
  // all-reduce: iteration 1 is iteration 0 shifted by 15: E1 = 28 + 2 = 30, time 15.
  // post-validation: d0 F[7,8] (5 + 2); d1 F[15,16] (13 + 2) B[16,17] W[17,27]; d0 B[17,18]
  // W[18,19]. E1 = 27 + 2 = 29, time 14: d0's next F overlapped d1's long W.
  const Schedule s = two_device_pipeline();
  CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1"), s);
  c.stage[1].W = 10 * ms;
  const IterationTimeline ar = simulate_iterations(s, c, iterations(2, 2 * ms, SyncMode::AllReduce));
  CHECK(ar.iteration_end == std::vector<Ticks>{15 * ms, 30 * ms});
  CHECK(ar.iteration_time == 15 * ms);
  const IterationTimeline pv =
      simulate_iterations(s, c, iterations(2, 2 * ms, SyncMode::PostValidation));
  CHECK(pv.iteration_end == std::vector<Ticks>{15 * ms, 29 * ms});
  CHECK(pv.iteration_time == 14 * ms);
  const auto d0 = pv.timeline.device_runs(0), d1 = pv.timeline.device_runs(1);
  CHECK(d0[3].start == 7 * ms);
  CHECK(d1[3].start == 15 * ms);
  CHECK(d1[5].end == 27 * ms);
  CHECK(d0[4].start == 17 * ms);
  CHECK(d0[5].end == 19 * ms);

  // With K = 1 the iteration time is makespan + step.
  CHECK(simulate_iterations(s, c, iterations(1, 2 * ms, SyncMode::PostValidation))
            .iteration_time == 15 * ms);
}

TEST_CASE("run_iterations keeps one iteration's metrics and shows every iteration",
          "[sim][iterations]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  const Run plain = run_schedule(make_schedule("zb-h1", {.devices = 4, .microbatches = 8}), costs);
  const Run r = run_iterations(make_schedule("zb-h1", {.devices = 4, .microbatches = 8}), costs,
                               iterations(3, 1 * ms, SyncMode::PostValidation));
  CHECK(r.metrics.cost == 54 * ms);  // DESIGN.md's known answer, per iteration
  CHECK(r.metrics.cost == plain.metrics.cost);
  CHECK(r.metrics.peak_memory == plain.metrics.peak_memory);
  CHECK(r.schedule.microbatches == 24);
  CHECK(r.timeline.runs.size() == 3 * plain.timeline.runs.size());
  CHECK(r.iterations.options.count == 3);
  CHECK(r.iterations.iteration_time == plain.metrics.makespan + 1 * ms);
  REQUIRE(r.iterations.peak_memory.size() == 4);
  CHECK(r.iterations.peak_memory[0] == 4.0);
  bool named = false;
  for (const auto& [key, value] : r.parameters) named = named || (key == "sync" && value == "post-validation");
  CHECK(named);
}

TEST_CASE("bad iteration options are rejected naming the value", "[sim][iterations]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(parse_costs("F=1"), s);
  CHECK_THROWS_WITH(simulate_iterations(s, c, iterations(0, 0, SyncMode::AllReduce)),
                    Catch::Contains("--iterations 0"));
  CHECK_THROWS_AS(simulate_iterations(s, c, iterations(1, -1, SyncMode::AllReduce)), ConfigError);
  CHECK_THROWS_WITH(simulate_iterations(s, c, iterations(200'000, 0, SyncMode::AllReduce)),
                    Catch::Contains("too large"));
}
