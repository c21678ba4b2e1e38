// Tests of the discrete-event engine, the task graph and the metrics.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/task_graph.hpp"
#include "tests/sim/sim_fixtures.hpp"

#include <catch2/catch.hpp>
#include <tuple>

using namespace ppsim;

namespace {

using ppsim::test::ms;

using test::two_device_pipeline;

} // namespace

TEST_CASE("a task starts when its device is free and its inputs have arrived", "[sim]") {
  const Schedule s = two_device_pipeline();
  const CostModel c = cost_model_for(parse_costs("F=1,B=2,W=3,comm=0.5"), s);
  const Timeline t = simulate(s, c);
  const auto d0 = t.device_runs(0), d1 = t.device_runs(1);
  CHECK(d0[0].start == 0);
  CHECK(d0[0].end == 1 * ms);
  CHECK(d1[0].start == 1 * ms + ms / 2);  // F crosses a device: + comm
  CHECK(d1[1].start == d1[0].end);         // B on the last stage right after its F
  CHECK(d1[1].end == 4 * ms + ms / 2);
  CHECK(d0[1].start == 5 * ms);  // B waits for the next stage's B plus comm
  CHECK(d0[2].start == 7 * ms);
  CHECK(d0[2].end == 10 * ms);
  REQUIRE(t.comms.size() == 2);
  CHECK(t.comms[0].send == 1 * ms);
  CHECK(t.comms[0].arrive == 1 * ms + ms / 2);
}

TEST_CASE("a fused BW releases the previous stage's backward only at its end", "[sim]") {
  Schedule s = make_pipeline("bw", 2, 1, loop_placement(2, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::BW, 0, 0)};
  s.order[1] = {Task::make(Kind::F, 1, 0), Task::make(Kind::BW, 1, 0)};
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1"), s);
  const Timeline t = simulate(s, c);
  CHECK(t.device_runs(1)[1].end == 4 * ms);
  CHECK(t.device_runs(0)[1].start == 4 * ms);
}

TEST_CASE("an FB starts when both halves' inputs exist and costs FB when given", "[sim]") {
  // d0 holds stages 0 and 3 (V shape on 2 devices), d1 stages 1 and 2.
  Schedule s = make_pipeline("fb", 2, 2, vshape_placement(2));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::F, 0, 1), Task::make(Kind::F, 3, 0),
                Task::make(Kind::B, 3, 0), Task::overlapped(3, 1, Kind::B, 0, 0),
                Task::make(Kind::B, 3, 1), Task::make(Kind::B, 0, 1), Task::make(Kind::W, 3, 0),
                Task::make(Kind::W, 0, 0), Task::make(Kind::W, 3, 1), Task::make(Kind::W, 0, 1)};
  s.order[1] = {Task::make(Kind::F, 1, 0), Task::make(Kind::F, 2, 0), Task::make(Kind::F, 1, 1),
                Task::make(Kind::F, 2, 1), Task::make(Kind::B, 2, 0), Task::make(Kind::B, 1, 0),
                Task::make(Kind::B, 2, 1), Task::make(Kind::B, 1, 1), Task::make(Kind::W, 2, 0),
                Task::make(Kind::W, 1, 0), Task::make(Kind::W, 2, 1), Task::make(Kind::W, 1, 1)};
  const CostModel sum = cost_model_for(parse_costs("F=2,B=2,W=2"), s);
  const CostModel fixed = cost_model_for(parse_costs("F=2,B=2,W=2,FB=3"), s);
  const Timeline a = simulate(s, sum);
  const Timeline b = simulate(s, fixed);
  const TaskRun& fa = a.device_runs(0)[4];
  const TaskRun& fb = b.device_runs(0)[4];
  CHECK(fa.task.kind == Kind::FB);
  CHECK(fa.end - fa.start == 2 * ms);  // chunk costs: F 1 + B 1
  CHECK(fb.end - fb.start == 3 * ms / 2);
  // Its start waits for 1B0 (from device 1) and 3F1's input 2F1.
  const TaskRun& b10 = a.device_runs(1)[5];
  CHECK(fa.start >= b10.end);
}

TEST_CASE("ties are processed in insertion order, so runs are byte-identical", "[sim]") {
  const Schedule s = make_schedule("zb-h2", {.devices = 6, .microbatches = 24});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,comm=0.1"), s);
  const Timeline a = simulate(s, c), b = simulate(s, c);
  REQUIRE(a.runs.size() == b.runs.size());
  for (std::size_t i = 0; i < a.runs.size(); ++i) {
    CHECK(a.runs[i].start == b.runs[i].start);
    CHECK(a.runs[i].end == b.runs[i].end);
  }
  CHECK(a.comms.size() == b.comms.size());
}

TEST_CASE("a deadlock names every blocked device, what it waits for, and the cycle", "[sim]") {
  // Each device runs the backward before the forward the other device needs.
  Schedule s = make_pipeline("cyclic", 2, 2, loop_placement(2, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::BW, 0, 0), Task::make(Kind::F, 0, 1),
                Task::make(Kind::BW, 0, 1)};
  s.order[1] = {Task::make(Kind::F, 1, 1), Task::make(Kind::F, 1, 0), Task::make(Kind::BW, 1, 0),
                Task::make(Kind::BW, 1, 1)};
  const CostModel c = cost_model_for(parse_costs("F=1"), s);
  try {
    (void)simulate(s, c);
    FAIL("no deadlock reported");
  } catch (const ScheduleError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("device 0: blocked at position 1 on 0BW0"));
    CHECK_THAT(msg, Catch::Contains("waits for 1B0"));
    CHECK_THAT(msg, Catch::Contains("device 1: blocked at position 0 on 1F1"));
    CHECK_THAT(msg, Catch::Contains("waits for 0F1"));
    CHECK_THAT(msg, Catch::Contains("cycle (each must finish before the next can start): "));
    CHECK_THAT(msg, Catch::Contains("[0BW0]"));
    CHECK_THAT(msg, Catch::Contains("<-- here"));
  }
  const auto cycle = find_cycle(s);
  CHECK(cycle.size() >= 3);
  CHECK(find_cycle(make_schedule("1f1b", {3, 6})).empty());
}

TEST_CASE("a task waiting for a result no device produces is reported as missing", "[sim]") {
  Schedule s = make_pipeline("missing", 2, 1, loop_placement(2, 1));
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::BW, 0, 0)};
  s.order[1] = {Task::make(Kind::BW, 1, 0)};
  const CostModel c = cost_model_for(parse_costs("F=1"), s);
  CHECK_THROWS_WITH(simulate(s, c), Catch::Contains("waits for 1F0, which no device runs"));
}

TEST_CASE("the critical path ends at the makespan and follows real dependencies", "[sim]") {
  for (const char* name : {"1f1b", "zb-h1", "zb-h2", "gpipe"}) {
    CAPTURE(name);
    const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
    const CostModel c = cost_model_for(parse_costs("F=1,B=1.5,W=0.7,comm=0.2"), s);
    const Timeline t = simulate(s, c);
    const Metrics m = measure(t, c);
    const CriticalPath cp = critical_path(s, c);
    CHECK(cp.length == m.makespan);
    REQUIRE(!cp.tasks.empty());
    CHECK(cp.tasks.front().index == 0);
  }
}

TEST_CASE("metrics follow their definitions on a hand-checked timeline", "[sim]") {
  const Schedule s = two_device_pipeline();
  const CostModel c = cost_model_for(parse_costs("F=1,B=2,W=3,comm=0.5,MB=1,MW=0.25"), s);
  const Metrics m = measure(simulate(s, c), c);
  // d0 runs [0,1) [5,7) [7,10): busy 6, span 10. d1 runs [1.5,2.5) [2.5,4.5) [4.5,7.5).
  CHECK(m.per_device[0].busy == 6 * ms);
  CHECK(m.per_device[0].span == 10 * ms);
  CHECK(m.per_device[0].idle == 4 * ms);
  CHECK(m.per_device[1].span == 6 * ms);
  CHECK(m.makespan == 10 * ms);
  CHECK(m.cost == 10 * ms);
  CHECK(m.ideal == 6 * ms);
  CHECK(m.bubble_rate == Approx(0.4));
  CHECK(m.bubble_over_ideal == Approx(4.0 / 6.0));
  CHECK(m.idle_fraction == Approx(1.0 - 12.0 / 20.0));
  CHECK(m.per_device[0].peak_memory == 1.0);
  const auto series = memory_series(simulate(s, c), c);
  REQUIRE(series[0].size() == 4);  // 0, +1 at F start, -0.75 at B end, -0.25 at W end
  CHECK(series[0][1].time == 0);
  CHECK(series[0][1].value == 1.0);
  CHECK(series[0][2].time == 7 * ms);
  CHECK(series[0][2].value == 0.25);
  CHECK(series[0][3].value == 0.0);
}

TEST_CASE("when W needs more than F kept, B raises memory from its start", "[sim]") {
  const Schedule s = two_device_pipeline();
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,MB=1,MW=1.5"), s);
  const Metrics m = measure(simulate(s, c), c);
  CHECK(m.per_device[0].peak_memory == 1.5);
}

TEST_CASE("a run's device follows from its place in the timeline", "[sim]") {
  const Schedule s = make_schedule("zb-h1", {.devices = 3, .microbatches = 4});
  const Timeline t = simulate(s, cost_model_for(parse_costs("F=1"), s));
  for (int d = 0; d < t.devices; ++d)
    for (int r = t.device_begin[static_cast<std::size_t>(d)];
         r < t.device_begin[static_cast<std::size_t>(d) + 1]; ++r)
      CHECK(t.device_of(r) == d);
  CHECK(sizeof(TaskRun) == 40);
}

TEST_CASE("a reused simulator gives every run exactly a fresh simulation", "[sim]") {
  // Larger, smaller and differently shaped schedules through one Simulator and one Timeline.
  Simulator sim;
  Timeline reused;
  for (const auto& [name, p, m] : {std::tuple{"zb-h2", 6, 24}, std::tuple{"1f1b", 2, 3},
                                   std::tuple{"dualpipe-v", 4, 8}, std::tuple{"zb-v", 3, 7}}) {
    CAPTURE(name, p, m);
    const Schedule s = make_schedule(name, {.devices = p, .microbatches = m});
    const CostModel c = cost_model_for(parse_costs("F=1,B=1.5,W=0.7,comm=0.1"), s);
    const Timeline fresh = simulate(s, c);
    sim.run(s, c, {}, reused);
    REQUIRE(reused.runs.size() == fresh.runs.size());
    CHECK(reused.device_begin == fresh.device_begin);
    for (std::size_t r = 0; r < fresh.runs.size(); ++r) {
      CHECK(reused.runs[r].task == fresh.runs[r].task);
      CHECK(reused.runs[r].start == fresh.runs[r].start);
      CHECK(reused.runs[r].end == fresh.runs[r].end);
    }
    REQUIRE(reused.comms.size() == fresh.comms.size());
    for (std::size_t k = 0; k < fresh.comms.size(); ++k) {
      CHECK(reused.comms[k].from == fresh.comms[k].from);
      CHECK(reused.comms[k].to == fresh.comms[k].to);
      CHECK(reused.comms[k].arrive == fresh.comms[k].arrive);
    }
  }
}
