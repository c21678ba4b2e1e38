// Tests of `ppsim validate-model` and of the workload options that the published runs need
// (--sequence-parallel, --overlap-grad-reduce), and of the optimizer step in a run's iteration.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using Catch::Matchers::Contains;
using ppsim::test::run_ppsim;

TEST_CASE("validate-model: the built-in table, its summary, the JSON, --fail-above", "[cli][published]") {
  const auto text = run_ppsim({"validate-model"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("data/published/megatron-2021.json (built in)"));
  CHECK_THAT(text.out, Contains("gpt-1008b"));
  CHECK_THAT(text.out, Contains("check (6 runs): mean |error|"));
  const auto as_json = run_ppsim({"validate-model", "--json"});
  REQUIRE(as_json.code == 0);
  const auto j = nlohmann::json::parse(as_json.out);
  CHECK(j.at("schema") == "ppsim.validation/1");
  CHECK(j.at("rows").size() == 10);
  CHECK(j.at("check").at("runs") == 6);
  const double worst = j.at("check").at("max_abs_error").get<double>();
  CHECK(worst > 0);
  // a bar below the worst held-out error fails (exit 1), one above it passes
  const auto fails = run_ppsim({"validate-model", "--fail-above", std::to_string(100 * worst / 2)});
  CHECK(fails.code == 1);
  CHECK_THAT(fails.out, Contains("a held-out run is off by more than"));
  CHECK(run_ppsim({"validate-model", "--fail-above", std::to_string(100 * worst + 1)}).code == 0);
  // another device for every run: the flops-only A100 is much further off
  const auto old = run_ppsim({"validate-model", "--json", "--device",
                              std::string(PPSIM_SOURCE_DIR) + "/data/published/a100-flops-only.json"});
  REQUIRE(old.code == 0);
  CHECK(nlohmann::json::parse(old.out).at("check").at("max_abs_error").get<double>() > 2 * worst);
}

TEST_CASE("validate-model: bad input is exit 3 with the reason", "[cli][published]") {
  const auto missing = run_ppsim({"validate-model", "no-such-file.json"});
  CHECK(missing.code == 3);
  CHECK_THAT(missing.err, Contains("no-such-file.json"));
  const std::string path = (std::filesystem::temp_directory_path() / "ppsim-published-bad.json").string();
  std::ofstream(path) << R"({"schema": "ppsim.published/1", "flops": "model", "runs": [{}]})";
  const auto bad = run_ppsim({"validate-model", path});
  CHECK(bad.code == 3);
  CHECK_THAT(bad.err, Contains("/runs/0/name: missing"));
  std::filesystem::remove(path);
  CHECK(run_ppsim({"validate-model", "--fail-above", "-1"}).code == 3);
  CHECK(run_ppsim({"validate-model", "--device", "tpu"}).code == 3);
}

TEST_CASE("sequence parallelism off and an overlapped gradient reduction: with --model, and what they change", "[cli][dp]") {
  CHECK_THAT(run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--sequence-parallel", "off"}).err,
             Contains("--sequence-parallel needs --model"));
  CHECK_THAT(run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--overlap-grad-reduce"}).err,
             Contains("--overlap-grad-reduce needs --model"));
  CHECK(run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b",
                   "--sequence-parallel", "maybe"}).code == 2);
  const auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args{"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--model", "zb-1.5b",
                                  "--device", "a100", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_ppsim(args);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  };
  // without sequence parallelism every TP rank runs the norms and dropouts on all tokens
  CHECK(run({"--tp", "4", "--sequence-parallel", "off"}).at("makespan_ms").get<double>() >
        run({"--tp", "4"}).at("makespan_ms").get<double>());
  // an overlapped reduction hides behind the last backward: less exposed, same pipeline
  const auto after = run({"--dp", "8"});
  const auto overlapped = run({"--dp", "8", "--overlap-grad-reduce"});
  CHECK(overlapped.at("makespan_ms") == after.at("makespan_ms"));
  CHECK(overlapped.at("exposed_dp_ms").get<double>() < after.at("exposed_dp_ms").get<double>());
  CHECK(overlapped.at("exposed_dp_ms").get<double>() > 0);  // the last bucket is still exposed
  // one iteration with a model ends with its optimizer step; a run of F/B/W costs has none
  const auto plain = run({});
  CHECK(plain.at("iteration_time_ms").get<double>() > plain.at("makespan_ms").get<double>());
  const auto costs = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--json"});
  CHECK_FALSE(nlohmann::json::parse(costs.out).contains("iteration_time_ms"));
}

TEST_CASE("costs: where each stage's time goes, in the text and the JSON", "[cli][model][kernel]") {
  const auto text = run_ppsim({"costs", "--model", "gpt3-175b", "--device", "a100", "-p", "8", "--tp", "8"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("gemm_ms    attn_ms  memory_ms      tp_ms     a2a_ms  kernel_ms   memory  optimizer_ms"));
  const auto as_json = run_ppsim({"costs", "--model", "gpt3-175b", "--device", "a100", "-p", "8", "--tp", "8", "--json"});
  REQUIRE(as_json.code == 0);
  const auto b = nlohmann::json::parse(as_json.out).at("model").at("breakdown");
  REQUIRE(b.size() == 8);
  CHECK(b[1].at("F").at("tp_comm_ms").get<double>() > 0);
  CHECK(b[1].at("W").at("memory_ms").get<double>() == 0);
  CHECK(b[1].at("optimizer_ms").get<double>() > 0);
}
