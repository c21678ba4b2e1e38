// Tests of the V-shape schedules: zb-v, v-half, v-min.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/detail/zbv_greedy.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

using namespace ppsim;
using namespace ppsim::test;

TEST_CASE("V schedules reproduce the papers' costs at p = 4, m = 8, F = B = W = 2",
          "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0");
  const ScheduleSpec spec{.devices = 4, .microbatches = 8};
  const Metrics zbv = metrics_of("zb-v", spec, costs);
  CHECK(zbv.ideal == 48 * ms);
  CHECK(zbv.cost == 48 * ms);
  CHECK(metrics_of("v-half", spec, costs).cost == 53 * ms);
  CHECK(metrics_of("v-min", spec, costs).cost == 59 * ms);
}

TEST_CASE("ZB-V at unit chunk costs idles 3 at most and ends at 51", "[schedules][v-shape][zb-v]") {
  // F = B = W = 1 per chunk is 2 per device-stage
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0");
  const Metrics m = metrics_of("zb-v", {.devices = 4, .microbatches = 8}, costs);
  CHECK(m.makespan == 51 * ms);
  CHECK(m.makespan - m.ideal == 3 * ms);
}

TEST_CASE("ZB-V uses the V placement and rank r starts with 2(p-r)-1 chunk-0 forwards",
          "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8};
  spec.costs = &costs;
  const Schedule s = make_schedule("zb-v", spec);
  CHECK(s.stage_device == std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0});
  CHECK(s.chunks() == 2);
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const auto& order = s.order[static_cast<std::size_t>(r)];
    int lead = 0;
    while (order[static_cast<std::size_t>(lead)].kind == Kind::F &&
           order[static_cast<std::size_t>(lead)].stage == r)
      ++lead;
    CHECK(lead == 2 * (4 - r) - 1);
  }
}

TEST_CASE("ZB-V holds p M_B; V-Half and V-Min about a half and a third of it",
          "[schedules][v-shape]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  for (const int p : {4, 6, 8}) {
    CAPTURE(p);
    const ScheduleSpec spec{.devices = p, .microbatches = 3 * p};
    const double zbv = metrics_of("zb-v", spec, costs).peak_memory;
    const double half = metrics_of("v-half", spec, costs).peak_memory;
    const double min = metrics_of("v-min", spec, costs).peak_memory;
    CHECK(zbv <= p);
    CHECK(half <= (p + 3) / 2);  // ceil((p+2)/2) chunk-pairs
    CHECK(min <= (p + 6) / 3);   // ceil((p+4)/3)
    CHECK(min < half);
    CHECK(half < zbv);
  }
}

TEST_CASE("zb-v follows its memory limit and rejects one below a micro-batch",
          "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 2};
  spec.costs = &costs;
  const Metrics m = run_schedule(make_schedule("zb-v", spec), costs).metrics;
  CHECK(m.peak_memory <= 2.0);
  spec.mem_limit = 0.9;
  CHECK_THROWS_AS(make_schedule("zb-v", spec), InfeasibleError);
  CHECK_THROWS_WITH(make_schedule("zb-v", spec), Catch::Contains("least that works, 1 M_B"));
}

TEST_CASE("V schedules reject chunks other than 2, naming the value", "[schedules][v-shape]") {
  for (const char* name : {"zb-v", "v-half", "v-min"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH(make_schedule(name, {.devices = 4, .microbatches = 8, .chunks = 3}),
                      Catch::Contains(std::string(name) + ": needs chunks = 2") &&
                          Catch::Contains("got chunks=3"));
    CHECK_THROWS_AS(make_schedule(name, {.devices = 4, .microbatches = 0}), ConfigError);
  }
}

TEST_CASE("V schedules run each task once, simulate, and the automatic one fits its limit",
          "[schedules][v-shape][property]") {
  const auto name = GENERATE(as<std::string>{}, "zb-v", "v-half", "v-min");
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=1,comm=0.3");
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 7, 8, 16);
  CAPTURE(name, costs_text, p, m);
  const CostSpec costs = parse_costs(costs_text);
  ScheduleSpec spec{.devices = p, .microbatches = m};
  spec.costs = &costs;
  const Schedule s = make_schedule(name, spec);
  REQUIRE(validate(s).empty());
  const Metrics got = run_schedule(s, costs).metrics;  // throws on deadlock
  CHECK(got.cost >= got.ideal);
  if (name == "zb-v") CHECK(got.peak_memory <= p + 1e-9);
}

TEST_CASE("zb-v with comm is never worse than its comm-0 order under the same comm",
          "[schedules][v-shape][zb-v]") {
  // The comm-0 order is the paper's ZB-V pattern, among zb-v's candidates; re-simulating that
  // order with the real comm bounds zb-v's cost from above. The exact values pin the authors'
  // greedy under ppsim's search (before it: 50.8 ms and 149.4 ms with zb-auto's greedy).
  struct Case {
    int p, m;
    const char* costs;
    const char* no_comm;
    Ticks expected;
  };
  for (const Case& c : {Case{4, 8, "F=2,B=2,W=2,comm=0.1", "F=2,B=2,W=2,comm=0", 49'400'000},
                        Case{8, 32, "F=1,B=2,W=1,comm=0.2", "F=1,B=2,W=1,comm=0", 142'400'000}}) {
    CAPTURE(c.p, c.m, c.costs);
    const CostSpec costs = parse_costs(c.costs);
    const CostSpec no_comm = parse_costs(c.no_comm);
    ScheduleSpec spec{.devices = c.p, .microbatches = c.m};
    spec.costs = &no_comm;
    Schedule paper_order = make_schedule("zb-v", spec);
    const Metrics fixed = run_schedule(paper_order, costs).metrics;
    const Metrics got = metrics_of("zb-v", {.devices = c.p, .microbatches = c.m}, costs);
    CHECK(got.cost <= fixed.cost);
    CHECK(got.peak_memory <= c.p + 1e-9);
    CHECK(got.cost == c.expected);
  }
}

namespace {

// The V problem of p devices and m micro-batches under `costs` (per device-stage).
detail::VProblem v_problem(int p, int m, const CostSpec& costs, Schedule* skeleton = nullptr) {
  const Schedule s = make_pipeline("zb-v", p, m, vshape_placement(p));
  if (skeleton != nullptr) *skeleton = s;
  return detail::make_v_problem(s, cost_model_for(costs, s));
}

// The authors' ZB-V at `limit_in_p` p M_B, or nullopt where their code fails.
std::optional<detail::VRun> authors(const detail::VProblem& pb, double limit_in_p,
                                    detail::VBalance balance) {
  return detail::zbv_authors(pb, detail::memory_cap(limit_in_p * pb.devices), balance);
}

} // namespace

TEST_CASE("the authors' ZB-V greedy gives their exact results", "[schedules][v-shape][zb-v]") {
  // Their code (v_schedule.py on branch arxiv, zbv.py on main) run on the same inputs with exact
  // (integer-scaled) arithmetic: the cost they report and the peak of their order, in M_B.
  // Costs per device-stage (each chunk gets half), comm per cross-device edge.
  struct Case {
    int p, m;
    const char* costs;
    double limit_in_p;
    double arxiv;  ///< cost in ms; 0 where their code fails (an assert)
    double main;
    double peak;
  };
  const Case cases[] = {
      {4, 8, "F=2,B=2,W=2,comm=0", 1, 48, 48, 4},
      {4, 8, "F=2,B=2,W=2,comm=0", 2, 48, 48, 6},
      {4, 8, "F=2,B=2,W=2,comm=0.5", 1, 56, 56, 4},
      {4, 8, "F=2,B=2,W=2,comm=0.5", 2, 0, 50, 6.5},
      {4, 8, "F=2,B=2,W=2,comm=1", 1, 65, 65, 4},
      {4, 8, "F=2,B=2,W=2,comm=1", 2, 0, 55, 6.5},
      {16, 48, "F=3,B=3,W=2,comm=0.15", 1, 411.5, 411.5, 16},
      {16, 48, "F=3,B=3,W=2,comm=0.15", 2, 385.2, 385.2, 32},
      {16, 48, "F=3,B=3,W=2,comm=0.15,MW=0.75", 1, 411.5, 411.5, 16},
      {4, 8, "F=2,B=2,W=2,comm=0.5,MW=0.25", 1, 56, 56, 4},
      {4, 8, "F=2,B=2,W=2,comm=0.5,MW=0.25", 2, 0, 50, 5.75},
      {4, 8, "F=2,B=2,W=2,comm=0.5,MW=2", 2, 0, 51, 8},
      {4, 8, "F=2,B=2,W=2,comm=0.5,MW=2", 3, 0, 50, 12},
      {8, 32, "F=2,B=4,W=2,comm=0.3", 1, 281, 281, 8},
      {8, 32, "F=2,B=4,W=2,comm=0.3", 1.5, 267.4, 267.4, 12},
      {8, 24, "F=3,B=3,W=2,comm=0.15", 1, 204.3, 204.3, 8},
      {8, 24, "F=3,B=3,W=2,comm=0.15", 2, 193.2, 193.2, 16},
  };
  for (const Case& c : cases) {
    CAPTURE(c.p, c.m, c.costs, c.limit_in_p);
    const detail::VProblem pb = v_problem(c.p, c.m, parse_costs(c.costs));
    for (const auto balance : {detail::VBalance::arxiv, detail::VBalance::main}) {
      const double expected = balance == detail::VBalance::arxiv ? c.arxiv : c.main;
      CAPTURE(balance == detail::VBalance::arxiv ? "arxiv" : "main");
      const auto r = authors(pb, c.limit_in_p, balance);
      if (expected == 0) {
        CHECK_FALSE(r);
        continue;
      }
      REQUIRE(r);
      CHECK(r->score.cost == static_cast<Ticks>(std::llround(expected * ms)));
      CHECK(r->peak_memory == Approx(c.peak));
    }
  }
}

TEST_CASE("the greedy's own timing is the simulator's", "[schedules][v-shape][zb-v]") {
  for (const char* text : {"F=2,B=2,W=2,comm=0.5", "F=1,B=2,W=1,comm=0.3,MW=2",
                           "F=3,B=3,W=2,comm=0.15,MW=0.25"}) {
    for (const int p : {1, 3, 5}) {
      const CostSpec costs = parse_costs(text);
      Schedule skeleton;
      const detail::VProblem pb = v_problem(p, 3 * p, costs, &skeleton);
      for (const double limit : {1.0 * p, 2.0 * p})
        for (const bool fill_b : {true, false})
          for (const bool fill_f : {true, false}) {
            CAPTURE(text, p, limit, fill_b, fill_f);
            const detail::VOutcome o = detail::zbv_greedy(
                pb, detail::memory_cap(limit), {.fill_b = fill_b, .fill_f = fill_f});
            for (const detail::VRun& r : o.passes) {
              const Run run = run_schedule(detail::to_schedule(pb, r, skeleton), costs);
              Ticks spans = 0;
              for (const auto& d : run.metrics.per_device) spans += d.span;
              CHECK(run.metrics.cost == r.score.cost);
              CHECK(spans == r.score.spans);
              CHECK(run.metrics.peak_memory == Approx(r.peak_memory));
              CHECK(detail::retime(pb, r) == r.score);
            }
          }
    }
  }
}

TEST_CASE("zb-v is never worse than the authors' ZB-V and stays within its limit",
          "[schedules][v-shape][zb-v]") {
  for (const char* text : {"F=2,B=2,W=2,comm=0.5", "F=3,B=3,W=2,comm=0.15",
                           "F=1,B=2,W=1,comm=0.3,MW=0.25", "F=2,B=2,W=2,comm=1,MW=2"}) {
    for (const int p : {2, 4, 6}) {
      const int m = 3 * p;
      const CostSpec costs = parse_costs(text);
      const detail::VProblem pb = v_problem(p, m, costs);
      for (const double k : {0.75, 1.0, 1.5, 2.0, 3.0}) {
        CAPTURE(text, p, k);
        ScheduleSpec spec{.devices = p, .microbatches = m, .mem_limit = k * p};
        const Metrics got = metrics_of("zb-v", spec, costs);
        CHECK(got.peak_memory <= k * p + 1e-9);
        for (const auto balance : {detail::VBalance::arxiv, detail::VBalance::main})
          if (const auto theirs = authors(pb, k, balance)) CHECK(got.cost <= theirs->score.cost);
      }
    }
  }
}

TEST_CASE("a larger memory limit on the ladder's grid never gives zb-v a worse schedule",
          "[schedules][v-shape][zb-v]") {
  // the ladder's rungs are eighths of p M_B
  for (const char* text : {"F=2,B=2,W=2,comm=0.5", "F=3,B=3,W=2,comm=0.15,MW=2"}) {
    for (const int p : {4, 6}) {
      const CostSpec costs = parse_costs(text);
      Ticks previous = std::numeric_limits<Ticks>::max();
      for (int k = 4; k <= 24; ++k) {
        CAPTURE(text, p, k);
        ScheduleSpec spec{.devices = p, .microbatches = 3 * p, .mem_limit = k * p / 8.0};
        if (k * p / 8.0 < 1.5) continue;  // below one micro-batch's need with M_W = 2
        const Ticks cost = metrics_of("zb-v", spec, costs).cost;
        CHECK(cost <= previous);
        previous = cost;
      }
    }
  }
}

TEST_CASE("zb-v's default limit is ZB-H1's peak on the same costs", "[schedules][v-shape][zb-v]") {
  // M_W <= M_B: p M_B; the seed's MLP (M_W = 2 M_B): ZB-H1 holds 2p M_B, and zb-v needs that
  for (const char* text : {"F=2,B=2,W=2,comm=0.5", "F=2,B=2,W=2,comm=0.5,MW=2"}) {
    const CostSpec costs = parse_costs(text);
    const ScheduleSpec spec{.devices = 4, .microbatches = 8};
    const double h1 = metrics_of("zb-h1", spec, costs).peak_memory;
    const Metrics zbv = metrics_of("zb-v", spec, costs);
    CAPTURE(text, h1);
    CHECK(zbv.peak_memory <= h1 + 1e-9);
    ScheduleSpec at_h1 = spec;
    at_h1.mem_limit = h1;
    CHECK(metrics_of("zb-v", at_h1, costs).cost == zbv.cost);
  }
  const CostSpec mlp = parse_costs("F=2,B=2,W=2,MW=2");
  CHECK(metrics_of("zb-h1", {.devices = 4, .microbatches = 8}, mlp).peak_memory == Approx(8));
}

TEST_CASE("zb-v works down to one micro-batch's memory and names that limit below it",
          "[schedules][v-shape][zb-v]") {
  // with M_W = 2 M_B a split backward raises memory: one chunk's activation plus the other's
  // pending W, 0.5 + 1 = 1.5 M_B; F and fused BW one micro-batch at a time hold its two
  // chunks' activations, 1 M_B
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0.5,MW=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 1.5};
  const Metrics split = metrics_of("zb-v", spec, costs);
  CHECK(split.peak_memory <= 1.5 + 1e-9);
  spec.mem_limit = 1.0;
  const Metrics fused = metrics_of("zb-v", spec, costs);
  CHECK(fused.peak_memory <= 1.0 + 1e-9);
  CHECK(fused.cost >= split.cost);
  spec.mem_limit = 0.9;
  spec.costs = &costs;
  CHECK_THROWS_AS(make_schedule("zb-v", spec), InfeasibleError);
  CHECK_THROWS_WITH(make_schedule("zb-v", spec), Catch::Contains("least that works, 1 M_B"));
}

TEST_CASE("zb-v refuses costs whose sum would overflow its clock", "[schedules][v-shape][zb-v]") {
  const CostSpec costs = parse_costs("F=1e12,B=1e12,W=1e12");
  ScheduleSpec spec{.devices = 4, .microbatches = 1000};
  spec.costs = &costs;
  CHECK_THROWS_AS(make_schedule("zb-v", spec), ConfigError);
  CHECK_THROWS_WITH(make_schedule("zb-v", spec), Catch::Contains("too much to time"));
}

TEST_CASE("V-Half and V-Min with comm are never worse than the authors' construction",
          "[schedules][v-shape]") {
  // The authors' zbv_greedy.py (main) on the same inputs: its order is ppsim's building-block
  // order; ppsim also tries its V search at the same peak memory and keeps the better.
  struct Case {
    int p, m;
    const char* costs;
    double half, min;  ///< their cost in ms
    double half_peak, min_peak;
  };
  for (const Case& c : {Case{4, 8, "F=2,B=2,W=2,comm=0.5", 64, 79, 3, 2},
                        Case{4, 8, "F=3,B=3,W=2,comm=0.15", 77.3, 94, 3, 2},
                        Case{6, 12, "F=1,B=2,W=1,comm=0.3", 78.2, 104.1, 4, 3},
                        Case{8, 16, "F=2,B=2,W=2,comm=1", 174, 229, 5, 4},
                        Case{5, 10, "F=2,B=4,W=2,comm=0.2", 117.2, 147.4, 3, 3}}) {
    CAPTURE(c.p, c.m, c.costs);
    const CostSpec costs = parse_costs(c.costs);
    const ScheduleSpec spec{.devices = c.p, .microbatches = c.m};
    const Metrics half = metrics_of("v-half", spec, costs);
    const Metrics min = metrics_of("v-min", spec, costs);
    CHECK(half.cost <= static_cast<Ticks>(std::llround(c.half * ms)));
    CHECK(min.cost <= static_cast<Ticks>(std::llround(c.min * ms)));
    CHECK(half.peak_memory <= c.half_peak + 1e-9);
    CHECK(min.peak_memory <= c.min_peak + 1e-9);
  }
  // where the search and swaps win: the authors' 147.4
  CHECK(metrics_of("v-min", {.devices = 5, .microbatches = 10}, parse_costs("F=2,B=4,W=2,comm=0.2"))
            .cost == 125'000'000);
}

TEST_CASE("a V search that ends at its work budget keeps a valid schedule and says so",
          "[schedules][v-shape][zb-v][robust]") {
  const CostSpec costs = parse_costs("F=1,B=1.5,W=1,comm=0.1");
  std::vector<std::string> notes;
  ScheduleSpec spec{.devices = 32, .microbatches = 64, .costs = &costs, .notes = &notes};
  const Schedule full = make_schedule("zb-v", spec);
  CHECK(notes.empty());
  // 12,288 tasks a pass: room for a dozen passes of the search, none for the constructions
  spec.work_budget = 150'000;
  const Schedule cut = make_schedule("zb-v", spec);
  CHECK(validate(cut).empty());
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[0], Catch::Contains("ended at its work budget (150000 units"));
  CHECK_THAT(notes[1], Catch::Contains("V-Half and V-Min were not tried"));
  CHECK(run_schedule(cut, costs).metrics.cost >= run_schedule(full, costs).metrics.cost);
  notes.clear();
  CHECK(make_schedule("zb-v", spec) == cut);  // where it ends depends on the work only
  // a construction that cannot finish within the budget is refused, naming it
  spec.work_budget = 1000;
  CHECK_THROWS_WITH(make_schedule("v-half", spec),
                    Catch::Contains("v-half: the building-block construction needs more than "
                                    "1000 units of work at devices=32, microbatches=64"));
}
