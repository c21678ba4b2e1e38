// Tests of --offload on the command line: what the JSON, the text report and the trace show,
// the serve API's parameter, and the exit code of every bad value.
#include "cli/serve.hpp"
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using ppsim::test::run_ppsim;

namespace {

std::vector<std::string> offload_tiny(const std::vector<std::string>& extra) {
  return ppsim::test::args_with(
      {"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=1,W=1,copy=0.5"}, extra);
}

} // namespace

TEST_CASE("an offload on the command line adds the copy metrics to the JSON and the text report", "[cli][offload]") {
  const auto plain = run_ppsim(offload_tiny({"--json"}));
  const auto none = run_ppsim(offload_tiny({"--offload", "none", "--json"}));
  REQUIRE(plain.code == 0);
  CHECK(none.out == plain.out);  // the default changes nothing
  const auto r = run_ppsim(offload_tiny({"--offload", "stages=0,fraction=1", "--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("makespan_ms") == 33.0);
  CHECK(j.at("exposed_copy_ms") == 0.0);
  CHECK(j.at("host_peak_memory") == 3.0);
  CHECK(j.at("offload").at("fraction") == nlohmann::json::array({1.0, 0.0, 0.0, 0.0}));
  CHECK(j.at("offload").at("copy_ms_per_mb") == 0.5);
  const auto& d0 = j.at("per_device")[0];
  CHECK(d0.at("peak_memory") == 2.0);
  CHECK(d0.at("copy_busy_ms") == 8.0);
  CHECK(d0.at("offloaded_memory") == 8.0);
  CHECK(d0.at("reloaded_memory") == 8.0);
  CHECK(d0.at("host_peak_memory") == 3.0);
  CHECK_FALSE(d0.contains("offloaded_bytes"));  // the bytes of M_B are unknown
  CHECK_FALSE(nlohmann::json::parse(plain.out).contains("offload"));
  const auto t = run_ppsim(offload_tiny({"--offload", "stages=0"}));
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("offload       stages=0, copy 0.5 ms per M_B\n"));
  CHECK_THAT(t.out, Catch::Contains("host peak     3 M_B"));
  CHECK_THAT(t.out, Catch::Contains("exposed copy  0 ms"));
  CHECK_THAT(t.out, Catch::Contains("copy_busy_ms   exposed_ms offloaded_M_B   host_M_B"));
}

TEST_CASE("offload auto on the command line fits the memory limit and says which fraction it chose", "[cli][offload]") {
  const auto r = run_ppsim(offload_tiny({"--offload", "auto", "--mem-limit", "3", "--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("peak_memory").get<double>() <= 3.0);
  const auto t = run_ppsim(offload_tiny({"--offload", "auto", "--mem-limit", "3"}));
  CHECK_THAT(t.out, Catch::Contains("offload       auto: fraction "));
  const auto n = run_ppsim(offload_tiny({"--offload", "auto", "--mem-limit", "2p"}));
  CHECK_THAT(n.out, Catch::Contains("offload       auto: none needed\n"));
  const auto bad = run_ppsim(offload_tiny({"--offload", "auto", "--mem-limit", "1.5"}));
  CHECK(bad.code == 5);
  CHECK_THAT(bad.err, Catch::Contains("even with every activation offloaded"));
}

TEST_CASE("a trace with an offload has a copy track and a host memory counter",
          "[cli][offload][viz]") {
  ppsim::test::TempDir dir("offload-trace");
  const std::string path = (dir.path() / "t.json").string();
  const auto r = run_ppsim(offload_tiny({"--offload", "0.5", "--trace", path}));
  REQUIRE(r.code == 0);
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
  bool track = false, o = false, rl = false, host = false;
  for (const auto& e : j.at("traceEvents")) {
    const std::string name = e.value("name", "");
    if (name == "thread_name" && e.at("args").at("name") == "copy") track = true;
    if (name == "O F3" && e.at("ph") == "X") o = true;
    if (name == "R B3" && e.at("ph") == "X") rl = e.at("args").contains("exposed_us");
    if (name == "host memory" && e.at("ph") == "C") host = true;
  }
  CHECK(track);
  CHECK(o);
  CHECK(rl);
  CHECK(host);
  // TempDir checks the trace rules (no overlapping slices on the copy track among them).
}

TEST_CASE("every bad --offload is a configuration error", "[cli][offload]") {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"--offload", "half"}, "--offload 'half': expected a number, got 'half'"},
      {{"--offload", "0"}, "fraction 0 is outside (0, 1]"},
      {{"--offload", "1.5"}, "fraction 1.5 is outside (0, 1]"},
      {{"--offload=-0.5"}, "is outside (0, 1]"},
      {{"--offload", "fraction=2"}, "fraction 2 is outside (0, 1]"},
      {{"--offload", "stages=3-1"}, "range '3-1' runs backwards"},
      {{"--offload", "stages=a-2"}, "expected an integer, got 'a'"},
      {{"--offload", "stages=-1"}, "expected A-B or A"},
      {{"--offload", "stages=1-"}, "expected A-B or A"},
      {{"--offload", "colour=red"}, "unknown key 'colour' (valid keys: stages, chunks, fraction"},
      {{"--offload", "stages=9"}, "stage 9 is beyond the schedule's stages 0..3"},
      {{"--offload", "chunks=1"}, "chunk 1 is beyond the schedule's chunks 0..0"},
      {{"--offload", "stages=0,stages=1"}, "given twice"},
      {{"--offload", "auto"}, "needs a memory limit to fit"},
      {{"--offload", "1", "--iterations", "2"}, "not modelled with --iterations yet"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_ppsim(offload_tiny(c.args));
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
  // Without a copy time: no copy= and no device with a host link.
  const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "2", "--offload", "1"});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("the time of a copy is unknown: give --costs copy=MS"));
}

TEST_CASE("an offload with a model times copies over the device's host link", "[cli][offload]") {
  // NVLink-C2C: a copy is faster than the warm-up's forwards, so the first stages' peaks drop.
  const std::vector<std::string> base{"simulate", "-s", "1f1b", "-p", "4", "-m", "8",
                                      "--model", "zb-1.5b", "--device", "gh200", "--json"};
  auto with = base;
  with.insert(with.end(), {"--offload", "1"});
  const auto plain = run_ppsim(base);
  const auto r = run_ppsim(with);
  REQUIRE(plain.code == 0);
  REQUIRE(r.code == 0);
  const auto jp = nlohmann::json::parse(plain.out), j = nlohmann::json::parse(r.out);
  CHECK(j.at("peak_memory").get<double>() < jp.at("peak_memory").get<double>());
  CHECK(j.at("makespan_ms").get<double>() >= jp.at("makespan_ms").get<double>());
  CHECK(j.at("offload").at("latency_ms") == 0.005);
  CHECK(j.at("per_device")[0].at("offloaded_bytes").get<double>() > 0);
  CHECK(j.at("host_peak_bytes").get<double>() > 0);
}

TEST_CASE("a device file's host link and host memory are read and checked", "[cli][offload]") {
  ppsim::test::TempDir dir("offload-device");
  const auto run = [&](const std::string& device_json) {
    const std::string path = dir.file("d.json", device_json);
    return run_ppsim({"simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--model", "zb-1.5b",
                "--device", path, "--offload", "1", "--json"});
  };
  const auto ok = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500, "memory_gib": 80,
      "host_link": {"gbytes_per_s": 25, "latency_ms": 0.02}, "host_memory_gib": 512})");
  REQUIRE(ok.code == 0);
  CHECK(nlohmann::json::parse(ok.out).at("offload").at("latency_ms") == 0.02);
  const auto none = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500})");
  CHECK(none.code == 3);
  CHECK_THAT(none.err, Catch::Contains("has no host link"));
  const auto zero = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500, "host_link": {"gbytes_per_s": 0}})");
  CHECK(zero.code == 3);
  CHECK_THAT(zero.err, Catch::Contains("/host_link/gbytes_per_s"));
  const auto missing = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500, "host_link": {"latency_ms": 1}})");
  CHECK(missing.code == 3);
  CHECK_THAT(missing.err, Catch::Contains("gbytes_per_s"));
  const auto shared = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500,
      "host_link": {"gbytes_per_s": 25, "shared": true}})");
  CHECK(shared.code == 3);
  CHECK_THAT(shared.err, Catch::Contains("not modelled yet"));
  const auto not_bool = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500,
      "host_link": {"gbytes_per_s": 25, "shared": 1}})");
  CHECK(not_bool.code == 3);
  CHECK_THAT(not_bool.err, Catch::Contains("expected true or false"));
  const auto host = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500, "host_memory_gib": -1})");
  CHECK(host.code == 3);
  CHECK_THAT(host.err, Catch::Contains("/host_memory_gib"));
  // A host too small for what is offloaded is out of memory (exit 5).
  const auto small = run(R"({"schema": "ppsim.device/1", "peak_tflops": 500,
      "host_link": {"gbytes_per_s": 25}, "host_memory_gib": 0.001})");
  CHECK(small.code == 5);
  CHECK_THAT(small.err, Catch::Contains("offloaded activations on the host, above its host memory"));
}

TEST_CASE("the models listing names the gh200 preset", "[cli][offload]") {
  const auto r = run_ppsim({"models"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Devices: a100, h100, h200, gh200 (presets)"));
}

TEST_CASE("serve's API takes offload as compare takes --offload", "[cli][offload][serve]") {
  using ppsim::cli::parse_query;
  using ppsim::cli::serve_answer;
  const auto expected = run_ppsim({"compare", "-s", "1f1b", "-p", "4", "-m", "8", "--costs",
                             "F=1,B=1,W=1,copy=0.5", "--offload", "stages=0", "--json"});
  REQUIRE(expected.code == 0);
  const std::string target =
      "/api/compare?s=1f1b&p=4&m=8&costs=F=1,B=1,W=1,copy=0.5&offload=stages=0";
  const auto a = serve_answer("/api/compare", parse_query(target), {});
  CHECK(a.status == 200);
  CHECK(a.body == expected.out);
  const auto bad = serve_answer(
      "/api/compare", parse_query("/api/compare?s=1f1b&p=4&m=8&costs=copy=1&offload=2"), {});
  CHECK(bad.status == 400);
  CHECK_THAT(bad.body, Catch::Contains("fraction 2 is outside (0, 1]"));
}

TEST_CASE("the README's offload figures are what zb-6.2b on h100 and gh200 gives",
          "[cli][offload][golden]") {
  struct Row {
    const char* device;
    const char* offload;
    const char* makespan;
    const char* peak;
    const char* host;
    const char* exposed;
  };
  // README.md, "Offload: activations to the host and back".
  const std::vector<Row> rows = {
      {"h100", "none", "975.8 ms", "(24.4 GiB)", nullptr, nullptr},
      {"h100", "1", "4424.7 ms", "(24.4 GiB)", "(18.3 GiB)", "3518.1 ms"},
      {"gh200", "1", "1423.8 ms", "(13.9 GiB)", "(18.3 GiB)", "495.2 ms"},
      {"gh200", "stages=0-2", "961.9 ms", "(13.9 GiB)", "(18.3 GiB)", "0 ms"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.device, row.offload);
    const auto r = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "16", "--model", "zb-6.2b",
                        "--device", row.device, "--offload", row.offload});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains(std::string("makespan      ") + row.makespan + "\n"));
    CHECK_THAT(r.out, Catch::Contains(std::string(" M_B  ") + row.peak + "\n"));
    if (row.host != nullptr) {
      CHECK_THAT(r.out, Catch::Contains(std::string(" M_B  ") + row.host + "   (offloaded"));
      CHECK_THAT(r.out, Catch::Contains(std::string("exposed copy  ") + row.exposed));
    }
  }
}
