// Tests of the hub every command passes through: a request's costs, its memory limit (parsed
// once, resolved once against the run's own costs) and its schedule, on every caller's path.
#include "ppsim/run/request.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/sweep.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

// zb-auto at p = 4, m = 8 on the zero-bubble paper's 1.5B model on an H100.
RunRequest model_request(const std::string& schedule, const std::string& limit) {
  RunRequest rq;
  rq.schedule = schedule;
  rq.devices = 4;
  rq.microbatches = 8;
  WorkloadSpec w;
  w.model = load_model("zb-1.5b");
  w.device = load_device("h100");
  rq.workload = std::move(w);
  rq.mem_limit = parse_mem_limit(limit);
  return rq;
}

} // namespace

TEST_CASE("a memory limit is parsed once into a value with its unit", "[run][request]") {
  CHECK(parse_mem_limit("").unit == MemLimit::Unit::none);
  const MemLimit k = parse_mem_limit("1.5p");
  CHECK(k.unit == MemLimit::Unit::per_device);
  CHECK(k.value == 1.5);
  CHECK(k.text == "1.5p");
  CHECK(parse_mem_limit("12") == MemLimit{MemLimit::Unit::units, 12, "12"});
  const MemLimit b = parse_mem_limit("3GiB");
  CHECK(b.unit == MemLimit::Unit::bytes);
  CHECK(b.value == 3.0 * 1024 * 1024 * 1024);
  CHECK(MemLimit::of_units(2.5).text == "2.5");
}

TEST_CASE("a malformed or out-of-range memory limit is refused when it is parsed",
          "[run][request][robust]") {
  for (const char* text : {"x", "-1", "0", "2q", "1e13", "nan", "1e400", "3e15p", "2e18GiB"}) {
    CAPTURE(text);
    CHECK_THROWS_AS(parse_mem_limit(text), ConfigError);
  }
  CHECK_THROWS_WITH(parse_mem_limit("1e13"), Catch::Contains("at most 1e+12 M_B"));
  CHECK_THROWS_WITH(parse_mem_limit("2q"), Catch::Contains("unknown unit 'q'"));
}

TEST_CASE("a limit resolves to M_B against the run's devices and costs", "[run][request]") {
  CostSpec costs = parse_costs("F=1,B=1,W=1");
  CHECK(mem_limit_units(MemLimit{}, 4, costs) == -1);
  CHECK(mem_limit_units(parse_mem_limit("1.5p"), 4, costs) == 6);
  CHECK(mem_limit_units(parse_mem_limit("12"), 4, costs) == 12);
  CHECK_THROWS_WITH(mem_limit_units(parse_mem_limit("3GiB"), 4, costs),
                    Catch::Contains("--model and --device"));
  costs.memory_unit_bytes = 1024.0 * 1024 * 1024;
  CHECK(mem_limit_units(parse_mem_limit("3GiB"), 4, costs) == 3);
}

TEST_CASE("the costs of a model request are the model's for the request's devices",
          "[run][request]") {
  RunRequest rq = model_request("1f1b", "");
  const CostSpec four = request_costs(rq, 4);
  const CostSpec two = request_costs(rq, 2);
  CHECK(four.memory_unit_bytes > 0);
  // Half the devices hold twice the layers each.
  CHECK(two.stages.front().F > four.stages.front().F);
  rq.cost_overrides = "comm=0.25";
  CHECK(request_costs(rq, 4).comm == 250'000);
  // Without a workload the request's own costs, untouched.
  RunRequest plain;
  plain.costs = parse_costs("F=2");
  CHECK(request_costs(plain, 4) == plain.costs);
}

TEST_CASE("a schedule that picks its own chunks runs on the model's costs for its stages",
          "[run][request]") {
  // Looped and V schedules default to two chunks: their costs must be the layout of 2p stages
  // (the loss on the V's last stage, back on device 0), as with -v 2 given, not p stages'.
  for (const char* schedule : {"interleaved-1f1b", "zb-v", "v-half", "dualpipe-v", "interleaved-zb"}) {
    CAPTURE(schedule);
    RunRequest picked = model_request(schedule, "");
    RunRequest given = picked;
    given.chunks = 2;
    const Run a = run_request(picked);
    const Run b = run_request(given);
    CHECK(a.schedule.chunks() == 2);
    CHECK(a.costs.stage.size() == 8);
    CHECK(a.metrics.cost == b.metrics.cost);
    CHECK(a.metrics.peak_bytes == b.metrics.peak_bytes);
    CHECK(a.schedule.order == b.schedule.order);
  }
}

TEST_CASE("a limit in bytes with --model means the same to run_request and resolve_request",
          "[run][request]") {
  // One M_B of this model is about 6.3 GiB: 16 GiB is about 2.5 M_B.
  const RunRequest rq = model_request("zb-auto", "16GiB");
  const ResolvedRequest resolved = resolve_request(rq);
  const double bytes_of_mb = resolved.costs.memory_unit_bytes;
  REQUIRE(bytes_of_mb > 0);
  CHECK(resolved.mem_limit == Approx(16.0 * 1024 * 1024 * 1024 / bytes_of_mb));
  const Run run = run_request(rq);
  CHECK(run.mem_limit == resolved.mem_limit);
  CHECK(run.schedule == resolved.schedule);
  CHECK(run.metrics.peak_memory <= resolved.mem_limit + 1e-9);
}

TEST_CASE("resolve_request applies the device capacity as run_request does", "[run][request]") {
  // zb-auto's own limit (ZB-H1's peak, p M_B) on a device with room for less.
  RunRequest rq = model_request("zb-auto", "");
  const double mb = request_costs(rq, 4).memory_unit_bytes;
  const ResolvedRequest free_run = resolve_request(rq);
  CHECK(free_run.mem_limit < 0);
  RunRequest tight = rq;
  const double state = run_request(rq).metrics.per_device.front().state_bytes;
  tight.mem_capacity_bytes = state + 2.5 * mb;  // room for 2.5 M_B beside the state
  const ResolvedRequest r = resolve_request(tight);
  CHECK(r.mem_limit == Approx(2.5));
  CHECK(r.mem_limit > 0);
  CHECK(run_request(tight).schedule == r.schedule);
}

TEST_CASE("compare names the least limit of an infeasible row limited in bytes",
          "[run][request][compare]") {
  // zb-h2 peaks at about 6.4 M_B of this model (40 GiB); 16 GiB is below that, while 1f1b fits.
  const double h2_peak = run_request(model_request("zb-h2", "")).metrics.peak_memory;
  const std::vector<RunRequest> rqs{model_request("zb-h2", "16GiB"), model_request("1f1b", "64GiB")};
  const Comparison c = run_compare(rqs);
  REQUIRE(c.rows.size() == 2);
  CHECK_FALSE(c.rows[0].ok());
  CHECK(c.rows[0].least_mem_limit == Approx(h2_peak));
  CHECK(c.rows[1].ok());
}

TEST_CASE("a sweep takes a model and limits in bytes", "[run][request][sweep]") {
  SweepGrid g;
  g.schedules = {"1f1b", "zb-auto"};
  g.devices = {2, 4};
  g.microbatches = {8};
  g.mem_limits = {parse_mem_limit("40GiB")};
  const auto points = run_sweep(g, model_request("", ""));
  REQUIRE(points.size() == 4);
  for (const SweepPoint& pt : points) {
    CAPTURE(pt.schedule, pt.devices, pt.reason);
    CHECK(pt.ok());
    CHECK(pt.mem_limit_mb > 0);
  }
  // Bytes on costs that know none: one error before any point runs.
  RunRequest plain;
  plain.costs = parse_costs("F=1");
  CHECK_THROWS_WITH(run_sweep(g, plain), Catch::Contains("needs costs that know the bytes"));
}

TEST_CASE("every command that runs a schedule takes --model and a limit in bytes", "[cli][request]") {
  const std::vector<std::string> model{"-s", "zb-auto", "-p", "4", "-m", "8", "--model",
                                       "zb-1.5b", "--mem-limit", "16GiB"};
  const auto with = [&](std::vector<std::string> head) {
    head.insert(head.end(), model.begin(), model.end());
    return head;
  };
  const auto sim = run_ppsim(with({"simulate", "--json"}));
  REQUIRE(sim.code == 0);
  const auto doc = nlohmann::json::parse(sim.out);
  const auto exp = run_ppsim(with({"export", "--format", "json"}));
  CHECK(exp.err == "");
  REQUIRE(exp.code == 0);
  // The exported order is the one simulate ran: its task count and devices.
  const auto order = nlohmann::json::parse(exp.out);
  CHECK(order["devices"] == 4);
  const auto cmp = run_ppsim({"compare", "-s", "zb-h2,zb-auto", "-p", "4", "-m", "8", "--model",
                        "zb-1.5b", "--mem-limit", "16GiB"});
  CHECK(cmp.err.find("knows bytes") == std::string::npos);
  CHECK(cmp.code == 0);
  const auto sw = run_ppsim({"sweep", "-s", "1f1b,zb-auto", "-p", "2,4", "-m", "8", "--model",
                       "zb-1.5b", "--device", "h100", "--mem-limit", "40GiB", "--csv"});
  CHECK(sw.err == "");
  CHECK(sw.code == 0);
  CHECK_THAT(sw.out, Catch::Contains("zb-auto,4,8,"));
  CHECK(doc["peak_memory"].get<double>() <= doc["mem_limit"].get<double>() + 1e-9);
}

TEST_CASE("schedule names are case-insensitive, a misspelling gets a suggestion", "[run][request]") {
  RunRequest rq;
  rq.devices = 4;
  rq.microbatches = 8;
  rq.schedule = "zb-h1";
  const Ticks lower = run_request(rq).metrics.cost;
  rq.schedule = "ZB-H1";
  CHECK(run_request(rq).metrics.cost == lower);
  rq.schedule = "zb-hh1";
  CHECK_THROWS_WITH(run_request(rq), Catch::Contains("unknown schedule 'zb-hh1' (did you mean 'zb-h1'?)"));
  rq.schedule = "interleaved1f1b";
  CHECK_THROWS_WITH(run_request(rq), Catch::Contains("did you mean 'interleaved-1f1b'?"));
  rq.schedule = "qqqqqqqqqq";
  CHECK_THROWS_WITH(run_request(rq), !Catch::Contains("did you mean"));
  CHECK_THAT(unknown_schedule("x", "plan").what(), Catch::StartsWith("plan: unknown schedule 'x'"));
}

TEST_CASE("a cost file's link sizes the messages of every request, unless --link sizes its own",
          "[run][request]") {
  RunRequest rq;
  rq.schedule = "zb-h1";
  rq.devices = 4;
  rq.microbatches = 8;
  rq.costs = parse_cost_json(
      R"({"schema":"ppsim.costs/1","link":{"latency":0.02,"bandwidth":5},"stages":[{"F":1,"B":1,"W":1,"act_bytes":1e6,"grad_bytes":3e6}]})",
      "linked.json");
  const Run linked = run_request(rq);
  CHECK(linked.comm.link == rq.costs.link);
  // the same run as the link given on the command line
  RunRequest given = rq;
  given.costs.link = {};
  given.comm.link = rq.costs.link;
  CHECK(run_request(given).metrics.cost == linked.metrics.cost);
  RunRequest unlinked = given;
  unlinked.comm = {};
  CHECK(linked.metrics.cost > run_request(unlinked).metrics.cost);
  // a --link of its own wins; one of contention alone keeps the file's latency and bandwidth
  RunRequest own = rq;
  own.comm.link = LinkModel{.sized = true, .latency = 1'000'000, .bandwidth = 0};
  CHECK(run_request(own).comm.link.latency == 1'000'000);
  RunRequest duplex = rq;
  duplex.comm.link.contention = Contention::Duplex;
  CHECK(run_request(duplex).comm.link == LinkModel{.sized = true, .latency = 20'000, .bandwidth = 5,
                                                   .contention = Contention::Duplex});
  CHECK_FALSE(linked_request(own));
}
