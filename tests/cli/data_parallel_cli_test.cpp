// Tests of --dp on the command line: the data-parallel tail's times from the model's parameters
// and the device's link, what the JSON, the text, the trace and plan show, and what is refused.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/data_parallel.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using ppsim::test::run_ppsim;

namespace {

std::vector<std::string> zb62(const std::vector<std::string>& extra) {
  return ppsim::test::args_with(
      {"simulate", "-s", "1f1b", "-p", "8", "-m", "24", "--model", "zb-6.2b", "--device", "h100"}, extra);
}

} // namespace

TEST_CASE("dp on the command line: --dp: each stage's all-reduce takes the ring time of its fp32 gradients on the device's link", "[cli][dp]") {
  const auto plain = run_ppsim(zb62({"--json"}));
  const auto one = run_ppsim(zb62({"--dp", "1", "--json"}));
  REQUIRE(plain.code == 0);
  CHECK(one.out == plain.out);  // one replica: today's run exactly
  CHECK_FALSE(nlohmann::json::parse(plain.out).contains("exposed_dp_ms"));
  const auto r = run_ppsim(zb62({"--dp", "8", "--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto p = nlohmann::json::parse(plain.out);
  CHECK(j.at("makespan_ms") == p.at("makespan_ms"));  // the pipeline itself does not move
  CHECK(j.at("data_parallel").at("replicas") == 8);
  CHECK(j.at("data_parallel").at("gradients") == "all-reduce");
  // the stages' parameters as the model gives them, the ring over h100's link
  const ppsim::DeviceSpec h100 = ppsim::load_device("h100");
  const ppsim::ModelCosts mc = ppsim::model_costs(ppsim::load_model("zb-6.2b"), h100,
                                                  ppsim::default_layout(30, 8), 8, {.dp = 8});
  const auto latency = static_cast<ppsim::Ticks>(std::llround(h100.link_latency_ms * 1e6));
  double last_end = 0;
  for (int d = 0; d < 8; ++d) {
    const auto& e = j.at("per_device")[static_cast<std::size_t>(d)];
    const ppsim::Ticks t = ppsim::ring_time(ppsim::CollectiveKind::AllReduce,
                                            mc.costs.stages[static_cast<std::size_t>(d)].params * 4, 8,
                                            latency, h100.link_gbytes_per_s);
    CHECK(e.at("dp_busy_ms").get<double>() == Approx(ppsim::ticks_to_ms(t)).epsilon(1e-12));
    // one stage per device: its gradients are complete at its last task, nothing of it hides
    CHECK(e.at("exposed_dp_ms").get<double>() == Approx(ppsim::ticks_to_ms(t)).epsilon(1e-12));
    last_end = std::max(last_end, e.at("span_ms").get<double>() + e.at("dp_busy_ms").get<double>());
  }
  // device 0 ends last (1F1B's cool-down); the others' reductions hide behind it; then the
  // optimizer step of the device with the most parameters (Adam, memory-bound)
  double params = 0;
  for (const ppsim::StageCosts& c : mc.costs.stages) params = std::max(params, c.params);
  const double step = ppsim::ticks_to_ms(
      ppsim::ms_to_ticks(ppsim::optimizer_ms(ppsim::load_model("zb-6.2b"), h100, params), "step"));
  CHECK(step > 0);
  CHECK(j.at("iteration_time_ms").get<double>() == Approx(last_end + step).epsilon(1e-12));
  CHECK(j.at("exposed_dp_ms").get<double>() ==
        Approx(j.at("iteration_time_ms").get<double>() - step - j.at("makespan_ms").get<double>()).epsilon(1e-12));
}

TEST_CASE("dp on the command line: --dp with --zero 1: reduce-scatter, then the parameters' all-gather, in the text, the table and the trace", "[cli][dp]") {
  const auto ar = nlohmann::json::parse(run_ppsim(zb62({"--dp", "8", "--json"})).out);
  const auto z = run_ppsim(zb62({"--dp", "8", "--zero", "1", "--json"}));
  REQUIRE(z.code == 0);
  const auto j = nlohmann::json::parse(z.out);
  CHECK(j.at("data_parallel").at("gradients") == "reduce-scatter");
  // the reduce-scatter moves half the all-reduce's bytes and the gather of bf16 weights a quarter,
  // in as many latency steps (7 + 7 against 14)
  const double ar0 = ar.at("per_device")[0].at("dp_busy_ms").get<double>();
  const double steps_ms = 14 * ppsim::load_device("h100").link_latency_ms;
  CHECK(j.at("per_device")[0].at("dp_busy_ms").get<double>() ==
        Approx(0.75 * (ar0 - steps_ms) + steps_ms).margin(2e-6));  // each rounded to the ns
  const auto t = run_ppsim(zb62({"--dp", "8"}));
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("data parallel 8 replicas"));
  CHECK_THAT(t.out, Catch::Contains("exposed dp"));
  CHECK_THAT(t.out, Catch::Contains("dp_busy_ms  exposed_dp_ms"));
  const auto c = run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "8", "-m", "24", "--model", "zb-6.2b",
                      "--device", "h100", "--dp", "8"});
  REQUIRE(c.code == 0);
  CHECK_THAT(c.out, Catch::Contains("iteration_ms"));
  const ppsim::test::TempDir dir("dp-cli");
  const std::string trace = dir / "dp.json";
  REQUIRE(run_ppsim(zb62({"--dp", "8", "--zero", "1", "--trace", trace})).code == 0);
  std::ifstream in(trace);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("\"name\":\"dp\""));
  CHECK_THAT(text, Catch::Contains("\"name\":\"reduce-scatter 0\""));
  CHECK_THAT(text, Catch::Contains("\"name\":\"all-gather 7\""));
}

TEST_CASE("dp on the command line: --dp: what it cannot model yet is refused with the reason", "[cli][dp]") {
  const auto pv = run_ppsim(zb62({"--dp", "2", "--iterations", "2", "--sync", "post-validation"}));
  CHECK(pv.code == 3);
  CHECK_THAT(pv.err, Catch::Contains("--sync post-validation with --dp 2"));
  const auto jit = run_ppsim(zb62({"--dp", "2", "--jitter", "0.1", "--samples", "3"}));
  CHECK(jit.code == 3);
  CHECK_THAT(jit.err, Catch::Contains("--jitter with --dp 2"));
  const auto k = run_ppsim(zb62({"--dp", "2", "--iterations", "3", "--json"}));
  REQUIRE(k.code == 0);
  const auto j = nlohmann::json::parse(k.out);
  const auto one = nlohmann::json::parse(run_ppsim(zb62({"--dp", "2", "--json"})).out);
  CHECK(j.at("iteration_time_ms") == one.at("iteration_time_ms"));  // a copy per iteration
}

TEST_CASE("dp on the command line: plan ranks by the iteration time with the data-parallel tail", "[cli][dp][plan]") {
  const auto r = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "-p", "4",
                            "--global-batch", "32", "--dp", "4", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& best = j.at("candidates")[j.at("best").get<std::size_t>()];
  // the tail is in the time plan ranks by, and said apart
  CHECK(best.at("exposed_dp_ms").get<double>() > 0);
  CHECK(best.at("iteration_time_ms").get<double>() >= best.at("cost_ms").get<double>() +
                                                          best.at("exposed_dp_ms").get<double>() - 1e-6);
  const auto plain = nlohmann::json::parse(
      run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "-p", "4", "--global-batch", "8",
                 "--json"}).out);
  CHECK_FALSE(plain.at("candidates")[0].contains("exposed_dp_ms"));
}

TEST_CASE("dp on the command line: a --dp out of 1..2^20 is refused before it is multiplied", "[cli][dp][errors]") {
  for (const char* dp : {"0", "-3", "1048577", "2147483647"}) {
    CAPTURE(dp);
    const auto r = run_ppsim(zb62({"--dp", dp}));
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains("expected 1..1048576"));
  }
  // dp x tp = 2^32 would wrap an int in the expert-parallel check
  const auto moe = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model",
                              "qwen3-moe-30b-a3b", "--dp", "2147483647", "--tp", "2", "--ep", "2"});
  CHECK(moe.code == 3);
  CHECK(run_ppsim(zb62({"--dp", "1048576"})).code == 0);
}
