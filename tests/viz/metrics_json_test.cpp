// Tests of the ppsim.metrics/1 document: the user contract, pinned by an approved golden file.
#include "viz/metrics_json.hpp"

#include "tests/viz/viz_checks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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
