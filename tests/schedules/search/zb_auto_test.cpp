// Tests of the automatic zero-bubble scheduler: the authors' heuristic (detail/zb_greedy.hpp)
// against their own results, and zb-auto, zb-1p, zb-2p on top of it.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/schedules/search/detail/zb_auto.hpp"
#include "ppsim/schedules/search/detail/zb_greedy.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

// One stage per device (or v chunks) on the loop placement, with the costs expanded.
struct ZbAutoCase {
  Schedule skeleton;
  CostModel costs;
  ZbAutoCase(int p, int m, const std::string& costs_text, int v = 1)
      : skeleton(make_pipeline("case", p, m, loop_placement(p, v))),
        costs(cost_model_for(parse_costs(costs_text), skeleton)) {}
};

// The cost of every flag combination of the heuristic (in the authors' order), nullopt where
// the combination cannot fit the limit.
std::vector<std::optional<Ticks>> combo_costs(const ZbAutoCase& c, double limit) {
  const detail::ZbProblem problem(c.skeleton, c.costs);
  std::vector<std::optional<Ticks>> out;
  for (const detail::ZbFlags& flags : detail::zb_flag_combinations()) {
    const detail::ZbOutcome o = detail::run_zb(problem, limit, flags, {});
    out.push_back(o.status == detail::ZbStatus::ok ? std::optional<Ticks>(o.cost) : std::nullopt);
  }
  return out;
}

// The authors' choice: the lowest cost over the combinations that fit (nullopt when none).
std::optional<Ticks> authors_cost(const ZbAutoCase& c, double limit) {
  const detail::ZbProblem problem(c.skeleton, c.costs);
  const auto choice = detail::zb_authors_choice(problem, limit);
  return choice ? std::optional<Ticks>(choice->outcome.cost) : std::nullopt;
}

// Milliseconds with one decimal, as the reference prints them, to ticks.
constexpr Ticks ms10(long long tenths) { return tenths * 100'000; }

std::string order_text(const std::vector<Task>& tasks) {
  std::string out;
  for (const Task& t : tasks) out += (out.empty() ? "" : " ") + to_string(t);
  return out;
}

} // namespace

// The known answers below come from the authors' code (their arxiv auto_schedule.py with integer
// costs, i.e. exact arithmetic; their main branch's zb.py gives the same on integer-valued
// costs) run on the same inputs. Limits are in M_B per device (1p = p M_B).

TEST_CASE("the heuristic gives the authors' costs at p = 4, m = 8, F = B = W = 2",
          "[schedules][zb-auto]") {
  const ZbAutoCase plain(4, 8, "F=2,B=2,W=2");
  CHECK(authors_cost(plain, 4) == 54 * ms);
  CHECK(authors_cost(plain, 8) == 48 * ms);
  const ZbAutoCase comm(4, 8, "F=2,B=2,W=2,comm=1");
  CHECK(authors_cost(comm, 4) == 66 * ms);
  CHECK(authors_cost(comm, 5) == 60 * ms);
  CHECK(authors_cost(comm, 6) == 56 * ms);
  for (const double limit : {8.0, 10.0, 12.0}) CHECK(authors_cost(comm, limit) == 52 * ms);
}

TEST_CASE("the heuristic gives the authors' costs at p = 8, m = 24 on 17 limits from 1p to 3p",
          "[schedules][zb-auto]") {
  const ZbAutoCase c(8, 24, "F=1.5,B=1.5,W=1,comm=0.15");
  const std::vector<long long> tenths{1142, 1107, 1077, 1046, 1029, 1011, 996, 981, 972,
                                      972,  972,  972,  972,  972,  972,  972,  972};
  for (std::size_t i = 0; i < tenths.size(); ++i) {
    const double limit = 8 + static_cast<double>(i);  // 1p, 1.125p, ..., 3p
    CAPTURE(limit);
    CHECK(authors_cost(c, limit) == ms10(tenths[i]));
  }
}

TEST_CASE("every flag combination of the heuristic costs what the authors' does",
          "[schedules][zb-auto]") {
  using C = std::vector<std::optional<Ticks>>;
  const auto t = [](long long tenths) { return std::optional<Ticks>(ms10(tenths)); };
  const std::optional<Ticks> none;
  CHECK(combo_costs(ZbAutoCase(4, 8, "F=2,B=2,W=2,comm=1"), 5) ==
        C{t(600), t(600), t(620), t(620), t(600), t(600), t(620), t(620)});
  CHECK(combo_costs(ZbAutoCase(8, 24, "F=1.5,B=1.5,W=1,comm=0.15"), 12) ==
        C{t(1056), t(1029), t(1071), t(1050), t(1138), t(1051), t(1125), t(1090)});
  CHECK(combo_costs(ZbAutoCase(8, 24, "F=1.5,B=1.5,W=1,comm=0.15"), 16) ==
        C{t(972), t(981), t(972), t(972), t(1113), t(1014), t(1059), t(1038)});
  // B slower than F, M_W other than M_B / 2, B raising memory
  CHECK(combo_costs(ZbAutoCase(6, 18, "F=1,B=2,W=1,comm=0.3,MW=0.25"), 6) ==
        C{t(900), t(880), t(900), t(880), t(900), t(880), t(900), t(880)});
  CHECK(combo_costs(ZbAutoCase(5, 12, "F=1,B=3,W=0.5,comm=0.2,MW=0.75"), 7.5) ==
        C{t(681), t(680), t(686), t(683), t(681), t(680), t(686), t(683)});
  CHECK(combo_costs(ZbAutoCase(4, 9, "F=3,B=1,W=2,comm=0.5,MW=1"), 8) ==
        C{t(620), t(600), t(620), t(600), t(570), t(550), t(570), t(550)});
  CHECK(combo_costs(ZbAutoCase(8, 16, "F=0.7,B=1.9,W=1.1,comm=0.4,MW=0.3"), 10) ==
        C{t(795), t(767), t(809), t(791), t(795), t(767), t(809), t(791)});
  CHECK(combo_costs(ZbAutoCase(4, 8, "F=1,B=1,W=1,MW=1.5"), 8) == C(8, t(260)));
  CHECK(combo_costs(ZbAutoCase(4, 12, "F=2,B=1.5,W=0.5,MW=2"), 8) == C(8, t(570)));
  // m < p, and one device
  CHECK(combo_costs(ZbAutoCase(4, 3, "F=1,B=1.3,W=0.6,comm=0.05"), 4) == C(8, t(147)));
  CHECK(combo_costs(ZbAutoCase(1, 5, "F=1,B=2,W=1"), 1) == C(8, t(200)));
  // where every combination, or some, cannot fit (the authors' call then fails as a whole)
  CHECK(combo_costs(ZbAutoCase(4, 8, "F=1,B=1,W=1,MW=1.5"), 4) == C(8, none));
  CHECK(combo_costs(ZbAutoCase(4, 12, "F=2,B=1,W=3,comm=0.1,MW=1.5"), 6) ==
        C{t(766), t(738), t(766), t(738), none, none, none, none});
  CHECK(authors_cost(ZbAutoCase(4, 12, "F=2,B=1,W=3,comm=0.1,MW=1.5"), 6) == ms10(738));
}

TEST_CASE("the heuristic places the authors' order", "[schedules][zb-auto]") {
  const ZbAutoCase c(4, 8, "F=2,B=2,W=2,comm=1");
  const detail::ZbProblem problem(c.skeleton, c.costs);
  detail::ZbRecord record;
  const auto o = detail::run_zb(problem, 5, {true, true, true}, {}, {}, &record);
  REQUIRE(o.status == detail::ZbStatus::ok);
  CHECK(o.cost == 60 * ms);
  CHECK(o.peak == 5);
  CHECK(order_text(record.order[0]) == "0F0 0F1 0F2 0F3 0F4 0B0 0W0 0F5 0B1 0W1 0F6 0B2 0B3 "
                                       "0F7 0W2 0W3 0B4 0W4 0B5 0W5 0B6 0W6 0B7 0W7");
  CHECK(order_text(record.order[1]) == "1F0 1F1 1F2 1F3 1B0 1F4 1B1 1W0 1W1 1F5 1B2 1B3 1F6 "
                                       "1B4 1W2 1F7 1B5 1W3 1W4 1B6 1W5 1W6 1B7 1W7");
  CHECK(order_text(record.order[2]) == "2F0 2F1 2F2 2B0 2F3 2B1 2W0 2F4 2B2 2B3 2W1 2F5 2B4 "
                                       "2W2 2F6 2B5 2W3 2F7 2B6 2W4 2W5 2B7 2W6 2W7");
  CHECK(order_text(record.order[3]) == "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3W0 3W1 3F5 "
                                       "3B5 3W2 3F6 3B6 3W3 3F7 3B7 3W4 3W5 3W6 3W7");
}

TEST_CASE("the heuristic's own timing is the simulator's, for every candidate",
          "[schedules][zb-auto][property]") {
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1.5,B=1.5,W=1,comm=0.15",
                                   "F=1,B=2,W=1,comm=0.3,MW=0.25", "F=3,B=1,W=2,comm=0.5,MW=2");
  const int p = GENERATE(1, 3, 5);
  const int m = GENERATE(1, 4, 13);
  const int v = GENERATE(1, 2, 3);
  CAPTURE(costs_text, p, m, v);
  const ZbAutoCase c(p, m, costs_text, v);
  const detail::ZbRules rules[] = {{}, {.warmup_offset = 1}, {.budget_permille = 500},
                                   {.reserve_b = true}};
  for (const int group : {0, 1}) {
    const detail::ZbProblem problem(c.skeleton, c.costs, group);
    for (const double limit_in_p : {0.75, 1.25, 2.5}) {
      for (const detail::ZbFlags& flags : detail::zb_flag_combinations()) {
        for (const detail::ZbRules& r : rules) {
          detail::ZbRecord record;
          const double limit = limit_in_p * p;
          const auto o = detail::run_zb(problem, limit, flags, r, {}, &record);
          if (o.status != detail::ZbStatus::ok) continue;
          CAPTURE(group, limit, flags.allow_bubble_before_first_b, flags.prioritize_b,
                  flags.no_bubble_greedy, r.warmup_offset, r.budget_permille, r.reserve_b);
          const Schedule s = detail::schedule_of(problem, record, "x");
          REQUIRE(validate(s).empty());
          const Timeline tl = simulate(s, c.costs);
          const Metrics got = measure(tl, c.costs);
          CHECK(got.cost == o.cost);
          Ticks spans = 0;
          for (const auto& d : got.per_device) spans += d.span;
          CHECK(spans == o.spans);
          CHECK(got.peak_memory <= limit + 1e-9);
          CHECK(got.peak_memory == Approx(o.peak));
          for (int d = 0; d < p; ++d) {
            std::vector<Ticks> ends;
            for (const TaskRun& run : tl.device_runs(d)) ends.push_back(run.end);
            CHECK(ends == record.end[static_cast<std::size_t>(d)]);
          }
        }
      }
    }
  }
}

TEST_CASE("zb-1p and zb-2p reproduce the paper's costs at p = 4, m = 8, F = B = W = 2",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2,comm=0");
  const ScheduleSpec spec{.devices = 4, .microbatches = 8};
  const Metrics one = metrics_of("zb-1p", spec, costs);
  CHECK(one.ideal == 48 * ms);
  CHECK(one.cost == 54 * ms);
  CHECK(one.peak_memory <= 4.0);
  const Metrics two = metrics_of("zb-2p", spec, costs);
  CHECK(two.cost == 48 * ms);
  CHECK(two.peak_memory <= 8.0);
}

TEST_CASE("zb-1p at unit costs has ZB1P's idle of 3 and makespan 27 at p = 4, m = 8",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=1,B=1,W=1,comm=0");
  const Metrics m = metrics_of("zb-1p", {.devices = 4, .microbatches = 8}, costs);
  CHECK(m.makespan == 27 * ms);
  CHECK(m.makespan - m.ideal == 3 * ms);
}

TEST_CASE("zb-auto defaults to ZB-H1's peak and emits split B and W only", "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8};
  spec.costs = &costs;
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(s.name == "zb-auto");
  CHECK(validate(s).empty());
  for (const auto& dev : s.order)
    for (const Task& t : dev) CHECK((t.kind == Kind::F || t.kind == Kind::B || t.kind == Kind::W));
  const Metrics m = run_schedule(s, costs).metrics;
  CHECK(m.peak_memory <= 4.0);
  CHECK(m.cost == 54 * ms);
}

TEST_CASE("zb-auto's default limit follows ZB-H1 when B raises memory", "[schedules][zb-auto]") {
  // the seed's MLP: W needs twice what B leaves, ZB-H1 peaks at 2p M_B
  const CostSpec costs = parse_costs("F=1,B=1,W=1,MW=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8};
  const Metrics h1 = metrics_of("zb-h1", spec, costs);
  CHECK(h1.peak_memory == 8.0);
  const Metrics got = metrics_of("zb-auto", spec, costs);
  CHECK(got.peak_memory <= 8.0);
  CHECK(got.cost <= h1.cost);
  spec.mem_limit = 8;
  CHECK(metrics_of("zb-auto", spec, costs).cost == got.cost);
  // zb-1p keeps p M_B: ZB-H1 does not fit, but the search finds a schedule
  const Metrics one = metrics_of("zb-1p", {.devices = 4, .microbatches = 8}, costs);
  CHECK(one.peak_memory <= 4.0);
}

TEST_CASE("zb-auto never answers no schedule where 1F1B fits", "[schedules][zb-auto]") {
  // one device, B raising memory: split B and W need 1.5 M_B, 1F1B's fused BW only 1
  const CostSpec costs = parse_costs("F=1,B=1,W=1,MW=1.5");
  ScheduleSpec spec{.devices = 1, .microbatches = 4, .mem_limit = 1};
  spec.costs = &costs;
  const Schedule s = make_schedule("zb-auto", spec);
  const Metrics m = run_schedule(s, costs).metrics;
  CHECK(m.peak_memory <= 1.0);
  CHECK(m.cost == metrics_of("1f1b", {.devices = 1, .microbatches = 4}, costs).cost);
}

TEST_CASE("zb-auto follows the memory limit it is given", "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=2,B=2,W=2");
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 8};
  CHECK(metrics_of("zb-auto", spec, costs).cost == 48 * ms);
  spec.mem_limit = 2;
  const Metrics tight = metrics_of("zb-auto", spec, costs);
  CHECK(tight.peak_memory <= 2.0);
  CHECK(tight.cost > 54 * ms);
}

TEST_CASE("zb-auto rejects a limit below one micro-batch and names the least that works",
          "[schedules][zb-auto]") {
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 0.5};
  CHECK_THROWS_AS(make_schedule("zb-auto", spec), InfeasibleError);
  CHECK_THROWS_WITH(make_schedule("zb-auto", spec),
                    Catch::Contains("0.5 M_B") && Catch::Contains("least that works, 1 M_B"));
  spec.mem_limit = 1;  // exactly one micro-batch per device still works
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(validate(s).empty());
  const CostSpec unit;
  CHECK(run_schedule(s, unit).metrics.peak_memory <= 1.0);
}

TEST_CASE("zb-auto works below the W a B leaves when B raises memory, by fusing BW",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("MW=1.5");  // B raises memory by 0.5 M_B
  ScheduleSpec spec{.devices = 2, .microbatches = 4, .mem_limit = 1.2};
  spec.costs = &costs;
  // split, one micro-batch holds 1.5 M_B; F and fused BW one at a time hold 1 M_B
  const Schedule fused = make_schedule("zb-auto", spec);
  CHECK(run_schedule(fused, costs).metrics.peak_memory == 1.0);
  CHECK(std::any_of(fused.order[0].begin(), fused.order[0].end(),
                    [](const Task& t) { return t.kind == Kind::BW; }));
  spec.mem_limit = 0.99;
  CHECK_THROWS_WITH(make_schedule("zb-auto", spec), Catch::Contains("least that works, 1 M_B"));
  spec.mem_limit = 1.5;
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(run_schedule(s, costs).metrics.peak_memory <= 1.5);
  CHECK(run_schedule(s, costs).metrics.cost <= run_schedule(fused, costs).metrics.cost);
}

TEST_CASE("zb-1p and zb-2p take one chunk, zb-auto takes v chunks", "[schedules][zb-auto]") {
  CHECK_THROWS_WITH(make_schedule("zb-1p", {.devices = 4, .microbatches = 8, .chunks = 2}),
                    Catch::Contains("zb-1p: supports chunks=1 only (got chunks=2)"));
  CHECK_THROWS_AS(make_schedule("zb-1p", {.devices = 0, .microbatches = 8}), ConfigError);
  CHECK_THROWS_WITH(make_schedule("zb-auto", {.devices = 4, .microbatches = 8, .chunks = 65}),
                    Catch::Contains("zb-auto: needs 1 <= chunks <= 64 (got chunks=65)"));
  const Schedule s = make_schedule("zb-auto", {.devices = 4, .microbatches = 8, .chunks = 2});
  CHECK(s.chunks() == 2);
  CHECK(placement_name(s) == "loop");
}

TEST_CASE("zb-auto beats ZB-H1 at the same memory when B is slower than F",
          "[schedules][zb-auto]") {
  const CostSpec costs = parse_costs("F=1,B=2,W=1,comm=0.3");
  const ScheduleSpec spec{.devices = 8, .microbatches = 8};
  const Metrics h1 = metrics_of("zb-h1", spec, costs);
  const Metrics got = metrics_of("zb-1p", spec, costs);
  CHECK(got.peak_memory <= 8.0);
  CHECK(h1.cost == Ticks{53'800'000});
  CHECK(got.cost == Ticks{50'200'000});
}

TEST_CASE("zb-auto is the same whatever the thread count", "[schedules][zb-auto]") {
  const auto costs_text = GENERATE(as<std::string>{}, "F=1.3,B=2.1,W=0.9,comm=0.2",
                                   "F=1.5,B=1.5,W=1,comm=0.15", "F=1,B=1,W=1,MW=2");
  const int v = GENERATE(1, 2);
  CAPTURE(costs_text, v);
  const CostSpec costs = parse_costs(costs_text);
  const Schedule skeleton = make_pipeline("zb-auto", 6, 18, loop_placement(6, v));
  for (const double limit : {6.0, 7.5, 9.0, 12.0}) {
    CAPTURE(limit);
    const Schedule one = detail::zb_auto_search("zb-auto", skeleton, costs, limit, {.threads = 1});
    for (const unsigned threads : {2u, 3u, 8u})
      CHECK(detail::zb_auto_search("zb-auto", skeleton, costs, limit, {.threads = threads}) == one);
  }
}

TEST_CASE("zb-auto stops at the lower bound, with the same schedule whatever the threads",
          "[schedules][zb-auto][bound]") {
  // M_W > M_B: every limit down to the least is its own run, 81,444 runs before the search
  // stopped at the bound; now the first chain walks its ladder (1,182 runs, most abandoned
  // early), the second chain's first run meets the bound (1597.184 ms) and the rest give up
  const CostSpec costs = parse_costs("F=2.014,B=1.062,W=3.085,comm=1.471,MW=2.181");
  const Schedule skeleton = make_pipeline("zb-auto", 32, 256, loop_placement(32, 1));
  const double limit = 3.764 * 32;
  detail::ZbAutoReport report;
  const Schedule one =
      detail::zb_auto_search("zb-auto", skeleton, costs, limit, {.threads = 1}, &report);
  const CostModel model = cost_model_for(costs, one);
  const Ticks cost = run_schedule(one, costs).metrics.cost;
  CHECK(cost == Ticks{1'597'184'000});
  CHECK(cost_lower_bound(one, model, limit).cost == cost);
  CHECK(order_peak(one, model) <= limit + 1e-9);
  CHECK(report.runs < 1300);
  CHECK(detail::zb_auto_search("zb-auto", skeleton, costs, limit, {.threads = 2}) == one);
}

TEST_CASE("zb-auto is never worse than the heuristic, and never worse at a larger limit",
          "[schedules][zb-auto][property]") {
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=1,comm=0.3",
                                   "F=1.5,B=1.5,W=1,comm=0.15", "F=3,B=1,W=2,comm=0.5,MW=0.25",
                                   "F=1,B=1,W=3,comm=0.1,MW=2");
  const int p = GENERATE(1, 2, 4, 6);
  const int m = GENERATE(2, 7, 12);
  const int v = GENERATE(1, 2);
  CAPTURE(costs_text, p, m, v);
  const CostSpec spec = parse_costs(costs_text);
  const ZbAutoCase c(p, m, costs_text, v);
  std::optional<Ticks> previous;
  for (int eighths = 8; eighths <= 24; eighths += 2) {
    const double limit = p * eighths / 8.0;
    CAPTURE(limit);
    Schedule s;
    try {
      s = detail::zb_auto_search("zb-auto", c.skeleton, spec, limit);
    } catch (const InfeasibleError&) {
      CHECK_FALSE(previous);  // infeasible only below every feasible limit
      CHECK_FALSE(authors_cost(c, limit));
      continue;
    }
    const Metrics got = measure(simulate(s, c.costs), c.costs);
    CHECK(got.peak_memory <= limit + 1e-9);
    // (with chunks: the same rounds over the chunk order, as zb-auto runs them first)
    if (const auto authors = authors_cost(c, limit)) CHECK(got.cost <= *authors);
    if (previous) CHECK(got.cost <= *previous);
    previous = got.cost;
  }
}

TEST_CASE("zb-auto runs each task once, fits its limit and is never worse than ZB-H1/ZB-H2",
          "[schedules][zb-auto][property]") {
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2,W=1,comm=0.3",
                                   "F=2,B=1.5,W=0.5,MW=0.25");
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 7, 8, 16);
  CAPTURE(costs_text, p, m);
  const CostSpec costs = parse_costs(costs_text);
  for (const double limit_in_p : {1.0, 2.0, 0.5}) {
    CAPTURE(limit_in_p);
    ScheduleSpec spec{.devices = p, .microbatches = m, .mem_limit = std::max(1.0, limit_in_p * p)};
    spec.costs = &costs;
    const Schedule s = make_schedule("zb-auto", spec);
    REQUIRE(validate(s).empty());
    check_each_part_once(s);
    const Metrics got = run_schedule(s, costs).metrics;  // throws on deadlock
    CHECK(got.peak_memory <= spec.mem_limit + 1e-9);
    CHECK(got.cost >= got.ideal);
    if (limit_in_p == 1.0) {
      CHECK(got.cost <= metrics_of("zb-h1", {.devices = p, .microbatches = m}, costs).cost);
    }
    if (limit_in_p == 2.0 && m >= 2 * p) {
      spec.mem_limit = 2 * p - 1;
      const Metrics at_h2 = run_schedule(make_schedule("zb-auto", spec), costs).metrics;
      CHECK(at_h2.cost <= metrics_of("zb-h2", {.devices = p, .microbatches = m}, costs).cost);
    }
  }
}

TEST_CASE("the order timing of the search is the simulator's", "[schedules][zb-auto]") {
  const auto name = GENERATE(as<std::string>{}, "zb-h1", "zb-h2", "1f1b", "interleaved-1f1b");
  const int p = GENERATE(1, 2, 4);
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=2,W=1,comm=0.3", "MW=2,comm=0.1");
  CAPTURE(name, p, costs_text);
  const CostSpec spec = parse_costs(costs_text);
  const Schedule s = make_schedule(name, {.devices = p, .microbatches = 4 * p});
  const CostModel costs = cost_model_for(spec, s);
  const auto timing = detail::time_order(s, costs);
  REQUIRE(timing);
  const Metrics m = measure(simulate(s, costs), costs);
  CHECK(timing->score.cost == m.cost);
  Ticks spans = 0;
  for (const auto& d : m.per_device) spans += d.span;
  CHECK(timing->score.spans == spans);
  CHECK(timing->peak == Approx(m.peak_memory));
}

TEST_CASE("zb-auto with chunks fits its limit and is never worse than interleaved 1F1B split",
          "[schedules][zb-auto][property]") {
  const auto costs_text = GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1.5,B=1.5,W=1,comm=0.15",
                                   "F=1,B=2,W=1,comm=0.3,MW=0.25");
  const int p = GENERATE(2, 4);
  const int v = GENERATE(2, 3);
  const int m = GENERATE(4, 8, 12);
  CAPTURE(costs_text, p, v, m);
  const CostSpec costs = parse_costs(costs_text);
  // interleaved 1F1B with B and W split, W right after its B
  Schedule split =
      make_schedule("interleaved-1f1b", {.devices = p, .microbatches = m, .chunks = v});
  for (auto& device : split.order) {
    std::vector<Task> out;
    for (const Task& t : device) {
      if (t.kind != Kind::BW) {
        out.push_back(t);
        continue;
      }
      out.push_back(Task::make(Kind::B, t.stage, t.microbatch));
      out.push_back(Task::make(Kind::W, t.stage, t.microbatch));
    }
    device = out;
  }
  const Metrics reference = run_schedule(split, costs).metrics;
  for (const double limit : {0.5 * p, 1.0 * p, reference.peak_memory, 2.0 * p}) {
    CAPTURE(limit);
    ScheduleSpec spec{.devices = p, .microbatches = m, .chunks = v, .mem_limit = limit};
    spec.costs = &costs;
    const Schedule s = make_schedule("zb-auto", spec);
    REQUIRE(validate(s).empty());
    check_each_part_once(s);
    const Metrics got = run_schedule(s, costs).metrics;
    CHECK(got.peak_memory <= limit + 1e-9);
    if (limit >= reference.peak_memory) CHECK(got.cost <= reference.cost);
  }
}
