// Tests of the ppsim.metrics/1 document: the user contract, pinned by an approved golden file.
#include "ppsim/viz/metrics_json.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/run/request.hpp"
#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace ppsim;
using namespace ppsim::test;

TEST_CASE("the metrics JSON of zb-h1 at p = 4, m = 8 matches the approved golden file",
          "[viz][golden]") {
  check_golden("data/golden/metrics_zb_h1_p4_m8.json",
               metrics_json(make_run("zb-h1", 4, 8, "F=1,B=1.5,W=0.5,comm=0.1")) + "\n");
}

TEST_CASE("the metrics JSON has the keys of DESIGN.md", "[viz]") {
  const auto j = nlohmann::json::parse(metrics_json(make_run("1f1b", 4, 8, "F=2,B=2,W=2")));
  for (const char* key : {"schema", "schedule", "devices", "stages", "chunks", "microbatches",
                          "makespan_ms", "cost_ms", "ideal_ms", "bubble_rate", "bubble_over_ideal",
                          "idle_fraction", "peak_memory", "per_device"})
    CHECK(j.contains(key));
  CHECK(j["schema"] == "ppsim.metrics/1");
  CHECK(j["cost_ms"] == 66);
  for (const auto& d : j["per_device"])
    for (const char* key : {"device", "busy_ms", "span_ms", "idle_ms", "peak_memory"})
      CHECK(d.contains(key));
}

TEST_CASE("an automatic schedule's metrics carry its lower bound and gap", "[viz]") {
  RunRequest rq;
  rq.schedule = "zb-auto";
  rq.devices = 4;
  rq.microbatches = 8;
  rq.costs = parse_costs("F=2,B=2,W=2,comm=1");
  rq.mem_limit = parse_mem_limit("2p");
  const Run r = run_request(rq);
  const auto j = nlohmann::json::parse(metrics_json(r));
  CHECK(j["lower_bound_ms"] == 52.0);  // at 2p with comm 1 the bound is 52 ms
  CHECK(j["optimality_gap"].get<double>() ==
        Approx((j["cost_ms"].get<double>() - 52.0) / j["cost_ms"].get<double>()));
  CHECK(j["lower_bound_mem_limit"] == 8.0);
  // The keys follow the rates, before the memory.
  const std::string text = metrics_json(r);
  CHECK(text.find("\"idle_fraction\"") < text.find("\"lower_bound_ms\""));
  CHECK(text.find("\"optimality_gap\"") < text.find("\"peak_memory\""));
  // Handcrafted: none of them.
  const auto h = nlohmann::json::parse(metrics_json(make_run("zb-h1", 4, 8, "F=2,B=2,W=2")));
  CHECK_FALSE(h.contains("lower_bound_ms"));
  CHECK_FALSE(h.contains("optimality_gap"));
}

TEST_CASE("the compare JSON gives every row a status, and an infeasible one its least limit",
          "[viz]") {
  Comparison c;
  c.runs.push_back(make_run("1f1b", 2, 4, "F=1,B=1,W=1"));
  c.rows.push_back({"1f1b", 2, 4, 0, 0, "", -1});
  c.rows.push_back({"zb-h2", 2, 4, 0, -1, "zb-h2: device 0 peaks at 3 M_B", 3.0});
  c.rows.push_back({"mine.csv", 0, 0, 0, -1, "mine: device 1 peaks at 9 M_B", -1});
  const auto doc = nlohmann::json::parse(compare_json(c));
  REQUIRE(doc.size() == 3);
  CHECK(doc[0]["status"] == "ok");
  CHECK(doc[0]["cost_ms"] == nlohmann::json::parse(metrics_json(c.runs[0]))["cost_ms"]);
  CHECK(doc[1] == nlohmann::json::parse(R"({"schema": "ppsim.metrics/1", "schedule": "zb-h2",
    "status": "infeasible", "reason": "zb-h2: device 0 peaks at 3 M_B", "least_mem_limit": 3.0})"));
  CHECK(doc[2]["least_mem_limit"].is_null());
  std::ostringstream table;
  write_compare_table(table, c);
  const auto lines = lines_of(table.str());
  REQUIRE(lines.size() == 4);
  CHECK(lines[2] == "zb-h2                 2     4   - infeasible: the least limit that works is 3 M_B");
  CHECK(lines[3] == "mine.csv              -     -   - infeasible: no limit found that works");
}

TEST_CASE("the critical path is one document with the metrics, and a table of at most 64 tasks",
          "[viz][critical-path]") {
  const Run r = make_run("1f1b", 2, 2, "F=1,B=1,W=1");
  const CriticalPath cp = critical_path(r.schedule, r.costs);
  const auto doc = nlohmann::json::parse(metrics_json(r, cp));
  CHECK(doc["schema"] == "ppsim.metrics/1");
  CHECK(doc["makespan_ms"] == doc["critical_path"]["length_ms"]);
  REQUIRE(doc["critical_path"]["tasks"].size() == cp.tasks.size());
  CHECK(doc["critical_path"]["tasks"][0] == "0F0@d0");  // the first forward starts the chain
  std::ostringstream text;
  write_critical_path(text, r, cp);
  std::string names;
  for (const auto& t : doc["critical_path"]["tasks"]) names += " " + t.get<std::string>();
  CHECK(text.str() == fmt::format("\ncritical path: {} tasks, {} ms\n {}\n", cp.tasks.size(),
                                  human_ms(cp.length), names));

  const Run long_run = make_run("1f1b", 4, 64, "F=1,B=1,W=1");
  const CriticalPath long_cp = critical_path(long_run.schedule, long_run.costs);
  REQUIRE(long_cp.tasks.size() > 64);
  std::ostringstream elided;
  write_critical_path(elided, long_run, long_cp);
  CHECK_THAT(elided.str(), Catch::Contains(fmt::format(" ... ({} more) ", long_cp.tasks.size() - 64)));
  CHECK(count(elided.str(), "@d") == 64);
}
