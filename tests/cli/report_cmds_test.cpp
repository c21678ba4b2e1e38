// Tests of `ppsim sweep`, `ppsim check`, `compare --html` and `--svg` through run_cli, and of the
// committed baselines (every schedule covered, all passing, the known answers in them).
#include "ppsim/io/baseline_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "tests/cli/cli_harness.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

using namespace ppsim;
using namespace ppsim::test;
namespace fs = std::filesystem;

namespace {

// Two cases without expected metrics; `ppsim check --update` approves them.
const char* unapproved = R"({
  "schema": "ppsim.baseline/1",
  "description": "test",
  "cases": [
    {"name": "1f1b unit", "schedule": "1f1b", "p": 4, "m": 8, "costs": "F=2,B=2,W=2"},
    {"name": "zb-h1 unit", "schedule": "zbh1", "p": 4, "m": 8, "costs": "F=2,B=2,W=2"}
  ]
})";

// An approved baseline whose zb-h1 cost is replaced by `cost`.
std::string with_zb_h1_cost(const TempDir& dir, double cost) {
  const std::string path = dir.file("b.json", unapproved);
  REQUIRE(run_ppsim({"check", "--baseline", path, "--update"}).code == 0);
  auto doc = nlohmann::json::parse(slurp(path));
  doc["cases"][1]["expected"]["cost_ms"] = cost;
  return dir.file("b.json", doc.dump(2));
}

} // namespace

TEST_CASE("sweep prints CSV for every grid point and keeps the ones that cannot run",
          "[cli][sweep]") {
  const auto r = run_ppsim({"sweep", "-s", "1f1b,zb-h2", "-p", "4", "-m", "4,8,16", "--costs",
                      "F=1,B=1,W=1", "--mem-limit", "1p,2p", "--csv"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + 2 * 3 * 2);
  CHECK(lines[0].rfind("schedule,p,m,v,mem_limit,status,", 0) == 0);
  CHECK(lines[1].rfind("1f1b,4,4,1,1p,ok,32,", 0) == 0);
  // zb-h2 at m = 4 < 2p: rejected by the generator, with its reason, not dropped.
  CHECK(lines[7] == "zb-h2,4,4,,1p,rejected,,,,,,,,\"zb-h2: needs microbatches >= 2*devices "
                    "(got microbatches=4, devices=4)\",");
  // zb-h2 at m = 8 needs (2p-1) M_B = 7 > 1p = 4: infeasible, and 7 is the least that works.
  CHECK(lines[8].rfind("zb-h2,4,8,,1p,infeasible,", 0) == 0);
  CHECK_THAT(lines[8], Catch::Contains("device 0 peaks at 7 M_B"));
  CHECK(lines[8].ends_with("(4 M_B)\",7"));
  // ... and runs under 2p: zero bubble.
  CHECK(lines[11].rfind("zb-h2,4,8,1,2p,ok,96,27,24,24,0,0,7,", 0) == 0);
}

TEST_CASE("sweep writes JSON, a table and an HTML page, and rejects bad axes", "[cli][sweep]") {
  TempDir dir("report-test");
  const auto j = run_ppsim({"sweep", "-s", "zb-h1", "-p", "2,4", "-m", "8", "--json", "--html",
                      dir / "sweep.html"});
  REQUIRE(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["schema"] == "ppsim.sweep/1");
  CHECK(doc["points"].size() == 2);
  CHECK_THAT(slurp(dir / "sweep.html"), Catch::Contains("bubble rate against micro-batches"));
  const auto t = run_ppsim({"sweep", "-s", "zb-h1", "-p", "4", "-m", "8"});
  CHECK(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("zb-h1"));
  CHECK(run_ppsim({"sweep", "-s", "nope", "-p", "4", "-m", "8"}).code == 3);
  CHECK(run_ppsim({"sweep", "-s", "1f1b", "-p", "4,x", "-m", "8"}).code == 3);
  CHECK(run_ppsim({"sweep", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", "lots"}).code == 3);
  CHECK(run_ppsim({"sweep", "-s", "1f1b", "-p", "4", "-m", "8", "--csv", "--json"}).code == 2);
}

TEST_CASE("sweep --threads writes the same bytes for any thread count", "[cli][sweep]") {
  const std::vector<std::string> grid = {"sweep", "-s", "1f1b,zb-h2,zb-auto", "-p", "2,4",
                                         "-m", "2,4,8", "--mem-limit", "0.5p,3p"};
  for (const char* format : {"--csv", "--json"}) {
    CAPTURE(format);
    auto args = grid;
    args.push_back(format);
    args.insert(args.end(), {"--threads", "1"});
    const auto one = run_ppsim(args);
    REQUIRE(one.code == 0);
    for (const char* n : {"0", "2", "7"}) {
      CAPTURE(n);
      args.back() = n;
      const auto many = run_ppsim(args);
      CHECK(many.code == 0);
      CHECK(many.out == one.out);
    }
  }
  for (const char* bad : {"-1", "1025", "x", "2.5"}) {
    CAPTURE(bad);
    const auto r = run_ppsim({"sweep", "-s", "1f1b", "-p", "2", "-m", "4", "--threads", bad});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--threads"));
  }
}

TEST_CASE("compare --html writes the report atomically", "[cli][html]") {
  TempDir dir("report-test");
  const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--html",
                      dir / "report.html"});
  REQUIRE(r.code == 0);
  const std::string html = slurp(dir / "report.html");
  CHECK_THAT(html, Catch::Contains("<td class=\"name\">zb-h1</td>"));
  CHECK_THAT(html, Catch::Contains("{\"name\":\"zb-h1\",\"devices\":4,"));
  CHECK(fs::directory_iterator(dir.path()) != fs::directory_iterator());
  CHECK(dir.entries() == 1);  // no temporary left behind
}

TEST_CASE("simulate, compare and sweep write one standalone picture with --svg", "[cli][svg]") {
  TempDir dir("report-test");
  const auto s = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--svg", dir / "one.svg"});
  REQUIRE(s.code == 0);
  const std::string one = slurp(dir / "one.svg");
  CHECK(one.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timelines\"", 0) == 0);
  CHECK(count(one, "<rect class=\"task ") == 96);
  const auto c = run_ppsim({"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8", "--svg",
                      dir / "all.svg", "--mem-limit", "1p"});
  REQUIRE(c.code == 0);  // zb-h2 does not fit: the picture holds the two that ran
  const std::string all = slurp(dir / "all.svg");
  CHECK(count(all, "<rect class=\"task ") == 64 + 96);
  CHECK(count(all, "class=\"run-title\"") == 2);
  const auto w = run_ppsim({"sweep", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8,16", "--svg",
                      dir / "sweep.svg"});
  REQUIRE(w.code == 0);
  const std::string sweep = slurp(dir / "sweep.svg");
  CHECK(count(sweep, "class=\"chart lines\"") == 4);  // two figures, a panel per schedule
  CHECK(count(sweep, ">bubble rate against micro-batches: 1f1b</text>") == 1);
  CHECK(count(sweep, "data-series=\"p=4\"") == 2);
  CHECK(dir.entries() == 3);  // no temporaries left behind
}

TEST_CASE("check passes on an approved baseline and --update round-trips", "[cli][check]") {
  TempDir dir("report-test");
  const std::string path = dir.file("b.json", unapproved);
  // Not yet approved: a clear error, never a pass.
  const auto before = run_ppsim({"check", "--baseline", path});
  CHECK(before.code == 3);
  CHECK_THAT(before.err, Catch::Contains("/cases/0/expected: missing"));

  const auto up = run_ppsim({"check", "--baseline", path, "--update"});
  REQUIRE(up.code == 0);
  CHECK_THAT(up.out, Catch::Contains("updated"));
  const std::string approved = slurp(path);
  const auto doc = nlohmann::json::parse(approved);
  CHECK(doc["cases"][0]["expected"]["cost_ms"] == 66.0);  // DESIGN.md: 1F1B 66
  CHECK(doc["cases"][1]["expected"]["cost_ms"] == 54.0);  // ZB-H1 54
  CHECK(doc["cases"][1]["schedule"] == "zbh1");           // the file's own text is kept

  const auto ok = run_ppsim({"check", "--baseline", path});
  CHECK(ok.code == 0);
  CHECK(ok.err.empty());
  CHECK_THAT(ok.out, Catch::Contains("2 cases, 10 metrics"));
  CHECK_THAT(ok.out, Catch::Contains("all within tolerance"));
  // A second update changes nothing, byte for byte.
  REQUIRE(run_ppsim({"check", "--baseline", path, "--update"}).code == 0);
  CHECK(slurp(path) == approved);
}

TEST_CASE("check fails with exit 1 on a regression and names the case", "[cli][check]") {
  TempDir dir("report-test");
  const std::string path = with_zb_h1_cost(dir, 50);  // got 54: worse
  const auto r = run_ppsim({"check", "--baseline", path});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("regression in case 'zb-h1 unit': cost_ms 50 -> 54"));
  CHECK_THAT(r.out, Catch::Contains("WORSE"));
  CHECK_THAT(r.err, !Catch::Contains("1f1b unit"));
  // Within a loose enough tolerance it passes (relative: 4 / 50 = 8%).
  CHECK(run_ppsim({"check", "--baseline", path, "--tolerance", "0.1"}).code == 0);
  CHECK(run_ppsim({"check", "--baseline", path, "--tolerance", "0.05"}).code == 1);
  CHECK(run_ppsim({"check", "--baseline", path, "--tolerance", "-1"}).code == 3);
}

TEST_CASE("check treats an improvement as a change to re-approve", "[cli][check]") {
  TempDir dir("report-test");
  const std::string path = with_zb_h1_cost(dir, 60);  // got 54: better
  const auto r = run_ppsim({"check", "--baseline", path});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("changed (better) in case 'zb-h1 unit': cost_ms 60 -> 54"));
  CHECK_THAT(r.err, Catch::Contains("--update"));
  const auto allowed = run_ppsim({"check", "--baseline", path, "--allow-improvements"});
  CHECK(allowed.code == 0);
  CHECK_THAT(allowed.err, Catch::Contains("warning"));
}

TEST_CASE("a malformed baseline is a clear error (exit 3), never a pass", "[cli][check]") {
  TempDir dir("report-test");
  const auto check = [&](const std::string& text) {
    return run_ppsim({"check", "--baseline", dir.file("bad.json", text)});
  };
  const std::string head = R"({"schema": "ppsim.baseline/1", "cases": [)";
  const std::string expected =
      R"("expected": {"bubble_rate": 0, "cost_ms": 1, "peak_memory": 1}})";
  struct Bad {
    std::string text;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"{not json", "not valid JSON"},
      {R"({"schema": "ppsim.baseline/2", "cases": []})", "/schema"},
      {R"({"schema": "ppsim.baseline/1", "cases": []})", "no cases"},
      {R"({"schema": "ppsim.baseline/1"})", "/cases: missing"},
      {head + R"({"schedule": "zb-h9", "p": 4, "m": 8, )" + expected + "]}",
       "/cases/0/schedule: unknown schedule 'zb-h9' (did you mean 'zb-h1'?) (valid: gpipe"},
      {head + R"({"p": 4, "m": 8, )" + expected + "]}", "/cases/0/schedule: missing"},
      {head + R"({"schedule": "1f1b", "m": 8, )" + expected + "]}", "/cases/0/p: missing"},
      {head + R"({"schedule": "1f1b", "p": "4", "m": 8, )" + expected + "]}",
       "/cases/0/p: expected an integer"},
      {head + R"({"schedule": "1f1b", "p": 4, "m": 8, "colour": 1, )" + expected + "]}",
       "/cases/0/colour: unknown key"},
      {head + R"({"schedule": "1f1b", "p": 4, "m": 8, "expected": {"cost_ms": 1}}]})",
       "/cases/0/expected/bubble_rate: missing"},
      {head + R"({"schedule": "1f1b", "p": 4, "m": 8, "expected": {"bubble": 1}}]})",
       "/cases/0/expected/bubble: unknown metric"},
      {head + R"({"name": "a", "schedule": "1f1b", "p": 4, "m": 8, )" + expected + R"(,
                 {"name": "a", "schedule": "zb-h1", "p": 4, "m": 8, )" + expected + "]}",
       "/cases/1/name: duplicate case name 'a'"},
      {head + R"({"schedule": "1f1b", "p": 4, "m": 8, "costs": "F=x", )" + expected + "]}",
       "case '1f1b p=4 m=8 costs=F=x'"},
      {head + R"({"schedule": "1f1b", "p": 4, "m": 8, "costs_file": "none.json", )" + expected +
           "]}",
       "none.json"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.text);
    const auto r = check(b.text);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains(b.message));
    CHECK(r.out.find("all within tolerance") == std::string::npos);
  }
  CHECK(run_ppsim({"check", "--baseline", dir / "missing.json"}).code == 3);
  // A case whose shape cannot run is its error code, naming the case.
  const auto infeasible = check(head + R"({"name": "tight", "schedule": "zb-h2", "p": 4, "m": 8,
      "mem_limit": "1p", )" + expected + "]}");
  CHECK(infeasible.code == 5);
  CHECK_THAT(infeasible.err, Catch::Contains("case 'tight'"));
}

TEST_CASE("the committed baselines cover every schedule at several shapes and pass",
          "[cli][check][golden]") {
  std::map<std::string, std::set<std::tuple<int, int, int>>> shapes;
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(source_path("data/baselines"))) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string path = entry.path().string();
    CAPTURE(path);
    const Baseline b = load_baseline_file(path, true);
    for (const BaselineCase& c : b.cases) {
      const ScheduleInfo* info = find_schedule(c.schedule);
      if (info != nullptr) shapes[std::string(info->name)].emplace(c.devices, c.microbatches, c.chunks);
    }
    const auto r = run_ppsim({"check", "--baseline", path});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
  }
  CHECK(files >= 2);
  for (const ScheduleInfo& info : schedule_registry()) {
    CAPTURE(info.name);
    CHECK(shapes[std::string(info.name)].size() >= 3);
  }
}

TEST_CASE("the committed known-answer baseline holds DESIGN.md's costs", "[cli][check][golden]") {
  const Baseline b = load_baseline_file(source_path("data/baselines/known-answers.json"), true);
  const std::map<std::string, double> known = {
      {"1f1b", 66},  {"zb-h1", 54}, {"zb-h2", 48}, {"interleaved-1f1b", 57}, {"zb-1p", 54},
      {"zb-2p", 48}, {"zb-v", 48},  {"v-min", 59}, {"v-half", 53}, {"seq1f1b", 57},
      {"seq-zb-h1", 51}, {"interleaved-seq1f1b", 52.5}};
  std::size_t found = 0;
  for (const BaselineCase& c : b.cases) {
    const auto it = known.find(c.schedule);
    if (it == known.end()) continue;
    CAPTURE(c.name);
    CHECK(c.devices == 4);
    CHECK(c.microbatches == 8);
    for (const auto& [metric, value] : c.expected)
      if (metric == "cost_ms") CHECK(value == it->second);
    ++found;
  }
  CHECK(found == known.size());
}

TEST_CASE("check --init creates a starter baseline that then passes", "[cli][check]") {
  TempDir dir("check-init");
  const std::string file = dir / "ci.json";
  const auto made = run_ppsim({"check", "--init", "--baseline", file});
  REQUIRE(made.code == 0);
  CHECK_THAT(made.out, Catch::Contains("created ") && Catch::Contains("9 cases"));
  const Baseline b = load_baseline_file(file, true);
  REQUIRE(b.cases.size() == 9);
  CHECK(b.cases[0].name == "1f1b p=4 m=8 costs=F=2,B=2,W=2");
  CHECK(b.cases[0].expected[1] == std::pair<std::string, double>{"cost_ms", 66});
  CHECK(run_ppsim({"check", "--baseline", file}).code == 0);
  // a missing baseline, with or without --update, points to --init
  for (const bool update : {false, true}) {
    std::vector<std::string> args{"check", "--baseline", dir / "new.json"};
    if (update) args.emplace_back("--update");
    const auto missing = run_ppsim(args);
    CHECK(missing.code == 3);
    CHECK_THAT(missing.err, Catch::Contains("new.json: no such baseline file; create one with "
                                            "'ppsim check --baseline") &&
                                Catch::Contains("new.json --init'"));
  }
  // --init never overwrites
  const auto again = run_ppsim({"check", "--init", "--baseline", file});
  CHECK(again.code == 3);
  CHECK_THAT(again.err, Catch::Contains("already exists"));
}

TEST_CASE("check --update --case creates a missing baseline from the command line",
          "[cli][check]") {
  TempDir dir("check-case");
  const std::string file = dir / "mine.json";
  const auto made = run_ppsim({"check", "--update", "--baseline", file, "--case",
                         "-s zb-h1 -p 4 -m 8 --costs F=1,B=1,W=1", "--case",
                         "-s zb-v -p 4 -m 8 --mem-limit 2p --name v"});
  REQUIRE(made.code == 0);
  const Baseline b = load_baseline_file(file, true);
  REQUIRE(b.cases.size() == 2);
  CHECK(b.cases[1].name == "v");
  CHECK(b.cases[1].mem_limit == "2p");
  // without --update a missing baseline is an error, and so is a malformed case
  CHECK(run_ppsim({"check", "--baseline", dir / "none.json", "--case", "-s 1f1b -p 2 -m 2"}).code == 3);
  const auto bad = run_ppsim({"check", "--update", "--baseline", dir / "x.json", "--case", "-p 4"});
  CHECK(bad.code == 3);
  CHECK_THAT(bad.err, Catch::Contains("--case '-p 4'") && Catch::Contains("--schedule is required"));
  // The file keeps every name and reads back only names within the bound, so a case whose name
  // would be longer is refused before anything is written.
  const std::string long_file = dir / "long.json";
  const auto long_name = run_ppsim({"check", "--update", "--baseline", long_file, "--case",
                                    "-s 1f1b -p 2 -m 2 --name " + std::string(300, 'n')});
  CHECK(long_name.code == 3);
  CHECK_THAT(long_name.err, Catch::Contains("the case's name has 300 characters"));
  CHECK_FALSE(std::filesystem::exists(long_file));
}

TEST_CASE("check --json is one document with each metric's change", "[cli][check]") {
  const auto r = run_ppsim({"check", "--baseline", source_path("data/baselines/known-answers.json"), "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppsim.check/1");
  CHECK(j["regressions"] == 0);
  CHECK(j["cases"].size() > 5);
  CHECK(j["cases"][0]["metrics"][0]["change"] == "same");
}
