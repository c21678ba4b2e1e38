// Tests of the lower bound on the cost: known answers, and bound <= cost for every schedule.
#include "ppsim/schedules/search/bound.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <string>
#include <utility>

using namespace ppsim;
using namespace ppsim::test;

namespace {

// The bound of zb-h1's tasks (split F, B, W on one stage per device: the zb-auto problem; any
// order of the same tasks has the same bound) at `limit` M_B.
Ticks zb_bound(int p, int m, const std::string& costs_text, double limit) {
  const CostSpec costs = parse_costs(costs_text);
  const Schedule s = make_schedule("zb-h1", {.devices = p, .microbatches = m});
  return cost_lower_bound(s, cost_model_for(costs, s), limit).cost;
}

double max_peak(const Metrics& m) { return m.peak_memory; }

RunRequest request(const std::string& name, int p, int m, const CostSpec& costs,
                   const std::string& limit = "") {
  RunRequest rq;
  rq.schedule = name;
  rq.devices = p;
  rq.microbatches = m;
  rq.costs = costs;
  rq.mem_limit = parse_mem_limit(limit);
  return rq;
}

} // namespace

TEST_CASE("the bound of the zero-bubble problem at p = 4, m = 8, F = B = W = 2 is the optimum",
          "[schedules][bound]") {
  // Without comm: ZB-1p's 54 and ZB-2p's 48 (the ILP proves both optimal, ZB paper Table 3).
  CHECK(zb_bound(4, 8, "F=2,B=2,W=2", 4) == 54 * ms);
  CHECK(zb_bound(4, 8, "F=2,B=2,W=2", 8) == 48 * ms);
  // Device 0 at 1p: the round trip of micro-batch 0 (F + 3 (F + B) = 14) holds 4 F (8): idle 6.
  const CostSpec unit2 = parse_costs("F=2,B=2,W=2");
  const Schedule s = make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
  const CostBound b = cost_lower_bound(s, cost_model_for(unit2, s), 4);
  CHECK(b.device == 0);
  CHECK(b.per_device[0].busy == 48 * ms);
  CHECK(b.per_device[0].head_idle == 6 * ms);
  CHECK(b.per_device[0].tail_idle == 0);
  CHECK(b.per_device[1].span == 50 * ms);  // its round trip F + 2 (F + B) = 10 holds 4 F: idle 2
  // With comm 1 the authors' ILP proves 66 at 1p; 60, 56, 52 at 1.25p, 1.5p, 2p are what
  // their ILP and heuristic reach (figures in the ZB harness): the bound meets each of them.
  // 1p: head 20 - 8 = 12, tail (the last F's round trip 18 + B + W = 22) - 16 pending = 6.
  CHECK(zb_bound(4, 8, "F=2,B=2,W=2,comm=1", 4) == 66 * ms);
  CHECK(zb_bound(4, 8, "F=2,B=2,W=2,comm=1", 5) == 60 * ms);
  CHECK(zb_bound(4, 8, "F=2,B=2,W=2,comm=1", 6) == 56 * ms);
  CHECK(zb_bound(4, 8, "F=2,B=2,W=2,comm=1", 8) == 52 * ms);
}

TEST_CASE("the bound falls with the memory limit and never below the busiest device's work",
          "[schedules][bound]") {
  const CostSpec costs = parse_costs("F=1,B=1.5,W=0.7,comm=0.2,MW=0.4");
  const Schedule s = make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
  const CostModel model = cost_model_for(costs, s);
  Ticks previous = cost_lower_bound(s, model, 1).cost;
  for (const double limit : {1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, -1.0}) {
    CAPTURE(limit);
    const CostBound b = cost_lower_bound(s, model, limit);
    CHECK(b.cost <= previous);
    CHECK(b.cost >= busiest_work(s, model));
    previous = b.cost;
  }
}

TEST_CASE("the bound never exceeds the cost of any schedule the registry makes",
          "[schedules][bound][property]") {
  const auto& registry = schedule_registry();
  const auto entry = GENERATE_COPY(range(std::size_t{0}, registry.size()));
  const ScheduleInfo& info = registry[entry];
  const int p = GENERATE(1, 2, 3, 4, 6);
  const int m = GENERATE(1, 2, 3, 5, 8, 12);
  const int v = GENERATE(0, 3);
  const std::string text = GENERATE(as<std::string>{}, "F=1,B=1,W=1",
                                    "F=1,B=1.3,W=0.6,FB=2.1,comm=0.05",
                                    "F=2,B=1,W=0.5,comm=0.4,MW=2", "F=0.7,B=2.2,W=1.9,comm=1,MW=0.1");
  const std::string name(info.name);
  CAPTURE(name, p, m, v, text);
  const CostSpec costs = parse_costs(text);
  ScheduleSpec spec{.devices = p, .microbatches = m, .chunks = v};
  spec.costs = &costs;
  if (!accepts(info, spec)) return;
  Schedule s;
  try {
    s = make_schedule(name, spec);
  } catch (const InfeasibleError&) {
    // NOTE: when B raises memory (M_W > M_B) the automatic generators' default p M_B can be
    // below what they need (DESIGN.md asks for ZB-H1's peak); no schedule, nothing to bound.
    REQUIRE(info.automatic());
    return;
  }
  const Run r = run_schedule(s, costs);
  // Every schedule meets the limit of its own peak, and a fortiori no limit.
  for (const double limit : {max_peak(r.metrics), -1.0}) {
    CAPTURE(limit);
    const CostBound b = cost_lower_bound(s, r.costs, limit);
    CHECK(b.cost <= r.metrics.cost);
    CHECK(b.cost >= r.metrics.ideal);
    CHECK(optimality_gap(r.metrics.cost, b.cost) >= 0.0);
    CHECK(optimality_gap(r.metrics.cost, b.cost) < 1.0);
  }
  if (info.automatic()) {
    const double limit = info.generation_limit(spec);
    CHECK(r.metrics.peak_memory <= limit + 1e-9);
    CHECK(cost_lower_bound(s, r.costs, limit).cost <= r.metrics.cost);
  }
}

TEST_CASE("the automatic schedules under tight and loose limits stay above their bound",
          "[schedules][bound][property]") {
  const auto name = GENERATE(as<std::string>{}, "zb-auto", "zb-v");
  const int p = GENERATE(2, 3, 4);
  const int m = GENERATE(2, 5, 8);
  const double k = GENERATE(0.5, 1.0, 1.5, 2.0, 3.0);
  const std::string text = GENERATE(as<std::string>{}, "F=1,B=1,W=1,comm=0.3",
                                    "F=1.5,B=1,W=2,MW=1.5", "F=1,B=2,W=0.5,comm=0.1,MW=0.8");
  CAPTURE(name, p, m, k, text);
  const CostSpec costs = parse_costs(text);
  const RunRequest rq = request(name, p, m, costs, fmt::format("{}p", k));
  Run r;
  try {
    r = run_request(rq);
  } catch (const InfeasibleError&) {
    return;  // below what one micro-batch needs
  }
  REQUIRE(r.has_lower_bound());
  CHECK(r.lower_bound <= r.metrics.cost);
  CHECK(r.lower_bound >= r.metrics.ideal);
  CHECK(r.optimality_gap >= 0.0);
  CHECK(r.optimality_gap == Approx(optimality_gap(r.metrics.cost, r.lower_bound)));
  CHECK(r.bound_mem_limit == Approx(k * p));
}

TEST_CASE("a run knows whether its schedule is automatic and only then carries a bound",
          "[schedules][bound]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  // zb-auto and zb-1p run at p M_B (bound 54), zb-2p at 2p (48); zb-v's V at p M_B holds the
  // 8 half-size F of device 0's round trip (48).
  for (const auto& [name, bound] : {std::pair{"zb-auto", 54}, {"zb-1p", 54}, {"zb-2p", 48},
                                    {"zb-v", 48}}) {
    CAPTURE(name);
    CHECK(find_schedule(name)->automatic());
    const Run r = run_request(request(name, 4, 8, costs));
    CHECK(r.has_lower_bound());
    CHECK(r.lower_bound == bound * ms);
  }
  for (const char* name : {"1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "dualpipe", "v-half"}) {
    CAPTURE(name);
    CHECK_FALSE(find_schedule(name)->automatic());
    const Run r = run_request(request(name, 4, 8, costs));
    CHECK_FALSE(r.has_lower_bound());
  }
  // zb-1p at p = 4, m = 8 is optimal: 54 = its bound, gap 0.
  const Run one = run_request(request("zb-1p", 4, 8, costs));
  CHECK(one.metrics.cost == 54 * ms);
  CHECK(one.optimality_gap == 0.0);
}

TEST_CASE("the limit an automatic generator works under is the one it defaults to",
          "[schedules][bound]") {
  // generation_limit restates the generators' defaults; the same order must come out when the
  // limit is passed explicitly, also when B raises memory (M_W > M_B) and costs differ by stage.
  const std::string text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=1,MW=0.9,MB=1.5");
  for (const ScheduleInfo& info : schedule_registry()) {
    if (!info.automatic()) continue;
    const std::string name(info.name);
    CAPTURE(name, text);
    const CostSpec costs = parse_costs(text);
    ScheduleSpec spec{.devices = 4, .microbatches = 6};
    spec.costs = &costs;
    ScheduleSpec fixed = spec;
    fixed.mem_limit = info.generation_limit(spec);
    CHECK(make_schedule(name, spec) == make_schedule(name, fixed));
    CHECK(run_schedule(make_schedule(name, spec), costs).metrics.peak_memory <=
          fixed.mem_limit + 1e-9);
  }
}
