// Tests of the validate --json and export --json documents.
#include "ppsim/viz/schedule_check.hpp"

#include "ppsim/schedules/registry.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace ppsim;

TEST_CASE("validate's document: the shape, valid or not, each violation and how many",
          "[viz][validate]") {
  Schedule s = make_schedule("zb-h1", {.devices = 2, .microbatches = 2});
  const auto ok = nlohmann::json::parse(validate_json(s, "a.json", validate(s), ""));
  CHECK(ok["schema"] == "ppsim.validate/1");
  CHECK(ok["file"] == "a.json");
  CHECK(ok["devices"] == 2);
  CHECK(ok["stages"] == 2);
  CHECK(ok["microbatches"] == 2);
  CHECK(ok["tasks"] == 12);
  CHECK(ok["valid"] == true);
  CHECK(ok["violations"].empty());
  CHECK(ok["violations_total"] == 0);
  CHECK_FALSE(ok.contains("error"));

  s.order[1].pop_back();  // device 1 loses its last W: that task is missing
  const Violations found = validate(s);
  REQUIRE(found.total >= 1);
  const auto bad = nlohmann::json::parse(validate_json(s, "a.json", found, "a.json: missing"));
  CHECK(bad["valid"] == false);
  CHECK(bad["tasks"] == 11);
  CHECK(bad["violations_total"] == found.total);
  REQUIRE(bad["violations"].size() == found.first.size());
  CHECK(bad["violations"][0]["what"] == found.first[0].what);
  CHECK(bad["violations"][0]["device"] == found.first[0].at.device);
  CHECK(bad["violations"][0].contains("index") == (found.first[0].at.index >= 0));
  CHECK(bad["error"] == "a.json: missing");
}

TEST_CASE("export's document names the file, the schedule, the format and its shape",
          "[viz][export]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const auto doc = nlohmann::json::parse(export_json(s, "out.csv", "pytorch-csv"));
  CHECK(doc == nlohmann::json::parse(R"({"schema": "ppsim.export/1", "file": "out.csv",
    "schedule": "1f1b", "format": "pytorch-csv", "devices": 4, "stages": 4, "microbatches": 8,
    "tasks": 64})"));
}
