// Tests of recomputation as a knob: its costs per stage (Megatron's block method), `auto`, and
// plan trying it.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/plan.hpp"
#include "ppsim/run/recompute.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/run/transformer.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;
using namespace ppsim::test;
using Catch::Contains;

namespace {

WorkloadSpec workload(const char* model, const char* recompute = "") {
  WorkloadSpec w;
  w.model = load_model(model);
  w.device = load_device("h100");
  apply_recompute(w, parse_recompute(recompute));
  return w;
}

RunRequest request(const char* schedule, int p, int m, WorkloadSpec w) {
  RunRequest rq;
  rq.schedule = schedule;
  rq.devices = p;
  rq.microbatches = m;
  rq.mem_capacity_bytes = w.device.memory_gib * 1073741824.0;
  rq.workload = std::move(w);
  return rq;
}

} // namespace

TEST_CASE("full recompute adds one forward per micro-batch to B on every decoder stage",
          "[run][recompute]") {
  // zb-6.2b on 6 stages: the middle ones hold decoders only, so their recomputed forward is
  // their F exactly (the same FLOPs at F's efficiency).
  const ModelCosts none = workload_costs(workload("zb-6.2b"), 6, 0);
  const ModelCosts full = workload_costs(workload("zb-6.2b", "full"), 6, 0);
  REQUIRE(none.costs.stages.size() == 6);
  for (std::size_t i = 1; i + 1 < 6; ++i) {
    const StageCosts& a = none.costs.stages[i];
    const StageCosts& b = full.costs.stages[i];
    CHECK(a.R == 0);
    CHECK(b.R == a.F);
    CHECK(b.B == a.B + a.F);
    CHECK(b.F == a.F);
    CHECK(b.W == a.W);
  }
  // in a run every device is busy m forwards longer, and says so
  const int m = 12;
  RunRequest rq = request("1f1b", 6, m, workload("zb-6.2b"));
  const Run a = run_request(rq);
  rq.workload = workload("zb-6.2b", "full");
  const Run b = run_request(rq);
  for (int d = 1; d + 1 < 6; ++d) {
    const auto i = static_cast<std::size_t>(d);
    CHECK(b.metrics.per_device[i].busy - a.metrics.per_device[i].busy == m * none.costs.stages[i].F);
    CHECK(b.metrics.per_device[i].recompute == m * none.costs.stages[i].F);
    CHECK(a.metrics.per_device[i].recompute == 0);
  }
}

TEST_CASE("full:N recomputes the first N layers of each stage (Megatron's block method)",
          "[run][recompute]") {
  const ModelSpec m = load_model("zb-1.5b");
  const DeviceSpec d = load_device("h100");
  const Layout layout = parse_layout("tttttt|tttttt", "test");
  const ModelCosts mc = model_costs(m, d, layout, 2, {}, parse_recompute("full:2,full:2+selective").stages);
  const LayerEstimate none = decoder_layer(m, Recompute::none);
  const LayerEstimate sel = decoder_layer(m, Recompute::selective);
  const LayerEstimate full = decoder_layer(m, Recompute::full);
  REQUIRE(mc.stages.size() == 2);
  CHECK(mc.stages[0].act_bytes == Approx(2 * full.act_bytes + 4 * none.act_bytes).epsilon(1e-12));
  CHECK(mc.stages[0].R_flops == Approx(2 * full.R_flops).epsilon(1e-12));
  CHECK(mc.stages[1].act_bytes == Approx(2 * full.act_bytes + 4 * sel.act_bytes).epsilon(1e-12));
  CHECK(mc.stages[1].R_flops == Approx(2 * full.R_flops + 4 * sel.R_flops).epsilon(1e-12));
  // a count beyond the stage recomputes all of it
  const ModelCosts all = model_costs(m, d, layout, 2, {}, parse_recompute("full:99").stages);
  CHECK(all.stages[0].act_bytes == Approx(6 * full.act_bytes).epsilon(1e-12));
  // one entry per stage, or one for all
  CHECK_THAT(error_of<ConfigError>([&] {
               (void)model_costs(m, d, layout, 2, {}, parse_recompute("none,none,none").stages);
             }),
             Contains("3 entries for 2 stages"));
}

TEST_CASE("recompute: --recompute none and no --recompute are the same run", "[run][recompute]") {
  RunRequest rq = request("zb-h1", 4, 8, workload("zb-1.5b"));
  const Run a = run_request(rq);
  rq.workload = workload("zb-1.5b", "none");
  const Run b = run_request(rq);
  CHECK(a.metrics.cost == b.metrics.cost);
  CHECK(a.metrics.peak_bytes == b.metrics.peak_bytes);
  CHECK(a.parameters == b.parameters);
}

TEST_CASE("the ladder of a stage runs from none to full by the FLOPs recomputed", "[run][recompute]") {
  const ModelSpec m = load_model("llama3-8b");
  const std::vector<StageRecompute> l = recompute_ladder(m, 4);
  REQUIRE(l.size() == 2 + 2 * 3 + 1);
  CHECK(l.front() == StageRecompute{});
  CHECK(l.back() == StageRecompute{Recompute::full, -1, Recompute::none});
  const auto flops = [&](const StageRecompute& s) {
    return model_costs(m, load_device("h100"), parse_layout("tttt", "t"), 1, {}, {s}).stages[0].R_flops;
  };
  for (std::size_t i = 1; i < l.size(); ++i) CHECK(flops(l[i - 1]) <= flops(l[i]));
  CHECK(recompute_ladder(m, 0).size() == 1);
}

TEST_CASE("recompute: --recompute auto fits llama3-8b on two h100s with the cheapest step of each stage",
          "[run][recompute]") {
  // Without it device 0 needs 103.5 GiB of 80 GiB (the README's plan example).
  RunRequest rq = request("1f1b", 2, 16, workload("llama3-8b"));
  CHECK_THROWS_AS(run_request(rq), OutOfMemoryError);
  rq.workload = workload("llama3-8b", "auto");
  const RecomputeChoice c = choose_recompute(rq);
  const std::vector<StageRecompute>& chosen = c.request.workload->recompute;
  REQUIRE(chosen.size() == 2);
  for (const DeviceMetrics& d : c.run.metrics.per_device) CHECK(d.peak_bytes <= rq.mem_capacity_bytes);
  CHECK(run_request(rq).metrics.cost == c.run.metrics.cost);
  // one step less on either stage does not fit: each device (one stage each) got the cheapest
  for (std::size_t i = 0; i < 2; ++i) {
    const std::vector<StageRecompute> ladder = recompute_ladder(rq.workload->model, 16);
    const auto at = std::find(ladder.begin(), ladder.end(), chosen[i]);
    REQUIRE(at != ladder.end());
    REQUIRE(at != ladder.begin());
    RunRequest less = c.request;
    less.workload->recompute[i] = *(at - 1);
    CHECK_THROWS_AS(run_request(less), OutOfMemoryError);
  }
  // a workload that fits as it is recomputes nothing
  RunRequest roomy = request("1f1b", 4, 8, workload("zb-1.5b", "auto"));
  const Run r = run_request(roomy);
  roomy.workload = workload("zb-1.5b");
  CHECK(r.metrics.cost == run_request(roomy).metrics.cost);
  for (const DeviceMetrics& d : r.metrics.per_device) CHECK(d.recompute == 0);
}

TEST_CASE("recompute: --recompute auto chooses per stage of a chunked schedule's v p stages", "[run][recompute]") {
  // interleaved-1f1b builds two chunks a device: its layout has 4 stages on 2 devices (the
  // choice was once made for 2 and refused as "2 entries for 4 stages").
  RunRequest rq = request("interleaved-1f1b", 2, 8, workload("llama3-8b"));
  CHECK_THROWS_AS(run_request(rq), OutOfMemoryError);
  rq.workload = workload("llama3-8b", "auto");
  const Run r = run_request(rq);
  for (const DeviceMetrics& d : r.metrics.per_device) CHECK(d.peak_bytes <= rq.mem_capacity_bytes);
  const RecomputeChoice c = choose_recompute(rq);
  CHECK(c.request.workload->recompute.size() == 4);
  CHECK(c.run.metrics.cost == r.metrics.cost);
}

TEST_CASE("recompute: --recompute auto on a memory-limited search keeps the fastest run that fits",
          "[run][recompute]") {
  // DeepSeek-V3 as trained (PP 16, EP 64, DP 128 ZeRO-1): zb-v fits with no recomputation, but
  // in 1.4 micro-batches of room its search finds an order of 63.4 s; more recomputation gives it
  // room for a far shorter one. auto was once the first that fits.
  WorkloadSpec w = workload("deepseek-v3");
  w.training.ep = 64;
  w.training.dp = 128;
  w.training.zero = 1;
  RunRequest rq = request("zb-v", 16, 32, w);
  const auto iteration_with = [&](const char* choice) {
    RunRequest one = rq;
    apply_recompute(*one.workload, parse_recompute(choice));
    return iteration_time(run_request(one));
  };
  const Ticks none = iteration_with("none");
  apply_recompute(*rq.workload, parse_recompute("auto"));
  const Run r = run_request(rq);
  for (const DeviceMetrics& d : r.metrics.per_device) CHECK(d.peak_bytes <= rq.mem_capacity_bytes);
  CHECK(iteration_time(r) * 4 < none);
  CHECK(iteration_time(r) <= iteration_with("selective"));
  CHECK(iteration_time(r) <= iteration_with("full"));
}

TEST_CASE("recompute: --recompute auto needs a model and memory to fit in", "[run][recompute][bad-input]") {
  RunRequest rq = request("1f1b", 2, 4, workload("zb-1.5b", "auto"));
  rq.mem_capacity_bytes = 0;
  CHECK_THAT(error_of<ConfigError>([&] { (void)run_request(rq); }), Contains("needs memory to fit in"));
}

TEST_CASE("plan fits llama3-8b on two h100s with recomputation and says what it costs",
          "[run][recompute][plan]") {
  PlanRequest rq;
  rq.workload = workload("llama3-8b");
  rq.devices = 2;
  rq.global_batch = 16;
  const Plan plan = make_plan(rq);
  REQUIRE(plan.best >= 0);
  const PlanCandidate& best = plan.candidates[static_cast<std::size_t>(plan.best)];
  CHECK(best.fits);
  CHECK_FALSE(best.recompute.empty());
  CHECK(best.peak_bytes <= plan.capacity_bytes);
  CHECK(best.iteration_time_ms > best.without_knob_ms);
  CHECK_THAT(plan.why, Contains("it fits only with --recompute") && Contains("% time over"));
  // the candidate's request reproduces it
  const Run again = run_request(candidate_request(rq, best));
  // the iteration: the pipeline, then the optimizer step the model gives
  CHECK(ticks_to_ms(again.iterations.iteration_time) == Approx(best.iteration_time_ms));
  CHECK(again.iterations.iteration_time > again.metrics.makespan);
}

TEST_CASE("plan ranks a candidate without recomputation first when it fits", "[run][recompute][plan]") {
  PlanRequest rq;
  rq.workload = workload("zb-1.5b");
  rq.devices = 4;
  rq.global_batch = 16;
  const Plan plan = make_plan(rq);
  REQUIRE(plan.best >= 0);
  CHECK(plan.candidates[static_cast<std::size_t>(plan.best)].recompute.empty());
  // a candidate with recomputation is there only because its shape did not fit without
  for (const PlanCandidate& c : plan.candidates) {
    if (c.recompute.empty()) continue;
    for (const PlanCandidate& o : plan.candidates)
      if (o.recompute.empty() && o.schedule == c.schedule && o.chunks == c.chunks &&
          o.microbatches == c.microbatches && o.layout == c.layout)
        CHECK_FALSE(o.fits);
  }
}

TEST_CASE("plan keeps selective recomputation where it gives a memory-limited search more room",
          "[run][recompute][plan]") {
  PlanRequest rq;
  rq.workload = workload("zb-28.3b");
  rq.devices = 8;
  rq.global_batch = 16;
  rq.schedules = {"zb-auto"};
  const Plan plan = make_plan(rq);
  REQUIRE(plan.best >= 0);
  const PlanCandidate& best = plan.candidates[static_cast<std::size_t>(plan.best)];
  CHECK(best.recompute == "selective");
  CHECK(best.iteration_time_ms < best.without_knob_ms);
  // the same shape without recomputation fits too, and is the slower one it is measured against
  bool found = false;
  for (const PlanCandidate& c : plan.candidates)
    if (c.recompute.empty() && c.chunks == best.chunks && c.microbatches == best.microbatches &&
        c.layout == best.layout) {
      found = true;
      CHECK(c.fits);
      CHECK(c.iteration_time_ms == best.without_knob_ms);
    }
  CHECK(found);
  CHECK_THAT(plan.why, Contains("with --recompute selective") && Contains("less room"));
}

TEST_CASE("plan fits llama3-8b on two gh200s by offloading activations over NVLink-C2C",
          "[run][offload][plan]") {
  PlanRequest rq;
  rq.workload = workload("llama3-8b");
  rq.workload.device = load_device("gh200");
  rq.devices = 2;
  rq.global_batch = 16;
  const Plan plan = make_plan(rq);
  REQUIRE(plan.best >= 0);
  const PlanCandidate& best = plan.candidates[static_cast<std::size_t>(plan.best)];
  CHECK_FALSE(best.offload.empty());
  CHECK(best.recompute.empty());
  CHECK(best.peak_bytes <= plan.capacity_bytes);
  CHECK(best.offloaded_bytes > 0);
  CHECK(best.offloaded_bytes <= rq.workload.device.host_memory_gib * 1073741824.0);
  CHECK_THAT(plan.why, Contains("it fits only with --offload") && Contains("on the host"));
  // faster than every candidate that fits by recomputing instead
  for (const PlanCandidate& c : plan.candidates)
    if (c.fits && !c.recompute.empty()) CHECK(best.iteration_time_ms <= c.iteration_time_ms);
  // the candidate's request reproduces it
  const Run again = run_request(candidate_request(rq, best));
  // the iteration: the pipeline, then the optimizer step the model gives
  CHECK(ticks_to_ms(again.iterations.iteration_time) == Approx(best.iteration_time_ms));
  CHECK(again.iterations.iteration_time > again.metrics.makespan);
  CHECK(again.metrics.host_peak_bytes == Approx(best.offloaded_bytes));
}
