// Tests of the bounds on inputs: file bytes, JSON depth and numbers, quoted excerpts, repeated
// keys, and the size checks of the schedule readers.
#include "ppsim/io/baseline_file.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/cli/cli_harness.hpp"

#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <string>

using namespace ppsim;
using namespace ppsim::test;
using Catch::Contains;

TEST_CASE("an excerpt quotes short texts whole and cuts long ones with their size",
          "[io][robust]") {
  CHECK(excerpt("2F0") == "2F0");
  CHECK(excerpt(std::string(60, 'a')) == std::string(60, 'a'));
  CHECK(excerpt(std::string(61, 'a')) == std::string(60, 'a') + "... (61 bytes)");
  CHECK(excerpt("a\nb\x01") == "a\\x0ab\\x01");
  // A cut never splits a UTF-8 character: "é" is two bytes.
  std::string accents;
  for (int i = 0; i < 40; ++i) accents += "\xC3\xA9";
  CHECK(excerpt(accents, 5) == "\xC3\xA9\xC3\xA9... (80 bytes)");
}

TEST_CASE("a key given twice in a KEY=VALUE list is refused", "[io][robust]") {
  CHECK_THAT(error_of([] { (void)parse_costs("F=1,F=7"); }),
             Contains("--costs 'F=1,F=7': 'F' is given twice"));
  CHECK_THAT(error_of([] { (void)parse_costs("F=1, B=2 ,F =3"); }), Contains("'F' is given twice"));
  CHECK_NOTHROW(parse_costs("F=1,B=1,W=1,"));
}

TEST_CASE("memory values beyond the limit are refused in --costs and cost files",
          "[io][robust]") {
  CHECK_THAT(error_of([] { (void)parse_costs("MB=1e308"); }), Contains("--costs MB: 1e308 is too large"));
  CHECK_THAT(error_of([] { (void)parse_costs("MW=2e12"); }), Contains("--costs MW"));
  CHECK_NOTHROW(parse_costs("MB=1e12"));
  // Message sizes are bytes, bounded as bytes (1e15), not as M_B: 2e12 bytes was refused as
  // "too large (at most 1e+12 M_B)".
  CHECK(parse_costs("act_bytes=2e12,grad_bytes=2e12").stages[0].act_bytes == 2e12);
  CHECK_THAT(error_of([] { (void)parse_costs("act_bytes=2e15"); }),
             Contains("--costs act_bytes: 2e15 bytes is too large"));
  CHECK_THAT(error_of([] {
               (void)parse_cost_json(
                   R"({"schema":"ppsim.costs/1","stages":[{"F":1,"B":1,"W":1,"MB":1e300}]})",
                   "c.json");
             }),
             Contains("c.json: /stages/0/MB: 1e+300 is too large (at most 1e+12)"));
}

TEST_CASE("an input file larger than the limit is refused before it is read", "[io][robust]") {
  test::TempDir dir("bounds");
  const std::string file = dir.file("big.json", std::string(1000, ' '));
  CHECK(read_text_file(file, "cost file", 1000).size() == 1000);
  CHECK_THAT(error_of([&] { (void)read_text_file(file, "cost file", 999); }),
             Contains("big.json: the cost file is larger than 999 bytes"));
  CHECK_THAT(error_of([&] { (void)read_text_file("/dev/zero", "cost file", 1u << 20); }),
             Contains("/dev/zero: the cost file is larger than 1 MiB"));
  CHECK_THAT(error_of([&] { (void)read_text_file(dir.path().string(), "cost file"); }),
             Contains("is a directory"));
  CHECK_THAT(error_of([&] { (void)read_text_file(dir / "none.json", "cost file"); }),
             Contains("none.json: cannot open the cost file (No such file or directory)"));
}

TEST_CASE("JSON deeper than the limit or with an overflowing number is found with its place",
          "[io][robust]") {
  using ppsim::detail::json_bounds_problem;
  const std::string at_limit = std::string(64, '[') + std::string(64, ']');
  CHECK_FALSE(json_bounds_problem(at_limit));
  CHECK(json_bounds_problem("[" + at_limit + "]") ==
        std::string("line 1, column 65: nested deeper than 64 levels"));
  // Brackets and digits inside strings do not count; escaped quotes do not end them.
  CHECK_FALSE(json_bounds_problem(R"({"k": ")" + std::string(100, '[') + R"(\"1e999"})"));
  CHECK(json_bounds_problem("{\n  \"F\": -1e400}") ==
        std::string("line 2, column 8: the number -1e400 is out of range (at most about 1.8e308)"));
  CHECK(json_bounds_problem("[" + std::string(400, '9') + "]")->find("out of range") !=
        std::string::npos);
  CHECK_FALSE(json_bounds_problem("[1e-400, 1.7e308, 123456789012345678901234567890]"));
}

TEST_CASE("every JSON loader turns deep nesting and huge numbers into bad input",
          "[io][robust]") {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  CHECK_THAT(error_of([&] { (void)parse_cost_json(deep, "c.json"); }),
             Contains("c.json: line 1, column 65: nested deeper than 64 levels"));
  CHECK_THAT(error_of([&] { (void)parse_schedule_json(R"({"schema":)" + deep + "}", "s.json"); }),
             Contains("s.json: line 1, column 74: nested deeper"));
  CHECK_THAT(error_of([&] { (void)parse_baseline_json(R"({"schema":)" + deep + "}", "b.json", true); }),
             Contains("b.json: line 1, column 74: nested deeper"));
  CHECK_THAT(error_of([&] {
               (void)parse_schedule_json(R"({"schema":"ppsim.schedule/1","devices":1e999})", "s.json");
             }),
             Contains("s.json: line 1, column 40: the number 1e999 is out of range"));
}

TEST_CASE("messages about JSON quote bounded excerpts of keys, values and bad text",
          "[io][robust]") {
  const std::string key(1'000'000, 'k');
  const auto unknown = error_of([&] {
    (void)parse_cost_json(R"({"schema":"ppsim.costs/1",")" + key + R"(":1})", "c.json");
  });
  CHECK_THAT(unknown, Contains("c.json: /kkkk") && Contains("unknown key"));
  CHECK(unknown.size() < 1500);
  const auto value = error_of([&] {
    (void)parse_cost_json(R"({"schema":")" + std::string(1'000'000, 'v') + R"("})", "c.json");
  });
  CHECK_THAT(value, Contains(R"(/schema: expected "ppsim.costs/1", got "vvvv)"));
  CHECK(value.size() < 200);
  // An unterminated string: the parser's message ends with everything it read.
  const auto open = error_of([&] { (void)parse_cost_json("\"" + std::string(1'000'000, 's'), "c.json"); });
  CHECK_THAT(open, Contains("c.json: not valid JSON"));
  CHECK(open.size() < 400);
  const auto task = error_of([&] {
    (void)parse_schedule_json(R"({"schema":"ppsim.schedule/1","devices":1,"microbatches":1,"placement":[0],"routes":[[0]],"order":[[")" +
                                  std::string(1'000'000, 't') + R"("]]})",
                              "s.json");
  });
  CHECK_THAT(task, Contains("s.json: /order/0/0: task 'tttt"));
  CHECK(task.size() < 1500);
}

TEST_CASE("schedule files over the route limits are refused while they are read",
          "[io][robust][schedule-io]") {
  const auto doc = [](const std::string& placement, const std::string& routes) {
    return R"({"schema":"ppsim.schedule/1","devices":1,"microbatches":1,"placement":[)" +
           placement + R"(],"routes":[)" + routes + R"(],"microbatch_routes":[0],"order":[[]]})";
  };
  std::string routes;
  for (int i = 0; i < 4097; ++i) routes += i == 0 ? "[0]" : ",[0]";
  CHECK_THAT(error_of([&] { (void)parse_schedule_json(doc("0", routes), "s.json"); }),
             Contains("s.json: /routes: 4097 routes: at most 4096"));
  // 2048 routes x 4096 stages: 8 M positions.
  std::string placement;
  for (int i = 0; i < 4096; ++i) placement += i == 0 ? "0" : ",0";
  routes.clear();
  for (int i = 0; i < 2048; ++i) routes += i == 0 ? "[0]" : ",[0]";
  CHECK_THAT(error_of([&] { (void)parse_schedule_json(doc(placement, routes), "s.json"); }),
             Contains("s.json: /routes: 2048 routes x 4096 stages is too large"));
  // More task lists, stages or micro-batch routes than the limits: refused before they are read.
  std::string rows;
  for (int i = 0; i < 4097; ++i) rows += i == 0 ? "[]" : ",[]";
  CHECK_THAT(error_of([&] {
               (void)parse_schedule_json(
                   R"({"schema":"ppsim.schedule/1","devices":1,"microbatches":1,"order":[)" + rows + "]}",
                   "s.json");
             }),
             Contains("s.json: /order: 4097 task lists: at most 4096 devices"));
  std::string zeros = "0";
  for (int i = 1; i < 65537; ++i) zeros += ",0";
  CHECK_THAT(error_of([&] {
               (void)parse_schedule_json(R"({"schema":"ppsim.schedule/1","placement":[)" + zeros + "]}",
                                         "s.json");
             }),
             Contains("s.json: /placement: 65537 stages: at most 65536"));
  // More rows than devices: refused before the rows are split.
  CHECK_THAT(error_of([&] { (void)parse_pytorch_csv(std::string(5000, '\n'), "r.csv"); }),
             Contains("r.csv: more than 4096 rows"));
}
