// Tests of the communication options on the command line: --comm-mode, --link, the message
// bytes in --costs, what the JSON and the text report show, and the errors of bad values.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using ppsim::test::run_ppsim;

namespace {

std::vector<std::string> comm_tiny(const std::vector<std::string>& extra) {
  return ppsim::test::args_with(
      {"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=1,W=1,comm=1"}, extra);
}

} // namespace

TEST_CASE("the blocking comm mode holds the sender until its message is delivered", "[cli][comm]") {
  const auto a = run_ppsim(comm_tiny({"--json"}));
  const auto b = run_ppsim(comm_tiny({"--comm-mode", "blocking", "--json"}));
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja.at("cost_ms") == 11.0);
  CHECK(jb.at("cost_ms") == 12.0);
  CHECK_FALSE(ja.contains("comm"));
  CHECK(jb.at("comm") == nlohmann::json{{"mode", "blocking"}, {"contention", "none"}});
  // Per device: messages sent, their bytes, and the idle spent waiting on communication.
  CHECK(ja.at("per_device")[0].at("p2p_messages") == 2);
  CHECK(ja.at("per_device")[0].at("comm_wait_ms") == 2.0);
  CHECK(jb.at("per_device")[0].at("comm_wait_ms") == 4.0);
  CHECK(jb.at("per_device")[1].at("comm_wait_ms") == 1.0);
  // The text report names the model and adds the columns.
  const auto t = run_ppsim(comm_tiny({"--comm-mode", "blocking"}));
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("comm          blocking\n"));
  CHECK_THAT(t.out, Catch::Contains("messages     bytes_sent  comm_wait_ms"));
}

TEST_CASE("a sized link on the command line times messages by the bytes --costs gives",
          "[cli][comm]") {
  // 1e6 bytes at 10 GB/s = 0.1 ms + 0.02 ms latency: 0.12 ms per F message; the gradient
  // (2e6 bytes) takes 0.22 ms. 1F1B p=2 m=1: F 1, message 0.12, F+BW 3, message 0.22, BW 2.
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "1", "--costs",
                      "F=1,B=1,W=1,comm=5,act_bytes=1e6,grad_bytes=2e6", "--link",
                      "latency=0.02,bandwidth=10", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("makespan_ms") == Approx(1 + 0.12 + 3 + 0.22 + 2).epsilon(1e-12));
  CHECK(j.at("comm") == nlohmann::json{{"mode", "async"},
                                       {"latency_ms", 0.02},
                                       {"bandwidth_gb_per_s", 10.0},
                                       {"contention", "none"}});
  CHECK(j.at("per_device")[0].at("p2p_bytes_sent") == 1e6);
  CHECK(j.at("per_device")[1].at("p2p_bytes_sent") == 2e6);
  // Duplex contention through the flag: GPipe p=2 m=2, comm 3 (tests/sim/comm_test.cpp).
  const auto d = run_ppsim({"compare", "-s", "gpipe", "-p", "2", "-m", "2", "--costs",
                      "F=1,B=1,W=1,comm=3", "--link", "contention=duplex", "--json"});
  REQUIRE(d.code == 0);
  CHECK(nlohmann::json::parse(d.out)[0].at("cost_ms") == 18.0);
}

TEST_CASE("bad communication values are bad input with the value named", "[cli][comm]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--comm-mode", "sync"}, "--comm-mode 'sync': unknown mode (valid: async, blocking)"},
      {{"--link", "bandwidth=-1"}, "--link bandwidth=-1: must be > 0 (GB/s)"},
      {{"--link", "bandwidth=0"}, "--link bandwidth=0: must be > 0 (GB/s)"},
      {{"--link", "latency=-1"}, "--link latency"},
      {{"--link", "contention=half"}, "unknown model (valid: none, duplex)"},
      {{"--link", "speed=1"}, "unknown key 'speed' (valid keys: latency, bandwidth, contention)"},
  };
  for (const auto& [extra, message] : cases) {
    CAPTURE(extra, message);
    const auto r = run_ppsim(comm_tiny(extra));
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::StartsWith("ppsim: error: simulate: ") && Catch::Contains(message));
  }
  for (const auto& [costs, message] : std::vector<std::pair<std::string, std::string>>{
           {"act_bytes=-5", "--costs act_bytes"}, {"grad_bytes=1e16", "too large"}}) {
    CAPTURE(costs);
    const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--costs", costs});
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains(message));
  }
}
