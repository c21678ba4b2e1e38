// Tests of the command line through run_cli: output, JSON schema, exit codes, error messages.
#include "tests/cli/cli_harness.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace ppsim;
namespace fs = std::filesystem;

using namespace ppsim::test;

TEST_CASE("list names every schedule with its constraint", "[cli]") {
  const auto r = run_ppsim({"list"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2"}) CHECK_THAT(r.out, Catch::Contains(name));
  CHECK_THAT(r.out, Catch::Contains("m >= 2p"));
  const auto j = run_ppsim({"list", "--json"});
  CHECK(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc.is_array());
  CHECK(doc.size() >= 4);
}

TEST_CASE("simulate --json prints the ppsim.metrics/1 object", "[cli]") {
  const auto r = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--costs", "F=2,B=2,W=2", "--json"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppsim.metrics/1");
  CHECK(j["schedule"] == "zb-h1");
  CHECK(j["devices"] == 4);
  CHECK(j["stages"] == 4);
  CHECK(j["chunks"] == 1);
  CHECK(j["microbatches"] == 8);
  CHECK(j["cost_ms"] == 54.0);
  CHECK(j["ideal_ms"] == 48.0);
  CHECK(j["makespan_ms"] == 54.0);
  CHECK(j["bubble_rate"].get<double>() == Approx(6.0 / 54.0));
  CHECK(j["bubble_over_ideal"].get<double>() == Approx(6.0 / 48.0));
  CHECK(j["peak_memory"] == 4.0);
  REQUIRE(j["per_device"].size() == 4);
  for (const char* key : {"device", "busy_ms", "span_ms", "idle_ms", "peak_memory"})
    CHECK(j["per_device"][0].contains(key));
  CHECK(j["per_device"][3]["peak_memory"] == 2.5);
  // same inputs, byte-identical output
  CHECK(run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--costs", "F=2,B=2,W=2", "--json"}).out == r.out);
}

TEST_CASE("compare prints one row per schedule, or a JSON array", "[cli]") {
  const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8", "--costs", "F=2,B=2,W=2"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("1f1b") && Catch::Contains("zb-h1") && Catch::Contains("zb-h2"));
  CHECK_THAT(r.out, Catch::Contains("27.27%"));  // 1F1B: 18 / 66
  const auto j = run_ppsim({"compare", "-s", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8", "--costs", "F=2,B=2,W=2", "--json"});
  REQUIRE(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc.size() == 3);
  CHECK(doc[0]["cost_ms"] == 66.0);
  CHECK(doc[1]["cost_ms"] == 54.0);
  CHECK(doc[2]["cost_ms"] == 48.0);
}

TEST_CASE("the --trace option writes a Chrome trace per schedule, atomically", "[cli]") {
  TempDir dir("cli-test");
  const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "2", "-m", "4", "--trace", dir / "t.json"});
  REQUIRE(r.code == 0);
  CHECK(fs::exists(dir / "t-1f1b.json"));
  CHECK(fs::exists(dir / "t-zb-h1.json"));
  const auto doc = nlohmann::json::parse(std::ifstream(dir / "t-zb-h1.json"));
  CHECK(doc.contains("traceEvents"));
  const auto one = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--trace", dir / "one.json"});
  REQUIRE(one.code == 0);
  CHECK(fs::exists(dir / "one.json"));
  // nothing but the outputs: no temporary left behind
  CHECK(dir.entries() == 3);
}

TEST_CASE("a failing run writes no output file at all", "[cli]") {
  TempDir dir("cli-test");
  const auto r = run_ppsim({"simulate", "-s", "zb-h2", "-p", "4", "-m", "5", "--trace", dir / "t.json"});
  CHECK(r.code == 3);
  CHECK_FALSE(fs::exists(dir / "t.json"));
  const auto nodir = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--trace", dir / "no/such/dir/t.json"});
  CHECK(nodir.code == 3);
  CHECK_THAT(nodir.err, Catch::StartsWith("ppsim: error: simulate: ") && Catch::Contains("cannot write"));
}

TEST_CASE("usage errors exit 2 with the --help hint", "[cli]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {}, {"frobnicate"}, {"simulate", "-p", "4"}, {"simulate", "-s", "1f1b", "-p", "four", "-m", "8"},
           {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--bogus"}}) {
    CAPTURE(args);
    const auto r = run_ppsim(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: "));
    CHECK_THAT(r.err, Catch::Contains("--help"));
    CHECK(r.out.empty());
  }
  const auto help = run_ppsim({"simulate", "--help"});
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Contains("--costs-file"));
}

TEST_CASE("bad values exit 3 and say where and what", "[cli]") {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"simulate", "-s", "1f1b", "-p", "0", "-m", "8"}, "1f1b: needs devices >= 1 (got devices=0)"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "0"}, "needs microbatches >= 1 (got microbatches=0)"},
      {{"simulate", "-s", "zb-h2", "-p", "4", "-m", "7"}, "zb-h2: needs microbatches >= 2*devices (got microbatches=7, devices=4)"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=-1"}, "--costs F: expected a finite number >= 0, got -1"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=nan"}, "--costs F"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "Q=1"}, "unknown key 'Q'"},
      {{"simulate", "-s", "nope", "-p", "4", "-m", "8"}, "unknown schedule 'nope' (valid: gpipe, 1f1b"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", "-2"}, "--mem-limit '-2'"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", "3GiB"}, "needs costs that know the bytes of M_B: --model and --device"},
      {{"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs-file", "no/such.json"}, "no/such.json: cannot open"},
      {{"simulate", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8"}, "simulate takes one schedule"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_ppsim(c.args);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: simulate: ") && Catch::Contains(c.message));
    CHECK(r.out.empty());
  }
}

TEST_CASE("a malformed cost file exits 3 naming the file and the JSON path", "[cli]") {
  TempDir dir("cli-test");
  const auto broken = dir.file("broken.json", "{\"schema\": \"ppsim.costs/1\", \"stages\": [");
  const auto unknown = dir.file("unknown.json",
                                R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1,"speed":3}]})");
  const auto negative = dir.file("neg.json", R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":-1,"W":1}]})");
  auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file", broken});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("broken.json: not valid JSON"));
  r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file", unknown});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("unknown.json: /stages/0/speed: unknown key"));
  r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs-file", negative});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("neg.json: /stages/0/B: expected a number >= 0"));
}

TEST_CASE("a handcrafted schedule above --mem-limit exits 5 naming the device and its peak", "[cli]") {
  const auto r = run_ppsim({"simulate", "-s", "zb-h2", "-p", "4", "-m", "8", "--mem-limit", "1p"});
  CHECK(r.code == 5);
  CHECK_THAT(r.err, Catch::Contains("zb-h2: device 0 peaks at 7 M_B, above --mem-limit 1p (4 M_B)"));
  CHECK(run_ppsim({"simulate", "-s", "zb-h2", "-p", "4", "-m", "8", "--mem-limit", "7"}).code == 0);
  CHECK(run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--mem-limit", "1.5p"}).code == 0);
}

TEST_CASE("the --costs option on top of a cost file overrides it", "[cli]") {
  TempDir dir("cli-test");
  const auto file = dir.file("c.json", R"({"schema":"ppsim.costs/1","comm":1,"stages":[{"F":2,"B":2,"W":2}]})");
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs-file", file, "--costs", "comm=0", "--json"});
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["cost_ms"] == 66.0);
}

TEST_CASE("the --critical-path option prints the chain that sets the makespan", "[cli]") {
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=1,W=1", "--critical-path"});
  REQUIRE(r.code == 0);
  // 1F1B at p=2, m=2, F=1, BW=2: 0F0 1F0 1BW0 0BW0 ... the makespan is 9 ms.
  CHECK_THAT(r.out, Catch::Contains("critical path: ") && Catch::Contains("9 ms"));
  CHECK_THAT(r.out, Catch::Contains("0F0@d0 1F0@d1"));
}

TEST_CASE("the --iterations option reports the steady-state iteration time per sync mode", "[cli][iterations]") {
  const auto run = [](const char* sched, const char* sync) {
    const auto r = run_ppsim({"simulate", "-s", sched, "-p", "4", "-m", "8", "--costs", "F=1,B=1,W=1",
                        "--iterations", "4", "--optimizer-step", "2", "--sync", sync, "--json"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    return nlohmann::json::parse(r.out);
  };
  const auto ar = run("zb-h2", "allreduce");
  CHECK(ar["iterations"] == 4);
  CHECK(ar["optimizer_step_ms"] == 2.0);
  CHECK(ar["sync"] == "allreduce");
  CHECK(ar["iteration_time_ms"] == ar["makespan_ms"].get<double>() + 2.0);
  // One iteration's shape and metrics, as without --iterations.
  CHECK(ar["microbatches"] == 8);
  CHECK(ar["tasks"] == 96);
  CHECK(ar["cost_ms"] == 24.0);
  const auto pv = run("zb-h2", "post-validation");
  CHECK(pv["sync"] == "post-validation");
  CHECK(pv["iteration_time_ms"] == 26.0);  // cost + step: no barrier behind the deferred W
  CHECK(run("1f1b", "allreduce")["iteration_time_ms"] == 35.0);
  CHECK(run("1f1b", "post-validation")["iteration_time_ms"] == 35.0);

  const auto text = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--iterations", "2",
                         "--optimizer-step", "0.5"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("iterations    2") && Catch::Contains("iteration     ") &&
                           Catch::Contains("optimizer step"));
  // Without the options the output is unchanged: no iteration fields.
  const auto plain = run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--json"});
  REQUIRE(plain.code == 0);
  CHECK_FALSE(nlohmann::json::parse(plain.out).contains("iteration_time_ms"));
}

TEST_CASE("the --iterations option puts every iteration in the trace", "[cli][iterations]") {
  TempDir dir("cli-iter");
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--iterations", "3",
                      "--optimizer-step", "1", "--sync", "post-validation", "--trace", dir / "t.json"});
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(slurp(dir / "t.json"));
  int tasks = 0;
  int last_mb = -1;
  for (const auto& e : doc["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("cat", "") != "summary" && e.value("tid", -1) == 0) {
      ++tasks;
      last_mb = std::max(last_mb, e["args"]["microbatch"].get<int>());
    }
  CHECK(tasks == 3 * 8);  // 1F1B p=2 m=2: 4 F + 4 BW per iteration
  CHECK(last_mb == 5);
}

TEST_CASE("bad --iterations, --optimizer-step and --sync exit 3 naming the value", "[cli][iterations]") {
  const auto bad = [](std::vector<std::string> extra, const char* needle) {
    const auto r = run_ppsim(args_with({"simulate", "-s", "1f1b", "-p", "4", "-m", "8"}, extra));
    CAPTURE(r.err);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains(needle));
  };
  bad({"--iterations", "0"}, "--iterations 0");
  bad({"--iterations", "-3"}, "--iterations -3");
  bad({"--optimizer-step", "-1"}, "--optimizer-step '-1'");
  bad({"--optimizer-step", "nan"}, "--optimizer-step 'nan'");
  bad({"--optimizer-step", "2ms"}, "--optimizer-step '2ms'");
  bad({"--sync", "ring"}, "--sync 'ring'");
  bad({"--iterations", "200000"}, "too large");
}

TEST_CASE("the HTML table gives micro-batches per iteration when several are simulated", "[cli][iterations]") {
  TempDir dir("cli-test");
  const auto r = run_ppsim({"compare", "-s", "zb-h2", "-p", "4", "-m", "8", "--iterations", "3",
                      "--optimizer-step", "2", "--html", dir / "r.html"});
  REQUIRE(r.code == 0);
  CHECK_THAT(slurp(dir / "r.html"),
             Catch::Contains("<td class=\"name\">zb-h2</td><td>4</td><td>8</td>"));
}

TEST_CASE("compare keeps going past an infeasible schedule, marks its row and exits 0",
          "[cli][compare]") {
  const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h2,zb-auto", "-p", "4", "-m", "8", "--costs",
                      "F=2,B=2,W=2", "--mem-limit", "1p"});
  CHECK(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK_THAT(lines[0], Catch::Contains("bound_ms") && Catch::Contains("gap"));
  CHECK_THAT(lines[2], Catch::StartsWith("zb-h2") &&
                           Catch::Contains("infeasible: the least limit that works is 7 M_B"));
  CHECK_THAT(lines[3], Catch::StartsWith("zb-auto") && Catch::EndsWith("54   0.00%"));
  CHECK(r.err == "ppsim: warning: compare: zb-h2: device 0 peaks at 7 M_B, above --mem-limit 1p "
                 "(4 M_B); the least limit that works: 7 M_B\n");
  const auto j = run_ppsim({"compare", "-s", "1f1b,zb-h2,zb-auto", "-p", "4", "-m", "8", "--costs",
                      "F=2,B=2,W=2", "--mem-limit", "1p", "--json"});
  CHECK(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc.size() == 3);
  CHECK(doc[0]["status"] == "ok");
  CHECK_FALSE(doc[0].contains("lower_bound_ms"));  // handcrafted: no bound
  CHECK(doc[1]["schema"] == "ppsim.metrics/1");
  CHECK(doc[1]["status"] == "infeasible");
  CHECK(doc[1]["least_mem_limit"] == 7.0);
  CHECK_THAT(doc[1]["reason"].get<std::string>(), Catch::Contains("peaks at 7 M_B"));
  CHECK(doc[2]["status"] == "ok");
  CHECK(doc[2]["lower_bound_ms"] == 54.0);
  CHECK(doc[2]["optimality_gap"] == 0.0);
  CHECK(doc[2]["lower_bound_mem_limit"] == 4.0);
}

TEST_CASE("compare exits 5 when no schedule fits, after the table", "[cli][compare]") {
  const auto r = run_ppsim({"compare", "-s", "zb-h2,zb-h1", "-p", "4", "-m", "8", "--mem-limit", "3"});
  CHECK(r.code == 5);
  CHECK(lines_of(r.out).size() == 3);
  CHECK_THAT(r.out, Catch::Contains("zb-h1                 4     8   - infeasible: the least "
                                    "limit that works is 4 M_B"));
  CHECK_THAT(r.err, Catch::EndsWith("ppsim: error: compare: no schedule fits the memory limit (the "
                                    "least limit that works: zb-h2 7 M_B, zb-h1 4 M_B)\n"));
  // A bad value is still an error of the whole command.
  CHECK(run_ppsim({"compare", "-s", "1f1b,zb-h2", "-p", "4", "-m", "8", "--costs", "F=-1"}).code == 3);
  CHECK(run_ppsim({"compare", "-s", "1f1b,nope", "-p", "4", "-m", "8"}).code == 3);
}

TEST_CASE("compare keeps going past a shape a generator refuses and marks its row",
          "[cli][compare]") {
  // zb-h2 needs m >= 2p: its row says so, 1F1B's runs (as sweep lists a rejected point).
  const auto r = run_ppsim({"compare", "-s", "1f1b,zb-h2", "-p", "4", "-m", "4"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("zb-h2                 4     4   - rejected: zb-h2: needs"));
  CHECK_THAT(r.err, Catch::StartsWith("ppsim: warning: compare: zb-h2: needs"));
  const auto j = nlohmann::json::parse(run_ppsim({"compare", "-s", "1f1b,dualpipe", "-p", "8", "-m", "8", "--json"}).out);
  CHECK(j[1]["status"] == "rejected");
  // Nothing ran because no shape fits: the shape's error, exit 3.
  const auto none = run_ppsim({"compare", "-s", "zb-h2", "-p", "4", "-m", "4"});
  CHECK(none.code == 3);
  CHECK_THAT(none.err, Catch::Contains("error: compare: zb-h2: needs"));
}

TEST_CASE("simulate reports an automatic schedule's lower bound and gap", "[cli][compare]") {
  const auto r = run_ppsim({"simulate", "-s", "zb-auto", "-p", "4", "-m", "8", "--costs", "F=2,B=2,W=2",
                      "--mem-limit", "2p"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("lower bound   48 ms   (no order of these tasks within 8 M_B is "
                                    "cheaper; gap (cost - bound) / cost 0.00%)"));
  CHECK_THAT(run_ppsim({"simulate", "-s", "zb-h1", "-p", "4", "-m", "8"}).out,
             !Catch::Contains("lower bound"));
}
