// Tests of the exact optimum (branch and bound) and, through it, of the bound and zb-auto's gap.
#include "ppsim/schedules/search/optimum.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

struct OptimumCase {
  int p;
  int m;
  std::string costs;
  double k;  // limit in p M_B
};

CostModel model_of(int p, int m, const CostSpec& costs) {
  return cost_model_for(costs, make_pipeline("skeleton", p, m, loop_placement(p, 1)));
}

// Every order of F, B, W per device (each kind in micro-batch order, memory within the limit),
// every combination over the devices, each run through the simulator: the least cost.
Ticks brute_force_optimum(int p, int m, const CostModel& costs, double limit) {
  std::vector<std::vector<std::vector<Task>>> per_device(static_cast<std::size_t>(p));
  for (int d = 0; d < p; ++d) {
    const double mb = costs.memory_delta(Kind::F, d), mw = -costs.memory_delta(Kind::W, d);
    std::vector<Task> seq;
    std::function<void(int, int, int)> grow = [&](int f, int b, int w) {
      if (w == m) {
        per_device[static_cast<std::size_t>(d)].push_back(seq);
        return;
      }
      const double level = f * mb - b * (mb - mw) - w * mw;
      const auto add = [&](Kind k, int j, int nf, int nb, int nw) {
        seq.push_back(Task::make(k, d, j));
        grow(nf, nb, nw);
        seq.pop_back();
      };
      if (f < m && level + mb <= limit + 1e-9) add(Kind::F, f, f + 1, b, w);
      if (b < f && (mw <= mb || level + mw - mb <= limit + 1e-9)) add(Kind::B, b, f, b + 1, w);
      if (w < b) add(Kind::W, w, f, b, w + 1);
    };
    grow(0, 0, 0);
    if (per_device[static_cast<std::size_t>(d)].empty()) return std::numeric_limits<Ticks>::max();
  }
  Schedule s = make_pipeline("brute", p, m, loop_placement(p, 1));
  Ticks best = std::numeric_limits<Ticks>::max();
  std::vector<std::size_t> pick(static_cast<std::size_t>(p), 0);
  for (;;) {
    for (int d = 0; d < p; ++d)
      s.order[static_cast<std::size_t>(d)] =
          per_device[static_cast<std::size_t>(d)][pick[static_cast<std::size_t>(d)]];
    try {
      best = std::min(best, measure(simulate(s, costs), costs).cost);
    } catch (const ScheduleError&) {  // a deadlocking combination
    }
    int d = 0;
    while (d < p && ++pick[static_cast<std::size_t>(d)] == per_device[static_cast<std::size_t>(d)].size())
      pick[static_cast<std::size_t>(d++)] = 0;
    if (d == p) break;
  }
  return best;
}

// The optimum's order is a real schedule: valid, within the limit, and simulated to its cost.
void check_order(const Optimum& o, const CostModel& costs, double limit) {
  REQUIRE(o.schedule.order.size() > 0);
  REQUIRE(validate(o.schedule).empty());
  const Metrics m = measure(simulate(o.schedule, costs), costs);
  CHECK(m.cost == o.cost);
  CHECK(m.peak_memory <= limit + 1e-9);
}

// zb-auto's run at the case's limit, with its reported bound.
Run zb_auto_run(const OptimumCase& c) {
  RunRequest rq;
  rq.schedule = "zb-auto";
  rq.devices = c.p;
  rq.microbatches = c.m;
  rq.costs = parse_costs(c.costs);
  rq.mem_limit = parse_mem_limit(fmt::format("{}p", c.k));
  return run_request(rq);
}

} // namespace

TEST_CASE("the branch and bound finds what every order tried in the simulator finds",
          "[schedules][optimum]") {
  const int p = GENERATE(1, 2, 3);
  const int m = GENERATE(1, 2, 3);
  const std::string text =
      GENERATE(as<std::string>{}, "F=1,B=1,W=1", "F=1,B=2.5,W=0.5,comm=0.7", "F=2,B=1,W=1.5,MW=1.5,comm=0.2");
  const double k = GENERATE(0.5, 1.0, 2.0);
  if (p == 3 && m == 3) return;  // over a million combinations
  CAPTURE(p, m, text, k);
  const CostModel costs = model_of(p, m, parse_costs(text));
  const double limit = k * p;
  const Optimum o = optimal_zero_bubble(p, m, costs, limit, {.use_lower_bound = false});
  CHECK(o.proven);
  const Ticks brute = brute_force_optimum(p, m, costs, limit);
  if (brute == std::numeric_limits<Ticks>::max()) {
    CHECK(o.cost == -1);
    return;
  }
  CHECK(o.cost == brute);
  check_order(o, costs, limit);
}

TEST_CASE("the exact optimum at p = 4, m = 8, F = B = W = 2 is the paper's", "[schedules][optimum]") {
  const CostModel unit = model_of(4, 8, parse_costs("F=2,B=2,W=2"));
  const Optimum one = optimal_zero_bubble(4, 8, unit, 4);
  CHECK(one.proven);
  CHECK(one.cost == 54 * ms);
  check_order(one, unit, 4);
  const Optimum two = optimal_zero_bubble(4, 8, unit, 8);
  CHECK(two.cost == 48 * ms);
  check_order(two, unit, 8);
  // With comm 1: the authors' ILP proves 66 at 1p (47 s in CBC); here as fast as the bound.
  const CostModel comm = model_of(4, 8, parse_costs("F=2,B=2,W=2,comm=1"));
  for (const auto& [limit, cost] : {std::pair{4.0, 66}, {5.0, 60}, {6.0, 56}, {8.0, 52}}) {
    CAPTURE(limit);
    const Optimum o = optimal_zero_bubble(4, 8, comm, limit);
    CHECK(o.proven);
    CHECK(o.cost == cost * ms);
    check_order(o, comm, limit);
  }
}

TEST_CASE("the exact optimum refuses shapes beyond its reach and limits below one micro-batch",
          "[schedules][optimum]") {
  const CostModel unit = model_of(4, 8, parse_costs("F=1,B=1,W=1"));
  CHECK_THROWS_WITH(optimal_zero_bubble(7, 8, unit, 4),
                    Catch::Contains("1..6 devices") && Catch::Contains("devices=7"));
  CHECK_THROWS_AS(optimal_zero_bubble(4, 13, unit, 4), ConfigError);
  const Optimum none = optimal_zero_bubble(4, 8, unit, 0.5);
  CHECK(none.proven);
  CHECK(none.cost == -1);
  // A known cost that nothing beats is the optimum, with no order of its own.
  const Optimum known = optimal_zero_bubble(4, 8, model_of(4, 8, parse_costs("F=2,B=2,W=2")), 4,
                                            {.known_cost = 54 * ms});
  CHECK(known.proven);
  CHECK(known.cost == 54 * ms);
  CHECK(known.schedule.order.empty());
}

namespace {

// Small cases: p = 2..4, m = 2..8, unit and uneven costs, with comm, limits 1p..2p. The
// lopsided ones (one pass much longer, comm of a whole pass, W that holds little) are where the
// bound and zb-auto part.
std::vector<OptimumCase> small_cases(bool slow, bool lopsided = false) {
  std::vector<OptimumCase> cases;
  const std::vector<std::string> costs =
      lopsided ? std::vector<std::string>{"F=1,B=3,W=0.5,comm=1", "F=2,B=1,W=2,comm=0.7",
                                          "F=1,B=1,W=1,MW=0.1,comm=2"}
               : std::vector<std::string>{"F=1,B=1,W=1", "F=1,B=1,W=1,comm=0.5",
                                          "F=1,B=1.5,W=0.5,comm=0.2",
                                          "F=1.5,B=1,W=1,comm=0.3,MW=0.8"};
  for (const int p : {2, 3, 4})
    for (const int m : {2, 4, 6, 8})
      for (const auto& c : costs)
        for (const double k : {1.0, 1.5, 2.0}) {
          const bool big = p * m > 16;
          if (big == slow) cases.push_back({p, m, c, k});
        }
  return cases;
}

// (a) bound <= optimum <= zb-auto; (b) the gap zb-auto reports is at least its true gap, and
// equal to it wherever the bound is tight. `missed` collects the cases where zb-auto is above
// the optimum.
void check_case(const OptimumCase& c, int& tight, std::vector<std::string>* missed = nullptr) {
  CAPTURE(c.p, c.m, c.costs, c.k);
  const Run r = zb_auto_run(c);
  const CostModel costs = model_of(c.p, c.m, parse_costs(c.costs));
  // The search proves the optimum by itself, so that the bound is checked against it.
  const Optimum o = optimal_zero_bubble(c.p, c.m, costs, c.k * c.p, {.use_lower_bound = false});
  REQUIRE(o.proven);
  REQUIRE(r.has_lower_bound());
  CHECK(r.lower_bound <= o.cost);
  CHECK(o.cost <= r.metrics.cost);
  const double true_gap = optimality_gap(r.metrics.cost, o.cost);
  CHECK(r.optimality_gap >= true_gap - 1e-12);
  if (r.lower_bound == o.cost) {
    CHECK(r.optimality_gap == true_gap);
    ++tight;
  }
  if (missed != nullptr && r.metrics.cost != o.cost)
    missed->push_back(fmt::format("p={} m={} {} {}p: {} against {}", c.p, c.m, c.costs, c.k,
                                  ticks_to_ms_text(r.metrics.cost), ticks_to_ms_text(o.cost)));
}

} // namespace

TEST_CASE("on small cases the bound never exceeds the optimum and zb-auto's gap is exact where "
          "the bound is tight",
          "[schedules][optimum][bound]") {
  int tight = 0;
  const auto cases = small_cases(false);
  for (const OptimumCase& c : cases) check_case(c, tight);
  INFO(fmt::format("{} of {} cases tight", tight, cases.size()));
  CHECK(tight == static_cast<int>(cases.size()));  // with these costs the bound is the optimum
  // Lopsided costs part them: bound <= optimum <= zb-auto still, gaps reported too high.
  int lopsided_tight = 0;
  const auto lopsided = small_cases(false, true);
  for (const OptimumCase& c : lopsided) check_case(c, lopsided_tight);
  CHECK(lopsided_tight < static_cast<int>(lopsided.size()));
}

TEST_CASE("the same on the larger small cases (p * m > 16)", "[.slow][.readme]") {
  // README.md, "How far from optimal": of the 144 cases (these 84 and the 60 above) the bound is
  // the optimum in all, zb-auto reaches it in 142.
  int tight = 0;
  std::vector<std::string> missed;
  const auto cases = small_cases(true);
  for (const OptimumCase& c : cases) check_case(c, tight, &missed);
  CHECK(cases.size() + small_cases(false).size() == 144);
  CHECK(tight == static_cast<int>(cases.size()));
  CHECK(missed == std::vector<std::string>{
                      "p=3 m=8 F=1,B=1.5,W=0.5,comm=0.2 1.5p: 27.1 against 26.8",
                      "p=3 m=8 F=1.5,B=1,W=1,comm=0.3,MW=0.8 1.5p: 30.8 against 30.2"});
  std::vector<std::string> small_missed;
  int small_tight = 0;
  for (const OptimumCase& c : small_cases(false)) check_case(c, small_tight, &small_missed);
  CHECK(small_missed.empty());
}

TEST_CASE("the README's lopsided table: the optimum and the true gap of each row",
          "[schedules][optimum][readme]") {
  // Its rows as README.md writes them; zb-auto's cost, the bound and the reported gap are
  // tests/docs/docs_check.py's.
  std::ifstream in(std::string(PPSIM_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  const std::string head =
      "| p | m | costs | limit | optimum | zb-auto | bound | reported gap | true gap |";
  std::string line;
  bool inside = false;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line == head) {
      inside = true;
      continue;
    }
    if (!inside || line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cell;
    std::stringstream cells(line.substr(1));
    for (std::string c; std::getline(cells, c, '|');) {
      const auto a = c.find_first_not_of(' '), b = c.find_last_not_of(' ');
      cell.push_back(a == std::string::npos ? "" : c.substr(a, b - a + 1));
    }
    REQUIRE(cell.size() >= 9);
    CAPTURE(line);
    const OptimumCase c{std::stoi(cell[0]), std::stoi(cell[1]), cell[2],
                        std::stod(cell[3].substr(0, cell[3].size() - 1))};
    const Optimum o =
        optimal_zero_bubble(c.p, c.m, model_of(c.p, c.m, parse_costs(c.costs)), c.k * c.p);
    REQUIRE(o.proven);
    CHECK(ticks_to_ms_text(o.cost) == cell[4]);
    const double gap = optimality_gap(zb_auto_run(c).metrics.cost, o.cost);
    CHECK((gap == 0 ? std::string("0") : fmt::format("{:.2f}%", 100 * gap)) == cell[8]);
    ++rows;
  }
  CHECK(rows == 6);
}

TEST_CASE("figures: optimum, zb-auto and the bound on small cases", "[.figures]") {
  std::cout << "| p | m | costs | limit | optimum | zb-auto | bound | reported gap | true gap | nodes |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const bool lopsided : {false, true})
  for (const bool slow : {false, true})
    for (const OptimumCase& c : small_cases(slow, lopsided)) {
      const Run r = zb_auto_run(c);
      const Optimum o =
          optimal_zero_bubble(c.p, c.m, model_of(c.p, c.m, parse_costs(c.costs)), c.k * c.p);
      std::cout << fmt::format("| {} | {} | {} | {}p | {}{} | {} | {} | {:.2f}% | {:.2f}% | {} |\n",
                               c.p, c.m, c.costs, c.k, ticks_to_ms_text(o.cost),
                               o.proven ? "" : " (not proven)", ticks_to_ms_text(r.metrics.cost),
                               ticks_to_ms_text(r.lower_bound), 100 * r.optimality_gap,
                               100 * optimality_gap(r.metrics.cost, o.cost), o.nodes);
    }
}
