// Tests of plan's writers: the ppsim.plan/1 document and the ranked table, alone and of a
// --gpus search.
#include "ppsim/viz/plan.hpp"

#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

using namespace ppsim;
using json = nlohmann::json;

// Two candidates: a zb-v that fits with recomputation, and a 1f1b that does not fit.
Plan two_candidate_plan() {
  Plan plan;
  PlanCandidate fits;
  fits.schedule = "zb-v";
  fits.chunks = 2;
  fits.microbatches = 16;
  fits.microbatch_size = 1;
  fits.layout = "8,8,8,8";
  fits.mem_limit = 6.5;
  fits.recompute = "selective";
  fits.without_knob_ms = 1500;
  fits.iteration_time_ms = 1250.5;
  fits.cost_ms = 1200;
  fits.bubble_rate = 0.125;
  fits.peak_bytes = 64.0 * (1 << 30);
  fits.activation_peak_bytes = 16.0 * (1 << 30);
  fits.fits = true;
  PlanCandidate not_fit;
  not_fit.schedule = "1f1b";
  not_fit.chunks = 1;
  not_fit.microbatches = 8;
  not_fit.microbatch_size = 2;
  not_fit.reason = "device 0 holds 90 GiB, above its 80 GiB";
  plan.candidates = {fits, not_fit};
  plan.best = 0;
  plan.why = "zb-v wins";
  plan.capacity_bytes = 80.0 * (1 << 30);
  plan.simulated = 2;
  return plan;
}

PlanRequest plan_request() {
  PlanRequest rq;
  rq.workload.model.name = "m";
  rq.workload.device.name = "h100";
  rq.devices = 4;
  rq.global_batch = 16;
  return rq;
}

} // namespace

TEST_CASE("plan's document lists every candidate with its knobs, null where it has none",
          "[viz][plan]") {
  const json doc = json::parse(plan_json(two_candidate_plan(), plan_request()));
  CHECK(doc["schema"] == "ppsim.plan/1");
  CHECK(doc["model"] == "m");
  CHECK(doc["devices"] == 4);
  CHECK(doc["best"] == 0);
  CHECK(doc["why"] == "zb-v wins");
  CHECK_FALSE(doc.contains("slicing"));
  REQUIRE(doc["candidates"].size() == 2);
  const json& a = doc["candidates"][0];
  CHECK(a["mem_limit"] == 6.5);
  CHECK(a["recompute"] == "selective");
  CHECK(a["without_knob_ms"] == 1500.0);
  CHECK(a["offload"].is_null());
  CHECK(a["overlap"].is_null());
  CHECK_FALSE(a.contains("exposed_dp_ms"));  // no --dp
  const json& b = doc["candidates"][1];
  CHECK(b["mem_limit"].is_null());
  CHECK(b["recompute"].is_null());
  CHECK_FALSE(b.contains("without_knob_ms"));
  CHECK(b["fits"] == false);
  CHECK(b["reason"] == "device 0 holds 90 GiB, above its 80 GiB");
}

TEST_CASE("plan's table ranks the candidates: a layout and its knobs, or why it does not fit",
          "[viz][plan]") {
  std::ostringstream os;
  write_plan_table(os, two_candidate_plan(), plan_request(), 15);
  const auto lines = ppsim::test::lines_of(os.str());
  REQUIRE(lines.size() == 7);
  CHECK(lines[0] == "m on 4 devices (h100), global batch 16, capacity 80.0 GiB: 2 candidates");
  CHECK_THAT(lines[3], Catch::StartsWith("   1  zb-v"));
  CHECK_THAT(lines[3], Catch::EndsWith("8,8,8,8  --recompute selective"));
  CHECK_THAT(lines[4], Catch::StartsWith("   2  1f1b"));
  CHECK_THAT(lines[4], Catch::EndsWith("device 0 holds 90 GiB, above its 80 GiB"));
  CHECK(lines[6] == "best: zb-v wins");
  std::ostringstream top1;
  write_plan_table(top1, two_candidate_plan(), plan_request(), 1);
  CHECK_THAT(top1.str(), Catch::Contains("  ... 1 more (--top N, or --json for all)\n"));
}

TEST_CASE("plan --gpus's document is the best layout's plan, then every layout", "[viz][plan]") {
  ParallelPlan pp;
  pp.plan = two_candidate_plan();
  pp.plan_shape = {.pp = 4, .tp = 2, .dp = 1, .ep = 1};
  ParallelRow good{.shape = pp.plan_shape, .fits = true, .best = pp.plan.candidates[0],
                   .reason = "", .simulated = 2};
  ParallelRow bad{.shape = {.pp = 8, .tp = 1, .dp = 1, .ep = 1}, .fits = false, .best = {},
                  .reason = "no candidate fits", .simulated = 3};
  pp.rows = {good, bad};
  pp.best = 0;
  pp.why = "pp=4 tp=2 wins";
  ParallelRequest rq;
  rq.base = plan_request();
  rq.gpus = 8;
  const json doc = json::parse(parallel_plan_json(pp, rq));
  CHECK(doc["schema"] == "ppsim.plan/1");
  CHECK(doc["devices"] == 4);  // the best layout's pp, not the request's
  CHECK(doc["gpus"] == 8);
  CHECK(doc["parallel"] == json{{"pp", 4}, {"tp", 2}, {"dp", 1}, {"ep", 1}});
  REQUIRE(doc["layouts"].size() == 2);
  CHECK(doc["layouts"][0]["best"]["schedule"] == "zb-v");
  CHECK_FALSE(doc["layouts"][1].contains("best"));
  CHECK(doc["layouts"][1]["reason"] == "no candidate fits");
  CHECK(doc["best_layout"] == 0);
  std::ostringstream os;
  write_parallel_plan_table(os, pp, rq, 15);
  CHECK_THAT(os.str(), Catch::StartsWith("m on 8 devices (h100, "));
  CHECK_THAT(os.str(), Catch::Contains("\nbest layout: pp=4 tp=2 wins\n\nThe plan of the best "
                                       "layout:\nm on 4 devices (h100)"));
}
