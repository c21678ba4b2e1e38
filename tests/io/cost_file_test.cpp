// Tests of --costs parsing, cost files and the expansion of costs over stages.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"

#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <functional>

using namespace ppsim;
using namespace ppsim::test;

namespace {
} // namespace

TEST_CASE("the --costs option sets durations in exact nanoseconds and keeps defaults for the rest", "[sim]") {
  const CostSpec spec = parse_costs("F=1.5,B=2,W=0.25,comm=0.001,MW=0.75");
  REQUIRE(spec.stages.size() == 1);
  CHECK(spec.stages[0].F == 1'500'000);
  CHECK(spec.stages[0].B == 2'000'000);
  CHECK(spec.stages[0].W == 250'000);
  CHECK(spec.stages[0].BW == -1);
  CHECK(spec.stages[0].MB == 1.0);
  CHECK(spec.stages[0].MW == 0.75);
  CHECK(spec.comm == 1'000);
}

TEST_CASE("bad --costs values are rejected with the key named", "[sim]") {
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("F=-1"); }), Catch::Contains("--costs F"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("F=nan"); }), Catch::Contains("--costs F"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("B=inf"); }), Catch::Contains("--costs B"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("F=fast"); }), Catch::Contains("expected a number"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("X=1"); }), Catch::Contains("unknown key 'X'"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("F"); }), Catch::Contains("KEY=VALUE"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs(""); }), Catch::Contains("no KEY=VALUE"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("F=1,,B=2"); }), Catch::Contains("empty item"));
}

TEST_CASE("a cost file's link sizes the messages, and a bad one is named", "[sim]") {
  const CostSpec spec = parse_cost_json(
      R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1,"act_bytes":1e6}],"link":{"latency":0.02,"bandwidth":5}})",
      "c.json");
  CHECK(spec.link == LinkModel{.sized = true, .latency = 20'000, .bandwidth = 5});
  // written back as read
  CHECK(parse_cost_json(cost_spec_json(spec, ""), "back.json").link == spec.link);
  // either key alone sizes the link
  CHECK(parse_cost_json(R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1}],"link":{"bandwidth":2}})", "c.json")
            .link == LinkModel{.sized = true, .latency = 0, .bandwidth = 2});
  // none: unsized, and the document has no link
  const CostSpec plain = parse_cost_json(R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1}]})", "c.json");
  CHECK_FALSE(plain.link.sized);
  CHECK(cost_spec_json(plain, "").find("\"link\"") == std::string::npos);
  const auto parse = [](const char* link) {
    (void)parse_cost_json(fmt::format(R"({{"schema":"ppsim.costs/1","stages":[{{"F":1,"B":1,"W":1}}],"link":{}}})", link),
                          "c.json");
  };
  CHECK_THAT(error_of<ConfigError>([&] { parse("{}"); }), Catch::Contains("c.json: /link: a link needs latency"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"bandwidth":0})"); }), Catch::Contains("/link/bandwidth: expected a bandwidth > 0"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"latency":-1})"); }), Catch::Contains("/link/latency: expected a number >= 0"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"contention":"duplex"})"); }), Catch::Contains("/link/contention: unknown key (valid: latency, bandwidth)"));
  CHECK_THAT(error_of<ConfigError>([&] { parse("3"); }), Catch::Contains("/link: expected an object"));
}

TEST_CASE("a cost file is validated key by key with its JSON path", "[sim]") {
  const auto parse = [](const char* text) { (void)parse_cost_json(text, "c.json"); };
  CHECK_THAT(error_of<ConfigError>([&] { parse("{"); }), Catch::Contains("c.json: not valid JSON"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1","stages":[{"F":"fast","B":1,"W":1}]})"); }),
             Catch::Contains("c.json: /stages/0/F: expected a number, got \"fast\""));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1,"Q":2}]})"); }),
             Catch::Contains("/stages/0/Q: unknown key"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1}],"x":1})"); }),
             Catch::Contains("/x: unknown key"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/2","stages":[{"F":1,"B":1,"W":1}]})"); }),
             Catch::Contains("/schema"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1"})"); }), Catch::Contains("/stages: missing"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1}]})"); }),
             Catch::Contains("/stages/0: each stage needs F, B and W"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1","stages":[{"F":-1,"B":1,"W":1}]})"); }),
             Catch::Contains("/stages/0/F: expected a number >= 0"));
  CHECK_THAT(error_of<ConfigError>([&] { parse(R"({"schema":"ppsim.costs/1","stages":[]})"); }),
             Catch::Contains("non-empty array"));
  CHECK_THAT(error_of<ConfigError>([] { (void)load_cost_file("no/such/file.json"); }),
             Catch::Contains("no/such/file.json: cannot open"));
}

TEST_CASE("device-stage costs are divided among a device's chunks", "[sim]") {
  const CostSpec spec = parse_costs("F=2,B=4,W=6,MB=1,MW=0.5");
  Schedule s = make_pipeline("x", 2, 1, loop_placement(2, 2));
  const CostModel m = cost_model_for(spec, s);
  REQUIRE(m.stage.size() == 4);
  for (const auto& st : m.stage) {
    CHECK(st.F == 1'000'000);
    CHECK(st.B == 2'000'000);
    CHECK(st.W == 3'000'000);
    CHECK(st.BW == 5'000'000);
    CHECK(st.MB == 0.5);
    CHECK(st.MW == 0.25);
  }
  CHECK(m.duration(Task::overlapped(0, 0, Kind::B, 1, 0)) == 3'000'000);
  CHECK(m.duration(Task::overlapped(0, 0, Kind::BW, 1, 0)) == 6'000'000);
}

TEST_CASE("per-device-stage profiles map virtual stages to the piece of the model they hold", "[sim]") {
  CostSpec spec = parse_cost_json(R"({"schema":"ppsim.costs/1","comm":0.5,"stages":[
      {"F":2,"B":2,"W":2},{"F":4,"B":4,"W":4}]})", "c.json");
  CHECK(spec.comm == 500'000);
  // V shape on 2 devices: stages 0,1 are the model's first half (piece 0), 2,3 the second.
  Schedule v = make_pipeline("v", 2, 1, vshape_placement(2));
  const CostModel m = cost_model_for(spec, v);
  CHECK(m.stage[0].F == 1'000'000);
  CHECK(m.stage[1].F == 1'000'000);
  CHECK(m.stage[2].F == 2'000'000);
  CHECK(m.stage[3].F == 2'000'000);
  Schedule three = make_pipeline("t", 3, 1, loop_placement(3, 1));
  CHECK_THAT(error_of<ConfigError>([&] { (void)cost_model_for(spec, three); }),
             Catch::Contains("2 stage entries, but the schedule has 3 devices"));
}

TEST_CASE("message bytes come from --costs or per stage from a cost file, whole per chunk",
          "[sim][comm]") {
  const CostSpec spec = parse_costs("act_bytes=4e6,grad_bytes=1e6");
  CHECK(spec.stages.front().act_bytes == 4e6);
  CHECK(spec.stages.front().grad_bytes == 1e6);
  const CostSpec file = parse_cost_json(
      R"({"schema": "ppsim.costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "act_bytes": 8,
          "grad_bytes": 16}, {"F": 1, "B": 1, "W": 1}]})",
      "mine.json");
  CHECK(file.stages[0].act_bytes == 8);
  CHECK(file.stages[0].grad_bytes == 16);
  CHECK(file.stages[1].act_bytes == 0);
  CHECK_THROWS_WITH(parse_cost_json(R"({"schema": "ppsim.costs/1", "stages": [{"F": 1, "B": 1,
                        "W": 1, "act_bytes": -1}]})",
                                    "bad.json"),
                    Catch::Contains("bad.json: /stages/0/act_bytes"));
  // A boundary tensor: chunks of a device-stage send the same bytes as the whole.
  const Schedule s = make_schedule("interleaved-1f1b", {.devices = 2, .microbatches = 4});
  const CostModel m = cost_model_for(spec, s);
  for (const StageCosts& c : m.stage) CHECK(c.act_bytes == 4e6);
}
