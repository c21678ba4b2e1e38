// Tests of `ppsim serve`: the query's translation into compare's arguments, the answers of the
// API (the same JSON and error texts as the command line), the limits, the files it refuses,
// and one real server on a loopback port.
#include "cli/serve.hpp"

#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <thread>

using namespace ppsim;
using ppsim::cli::HttpAnswer;
using ppsim::cli::PlaygroundServer;
using ppsim::cli::QueryParams;
using ppsim::cli::ServeConfig;
using ppsim::cli::cost_profiles;
using ppsim::cli::parse_query;
using ppsim::cli::query_arguments;
using ppsim::cli::serve_answer;
using namespace ppsim::test;

namespace {

ServeConfig config_with_profiles() {
  ServeConfig c;
  c.profiles_dir = std::string(PPSIM_SOURCE_DIR) + "/data/costs";
  return c;
}

HttpAnswer get(const std::string& target, const ServeConfig& config = {}) {
  const auto q = target.find('?');
  return serve_answer(target.substr(0, q), parse_query(target), config);
}

} // namespace

TEST_CASE("a query keeps its order, '=' inside values and percent escapes", "[cli][serve]") {
  const QueryParams q = parse_query("/api/compare?s=1f1b,zb-h1&p=4&costs=F=2,B=2,W=2&mem-limit=1.5p"
                                    "&x=a%2Cb+c&&flag");
  REQUIRE(q.size() == 6);
  CHECK(q[0] == std::pair<std::string, std::string>{"s", "1f1b,zb-h1"});
  CHECK(q[2] == std::pair<std::string, std::string>{"costs", "F=2,B=2,W=2"});
  CHECK(q[3].second == "1.5p");
  CHECK(q[4].second == "a,b c");
  CHECK(q[5] == std::pair<std::string, std::string>{"flag", ""});
  CHECK(parse_query("/").empty());
  CHECK(query_arguments({{"s", "1f1b"}, {"microbatches", "8"}, {"costs", "-x"}}) ==
        std::vector<std::string>{"-s", "1f1b", "--microbatches=8", "--costs=-x"});
}

TEST_CASE("/api/compare returns exactly compare --json, for short and long option names",
          "[cli][serve]") {
  const auto expected = test::run_ppsim({"compare", "-s", "1f1b,zb-h1", "-p", "4", "-m", "8", "--costs",
                             "F=2,B=2,W=2", "--json"});
  REQUIRE(expected.code == 0);
  const HttpAnswer a = get("/api/compare?s=1f1b,zb-h1&p=4&m=8&costs=F=2,B=2,W=2");
  CHECK(a.status == 200);
  CHECK(a.content_type == "application/json");
  CHECK(a.body == expected.out);
  const HttpAnswer b =
      get("/api/compare?schedule=1f1b,zb-h1&stages=4&microbatches=8&costs=F%3D2%2CB%3D2%2CW%3D2");
  CHECK(b.body == expected.out);
  // The known answers (DESIGN.md): cost 66 and 54.
  const auto doc = nlohmann::json::parse(a.body);
  CHECK(doc[0]["cost_ms"] == 66.0);
  CHECK(doc[1]["cost_ms"] == 54.0);
  // A memory limit that nothing fits: the array still comes, every row saying why (exit 5).
  const HttpAnswer none = get("/api/compare?s=zb-h2&p=4&m=8&mem-limit=1");
  CHECK(none.status == 200);
  CHECK(nlohmann::json::parse(none.body)[0]["status"] == "infeasible");
}

TEST_CASE("/api/timeline returns the report's data with the same metrics", "[cli][serve]") {
  const HttpAnswer t = get("/api/timeline?s=1f1b,zb-v,zb-h2&p=4&m=8&mem-limit=1p");
  REQUIRE(t.status == 200);
  const auto doc = nlohmann::json::parse(t.body);
  CHECK(doc["schema"] == "ppsim.report/1");
  const auto metrics = nlohmann::json::parse(get("/api/compare?s=1f1b,zb-v,zb-h2&p=4&m=8&mem-limit=1p").body);
  CHECK(doc["metrics"] == metrics);
  CHECK(doc["runs"].size() == 2);  // zb-h2 does not fit 1p
  CHECK(doc["runs"][1]["tasks"] == 192);
}

TEST_CASE("bad parameters get 400 with the command line's error text", "[cli][serve]") {
  const auto same_as_cli = [](const std::string& target, std::vector<std::string> args) {
    CAPTURE(target);
    const HttpAnswer a = get(target);
    CHECK(a.status == 400);
    CHECK(a.content_type.rfind("text/plain", 0) == 0);
    args.insert(args.begin(), "compare");
    args.emplace_back("--json");
    const auto c = test::run_ppsim(args);
    CHECK(c.code != 0);
    CHECK(a.body == c.err);
  };
  same_as_cli("/api/compare?s=1f1b&p=x&m=8", {"-s", "1f1b", "-p", "x", "-m", "8"});
  same_as_cli("/api/compare?s=nope&p=4&m=8", {"-s", "nope", "-p", "4", "-m", "8"});
  same_as_cli("/api/compare?s=zb-h2&p=4&m=3", {"-s", "zb-h2", "-p", "4", "-m", "3"});
  same_as_cli("/api/compare?s=1f1b&p=4&m=8&costs=F=-1", {"-s", "1f1b", "-p", "4", "-m", "8",
                                                          "--costs", "F=-1"});
  same_as_cli("/api/timeline?s=1f1b&p=4&m=8&mem-limit=lots", {"-s", "1f1b", "-p", "4", "-m", "8",
                                                               "--mem-limit", "lots"});
  const auto refused = [](const std::string& target, const std::string& why) {
    CAPTURE(target);
    const HttpAnswer a = get(target, config_with_profiles());
    CHECK(a.status == 400);
    CHECK_THAT(a.body, Catch::StartsWith("ppsim: error: compare: "));
    CHECK_THAT(a.body, Catch::Contains(why));
  };
  // Output files, calibration and the server's own files are not served.
  refused("/api/compare?s=1f1b&p=4&m=8&trace=out.json", "not expected");
  refused("/api/compare?s=1f1b&p=4&m=8&html=r.html", "not expected");
  refused("/api/compare?s=1f1b&p=4&m=8&help=", "not expected");
  refused("/api/compare?s=data/schedules/x.csv", "schedule files are not served");
  refused("/api/compare?s=1f1b&p=4&m=8&calibrate=dim=8", "--calibrate is not served");
  refused("/api/compare?s=1f1b&p=4&m=8&costs-file=/etc/passwd",
          "not one of this server's cost profiles (valid: example-mlp)");
  refused("/api/compare?s=1f1b&p=4&m=8&model=../m.json", "model files are not served");
  refused("/api/compare?s=1f1b&p=4&m=8&model=llama3-8b&device=cpu", "only the presets");
  // The limits, checked before anything is generated.
  refused("/api/compare?s=1f1b&p=65&m=8", "--stages 65 is over this server's limit of 64");
  refused("/api/compare?s=1f1b&p=4&m=1025", "--microbatches 1025 is over");
  refused("/api/compare?s=1f1b&p=4&m=8&iterations=9", "--iterations 9 is over");
  refused("/api/compare?s=1f1b,zb-h1,zb-h2,zb-v,zb-auto,v-half,v-min,dualpipe,dualpipe-v,gpipe&p=64&m=1024",
          "the estimated task count");
  // Each --jitter sample is one more simulation: 1F1B p=64 m=1024 is estimated at 393,216 tasks,
  // fine once, over the limit of 1,000,000 with 100 samples.
  refused("/api/compare?s=1f1b&p=64&m=1024&jitter=0.1", "the estimated task count");
  refused("/api/compare?s=1f1b&p=4&m=8&jitter=0.1&samples=x", "--samples: expected an integer");
  // The automatic knobs simulate the request many times, and count so: 1F1B p=32 m=512 is
  // estimated at 98,304 tasks, fine once, over 1,000,000 with --offload auto (22 runs) or
  // --recompute auto on llama3-8b (132).
  refused("/api/compare?s=1f1b&p=32&m=512&model=llama3-8b&offload=auto", "the estimated task count");
  refused("/api/compare?s=1f1b&p=32&m=512&model=llama3-8b&recompute=auto", "the estimated task count");
  CHECK(get("/api/compare?s=1f1b&p=2&m=8&model=llama3-8b&recompute=auto", config_with_profiles()).status ==
        200);
  CHECK(get("/api/compare?s=1f1b&p=4&m=8&jitter=0.1&samples=20", config_with_profiles()).status ==
        200);
  CHECK(get("/nothing").status == 404);
}

TEST_CASE("a cost profile of the server's folder may be named", "[cli][serve]") {
  const HttpAnswer a = get("/api/compare?s=1f1b&p=4&m=8&costs-file=example-mlp", config_with_profiles());
  REQUIRE(a.status == 200);
  const auto expected = test::run_ppsim({"compare", "-s", "1f1b", "-p", "4", "-m", "8", "--costs-file",
                             std::string(PPSIM_SOURCE_DIR) + "/data/costs/example-mlp.json", "--json"});
  CHECK(a.body == expected.out);
  CHECK(cost_profiles(config_with_profiles().profiles_dir) == std::vector<std::string>{"example-mlp"});
}

TEST_CASE("the page holds the controls' configuration and both scripts", "[cli][serve]") {
  const HttpAnswer a = get("/", config_with_profiles());
  CHECK(a.status == 200);
  CHECK(a.content_type.rfind("text/html", 0) == 0);
  CHECK_THAT(a.body, Catch::Contains("<script type=\"application/json\" id=\"ppsim-config\">"));
  CHECK_THAT(a.body, Catch::Contains("\"profiles\":[\"example-mlp\"]"));
  CHECK_THAT(a.body, Catch::Contains("{\"name\":\"zb-h1\","));
  CHECK_THAT(a.body, Catch::Contains("window.ppsim = {"));
  CHECK_THAT(a.body, Catch::Contains("/api/timeline?"));
  CHECK(a.body.find(" src=") == std::string::npos);
}

TEST_CASE("the server answers on a loopback port and keeps to its time budget", "[cli][serve]") {
  ServeConfig config;
  PlaygroundServer server(config);
  const int port = server.bind("127.0.0.1", 0);
  REQUIRE(port > 0);
  std::thread serving([&] { server.run(); });
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30);
  const auto r = client.Get("/api/compare?s=1f1b,zb-h1&p=4&m=8&costs=F=2,B=2,W=2");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == get("/api/compare?s=1f1b,zb-h1&p=4&m=8&costs=F=2,B=2,W=2").body);
  const auto bad = client.Get("/api/compare?s=1f1b&p=x&m=8");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  server.stop();
  serving.join();

  // A budget far below what the request needs: 503, and the server goes on answering.
  config.limits.seconds = 1e-6;
  PlaygroundServer hurried(config);
  const int port2 = hurried.bind("127.0.0.1", 0);
  std::thread serving2([&] { hurried.run(); });
  httplib::Client c2("127.0.0.1", port2);
  c2.set_read_timeout(30);
  const auto slow = c2.Get("/api/timeline?s=zb-auto,zb-v&p=16&m=64");
  REQUIRE(slow);
  CHECK(slow->status == 503);
  CHECK_THAT(slow->body, Catch::Contains("budget"));
  const auto page = c2.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  hurried.stop();
  serving2.join();
}
