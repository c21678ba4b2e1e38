// Tests of `plan --gpus N` in the library: the layouts of N devices it tries (pp x tp x dp x ep,
// by the rules written in ppsim/run/plan.hpp), and that each layout's row is its own whole plan.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/plan.hpp"
#include "ppsim/sim/errors.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <tuple>
#include <vector>

using namespace ppsim;

namespace {

ParallelRequest parallel_request(const std::string& model, int gpus, int global_batch) {
  ParallelRequest rq;
  rq.base.workload.model = load_model(model);
  rq.base.workload.device = load_device("h100");
  rq.base.global_batch = global_batch;
  rq.base.schedules = {"1f1b", "zb-h1"};
  rq.gpus = gpus;
  return rq;
}

std::set<std::tuple<int, int, int, int>> as_set(const std::vector<ParallelShape>& shapes) {
  std::set<std::tuple<int, int, int, int>> out;
  for (const ParallelShape& s : shapes) out.emplace(s.pp, s.tp, s.dp, s.ep);
  return out;
}

} // namespace

TEST_CASE("plan --gpus tries every pp x tp x dp the rules allow, and only those", "[run][plan]") {
  // zb-1.5b: 22 layers, 24 heads (and KV heads); an h100 node holds 8.
  ParallelRequest rq = parallel_request("zb-1.5b", 8, 24);
  using S = std::tuple<int, int, int, int>;
  CHECK(as_set(parallel_shapes(rq)) == std::set<S>{{1, 1, 8, 1}, {1, 2, 4, 1}, {1, 4, 2, 1},
                                                   {1, 8, 1, 1}, {2, 1, 4, 1}, {2, 2, 2, 1},
                                                   {2, 4, 1, 1}, {4, 1, 2, 1}, {4, 2, 1, 1},
                                                   {8, 1, 1, 1}});
  // dp must divide the global batch: 8 does not divide 12.
  rq.base.global_batch = 12;
  CHECK(as_set(parallel_shapes(rq)).count(S{1, 1, 8, 1}) == 0);
  CHECK(parallel_shapes(rq).size() == 9);
  // tp divides the heads: at 48 devices tp 3 and 6 come in (24 heads), 16 never (one node).
  rq.gpus = 48;
  rq.base.global_batch = 48;
  std::set<int> tps;
  for (const ParallelShape& s : parallel_shapes(rq)) {
    CHECK(s.pp * s.tp * s.dp == 48);
    CHECK(s.pp <= 22);
    tps.insert(s.tp);
  }
  CHECK(tps == std::set<int>{1, 2, 3, 4, 6, 8});
  // A dimension given is kept.
  rq.fixed_tp = 2;
  for (const ParallelShape& s : parallel_shapes(rq)) CHECK(s.tp == 2);
  rq.fixed_pp = 4;
  CHECK(as_set(parallel_shapes(rq)) == std::set<S>{{4, 2, 6, 1}});
}

TEST_CASE("plan --gpus searches ep for a mixture of experts over the experts dp x tp can hold",
          "[run][plan]") {
  // mixtral-8x7b: 8 experts; ep divides dp x tp and the experts.
  ParallelRequest rq = parallel_request("mixtral-8x7b", 16, 64);
  rq.fixed_pp = 4;
  rq.fixed_tp = 2;  // dp = 2: ep in 1, 2, 4 (dp x tp = 4)
  std::set<int> eps;
  for (const ParallelShape& s : parallel_shapes(rq)) eps.insert(s.ep);
  CHECK(eps == std::set<int>{1, 2, 4});
  // A dense model has ep 1 only.
  ParallelRequest dense = parallel_request("zb-1.5b", 16, 64);
  for (const ParallelShape& s : parallel_shapes(dense)) CHECK(s.ep == 1);
}

TEST_CASE("each layout's row is its own whole plan, and the winner is the fastest that fits",
          "[run][plan]") {
  const ParallelRequest rq = parallel_request("zb-1.5b", 8, 24);
  const ParallelPlan pp = make_parallel_plan(rq);
  REQUIRE(pp.rows.size() == 10);
  REQUIRE(pp.best == 0);
  const ParallelRow& w = pp.rows.front();
  REQUIRE(w.fits);
  for (const ParallelRow& r : pp.rows)
    if (r.fits) CHECK(w.best.iteration_time_ms <= r.best.iteration_time_ms);
  CHECK(pp.plan_shape == w.shape);
  // The rows are make_plan's own answers for their layouts.
  for (std::size_t i : {std::size_t{0}, pp.rows.size() - 1}) {
    const ParallelRow& r = pp.rows[i];
    const Plan alone = make_plan(layout_request(rq.base, r.shape));
    CHECK(alone.candidates.size() == r.simulated);
    CHECK(r.simulated == alone.simulated);
    CHECK(r.fits == (alone.best >= 0));
    if (r.fits) {
      CHECK(r.best.iteration_time_ms == alone.candidates[0].iteration_time_ms);
      CHECK(r.best.schedule == alone.candidates[0].schedule);
    }
  }
  CHECK(pp.plan.candidates.size() == pp.rows.front().simulated);
  CHECK_THAT(pp.why, Catch::Contains("faster than the best other layout"));
}

TEST_CASE("plan --gpus refuses what it cannot plan, naming it", "[run][plan][bad-input]") {
  ParallelRequest rq = parallel_request("zb-1.5b", 0, 24);
  CHECK_THROWS_WITH(parallel_shapes(rq), Catch::Contains("--gpus 0: expected 1.."));
  rq.gpus = 2'000'000;
  CHECK_THROWS_AS(parallel_shapes(rq), ConfigError);
  rq.gpus = 8;
  rq.fixed_pp = 3;  // not a divisor of 8
  CHECK_THROWS_WITH(parallel_shapes(rq), Catch::Contains("no layout"));
  rq.fixed_pp = 9;
  CHECK_THROWS_WITH(parallel_shapes(rq), Catch::Contains("-p 9 with --gpus 8"));
  // Too many layouts to plan: a bound before any is planned.
  ParallelRequest many = parallel_request("llama3-405b", 720720, 720720);
  CHECK_THROWS_WITH(parallel_shapes(many), Catch::Contains("more than 96 layouts"));
  // Bad input every layout shares is thrown, not a table of refusals.
  ParallelRequest bad = parallel_request("zb-1.5b", 4, 8);
  bad.base.cost_overrides = "F=oops";
  CHECK_THROWS_AS(make_parallel_plan(bad), ConfigError);
}
