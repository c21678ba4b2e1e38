// Tests of --ep, --overlap and --streams through the command line: the defaults leave every
// run as it was, the overlap of a mixture of experts' all-to-alls shortens DualPipeV and the
// interleaved schedules, one comm stream gives some of it back, plan says what the overlap hid, and the refusals.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using ppsim::test::run_ppsim;

namespace {

double cost_of(std::vector<std::string> args) {
  args.insert(args.begin(), "simulate");
  args.push_back("--json");
  const auto r = run_ppsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out).at("cost_ms").get<double>();
}

std::vector<std::string> moe(const std::string& schedule, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"-s", schedule, "-p", "4", "-m", "16", "--model",
                                "qwen3-moe-30b-a3b", "--device", "h100", "--ep", "16", "--dp", "16"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

} // namespace

TEST_CASE("overlap none and no expert parallelism leave a run exactly as it was", "[cli][overlap]") {
  for (const std::string s : {"1f1b", "zb-v", "dualpipe-v"}) {
    const std::vector<std::string> base = {"simulate", "-s", s, "-p", "4", "-m", "8", "--model",
                                           "zb-1.5b", "--device", "h100"};
    std::vector<std::string> none = base;
    none.insert(none.end(), {"--overlap", "none", "--ep", "1"});
    CHECK(run_ppsim(base).out == run_ppsim(none).out);
  }
}

TEST_CASE("overlapping the all-to-alls shortens DualPipeV and interleaved 1F1B; one stream less so",
          "[cli][overlap]") {
  for (const std::string s : {"dualpipe-v", "interleaved-1f1b", "zb-v"}) {
    CAPTURE(s);
    const double none = cost_of(moe(s));
    const double a2a = cost_of(moe(s, {"--overlap", "a2a"}));
    const double one = cost_of(moe(s, {"--overlap", "a2a", "--streams", "1"}));
    CHECK(a2a < 0.9 * none);
    CHECK(one > a2a);
    CHECK(one < none);
  }
  // without chunks a combined cell waits for the next stage's cell: slower, and said so
  CHECK(cost_of(moe("1f1b", {"--overlap", "a2a"})) > cost_of(moe("1f1b")));
  std::vector<std::string> args = moe("1f1b", {"--overlap", "a2a"});
  args.insert(args.begin(), "simulate");
  CHECK_THAT(run_ppsim(args).out, Contains("overlap       a2a, Combined 1F1B") &&
                                      Contains("only on interleaved schedules"));
}

TEST_CASE("costs names the experts and the all-to-alls' time", "[cli][overlap]") {
  const auto r = run_ppsim({"costs", "--model", "mixtral-8x7b", "--device", "h100", "-p", "4",
                            "--ep", "8", "--dp", "8", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("model").at("moe").at("experts") == 8);
  CHECK(j.at("model").at("ep") == 8);
  CHECK(j.at("model").at("breakdown")[1].at("F").at("ep_comm_ms").get<double>() > 0);
  CHECK_THAT(run_ppsim({"costs", "--model", "mixtral-8x7b", "-p", "4"}).out,
             Contains("32 heads of 128 (8 KV), 8 experts of 14336 (top-2)"));
}

TEST_CASE("bad --ep, --overlap and --streams are refused: 3 a bad value, 2 a bad flag, 4 a deadlock",
          "[cli][overlap][errors]") {
  const auto no_model = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--ep", "2"});
  CHECK(no_model.code == 3);
  CHECK_THAT(no_model.err, Contains("--ep needs --model"));
  const auto dense = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model",
                                "zb-1.5b", "--ep", "2", "--dp", "2"});
  CHECK(dense.code == 3);
  CHECK_THAT(dense.err, Contains("--ep 2: zb-1.5b has no experts"));
  const auto streams = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model",
                                  "zb-1.5b", "--streams", "1"});
  CHECK(streams.code == 3);
  CHECK_THAT(streams.err, Contains("--streams needs --overlap"));
  CHECK(run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b",
                   "--overlap", "some"})
            .code == 2);
  CHECK(run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b",
                   "--overlap", "a2a", "--streams", "0"})
            .code == 2);
}

TEST_CASE("Combined 1F1B leaves alone the backwards whose cell would deadlock, and says how many",
          "[cli][overlap]") {
  // V-Min's second-chunk F waits, through the other devices, for the backward before it: every
  // cell paired would deadlock (this was refused with exit 4).
  std::vector<std::string> args = moe("v-min", {"--overlap", "a2a"});
  args.insert(args.begin(), "simulate");
  const auto r = run_ppsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("backwards left out of the cell that would have deadlocked"));
  CHECK_THAT(r.out, !Contains("without chunks"));
  // 1F1B pairs every backward but the last of each device; nothing is left out.
  std::vector<std::string> plain = moe("1f1b", {"--overlap", "a2a"});
  plain.insert(plain.begin(), "simulate");
  const auto p = run_ppsim(plain);
  REQUIRE(p.code == 0);
  CHECK_THAT(p.out, !Contains("left out"));
  CHECK_THAT(p.out, Contains("without chunks"));
}

TEST_CASE("plan says how much of the all-to-alls an overlapped winner hides", "[cli][overlap][plan]") {
  const auto r = run_ppsim({"plan", "--model", "qwen3-moe-30b-a3b", "--device", "h100", "-p", "4",
                            "--ep", "16", "--dp", "16", "--global-batch", "256", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  const auto& all = doc.at("candidates");
  int overlapped = 0;
  for (const auto& c : all) {
    if (c.at("overlap").is_null()) continue;
    ++overlapped;
    CAPTURE(c.dump());
    // the same shape without the overlap, which it follows
    const nlohmann::json* plain = nullptr;
    for (const auto& d : all)
      if (d.at("overlap").is_null() && d.at("schedule") == c.at("schedule") &&
          d.at("chunks") == c.at("chunks") && d.at("microbatches") == c.at("microbatches") &&
          d.at("microbatch_size") == c.at("microbatch_size") && d.at("layout") == c.at("layout") &&
          d.at("recompute") == c.at("recompute"))
        plain = &d;
    REQUIRE(plain != nullptr);
    CHECK(c.at("without_knob_ms").get<double>() == plain->at("iteration_time_ms").get<double>());
    CHECK(plain->count("task_comm_ms") == 0);
    CHECK(c.at("exposed_comm_ms").get<double>() > 0);
    CHECK(c.at("exposed_comm_ms").get<double>() < c.at("task_comm_ms").get<double>());
    CHECK(c.at("iteration_time_ms").get<double>() < plain->at("iteration_time_ms").get<double>());
  }
  CHECK(overlapped > 0);
  const auto& best = all.at(doc.at("best").get<std::size_t>());
  REQUIRE_FALSE(best.at("overlap").is_null());
  const double total = best.at("task_comm_ms").get<double>();
  const double hidden = 100 * (total - best.at("exposed_comm_ms").get<double>()) / total;
  CHECK_THAT(doc.at("why").get<std::string>(),
             Contains(fmt::format("hides {:.0f}% of the all-to-alls", hidden)));
}

TEST_CASE("a trace of an overlapped run draws the collectives on their streams' tracks",
          "[cli][overlap][viz]") {
  ppsim::test::TempDir dir("overlap-trace");
  for (const std::string streams : {"2", "1"}) {
    CAPTURE(streams);
    const std::string path = (dir.path() / ("t" + streams + ".json")).string();
    auto args = moe("dualpipe-v", {"--overlap", "a2a", "--streams", streams, "--trace", path});
    args.insert(args.begin(), "simulate");
    const auto r = run_ppsim(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::ifstream f(path);
    const auto j = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
    // Per device (pid), the collectives' time; it is the task_comm_ms of the metrics.
    std::map<int, double> comm_us;
    std::set<std::string> tracks;
    for (const auto& e : j.at("traceEvents")) {
      if (e.value("name", "") == "thread_name" && e.at("pid") == 1)
        tracks.insert(e.at("args").at("name").get<std::string>());
      if (e.value("cat", "") == "collective") comm_us[e.at("pid").get<int>()] += e.at("dur").get<double>();
    }
    CHECK(tracks.count("collectives") == 1);
    CHECK(tracks.count("collectives 2") == (streams == "1" ? 0 : 1));
    auto json_args = moe("dualpipe-v", {"--overlap", "a2a", "--streams", streams, "--json"});
    json_args.insert(json_args.begin(), "simulate");
    const auto m = nlohmann::json::parse(run_ppsim(json_args).out);
    for (const auto& d : m.at("per_device")) {
      const int pid = d.at("device").get<int>() + 1;
      CHECK(comm_us[pid] / 1000 == Approx(d.at("task_comm_ms").get<double>()).epsilon(1e-9));
    }
  }
  // TempDir checks the trace rules: no two collectives of one track overlap.
}
