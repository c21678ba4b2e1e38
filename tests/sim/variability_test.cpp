// Tests of noisy durations and stragglers: the lognormal factors, the samples' distribution,
// determinism over seeds and threads, wins over the same samples, slow devices and stages.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/variability.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

using namespace ppsim;

namespace {

using ppsim::test::ms;

JitterOptions jitter(double cv, std::uint64_t seed, int samples, unsigned threads = 0) {
  JitterOptions o;
  o.cv = cv;
  o.seed = seed;
  o.samples = samples;
  o.threads = threads;
  return o;
}

struct Fixture {
  Schedule schedule;
  CostModel costs;
};

Fixture fixture(const std::string& name, int p, int m, const std::string& costs) {
  Schedule s = make_schedule(name, {.devices = p, .microbatches = m});
  CostModel c = cost_model_for(parse_costs(costs), s);
  return {std::move(s), std::move(c)};
}

} // namespace

TEST_CASE("jitter factors have mean 1 and the asked coefficient of variation", "[sim][jitter]") {
  const double cv = GENERATE(0.05, 0.3, 1.0);
  CAPTURE(cv);
  // 200,000 factors: 40 samples of 5,000 tasks. The standard error of the mean is cv/447, of
  // the CV a few times that (a lognormal's tail): 2 % and 8 % are several standard errors.
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int k = 0; k < 40; ++k)
    for (int j = 0; j < 5000; ++j) {
      const double x = jitter_factor(cv, 7, k, Task::make(Kind::F, j % 8, j / 8));
      REQUIRE(x > 0);
      sum += x;
      sum2 += x * x;
      ++n;
    }
  const double mean = sum / n;
  const double sd = std::sqrt(sum2 / n - mean * mean);
  CHECK(mean == Approx(1.0).epsilon(0.02 * std::max(cv, 0.1)));
  CHECK(sd / mean == Approx(cv).epsilon(0.08));
  // A factor depends on the seed, the sample and the task only.
  const Task t = Task::make(Kind::W, 3, 5);
  CHECK(jitter_factor(cv, 7, 2, t) == jitter_factor(cv, 7, 2, t));
  CHECK(jitter_factor(cv, 7, 2, t) != jitter_factor(cv, 8, 2, t));
  CHECK(jitter_factor(cv, 7, 2, t) != jitter_factor(cv, 7, 3, t));
  CHECK(jitter_factor(cv, 7, 2, t) != jitter_factor(cv, 7, 2, Task::make(Kind::B, 3, 5)));
  CHECK(jitter_factor(0, 7, 2, t) == 1.0);
}

TEST_CASE("the distribution is the mean, nearest-rank percentiles and the range", "[sim][jitter]") {
  std::vector<Ticks> v;
  for (int i = 100; i >= 1; --i) v.push_back(i * ms);  // 1..100 ms, unsorted
  const Distribution d = distribution_ms(v);
  CHECK(d.mean == 50.5);
  CHECK(d.p50 == 50);
  CHECK(d.p90 == 90);
  CHECK(d.p99 == 99);
  CHECK(d.min == 1);
  CHECK(d.max == 100);
  const Distribution one = distribution_ms({3 * ms});
  CHECK((one.p50 == 3 && one.p99 == 3 && one.mean == 3));
}

TEST_CASE("a CV of 0 gives the deterministic cost in every sample; a tiny one stays close",
          "[sim][jitter]") {
  for (const char* name : {"1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe-v"}) {
    CAPTURE(name);
    const Fixture f = fixture(name, 4, 8, "F=1,B=1.5,W=0.7,comm=0.2");
    const Ticks cost = measure(simulate(f.schedule, f.costs), f.costs).cost;
    const SampleSummary zero = sample_run(f.schedule, f.costs, {}, {}, jitter(0, 1, 20));
    for (const Ticks c : zero.cost) CHECK(c == cost);
    CHECK(zero.cost_ms.mean == Approx(ticks_to_ms(cost)).epsilon(1e-12));
    // CV 1e-3: every task within a few tenths of a percent, so the mean within 1 %.
    const SampleSummary tiny = sample_run(f.schedule, f.costs, {}, {}, jitter(1e-3, 1, 200));
    CHECK(tiny.cost_ms.mean == Approx(ticks_to_ms(cost)).epsilon(0.01));
    CHECK(tiny.cost_ms.min < tiny.cost_ms.max);  // the noise does reach the cost
  }
}

TEST_CASE("samples are the same for the same seed and any thread count", "[sim][jitter]") {
  const Fixture f = fixture("zb-h1", 4, 16, "F=1,B=1,W=1,comm=0.1");
  CommOptions blocking;
  blocking.mode = CommMode::Blocking;
  const SampleSummary a = sample_run(f.schedule, f.costs, blocking, {}, jitter(0.2, 42, 101, 1));
  const SampleSummary b = sample_run(f.schedule, f.costs, blocking, {}, jitter(0.2, 42, 101, 3));
  const SampleSummary c = sample_run(f.schedule, f.costs, blocking, {}, jitter(0.2, 42, 101, 0));
  CHECK(a.cost == b.cost);
  CHECK(a.cost == c.cost);
  const SampleSummary other = sample_run(f.schedule, f.costs, blocking, {}, jitter(0.2, 43, 101));
  CHECK(other.cost != a.cost);
  CHECK(a.count == 101);
  CHECK(a.seed == 42);
  CHECK(a.cv == 0.2);
  CHECK(a.cost_ms.min <= a.cost_ms.p50);
  CHECK(a.cost_ms.p50 <= a.cost_ms.p90);
  CHECK(a.cost_ms.p90 <= a.cost_ms.p99);
  CHECK(a.cost_ms.p99 <= a.cost_ms.max);
}

TEST_CASE("with iterations, samples give the iteration time too", "[sim][jitter]") {
  const Fixture f = fixture("1f1b", 4, 8, "F=1,B=1,W=1");
  IterationOptions it;
  it.count = 3;
  it.optimizer_step = 2 * ms;
  const Ticks step = simulate_iterations(f.schedule, f.costs, it).iteration_time;
  const SampleSummary zero = sample_run(f.schedule, f.costs, {}, it, jitter(0, 1, 5));
  REQUIRE(zero.iteration_time_ms);
  for (const Ticks t : zero.iteration_time) CHECK(t == step);
  const SampleSummary noisy = sample_run(f.schedule, f.costs, {}, it, jitter(0.3, 1, 50));
  REQUIRE(noisy.iteration_time_ms);
  CHECK(noisy.iteration_time_ms->min < noisy.iteration_time_ms->max);
}

TEST_CASE("compare counts each schedule's wins over the same samples", "[run][jitter]") {
  std::vector<RunRequest> rqs;
  for (const char* name : {"1f1b", "zb-h1", "zb-h2"}) {
    RunRequest rq;
    rq.schedule = name;
    rq.devices = 4;
    rq.microbatches = 8;
    rq.costs = parse_costs("F=1,B=1,W=1");
    rq.jitter = jitter(0.1, 3, 200);
    rqs.push_back(rq);
  }
  const Comparison c = run_compare(rqs);
  REQUIRE(c.runs.size() == 3);
  int total = 0;
  for (int k = 0; k < 200; ++k) {
    Ticks best = c.runs[0].samples->cost[static_cast<std::size_t>(k)];
    for (const Run& r : c.runs) best = std::min(best, r.samples->cost[static_cast<std::size_t>(k)]);
    for (const Run& r : c.runs) total += r.samples->cost[static_cast<std::size_t>(k)] == best;
  }
  int wins = 0;
  for (const Run& r : c.runs) wins += r.samples->wins.value();
  CHECK(wins == total);
  CHECK(wins >= 200);
  // ZB-H2 needs no bubble at F = B = W and 1F1B pays (p-1)(F+B+W): 1F1B never wins.
  CHECK(c.runs[0].samples->wins == 0);
  CHECK(*c.runs[2].samples->wins > *c.runs[1].samples->wins);
  // By hand: sample 0 tie, sample 1 to the second, sample 2 to the first.
  SampleSummary a, b;
  a.count = b.count = 3;
  a.cost = {5, 4, 1};
  b.cost = {5, 3, 2};
  count_wins({&a, &b});
  CHECK(a.wins == 2);
  CHECK(b.wins == 2);
}

TEST_CASE("bad jitter values are named", "[sim][jitter]") {
  const Fixture f = fixture("1f1b", 2, 2, "F=1");
  CHECK_THROWS_WITH(sample_run(f.schedule, f.costs, {}, {}, jitter(-0.1, 1, 5)),
                    Catch::Contains("--jitter -0.1: the coefficient of variation must be in 0..10"));
  CHECK_THROWS_AS(sample_run(f.schedule, f.costs, {}, {}, jitter(std::nan(""), 1, 5)), ConfigError);
  CHECK_THROWS_WITH(sample_run(f.schedule, f.costs, {}, {}, jitter(0.1, 1, 0)),
                    Catch::Contains("--samples 0: must be in 1..1000000"));
  // Bounded before simulating: 1e6 samples of 1F1B p=64 m=512's 65,536 tasks.
  const Fixture big = fixture("1f1b", 64, 512, "F=1");
  CHECK_THROWS_WITH(sample_run(big.schedule, big.costs, {}, {}, jitter(0.1, 1, 1'000'000)),
                    Catch::Contains("more than 500000000 in all"));
}

TEST_CASE("a slow device scales the tasks of every stage it holds, and only those",
          "[sim][slow]") {
  for (const char* name : {"1f1b", "interleaved-1f1b", "zb-v"}) {
    CAPTURE(name);
    const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
    CostSpec spec = parse_costs("F=1,B=1,W=1");
    const CostModel plain = cost_model_for(spec, s);
    spec.slow = {{1, 2.5}};
    const CostModel slow = cost_model_for(spec, s);
    for (int st = 0; st < s.stages(); ++st) {
      const auto& a = plain.stage[static_cast<std::size_t>(st)];
      const auto& b = slow.stage[static_cast<std::size_t>(st)];
      const double f = s.stage_device[static_cast<std::size_t>(st)] == 1 ? 2.5 : 1.0;
      CHECK(b.F == std::llround(static_cast<double>(a.F) * f));
      CHECK(b.BW == std::llround(static_cast<double>(a.BW) * f));
    }
    const Metrics m0 = measure(simulate(s, plain), plain);
    const Metrics m1 = measure(simulate(s, slow), slow);
    for (int d = 0; d < 4; ++d) {
      const auto& busy0 = m0.per_device[static_cast<std::size_t>(d)].busy;
      const auto& busy1 = m1.per_device[static_cast<std::size_t>(d)].busy;
      CHECK(busy1 == (d == 1 ? busy0 * 5 / 2 : busy0));
    }
    CHECK(m1.cost > m0.cost);
  }
}

TEST_CASE("a straggler at 1F1B p=2 m=1: the slow device's work is on the critical path",
          "[sim][slow]") {
  // F = B = W = 1 (BW = 2), device 1 twice as slow: F0 [0,1] on d0, F0 [1,3] and BW0 [3,7] on
  // d1, BW0 [7,9] on d0: cost 9 (12 with device 0 slow too: [0,2] [2,4] [4,8] [8,12]).
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 1});
  CostSpec spec = parse_costs("F=1,B=1,W=1");
  spec.slow = {{1, 2}};
  CHECK(measure(simulate(s, cost_model_for(spec, s)), cost_model_for(spec, s)).cost == 9 * ms);
  spec.slow = {{1, 2}, {0, 2}};
  CHECK(measure(simulate(s, cost_model_for(spec, s)), cost_model_for(spec, s)).cost == 12 * ms);
}

TEST_CASE("a cost file's per-stage factor makes an uneven stage", "[sim][slow]") {
  const CostSpec spec = parse_cost_json(
      R"({"schema": "ppsim.costs/1", "comm": 0, "stages": [
           {"F": 1, "B": 1, "W": 1}, {"F": 1, "B": 1, "W": 1, "factor": 1.5},
           {"F": 1, "B": 1, "W": 1}, {"F": 1, "B": 1, "W": 1}]})",
      "costs.json");
  const Schedule s = make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(spec, s);
  CHECK(c.stage[0].F == 1 * ms);
  CHECK(c.stage[1].F == 1'500'000);
  CHECK(c.stage[1].W == 1'500'000);
  CHECK(c.stage[1].BW == 3 * ms);
  CHECK(c.stage[1].factor == 1.0);  // applied
  CHECK(measure(simulate(s, c), c).per_device[1].busy == 36 * ms);
  CHECK_THROWS_WITH(parse_cost_json(R"({"schema": "ppsim.costs/1", "stages": [
                                        {"F": 1, "B": 1, "W": 1, "factor": 0}]})",
                                    "costs.json"),
                    Catch::Contains("factor") && Catch::Contains("expected a factor in (0, 1e+06]"));
}

TEST_CASE("bad slow devices are named", "[sim][slow]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  CostSpec spec = parse_costs("F=1");
  spec.slow = {{4, 2}};
  CHECK_THROWS_WITH(cost_model_for(spec, s),
                    "--slow device=4: outside 0..3 (the schedule has 4 devices)");
  spec.slow = {{1, 2}, {1, 3}};
  CHECK_THROWS_WITH(cost_model_for(spec, s), "--slow device=1: given twice");
  spec.slow = {{1, -2}};
  CHECK_THROWS_WITH(cost_model_for(spec, s), Catch::Contains("factor -2 is outside"));
  CHECK_THROWS_WITH(parse_slow("device=1"), "--slow 'device=1': needs device=D,factor=X");
  CHECK_THROWS_WITH(parse_slow("device=1,speed=2"),
                    "--slow: unknown key 'speed' (valid keys: device, factor)");
  CHECK(parse_slow("device=2,factor=1.5") == SlowDevice{2, 1.5});
}
