// The README's figures of recomputation, the knobs in plan, planning on the run's comm and the
// offload beside PipeOffload, rerun from the commands the README gives (each row names its
// section), so that a typed number cannot drift from what ppsim says.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

using namespace ppsim::test;
using Catch::Contains;
using json = nlohmann::json;

namespace {

json run_json(std::vector<std::string> args) {
  args.push_back("--json");
  const auto r = run_ppsim(args);
  REQUIRE(r.code == 0);
  return json::parse(r.out);
}

// x as the README writes it: to one decimal.
double one_decimal(double x) { return std::round(x * 10) / 10; }

} // namespace

TEST_CASE("the README's recomputation table is what zb-6.2b on h100 gives", "[cli][recompute][readme]") {
  // README.md, "Recomputation: --recompute": 1F1B, p = 8, m = 24.
  struct Row {
    const char* recompute;
    double makespan_ms, peak_gib, recompute_ms;
  };
  for (const Row& row : {Row{"none", 811.5, 37.8, 0}, Row{"selective", 821.3, 24.7, 7.7},
                         Row{"full:1", 878.5, 31.9, 51.8}, Row{"full:2", 945.5, 26.0, 103.7},
                         Row{"full:2+selective", 950.2, 19.4, 107.5}, Row{"full", 1072.9, 14.2, 207.3}}) {
    CAPTURE(row.recompute);
    const json j = run_json({"simulate", "-s", "1f1b", "-p", "8", "-m", "24", "--model", "zb-6.2b",
                             "--device", "h100", "--recompute", row.recompute});
    CHECK(one_decimal(j["makespan_ms"].get<double>()) == row.makespan_ms);
    CHECK(one_decimal(j["peak_bytes"].get<double>() / 1073741824.0) == row.peak_gib);
    double most = 0;
    for (const auto& d : j["per_device"]) most = std::max(most, d.value("recompute_ms", 0.0));
    CHECK(one_decimal(most) == row.recompute_ms);
  }
}

TEST_CASE("the README's plans with knobs are what plan gives", "[cli][plan][readme]") {
  // README.md, "Recomputation: --recompute": llama3-8b on two h100s, then two gh200s.
  const json h = run_json({"plan", "--model", "llama3-8b", "--device", "h100", "-p", "2",
                           "--global-batch", "16"});
  const json& hb = h["candidates"][h["best"].get<std::size_t>()];
  CHECK(hb["schedule"] == "interleaved-1f1b");
  CHECK(hb["chunks"] == 4);
  CHECK(one_decimal(hb["iteration_time_ms"].get<double>()) == 8313.2);
  CHECK(hb["recompute"] == "full,full:3+selective,full:4+selective,full:3+selective,full,full:3+selective,full,full");
  CHECK_THAT(h["why"].get<std::string>(), Contains("+21.4% time over the same shape"));
  const json g = run_json({"plan", "--model", "llama3-8b", "--device", "gh200", "-p", "2",
                           "--global-batch", "16"});
  const json& gb = g["candidates"][g["best"].get<std::size_t>()];
  CHECK(gb["schedule"] == "interleaved-seq1f1b");
  CHECK(gb["slices"] == 2);
  CHECK(one_decimal(gb["iteration_time_ms"].get<double>()) == 6708.3);
  CHECK(gb["offload"] == "0.05");
  CHECK(one_decimal(gb["offloaded_bytes"].get<double>() / 1073741824.0) == 2.3);
  // without slices: looped BFS, 95 % offloaded, no copy exposed
  const json& g3 = g["candidates"][2];
  CHECK(g3["schedule"] == "looped-bfs");
  CHECK(one_decimal(g3["iteration_time_ms"].get<double>()) == 6784.3);
  CHECK(g3["offload"] == "0.95");
  CHECK(one_decimal(g3["offloaded_bytes"].get<double>() / 1073741824.0) == 311.9);
  CHECK(g3["exposed_copy_ms"].get<double>() == 0);
  // and zb-28.3b, where selective recomputation gives zb-auto room
  const json z = run_json({"plan", "--model", "zb-28.3b", "--device", "h100", "-p", "8",
                           "--global-batch", "16", "--schedules", "zb-auto"});
  const json& zb = z["candidates"][z["best"].get<std::size_t>()];
  CHECK(zb["recompute"] == "selective");
  CHECK(one_decimal(zb["iteration_time_ms"].get<double>()) == 714.7);
  CHECK_THAT(z["why"].get<std::string>(), Contains("with --recompute selective, -41.3% time"));
}

TEST_CASE("the README's comm table is what the schedulers give on that link", "[cli][comm][readme]") {
  // README.md, "Communication and variability": 8 MB messages over 10 GB/s, p = 4, m = 8.
  const std::vector<std::string> s{"1f1b", "zb-h1", "zb-h2", "zb-v", "v-half"};
  struct Row {
    std::vector<std::string> flags;
    std::vector<double> cost;
  };
  const std::string link = "latency=0.01,bandwidth=10";
  for (const Row& row : {Row{{"--link", link}, {45.96, 37.96, 28.86, 38.08, 47.56}},
                         Row{{"--link", link + ",contention=duplex"}, {45.96, 37.96, 28.86, 38.08, 47.87}},
                         Row{{"--comm-mode", "blocking", "--link", link + ",contention=duplex"},
                             {48.39, 42.39, 39.39, 51.54, 56.47}}})
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::vector<std::string> args{"simulate", "-s", s[i], "-p", "4", "-m", "8", "--costs",
                                    "F=1,B=1,W=1,act_bytes=8e6,grad_bytes=8e6"};
      args.insert(args.end(), row.flags.begin(), row.flags.end());
      CAPTURE(s[i], row.flags);
      CHECK(std::round(run_json(args)["cost_ms"].get<double>() * 100) / 100 == row.cost[i]);
    }
}

TEST_CASE("the README's offload beside PipeOffload is what interleaved 1F1B gives", "[cli][offload][readme]") {
  // README.md, "Offload": device 0's peak in chunk activations (M_B / 2), v = 2.
  struct Row {
    const char* offload;
    double p4, p8;
  };
  for (const Row& row : {Row{"none", 11, 23}, Row{"chunks=0", 6, 10}, Row{"chunks=0-1", 2, 2}})
    for (const int p : {4, 8}) {
      CAPTURE(row.offload, p);
      const json j = run_json({"simulate", "-s", "interleaved-1f1b", "-p", std::to_string(p), "-v", "2",
                               "-m", std::to_string(4 * p), "--costs", "F=1,B=1,W=1,copy=0",
                               "--offload", row.offload});
      CHECK(j["per_device"][0]["peak_memory"].get<double>() * 2 == (p == 4 ? row.p4 : row.p8));
    }
}

TEST_CASE("the README's data-parallel table is what compare --dp 8 gives", "[cli][dp][readme]") {
  // README.md, "Data parallelism at the tail: --dp": zb-6.2b on 8 h100, m = 24.
  struct Row {
    const char* schedule;
    double makespan_ms, dp_ms, dp_exposed_ms, zero_ms, zero_exposed_ms;
  };
  const std::vector<std::string> base{"compare", "-s", "1f1b,interleaved-1f1b,zb-h1,zb-auto,zb-v",
                                      "-p", "8", "-m", "24", "--model", "zb-6.2b", "--device", "h100"};
  const auto with = [&](const std::vector<std::string>& extra) { return run_json(args_with(base, extra)); };
  const json plain = with({});
  const json dp = with({"--dp", "8"});
  const json zero = with({"--dp", "8", "--zero", "1"});
  const Row rows[] = {{"1f1b", 811.5, 927.6, 103.0, 890.4, 77.3},
                      {"interleaved-1f1b", 703.7, 768.4, 51.6, 757.0, 51.6},
                      {"zb-h1", 697.2, 823.1, 112.8, 783.5, 84.6},
                      {"zb-auto", 697.2, 823.1, 112.8, 783.5, 84.6},
                      {"zb-v", 700.3, 814.0, 100.7, 774.4, 72.5}};
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    const Row& row = rows[i];
    CAPTURE(row.schedule);
    REQUIRE(dp[i]["schedule"] == row.schedule);
    CHECK(one_decimal(plain[i]["makespan_ms"].get<double>()) == row.makespan_ms);
    CHECK(one_decimal(dp[i]["iteration_time_ms"].get<double>()) == row.dp_ms);
    CHECK(one_decimal(dp[i]["exposed_dp_ms"].get<double>()) == row.dp_exposed_ms);
    CHECK(one_decimal(zero[i]["iteration_time_ms"].get<double>()) == row.zero_ms);
    CHECK(one_decimal(zero[i]["exposed_dp_ms"].get<double>()) == row.zero_exposed_ms);
  }
}

namespace {

std::string readme_text() {
  std::ifstream in(std::string(PPSIM_SOURCE_DIR) + "/README.md");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("the README's ratios are what the runs they compare give", "[cli][readme]") {
  // Ratios are typed by hand beside the figures docs-check reruns; each is computed here from
  // the same commands and looked for, as the README rounds it.
  const std::string readme = readme_text();
  const auto makespan = [](std::vector<std::string> args) {
    return run_json(std::move(args))["makespan_ms"].get<double>();
  };
  // "Recomputation": selective and full against none, zb-6.2b 1F1B p = 8, m = 24 on h100
  const auto recompute = [&](const char* r) {
    return makespan({"simulate", "-s", "1f1b", "-p", "8", "-m", "24", "--model", "zb-6.2b",
                     "--device", "h100", "--recompute", r});
  };
  const double none = recompute("none");
  CHECK_THAT(readme, Contains(fmt::format("(+{:.1f} %)", 100 * (recompute("selective") / none - 1))));
  CHECK_THAT(readme, Contains(fmt::format("(+{:.1f} %)", 100 * (recompute("full") / none - 1))));
  // "Long context": 4 balanced slices against 1F1B, llama3-8b on 8 h100s, at 32K and 128K
  std::string speedups, shares;
  for (const char* seq : {"32768", "131072"}) {
    const std::vector<std::string> base{"-p", "8", "-m", "16", "--model", "llama3-8b", "--device",
                                        "h100", "--seq", seq, "--mem-capacity", "10TiB"};
    std::vector<std::string> a{"simulate", "-s", "1f1b"}, b{"simulate", "-s", "seq1f1b", "--slices",
                                                           "4", "--slicing", "balanced"};
    a.insert(a.end(), base.begin(), base.end());
    b.insert(b.end(), base.begin(), base.end());
    speedups += fmt::format("{}{:.2f}×", speedups.empty() ? "" : "|", makespan(a) / makespan(b));
    const json c = run_json({"costs", "-p", "8", "--model", "llama3-8b", "--device", "h100", "--seq", seq});
    const json& F = c["model"]["breakdown"][1]["F"];
    double total = 0;
    for (const auto& [key, value] : F.items()) total += value.get<double>();
    shares += fmt::format("{}{:.0f} %", shares.empty() ? "" : "|", 100 * F["attention_ms"].get<double>() / total);
  }
  const auto bar = speedups.find('|'), cut = shares.find('|');
  CHECK_THAT(readme, Contains(fmt::format("4 balanced slices give {} at 32K and {} at 128K",
                                          speedups.substr(0, bar), speedups.substr(bar + 1))));
  CHECK_THAT(readme, Contains(fmt::format("(attention is {} of F's time at 32K and {} at 128K)",
                                          shares.substr(0, cut), shares.substr(cut + 1))));
}

TEST_CASE("the README's overlap tables: each a2a-against-none ratio and the all-to-alls' share",
          "[cli][overlap][readme]") {
  // README.md, "Mixtures of experts and overlap": the last column of both tables, and the
  // stage times the prose quotes (ppsim costs, stage 1: a2a and F + B + W).
  struct Row {
    const char* model;
    const char* ep;
    const char* schedule;
    double percent;
  };
  for (const Row& row : {Row{"qwen3-moe-30b-a3b", "16", "1f1b", 8.9},
                         Row{"qwen3-moe-30b-a3b", "16", "interleaved-1f1b", -26.8},
                         Row{"qwen3-moe-30b-a3b", "16", "zb-v", -21.6},
                         Row{"qwen3-moe-30b-a3b", "16", "dualpipe-v", -23.3},
                         Row{"mixtral-8x7b", "8", "1f1b", 60.9},
                         Row{"mixtral-8x7b", "8", "interleaved-1f1b", -1.7},
                         Row{"mixtral-8x7b", "8", "zb-v", 3.6},
                         Row{"mixtral-8x7b", "8", "dualpipe-v", -1.9}}) {
    CAPTURE(row.model, row.schedule);
    const std::vector<std::string> base = {"simulate", "-s", row.schedule, "-p", "4", "-m", "16",
                                           "--model", row.model, "--device", "h100", "--ep", row.ep,
                                           "--dp", "16"};
    std::vector<std::string> over = base;
    over.insert(over.end(), {"--overlap", "a2a"});
    const double none = run_json(base)["iteration_time_ms"].get<double>();
    const double a2a = run_json(over)["iteration_time_ms"].get<double>();
    CHECK(one_decimal(100 * (a2a - none) / none) == row.percent);
  }
  for (const auto& [model, ep, a2a, total] :
       {std::tuple{"qwen3-moe-30b-a3b", "16", 64.9, 122.0}, std::tuple{"mixtral-8x7b", "8", 4.3, 147.0}}) {
    const json j = run_json({"costs", "--model", model, "--device", "h100", "-p", "4", "--ep", ep,
                             "--dp", "16"});
    const json& st = j["model"]["breakdown"][1];
    double comm = 0, all = 0;
    for (const char* kind : {"F", "B", "W", "R"})
      for (const auto& [key, value] : st[kind].items()) {
        all += value.get<double>();
        if (key == "ep_comm_ms") comm += value.get<double>();
      }
    CHECK(std::round(comm * 10) / 10 == Approx(a2a));
    CHECK(std::round(all) == total);
    // DualPipeV's device 0 holds two chunks of half a stage: a stage's all-to-alls per
    // micro-batch, 16 micro-batches (the README's 64.86 and 1037.7 ms)
    if (std::string(model) == "qwen3-moe-30b-a3b") {
      CHECK(std::round(comm * 100) / 100 == Approx(64.86));
      CHECK(std::round(16 * comm * 10) / 10 == Approx(1037.7));
    }
  }
}
