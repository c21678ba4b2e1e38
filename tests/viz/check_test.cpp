// Tests of check --json's document.
#include "ppsim/viz/check.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace ppsim;

namespace {

MetricCheck metric_check(const char* name, std::optional<double> expected, double got,
                         Change change) {
  MetricCheck m;
  m.metric = name;
  m.expected = expected;
  m.got = got;
  m.change = change;
  return m;
}

} // namespace

TEST_CASE("check's document: each metric's change, null for a new one, counted over metrics",
          "[viz][check]") {
  CheckResult r;
  r.tolerance = 1e-9;
  r.metrics_compared = 4;
  CaseCheck a;
  a.name = "toy";
  a.metrics = {metric_check("cost", 54.0, 54.0, Change::same),
               metric_check("bubble_rate", 0.1, 0.2, Change::worse),
               metric_check("idle", 3.0, 4.0, Change::worse)};
  CaseCheck b;
  b.name = "other";
  b.metrics = {metric_check("cost", 30.0, 26.0, Change::better),
               metric_check("peak", std::nullopt, 7.0, Change::same)};
  r.cases = {a, b};

  const ChangeCount n = count_changes(r);
  CHECK(n.worse == 2);
  CHECK(n.better == 1);

  const auto doc = nlohmann::json::parse(check_json(r, "base.json", false));
  CHECK(doc["schema"] == "ppsim.check/1");
  CHECK(doc["baseline"] == "base.json");
  CHECK(doc["tolerance"] == 1e-9);
  REQUIRE(doc["cases"].size() == 2);
  CHECK(doc["cases"][0]["name"] == "toy");
  const auto& toy = doc["cases"][0]["metrics"];
  REQUIRE(toy.size() == 3);
  CHECK(toy[0]["metric"] == "cost");
  CHECK(toy[0]["expected"] == 54.0);
  CHECK(toy[0]["change"] == "same");
  CHECK(toy[1]["got"] == 0.2);
  CHECK(toy[1]["change"] == "worse");
  const auto& other = doc["cases"][1]["metrics"];
  CHECK(other[0]["change"] == "better");
  CHECK(other[1]["expected"].is_null());
  CHECK(other[1]["change"] == "new");
  CHECK(doc["regressions"] == 2);
  CHECK(doc["improvements"] == 1);
  CHECK(doc["updated"] == false);
  CHECK(nlohmann::json::parse(check_json(r, "base.json", true))["updated"] == true);
}

TEST_CASE("check's document of a new metric that changed counts it as neither", "[viz][check]") {
  // a metric without an expected value cannot regress, whatever its change says
  CheckResult r;
  CaseCheck c;
  c.name = "new";
  c.metrics = {metric_check("cost", std::nullopt, 1.0, Change::worse)};
  r.cases = {c};
  CHECK(count_changes(r).worse == 0);
  const auto doc = nlohmann::json::parse(check_json(r, "b.json", false));
  CHECK(doc["cases"][0]["metrics"][0]["change"] == "new");
  CHECK(doc["regressions"] == 0);
}
