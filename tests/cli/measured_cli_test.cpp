// Tests of `ppsim import` and `ppsim diff` through run_cli: the JSON contracts, the output
// files, the round trip from `simulate --trace`, and the errors' exit codes.
#include "tests/cli/cli_harness.hpp"
#include "tests/run/measured_fixtures.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

using namespace ppsim;
using namespace ppsim::test;

namespace {

// A noisy 1F1B on 4 ranks written as one Kineto file per rank; returns the files.
std::vector<std::string> kineto_files(const TempDir& dir, bool planted_straggler = false) {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  PlayPlan plan;
  plan.durations = noisy_durations(s, cost_model_for(parse_costs("F=1,B=1,W=1"), s), 0.03);
  plan.comm = 100'000;
  if (planted_straggler) plan.durations[5] *= 4;  // device 0's sixth task
  const Timeline t = play(s, plan);
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r)
    files.push_back(dir.file(fmt::format("rank{}.trace", r), kineto_trace(t, r)));
  return files;
}

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

} // namespace

TEST_CASE("import --json prints the measured run's ppsim.metrics/1 object and writes its files",
          "[cli][measured]") {
  TempDir dir("ppsim-import-cli");
  const auto files = kineto_files(dir);
  const std::string fitted = (dir.path() / "fitted.json").string();
  const std::string csv = (dir.path() / "measured.csv").string();
  const std::string trace = (dir.path() / "measured.json").string();
  const auto r = run_ppsim(with({"import", "--json", "--costs-out", fitted, "--schedule-out", csv, "-o", trace}, files));
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["schema"] == "ppsim.import/1");
  CHECK(doc["measured"]["schema"] == "ppsim.metrics/1");
  CHECK(doc["measured"]["devices"] == 4);
  CHECK(doc["measured"]["microbatches"] == 8);
  CHECK(doc["source"]["format"] == "kineto");
  // The fitted costs: one stage entry per stage with F, B and W, readable as a cost file.
  const auto costs = nlohmann::json::parse(slurp(dir.path() / "fitted.json"));
  CHECK(costs["schema"] == "ppsim.costs/1");
  REQUIRE(costs["stages"].size() == 4);
  for (const auto& st : costs["stages"]) {
    CHECK(st["F"].get<double>() == Approx(1).epsilon(0.05));
    CHECK(st.contains("B"));
    CHECK(st.contains("W"));
  }
  CHECK(costs["comm"].get<double>() == Approx(0.1));
  // The measured order as PyTorch's CSV: 1F1B's, token for token.
  CHECK(slurp(dir.path() / "measured.csv").substr(0, 30) == "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0F");
  // What-if from the real run: the fitted file feeds compare as it is.
  const auto whatif = run_ppsim({"compare", "-s", "1f1b,zb-h1,zb-v", "-p", "4", "-m", "8", "--costs-file", fitted});
  CHECK(whatif.code == 0);
  CHECK_THAT(whatif.out, Catch::Contains("zb-v"));
  // The measured run written as a ppsim trace imports back to the same run.
  const auto back = run_ppsim({"import", "--json", trace});
  REQUIRE(back.code == 0);
  CHECK(nlohmann::json::parse(back.out)["measured"]["cost_ms"] == doc["measured"]["cost_ms"]);
}

TEST_CASE("simulate --trace, import, diff: zero error", "[cli][measured]") {
  TempDir dir("ppsim-roundtrip");
  const std::string trace = (dir.path() / "zbv.json").string();
  REQUIRE(run_ppsim({"simulate", "-s", "zb-v", "-p", "4", "-m", "8", "--costs", "F=1,B=1.5,W=0.5,comm=0.2",
               "--trace", trace}).code == 0);
  const auto d = run_ppsim({"diff", "--json", trace});
  CHECK(d.err == "");
  REQUIRE(d.code == 0);
  const auto doc = nlohmann::json::parse(d.out);
  CHECK(doc["schema"] == "ppsim.diff/1");
  for (const auto& [key, value] : doc["errors"].items()) {
    CAPTURE(key);
    CHECK(key.find("error") != std::string::npos);
    CHECK(value.get<double>() == 0);
  }
  for (const char* cause : {"dependency", "comm", "straggler", "warmup", "cooldown", "optimizer"})
    CHECK(doc["idle"]["causes"].contains(cause));
  CHECK(doc["measured"]["cost_ms"] == doc["simulated"]["cost_ms"]);
}

TEST_CASE("a sized link comes back through import's fitted file, and diff and simulate use it",
          "[cli][measured]") {
  TempDir dir("ppsim-link-roundtrip");
  const std::string trace = (dir.path() / "sized.json").string();
  const std::string fitted = (dir.path() / "fitted.json").string();
  const std::vector<std::string> shape{"-s", "zb-h1", "-p", "4", "-m", "8"};
  const auto sim = run_ppsim(with(with({"simulate", "--json"}, shape),
                                  {"--costs", "F=1,B=1,W=1,act_bytes=1e6,grad_bytes=3e6",
                                   "--link", "latency=0.02,bandwidth=5", "--trace", trace}));
  REQUIRE(sim.code == 0);
  const auto imported = run_ppsim({"import", trace, "--costs-out", fitted});
  CHECK(imported.err == "");
  REQUIRE(imported.code == 0);
  CHECK_THAT(imported.out, Catch::Contains("link          latency 0.02 ms, 5 GB/s (through the median "
                                           "wait of each of 2 message sizes"));
  const auto costs = nlohmann::json::parse(slurp(dir.path() / "fitted.json"));
  CHECK(costs["link"]["latency"] == 0.02);
  CHECK(costs["link"]["bandwidth"].get<double>() == Approx(5).epsilon(1e-9));
  CHECK(costs["fit"]["link"]["sizes"] == 2);
  // simulate on the fitted file sizes its messages: the same cost as the run it came from
  const auto again = run_ppsim(with(with({"simulate", "--json"}, shape), {"--costs-file", fitted}));
  REQUIRE(again.code == 0);
  const auto a = nlohmann::json::parse(again.out);
  const auto o = nlohmann::json::parse(sim.out);
  CHECK(a["comm"]["latency_ms"] == 0.02);
  CHECK(a["cost_ms"] == o["cost_ms"]);
  // a --link of its own wins
  const auto own = run_ppsim(with(with({"simulate", "--json"}, shape),
                                  {"--costs-file", fitted, "--link", "latency=1"}));
  REQUIRE(own.code == 0);
  CHECK(nlohmann::json::parse(own.out)["comm"]["latency_ms"] == 1.0);
  CHECK(nlohmann::json::parse(own.out)["cost_ms"].get<double>() > o["cost_ms"].get<double>());
  // diff on its own fit: every error is 0, the replay on the measured durations included (its
  // messages are sized by the fitted link too).
  const auto d = run_ppsim({"diff", "--json", trace});
  REQUIRE(d.code == 0);
  const auto diff = nlohmann::json::parse(d.out);
  REQUIRE(diff["errors"].size() > 0);
  for (const auto& [key, value] : diff["errors"].items()) {
    CAPTURE(key);
    CHECK(value.get<double>() == 0);
  }
}

TEST_CASE("diff writes the bubble inventory, both timelines and the report", "[cli][measured]") {
  TempDir dir("ppsim-diff-cli");
  const auto files = kineto_files(dir, true);
  const std::string csv = (dir.path() / "idle.csv").string();
  const std::string trace = (dir.path() / "diff.json").string();
  const std::string html = (dir.path() / "diff.html").string();
  const auto r = run_ppsim(with({"diff", "--idle-csv", csv, "--trace", trace, "--html", html}, files));
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("measured") && Catch::Contains("simulated") &&
                        Catch::Contains("replayed") && Catch::Contains("straggler"));
  const std::string inventory = slurp(dir.path() / "idle.csv");
  CHECK(inventory.starts_with("device,start_ms,end_ms,length_ms,cause,next_task,memory_M_B,free_M_B\n"));
  CHECK_THAT(inventory, Catch::Contains(",warmup,") && Catch::Contains(",straggler,"));
  const auto t = nlohmann::json::parse(slurp(dir.path() / "diff.json"));
  std::set<std::string> processes;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
  CHECK(processes.contains("measured device 0"));
  CHECK(processes.contains("simulated device 3"));
  CHECK_THAT(slurp(dir.path() / "diff.html"), Catch::Contains("replayed"));
  // Costs on top of the fitted ones (which keep their comm): the measured order, 1F1B's.
  const auto given = run_ppsim(with({"diff", "--json", "--costs", "F=2,B=2,W=2"}, files));
  REQUIRE(given.code == 0);
  const auto g = nlohmann::json::parse(given.out);
  const auto plain = nlohmann::json::parse(
      run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=2,B=2,W=2,comm=0.1", "--json"}).out);
  CHECK(g["simulated"]["cost_ms"] == plain["cost_ms"]);
  CHECK(g["errors"]["cost_error"].get<double>() ==
        Approx((plain["cost_ms"].get<double>() - g["measured"]["cost_ms"].get<double>()) /
               g["measured"]["cost_ms"].get<double>()));
}

TEST_CASE("import's bad input: exit 3 with the file and what is wrong", "[cli][measured][robust]") {
  TempDir dir("ppsim-import-bad");
  const std::string junk = dir.file("junk.trace", "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"step 3\",\"ts\":0,\"dur\":1}]}");
  const auto r = run_ppsim({"import", junk});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: import: ") && Catch::Contains("'step 3' x1") &&
                        Catch::Contains("--map 'step (?<mb>\\d+)=F'"));
  CHECK(run_ppsim({"import", (dir.path() / "missing.json").string()}).code == 3);
  CHECK(run_ppsim({"import", junk, "--format", "nope"}).code == 2);
  CHECK(run_ppsim({"import", junk, "--map", "x=Q"}).code == 3);
  CHECK(run_ppsim({"import"}).code == 2);
  const auto files = kineto_files(dir);
  CHECK(run_ppsim(with({"diff", "--straggler", "0.5"}, files)).code == 3);
  CHECK(run_ppsim(with({"import", "--schedule-out", (dir.path() / "x.txt").string()}, files)).code == 3);
  // A cost file that does not fit the measured schedule.
  const std::string two = dir.file("two.json", R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1},{"F":1,"B":1,"W":1}]})");
  CHECK(run_ppsim(with({"diff", "--costs-file", two}, files)).code == 3);
}

TEST_CASE("compare --measured puts the real run as a row beside the what-ifs", "[cli][measured]") {
  TempDir dir("ppsim-compare-measured");
  const auto files = kineto_files(dir);
  const std::string fitted = (dir.path() / "fitted.json").string();
  REQUIRE(run_ppsim(with({"import", "--costs-out", fitted}, files)).code == 0);
  const std::string html = (dir.path() / "r.html").string();
  auto args = std::vector<std::string>{"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8",
                                       "--costs-file", fitted, "--json", "--html", html};
  for (const auto& f : files) args.insert(args.end(), {"--measured", f});
  const auto r = run_ppsim(args);
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 3);
  CHECK(j[2]["schedule"] == "measured");
  CHECK(j[2]["devices"] == 4);
  CHECK_THAT(slurp(html), Catch::Contains("measured"));
}
