// Tests of the copy stream: activation offload (O) and reload (R), their times, the memory they
// move between a device and its host, and what the backward waits for.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/offload_text.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/viz/metrics_json.hpp"
#include "tests/sim/sim_fixtures.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace ppsim;

namespace {

using ppsim::test::ms;

// Offload `fraction` of the stages in `stages` (all when empty), copy_ms per M_B.
OffloadPlan plan_for(const Schedule& s, double fraction, double copy_ms,
                     const std::vector<int>& stages = {}) {
  OffloadPlan plan;
  plan.fraction.assign(static_cast<std::size_t>(s.stages()), stages.empty() ? fraction : 0.0);
  for (const int st : stages) plan.fraction[static_cast<std::size_t>(st)] = fraction;
  plan.ns_per_unit = copy_ms * 1e6;
  return plan;
}

Run run_with(const std::string& name, int p, int m, const std::string& costs, const OffloadPlan& plan) {
  return run_schedule(make_schedule(name, {.devices = p, .microbatches = m}), parse_costs(costs),
                      {}, plan);
}

} // namespace

TEST_CASE("an offload whose copies fit before its backward is free", "[sim]") {
  // 1F1B, p = 2, m = 1, F = 1, BW = 2, stage 0 offloaded whole, a copy of X ms per M_B:
  //   d0: F0 [0,1]              O0 [1, 1+X]  R0 [1+X, 1+2X]   BW0 [max(4, 1+2X), +2]
  //   d1:        F0 [1,2] BW0 [2,4]
  // BW0 on d0 can start at 4 (d1's BW0 ends), so a window of 3 ms holds O and R: X = 1 fits.
  const Run plain = run_with("1f1b", 2, 1, "F=1,B=1,W=1", {});
  const Run r = run_with("1f1b", 2, 1, "F=1,B=1,W=1", plan_for(plain.schedule, 1, 1, {0}));
  CHECK(plain.metrics.makespan == 6 * ms);
  CHECK(r.metrics.makespan == 6 * ms);
  CHECK(r.metrics.exposed_copy == 0);
  REQUIRE(r.timeline.copies.size() == 2);
  const CopyEvent& o = r.timeline.copies[0];
  const CopyEvent& rl = r.timeline.copies[1];
  CHECK(o.kind == CopyKind::O);
  CHECK(o.issue == 1 * ms);  // at its F's end
  CHECK(o.start == 1 * ms);
  CHECK(o.end == 2 * ms);
  CHECK(rl.kind == CopyKind::R);
  // Asked for at the start of the task before BW0 (F0 itself), so it follows the offload.
  CHECK(rl.issue == 0);
  CHECK(rl.start == 2 * ms);
  CHECK(rl.end == 3 * ms);
  CHECK(test::device_metrics(r, 0).copy_busy == 2 * ms);
  CHECK(test::device_metrics(r, 0).offloaded_memory == 1.0);
  CHECK(test::device_metrics(r, 0).reloaded_memory == 1.0);
  CHECK(test::device_metrics(r, 0).host_peak_memory == 1.0);
  CHECK(test::device_metrics(r, 1).copy_busy == 0);
}

TEST_CASE("an offload whose copies are 3x longer is exposed by exactly the difference", "[sim]") {
  // As above with X = 3: O0 [1,4], R0 [4,7]; BW0 could start at 4 but waits for R0 until 7.
  // Exposed: 7 - 4 = 3 ms = (O + R = 6 ms) - (the window of 3 ms); the makespan 6 + 3 = 9.
  const Run r = run_with("1f1b", 2, 1, "F=1,B=1,W=1",
                         plan_for(make_schedule("1f1b", {.devices = 2, .microbatches = 1}), 1, 3, {0}));
  CHECK(r.metrics.makespan == 9 * ms);
  CHECK(r.metrics.exposed_copy == 3 * ms);
  CHECK(test::device_metrics(r, 0).exposed_copy == 3 * ms);
  CHECK(r.timeline.copies[1].exposed == 3 * ms);
  CHECK(r.timeline.device_runs(0)[1].start == 7 * ms);
}

TEST_CASE("a 2-stage 1F1B offload that fits inside the next F keeps the makespan", "[sim]") {
  // p = 2, m = 4, F = 1, BW = 2: makespan (m + p - 1) * 3 = 15. Stage 0 offloads whole with
  // copies of 0.25 ms: d0's R for BWk is asked for at the start of the F before it (1 ms),
  // so O + R = 0.5 ms fit and no backward waits.
  // NOTE: its peak stays 2 M_B: with the reload one task ahead, F0's activation is still
  // leaving when F1 starts, and BW0's reload returns during F1. The 4-stage case below shows
  // the memory a deeper warm-up saves.
  const Run plain = run_with("1f1b", 2, 4, "F=1,B=1,W=1", {});
  const Run r = run_with("1f1b", 2, 4, "F=1,B=1,W=1", plan_for(plain.schedule, 1, 0.25, {0}));
  CHECK(plain.metrics.makespan == 15 * ms);
  CHECK(r.metrics.makespan == 15 * ms);
  CHECK(r.metrics.exposed_copy == 0);
  CHECK(test::device_metrics(r, 0).peak_memory == 2.0);
  CHECK(test::device_metrics(r, 0).copy_busy == 8 * (ms / 4));  // 4 O + 4 R
}

TEST_CASE("a 4-stage 1F1B offload of stage 0 lowers its peak by exactly 2 M_B for free", "[sim]") {
  // p = 4, m = 8, F = 1, BW = 2: makespan 11 * 3 = 33; device 0 holds F0..F3 (4 M_B) before
  // BW0. Offloading stage 0 whole with copies of 0.5 ms: each O leaves during the next F, so
  // device 0 holds at most the F in progress and the one reload asked for a task ahead: 2 M_B.
  // Every R is asked for at the start of a task of at least 1 ms before its BW: nothing waits.
  const Run plain = run_with("1f1b", 4, 8, "F=1,B=1,W=1", {});
  const Run r = run_with("1f1b", 4, 8, "F=1,B=1,W=1", plan_for(plain.schedule, 1, 0.5, {0}));
  CHECK(plain.metrics.makespan == 33 * ms);
  CHECK(r.metrics.makespan == 33 * ms);
  CHECK(r.metrics.exposed_copy == 0);
  CHECK(test::device_metrics(plain, 0).peak_memory == 4.0);
  CHECK(test::device_metrics(r, 0).peak_memory == 2.0);
  for (int d = 1; d < 4; ++d) CHECK(test::device_metrics(r, d).peak_memory == test::device_metrics(plain, d).peak_memory);
  CHECK(test::device_metrics(r, 0).copy_busy == 16 * (ms / 2));
  CHECK(test::device_metrics(r, 0).offloaded_memory == 8.0);
  CHECK(test::device_metrics(r, 0).host_peak_memory == 3.0);  // F1, F2 and F3 while BW0's R is back
  CHECK(r.metrics.peak_memory == 3.0);            // device 1 now
}

TEST_CASE("offloading everything over an infinitely fast link holds nothing between F and B",
          "[sim][property]") {
  // copy = 0: an activation leaves at its F's end and returns when the task before its
  // backward starts (the reload one task ahead), so a device holds at most the F in progress
  // and that one reload: 2 M_B, and 1 on the last device, whose F comes right before its B.
  const int p = GENERATE(2, 3, 4, 6);
  const int m = GENERATE(4, 8, 12);
  CAPTURE(p, m);
  const Schedule s = make_schedule("1f1b", {.devices = p, .microbatches = m});
  const Run plain = run_schedule(s, parse_costs("F=1,B=1,W=1"));
  const Run r = run_schedule(s, parse_costs("F=1,B=1,W=1"), {}, plan_for(s, 1, 0));
  CHECK(r.metrics.makespan == plain.metrics.makespan);
  for (int d = 0; d < p; ++d) CHECK(test::device_metrics(r, d).peak_memory == (d == p - 1 ? 1.0 : 2.0));
}

TEST_CASE("an offload never raises peak memory and never shortens the run", "[sim][property]") {
  const auto name = GENERATE(as<std::string>{}, "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b",
                             "zb-v", "dualpipe-v");
  const int p = GENERATE(2, 4);
  const int m = GENERATE(8, 12);
  const auto costs = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=2,B=3,W=1,comm=0.5,MW=0.25");
  const double fraction = GENERATE(0.5, 1.0);
  const double copy = GENERATE(0.0, 0.7, 4.0);
  CAPTURE(name, p, m, costs, fraction, copy);
  const Schedule s = make_schedule(name, {.devices = p, .microbatches = m});
  const Run plain = run_schedule(s, parse_costs(costs));
  const Run r = run_schedule(s, parse_costs(costs), {}, plan_for(s, fraction, copy));
  CHECK(r.metrics.makespan >= plain.metrics.makespan);
  for (int d = 0; d < p; ++d) {
    CHECK(test::device_metrics(r, d).peak_memory <= test::device_metrics(plain, d).peak_memory + 1e-9);
    CHECK(test::device_metrics(r, d).offloaded_memory == Approx(test::device_metrics(r, d).reloaded_memory));
  }
  // Every backward of an offloaded stage got its reload, after its offload, before it started.
  std::size_t o = 0, rl = 0;
  for (const CopyEvent& c : r.timeline.copies) {
    (c.kind == CopyKind::O ? o : rl) += 1;
    CHECK(c.start >= c.issue);
    CHECK(c.end >= c.start);
  }
  CHECK(o == static_cast<std::size_t>(s.stages() * m));
  CHECK(rl == o);
  // Every device's memory comes back to where it started.
  for (const auto& series : memory_series(r.timeline, r.costs))
    CHECK(series.back().value == Approx(0.0).margin(1e-9));
  for (const auto& series : host_memory_series(r.timeline))
    CHECK(series.back().value == Approx(0.0).margin(1e-9));
}

TEST_CASE("simulator options reject a malformed offload", "[sim]") {
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 2});
  const CostModel c = cost_model_for(parse_costs("F=1"), s);
  SimOptions o;
  o.offload.fraction = {1.0};
  CHECK_THAT(test::error_of<ConfigError>([&] { (void)simulate(s, c, o); }),
             Catch::Contains("offload has 1 fractions for 2 stages"));
  o.offload.fraction = {1.5, 1.0};
  CHECK_THAT(test::error_of<ConfigError>([&] { (void)simulate(s, c, o); }),
             Catch::Contains("outside [0, 1]"));
}

TEST_CASE("a request without an offload and one with --offload none give the same run",
          "[sim][run]") {
  // The known answers stay exact with the knob off: the same metrics document, byte for byte.
  for (const std::string name : {"1f1b", "zb-h1", "zb-h2", "zb-v", "v-min"}) {
    CAPTURE(name);
    RunRequest rq;
    rq.schedule = name;
    rq.devices = 4;
    rq.microbatches = 8;
    rq.costs = parse_costs("F=2,B=2,W=2");
    const std::string plain = metrics_json(run_request(rq));
    rq.offload = parse_offload("none");
    CHECK(metrics_json(run_request(rq)) == plain);
  }
}

TEST_CASE("a request's offload spec selects stages and chunks and costs copies", "[sim][run]") {
  RunRequest rq;
  rq.schedule = "interleaved-1f1b";
  rq.devices = 2;
  rq.microbatches = 4;
  rq.chunks = 2;
  rq.costs = parse_costs("F=2,B=2,W=2,copy=0.5");
  rq.offload = parse_offload("chunks=1,fraction=0.5");
  const Run r = run_request(rq);
  // Chunk 1 of each device: stages 2 and 3 of the loop placement.
  CHECK(r.offload.fraction == std::vector<double>{0, 0, 0.5, 0.5});
  CHECK(r.offload.ns_per_unit == 0.5e6);
  for (const CopyEvent& c : r.timeline.copies) {
    CHECK(c.stage >= 2);
    // Half of a chunk's M_B (1/2 per chunk): 0.25 M_B, 0.125 ms.
    CHECK(c.units == 0.25);
    CHECK(c.end - c.start == ms / 8);
  }
  rq.offload = parse_offload("stages=1-2");
  CHECK(run_request(rq).offload.fraction == std::vector<double>{0, 1, 1, 0});
}

TEST_CASE("a request's offload auto picks the smallest fraction that fits the limit",
          "[sim][run][property]") {
  const int p = GENERATE(2, 4);
  const auto limit = GENERATE(as<std::string>{}, "3", "2.5", "1.5p");
  CAPTURE(p, limit);
  RunRequest rq;
  rq.schedule = "1f1b";
  rq.devices = p;
  rq.microbatches = 8;
  rq.costs = parse_costs("F=1,B=1,W=1,copy=0.1");
  rq.mem_limit = parse_mem_limit(limit);
  rq.offload = parse_offload("auto");
  const Run r = run_request(rq);
  const double units = mem_limit_units(rq.mem_limit, p, rq.costs);
  for (const DeviceMetrics& d : r.metrics.per_device) CHECK(d.peak_memory <= units + 1e-9);
  // One step less does not fit.
  if (r.offload.any()) {
    const double f = r.offload.fraction.front();
    CHECK(f > 0);
    RunRequest less = rq;
    less.offload = f > 0.05 + 1e-12 ? parse_offload(std::to_string(f - 0.05)) : parse_offload("none");
    CHECK_THROWS_AS(run_request(less), InfeasibleError);
  }
}

TEST_CASE("a request's offload auto names the device when even everything does not fit",
          "[sim][run]") {
  RunRequest rq;
  rq.schedule = "1f1b";
  rq.devices = 4;
  rq.microbatches = 8;
  rq.costs = parse_costs("F=1,B=1,W=1,copy=0.1");
  rq.mem_limit = parse_mem_limit("1.5");  // device 0 holds 2 M_B at least (F + one reload)
  rq.offload = parse_offload("auto");
  CHECK_THAT(test::error_of<InfeasibleError>([&] { (void)run_request(rq); }),
             Catch::Contains("device 0 peaks at 2 M_B even with every activation offloaded"));
}
