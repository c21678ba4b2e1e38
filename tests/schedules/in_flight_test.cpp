// Tests of the memory-minimal orders (ppsim/schedules/detail/in_flight.hpp) and of the least limit the
// automatic schedulers name: exact, against an exhaustive search of every order on tiny cases.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/detail/in_flight.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace ppsim;

namespace {

// The least peak memory of any order of F and, for each (stage, micro-batch), either BW or B
// then W, on the skeleton's placement (one route through the stages): a depth-first walk over
// every interleaving that respects the dependencies (each deadlock-free set of device orders
// is the projection of one), cut where a device already holds `at_least`.
class EveryOrder {
public:
  EveryOrder(const Schedule& skeleton, const CostModel& costs)
      : sk_(skeleton), costs_(costs), stages_(skeleton.stages()), m_(skeleton.microbatches),
        f_(ix(stages_ * m_), false), b_(ix(stages_ * m_), 0), w_(ix(stages_ * m_), false),
        held_(ix(skeleton.devices), 0.0) {}

  // Whether some complete order peaks below `bound` on every device (nodes counted).
  bool below(double bound) {
    bound_ = bound;
    return walk(0.0);
  }
  long long nodes{0};

private:
  // b_: 0 none, 1 B done (W pending), 2 backward done (BW, or B and W)
  int at(int s, int j) const { return s * m_ + j; }
  bool walk(double peak) {
    ++nodes;
    bool done = true;
    for (int s = 0; s < stages_; ++s)
      for (int j = 0; j < m_; ++j) {
        const std::size_t i = ix(at(s, j));
        const int dev = sk_.stage_device[ix(s)];
        if (!f_[i]) {
          done = false;
          if (s > 0 && !f_[ix(at(s - 1, j))]) continue;
          if (step(dev, costs_.memory_delta(Kind::F, s), peak, [&] { f_[i] = true; },
                   [&] { f_[i] = false; }))
            return true;
          continue;
        }
        if (b_[i] == 0) {
          done = false;
          if (s + 1 < stages_ && b_[ix(at(s + 1, j))] == 0) continue;
          if (step(dev, costs_.memory_delta(Kind::BW, s), peak, [&] { b_[i] = 2; },
                   [&] { b_[i] = 0; }))
            return true;
          if (step(dev, costs_.memory_delta(Kind::B, s), peak,
                   [&] { b_[i] = 1; w_[i] = false; }, [&] { b_[i] = 0; }))
            return true;
          continue;
        }
        if (b_[i] == 1 && !w_[i]) {
          done = false;
          if (step(dev, costs_.memory_delta(Kind::W, s), peak, [&] { w_[i] = true; },
                   [&] { w_[i] = false; }))
            return true;
        }
      }
    return done;  // every task placed, the peak below the bound
  }
  template <class Do, class Undo>
  bool step(int dev, double delta, double peak, Do&& apply, Undo&& undo) {
    double& h = held_[ix(dev)];
    const double high = std::max(peak, delta > 0 ? h + delta : h);
    if (high >= bound_) return false;
    h += delta;
    apply();
    const bool found = walk(high);
    undo();
    h -= delta;
    return found;
  }

  const Schedule& sk_;
  const CostModel& costs_;
  int stages_, m_;
  std::vector<bool> f_;
  std::vector<int> b_;
  std::vector<bool> w_;
  std::vector<double> held_;
  double bound_{0};
};

CostSpec random_costs(std::mt19937& rng, int p) {
  std::uniform_real_distribution<double> mb(0.5, 1.5), mw(0.1, 3.0), t(0.5, 2.0);
  CostSpec spec;
  spec.stages.clear();
  for (int d = 0; d < p; ++d) {
    StageCosts c;
    c.F = static_cast<Ticks>(t(rng) * 1e6);
    c.B = static_cast<Ticks>(t(rng) * 1e6);
    c.W = static_cast<Ticks>(t(rng) * 1e6);
    c.MB = std::round(mb(rng) * 8) / 8;
    c.MW = std::round(mw(rng) * 8) / 8;
    spec.stages.push_back(c);
  }
  return spec;
}

RunRequest request_of(const std::string& name, int p, int m, const CostSpec& costs) {
  RunRequest rq;
  rq.schedule = name;
  rq.devices = p;
  rq.microbatches = m;
  rq.costs = costs;
  rq.mem_limit = parse_mem_limit("0.01");
  return rq;
}

} // namespace

TEST_CASE("one micro-batch in flight runs each micro-batch through F and fused BW alone",
          "[schedules][in-flight]") {
  const Schedule skeleton = make_pipeline("s", 2, 2, loop_placement(2, 1));
  const CostModel costs = cost_model_for(CostSpec{}, skeleton);
  const Schedule s = detail::in_flight_order(skeleton, costs, 1);
  CHECK(s.order[0] == std::vector<Task>{Task::make(Kind::F, 0, 0), Task::make(Kind::BW, 0, 0),
                                        Task::make(Kind::F, 0, 1), Task::make(Kind::BW, 0, 1)});
  CHECK(s.order[1] == std::vector<Task>{Task::make(Kind::F, 1, 0), Task::make(Kind::BW, 1, 0),
                                        Task::make(Kind::F, 1, 1), Task::make(Kind::BW, 1, 1)});
  CHECK(validate(s).empty());
  CHECK(memory_lower_bound(skeleton, costs) == 1.0);
  // by hand, p = 4, m = 8, F = 1, B = W = 1 (BW = 2): each micro-batch 4 F + 4 BW = 12 alone
  const CostSpec unit = parse_costs("F=1,B=1,W=1,MW=3");
  const Schedule four = make_pipeline("s", 4, 8, loop_placement(4, 1));
  const Metrics alone = run_schedule(detail::in_flight_order(four, cost_model_for(unit, four), 1),
                                     unit).metrics;
  CHECK(alone.cost == Ticks{96'000'000});
  CHECK(alone.peak_memory == 1.0);
}

TEST_CASE("k micro-batches in flight hold k micro-batches' activations, on any placement",
          "[schedules][in-flight]") {
  const CostSpec unit = parse_costs("F=1,B=1,W=1,MW=3,comm=0.25");
  for (const bool v_shape : {false, true}) {
    const int p = 4, m = 8;
    const Schedule skeleton = make_pipeline(
        "s", p, m, v_shape ? vshape_placement(p) : loop_placement(p, 1));
    const CostModel costs = cost_model_for(unit, skeleton);
    Ticks previous = std::numeric_limits<Ticks>::max();
    for (int k = 1; k <= p; ++k) {
      CAPTURE(v_shape, k);
      const Schedule s = detail::in_flight_order(skeleton, costs, k);
      REQUIRE(validate(s).empty());
      const Metrics got = run_schedule(s, unit).metrics;
      CHECK(got.peak_memory <= k + 1e-9);
      CHECK(got.cost < previous);  // more in flight, less waiting
      previous = got.cost;
    }
  }
  CHECK(detail::in_flight_within(2.5, 1.0) == 2);
  CHECK(detail::in_flight_within(2.0 - 1e-12, 1.0) == 2);
  CHECK(detail::in_flight_within(0.5, 1.0) == 0);
}

TEST_CASE("the least limit zb-auto and zb-v name is the least of every order",
          "[schedules][in-flight][robust]") {
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 12; ++trial) {
    const int p = 2 + trial % 2, m = 2;
    const bool v = trial % 4 >= 2;
    if (v && p == 3) continue;  // the V's 2p stages at p = 3 make the walk long; p = 2 covers it
    const CostSpec spec = random_costs(rng, p);
    const std::string name = v ? "zb-v" : "zb-auto";
    CAPTURE(trial, name, p, m);
    const Schedule skeleton =
        make_pipeline("s", p, m, v ? vshape_placement(p) : loop_placement(p, 1));
    const CostModel costs = cost_model_for(spec, skeleton);
    const double one = memory_lower_bound(skeleton, costs);
    // no order holds less (every order searched), and the named least is that
    EveryOrder every(skeleton, costs);
    CHECK_FALSE(every.below(one - 1e-9));
    CHECK(every.below(one + 1e-6));
    const double least = least_mem_limit(request_of(name, p, m, spec));
    CHECK(least == Approx(one).epsilon(1e-3));
    // and the generator works there, holding no more
    RunRequest at = request_of(name, p, m, spec);
    at.mem_limit = parse_mem_limit(fmt::format("{}", one));
    CHECK(run_request(at).metrics.peak_memory <= one + 1e-9);
  }
}

TEST_CASE("below the memory split B and W need, zb-auto and zb-v fuse BW", "[schedules][in-flight]") {
  // the case: B raises memory by 2 M_B; split, one micro-batch needs 3 M_B
  const CostSpec costs = parse_costs("F=1,B=1,W=1,MW=3");
  std::vector<std::string> notes;
  ScheduleSpec spec{.devices = 4, .microbatches = 8, .mem_limit = 2.0};
  spec.costs = &costs;
  spec.notes = &notes;
  const Schedule s = make_schedule("zb-auto", spec);
  CHECK(validate(s).empty());
  const Metrics two = run_schedule(s, costs).metrics;
  CHECK(two.peak_memory <= 2.0);
  CHECK(two.cost < Ticks{96'000'000});  // better than one at a time
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("at most 2 micro-batches in flight"));
  spec.mem_limit = 0.9;
  CHECK_THROWS_WITH(make_schedule("zb-auto", spec), Catch::Contains("least that works, 1 M_B"));
  // zb-v at p = 2, m = 4: one micro-batch's two chunks, 1 M_B
  ScheduleSpec vs{.devices = 2, .microbatches = 4, .mem_limit = 1.0};
  vs.costs = &costs;
  const Schedule zbv = make_schedule("zb-v", vs);
  CHECK(validate(zbv).empty());
  CHECK(run_schedule(zbv, costs).metrics.peak_memory <= 1.0);
  vs.mem_limit = 0.99;
  CHECK_THROWS_WITH(make_schedule("zb-v", vs), Catch::Contains("least that works, 1 M_B"));
}
