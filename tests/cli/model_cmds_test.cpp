// Tests of --model/--device, `ppsim models`, `ppsim costs` and `ppsim plan` through run_cli.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/run/plan.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <set>

using namespace ppsim;
using namespace ppsim::test;
using Catch::Contains;

TEST_CASE("ppsim models lists the presets with their parameter counts", "[cli][model]") {
  const auto r = run_ppsim({"models"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("zb-1.5b") && Contains("1.48B") && Contains("llama3-405b"));
  // the mixtures of experts with their totals and active parameters as their model cards give
  // them (Mixtral-8x7B 46.7B, 12.9B active; Qwen3-30B-A3B 30.5B, "3.3B" active)
  CHECK_THAT(r.out, Contains("46.7B") && Contains("8 experts, top-2 (12.9B active)"));
  CHECK_THAT(r.out, Contains("30.5B") && Contains("128 experts, top-8 (3.35B active)"));
  // DeepSeek-V3: 671B, 36.6B active without its embedding (37.6B with it, as counted here)
  CHECK_THAT(r.out, Contains("671B") && Contains("256 experts, top-8 (37.6B active), MLA"));
  const auto j = nlohmann::json::parse(run_ppsim({"models", "--json"}).out);
  REQUIRE(j.size() == 11);
  CHECK(j[10]["mla"]["kv_lora_rank"] == 512);
  CHECK(j[10]["moe"]["dense_layers"] == 3);
  CHECK(j[1]["name"] == "zb-6.2b");
  // 12 L h^2 (the GEMMs), 2 h L (the norms), V h (one tied embedding), 2 h (the final norm)
  CHECK(j[1]["parameters"].get<double>() == 12.0 * 30 * 4096 * 4096 + 2.0 * 4096 * 30 +
                                                 32000.0 * 4096 + 2.0 * 4096);
}

TEST_CASE("ppsim costs writes a cost file that --costs-file reads back to the same run",
          "[cli][model]") {
  TempDir dir("costs");
  const auto written = run_ppsim({"costs", "--model", "zb-1.5b", "--device", "h100", "-p", "8", "-o",
                            dir / "c.json"});
  REQUIRE(written.code == 0);
  const CostSpec spec = load_cost_file(dir / "c.json");
  REQUIRE(spec.stages.size() == 8);
  CHECK(spec.stages[0].state_bytes > 0);
  CHECK(spec.memory_unit_bytes > 0);
  const auto by_model = run_ppsim({"simulate", "-s", "zb-h1", "-p", "8", "-m", "24", "--model",
                             "zb-1.5b", "--device", "h100", "--json"});
  const auto by_file = run_ppsim({"simulate", "-s", "zb-h1", "-p", "8", "-m", "24", "--costs-file",
                            dir / "c.json", "--json"});
  REQUIRE(by_model.code == 0);
  REQUIRE(by_file.code == 0);
  const auto a = nlohmann::json::parse(by_model.out), b = nlohmann::json::parse(by_file.out);
  CHECK(a["cost_ms"] == b["cost_ms"]);
  CHECK(a["peak_bytes"] == b["peak_bytes"]);
  CHECK(a["per_device"][0]["state_bytes"] == b["per_device"][0]["state_bytes"]);
  // the table shows the layout and the bytes
  const auto table = run_ppsim({"costs", "--model", "zb-1.5b", "--device", "h100", "-p", "8"});
  CHECK_THAT(table.out, Contains("Ett|ttt|ttt|ttt|ttt|ttt|ttt|ttL") && Contains("GiB"));
}

TEST_CASE("a device over its memory is an out-of-memory error, exit 5, naming the device",
          "[cli][model]") {
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "8", "-m", "16", "--model", "gpt3-175b",
                      "--device", "a100"});
  CHECK(r.code == 5);
  CHECK_THAT(r.err, Contains("1f1b: device 0 needs") && Contains("above the capacity of 80.0 GiB"));
  // --mem-capacity overrides the device's memory
  const auto roomy = run_ppsim({"simulate", "-s", "1f1b", "-p", "8", "-m", "16", "--model", "gpt3-175b",
                          "--device", "a100", "--mem-capacity", "1TiB"});
  CHECK(roomy.code == 0);
  // compare marks the row and runs the others
  const auto cmp = run_ppsim({"compare", "-s", "1f1b,zb-h2", "-p", "8", "-m", "16", "--model",
                        "gpt3-175b", "--device", "a100", "--tp", "8"});
  CHECK(cmp.code == 0);
  CHECK_THAT(cmp.out, Contains("zb-h2") && Contains("out of memory: device 0 needs"));
}

TEST_CASE("bad model, device and layout input exits 3 with where and what", "[cli][model]") {
  TempDir dir("bad-model");
  const std::string bad_model = dir.file(
      "m.json", R"({"schema": "ppsim.model/1", "layers": 4, "hidden": 64, "heads": 5, "seq": 8, "vocab": 10})");
  const std::string unknown = dir.file(
      "u.json", R"({"schema": "ppsim.device/1", "peak_tflops": 10, "colour": "red"})");
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", bad_model},
       "m.json: /heads: heads=5 does not divide hidden=64"},
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b", "--device", unknown},
       "u.json: /colour: unknown key (valid: schema, name, peak_tflops"},
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "nope"}, "unknown model 'nope'"},
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--device", "h100"}, "--device needs --model"},
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b", "--layout", "Et*10|t*13L"},
       "--layout: 23 decoder layers (t), but the model has 22"},
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b", "--layout", "Et*11|t*10qL"},
       "--layout: position 11: unexpected 'q'"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "4", "--model", "zb-1.5b", "--layers-per-stage", "11,11"},
       "--layers-per-stage: 2 stages, but the schedule has 4"},
      {{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b", "--mem-capacity", "80 parsecs"},
       "--mem-capacity"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run_ppsim(c.args);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Contains(c.message));
  }
}

TEST_CASE("plan's winner fits and is never slower than any candidate it lists", "[cli][model]") {
  const auto r = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "-p", "4",
                      "--global-batch", "24", "--schedules", "1f1b,zb-h1,zb-h2,interleaved-1f1b",
                      "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppsim.plan/1");
  const int best = j["best"].get<int>();
  REQUIRE(best >= 0);
  const auto& winner = j["candidates"][static_cast<std::size_t>(best)];
  CHECK(winner["fits"] == true);
  for (const auto& c : j["candidates"])
    if (c["fits"] == true) CHECK(winner["iteration_time_ms"].get<double>() <= c["iteration_time_ms"].get<double>());
  // micro-batch sizes and chunks were searched
  std::set<int> sizes, chunks;
  for (const auto& c : j["candidates"]) {
    sizes.insert(c["microbatch_size"].get<int>());
    chunks.insert(c["chunks"].get<int>());
  }
  CHECK(sizes.size() >= 3);
  CHECK(chunks.count(2) == 1);
  // the text form names the winner and why
  const auto text = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "-p", "4",
                         "--global-batch", "24", "--schedules", "1f1b,zb-h1"});
  CHECK_THAT(text.out, Contains("best: ") && Contains("is the fastest that fits"));
  // nothing fits: exit 5 with the advice
  const auto none = run_ppsim({"plan", "--model", "gpt3-175b", "--device", "a100", "-p", "2",
                         "--global-batch", "8", "--schedules", "1f1b"});
  CHECK(none.code == 5);
  CHECK_THAT(none.out, Contains("no candidate fits in memory"));
}

TEST_CASE("plan gives zb-auto and zb-v the memory the device has room for", "[cli][model]") {
  // At 80 GiB the searches' own default limit (ZB-H1's peak) leaves most of the device unused.
  const auto r = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "-p", "4",
                      "--global-batch", "24", "--schedules", "zb-auto,zb-v,zb-h1", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  int widened = 0;
  std::map<std::pair<std::string, std::pair<int, int>>, double> zbh1;
  for (const auto& c : j["candidates"])
    if (c["schedule"] == "zb-h1" && c["fits"] == true)
      zbh1[{c["layout"].get<std::string>(), {c["microbatch_size"].get<int>(), 0}}] =
          c["iteration_time_ms"].get<double>();
  for (const auto& c : j["candidates"]) {
    if (c["schedule"] == "zb-h1") {
      CHECK(c["mem_limit"].is_null());
      continue;
    }
    if (c["mem_limit"].is_null() || c["fits"] != true) continue;
    ++widened;
    CHECK(c["peak_bytes"].get<double>() <= j["capacity_bytes"].get<double>());
    // On one chunk, the same split and micro-batch size: never slower than ZB-H1 at its memory.
    const auto same = zbh1.find({c["layout"].get<std::string>(), {c["microbatch_size"].get<int>(), 0}});
    if (c["schedule"] == "zb-auto" && c["chunks"] == 1 && same != zbh1.end())
      CHECK(c["iteration_time_ms"].get<double>() <= same->second);
  }
  CHECK(widened > 0);
}

TEST_CASE("without --mem-limit, zb-auto and zb-v stay within the device's capacity", "[cli][model]") {
  // The last stage holds five layers and the logits: ZB-H1's peak, zb-auto's default limit,
  // does not fit in 80 GiB there; the search is cut to what the capacity leaves room for.
  const std::vector<std::string> base{"-p", "8", "-m", "24", "--model", "llama3-8b", "--device",
                                      "h100", "--layout", "Et*3|t*4|t*4|t*4|t*4|t*4|t*4|t*5L",
                                      "--json"};
  // zb-v's V has 16 stages, the last one (three layers and the logits) on device 0: at its
  // default limit it would need 92.8 GiB there.
  const std::string v_layout = "Et|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*3L";
  auto args = [&](const char* schedule) {
    std::vector<std::string> a{"simulate", "-s", schedule};
    a.insert(a.end(), base.begin(), base.end());
    if (std::string(schedule) == "zb-v") a[a.size() - 2] = v_layout;
    return a;
  };
  CHECK(run_ppsim(args("zb-h1")).code == 5);
  {
    std::vector<std::string> roomy = args("zb-v");
    roomy.insert(roomy.end(), {"--mem-capacity", "10TiB"});
    const auto j = nlohmann::json::parse(run_ppsim(roomy).out);
    double most = 0;
    for (const auto& d : j["per_device"]) most = std::max(most, d["peak_bytes"].get<double>());
    CHECK(most > 80.0 * 1073741824.0);
  }
  for (const char* s : {"zb-auto", "zb-v"}) {
    CAPTURE(s);
    const auto r = run_ppsim(args(s));
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    for (const auto& d : j["per_device"]) CHECK(d["peak_bytes"].get<double>() <= 80.0 * 1073741824.0);
  }
}

TEST_CASE("recompute: --recompute on the command line: the table, the metrics and the trace show it",
          "[cli][model][recompute]") {
  const std::vector<std::string> run{"simulate", "-s", "1f1b", "-p", "2", "-m", "16",
                                     "--model", "llama3-8b", "--device", "h100"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = run;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_ppsim(a);
  };
  CHECK(with({}).code == 5);  // out of memory as it is
  const auto text = with({"--recompute", "auto"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("recompute     full:") && Contains("recompute_ms"));
  const auto j = nlohmann::json::parse(with({"--recompute", "auto", "--json"}).out);
  CHECK(j["per_device"][0]["recompute_ms"].get<double>() > 0);
  TempDir dir("recompute");
  REQUIRE(with({"--recompute", "full", "--trace", dir / "t.json"}).code == 0);
  const auto trace = nlohmann::json::parse(slurp(dir / "t.json"));
  int recomputes = 0;
  bool named = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "recompute") ++recomputes;
    if (e["name"] == "thread_name" && e["args"]["name"] == "recompute") named = true;
  }
  CHECK(named);
  CHECK(recomputes == 2 * 16);  // one per backward on each device
  // the costs table gets an R_ms column only when something is recomputed
  CHECK_THAT(run_ppsim({"costs", "--model", "zb-1.5b", "-p", "2", "--recompute", "selective"}).out,
             Contains("R_ms"));
  CHECK_THAT(run_ppsim({"costs", "--model", "zb-1.5b", "-p", "2"}).out, !Contains("R_ms"));
}

TEST_CASE("a bad --recompute is bad input, exit 3", "[cli][model][recompute][bad-input]") {
  const auto code = [](std::vector<std::string> args) {
    const auto r = run_ppsim(args);
    CHECK_THAT(r.err, Contains("error"));
    return r.code;
  };
  const std::vector<std::string> base{"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b"};
  const auto with = [&](std::initializer_list<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra);
    return a;
  };
  CHECK(code(with({"--recompute", "most"})) == 3);
  CHECK(code(with({"--recompute", "full:x"})) == 3);
  CHECK(code(with({"--recompute", "none,none,none"})) == 3);  // 3 entries for 2 stages
  CHECK(code({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--recompute", "full"}) == 3);  // no --model
  CHECK(code({"costs", "--model", "zb-1.5b", "-p", "2", "--recompute", "auto"}) == 3);
  CHECK(code({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--costs", "B=1,R=2"}) == 3);
  // a model that does not fit even with everything recomputed: out of memory, exit 5
  CHECK(code({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "llama3-70b",
              "--recompute", "auto"}) == 5);
}

TEST_CASE("plan --gpus ranks the layouts of N devices and shows the winner's plan",
          "[cli][model][plan]") {
  const auto r = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "--gpus", "8",
                            "--global-batch", "24", "--schedules", "1f1b,zb-h1", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppsim.plan/1");
  CHECK(j["gpus"] == 8);
  REQUIRE(j["layouts"].size() == 10);
  const auto& best = j["layouts"][0];
  CHECK(j["best_layout"] == 0);
  CHECK(best["fits"] == true);
  for (const auto& l : j["layouts"]) {
    CHECK(l["pp"].get<int>() * l["tp"].get<int>() * l["dp"].get<int>() == 8);
    if (l["fits"] == true)
      CHECK(best["best"]["iteration_time_ms"].get<double>() <=
            l["best"]["iteration_time_ms"].get<double>());
  }
  // The document's plan is the winner's layout's: its devices, and its best candidate.
  CHECK(j["devices"] == best["pp"]);
  CHECK(j["parallel"]["tp"] == best["tp"]);
  CHECK(j["candidates"][j["best"].get<std::size_t>()] == best["best"]);
  // A dimension given is kept: with --tp 1 every layout has tp 1 (4 of them: pp 1, 2, 4, 8).
  const auto fixed = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "--gpus", "8",
                                "--global-batch", "24", "--schedules", "1f1b", "--tp", "1",
                                "--json"});
  REQUIRE(fixed.code == 0);
  const auto f = nlohmann::json::parse(fixed.out);
  REQUIRE(f["layouts"].size() == 4);
  for (const auto& l : f["layouts"]) CHECK(l["tp"] == 1);
  const auto text = run_ppsim({"plan", "--model", "zb-1.5b", "--device", "h100", "--gpus", "8",
                               "--global-batch", "24", "--schedules", "1f1b"});
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Contains("best layout: pp=") && Contains("The plan of the best layout"));
}

TEST_CASE("plan without -p or --gpus is a usage error; --gpus with a per-stage layout needs -p",
          "[cli][model][plan][bad-input]") {
  const auto none = run_ppsim({"plan", "--model", "zb-1.5b", "--global-batch", "24"});
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Contains("needs -p STAGES, or --gpus N"));
  const auto layout = run_ppsim({"plan", "--model", "zb-1.5b", "--gpus", "8", "--global-batch",
                                 "24", "--layers-per-stage", "11,11"});
  CHECK(layout.code == 3);
  CHECK_THAT(layout.err, Contains("give -p with them"));
  const auto zero = run_ppsim({"plan", "--model", "zb-1.5b", "--gpus", "-4", "--global-batch", "24"});
  CHECK(zero.code == 3);
  CHECK_THAT(zero.err, Contains("--gpus -4"));
}
