// Tests of --offload's text, --costs copy= and the host link of devices.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/offload_text.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ppsim;
using test::error_of;

TEST_CASE("an offload text parses into its mode, fraction and ranges", "[io][offload]") {
  CHECK_FALSE(parse_offload("").requested());
  CHECK_FALSE(parse_offload("none").requested());
  CHECK(parse_offload(" none ") == OffloadSpec{});
  CHECK(parse_offload("auto").mode == OffloadSpec::Mode::automatic);
  const OffloadSpec half = parse_offload("0.5");
  CHECK(half.mode == OffloadSpec::Mode::fraction);
  CHECK(half.fraction == 0.5);
  CHECK(half.first_stage == -1);
  CHECK(half.first_chunk == -1);
  CHECK(half.text == "0.5");
  const OffloadSpec s = parse_offload("stages=0-3,fraction=0.25");
  CHECK(s.first_stage == 0);
  CHECK(s.last_stage == 3);
  CHECK(s.fraction == 0.25);
  const OffloadSpec one = parse_offload("stages=2");
  CHECK(one.first_stage == 2);
  CHECK(one.last_stage == 2);
  CHECK(one.fraction == 1.0);
  const OffloadSpec c = parse_offload("chunks=1,fraction=1");
  CHECK(c.first_chunk == 1);
  CHECK(c.last_chunk == 1);
  CHECK(c.first_stage == -1);
  CHECK(parse_offload("1").fraction == 1.0);
}

TEST_CASE("every malformed offload text names what is wrong", "[io][offload]") {
  const auto bad = [](const char* text) {
    return error_of<ConfigError>([&] { (void)parse_offload(text); });
  };
  CHECK_THAT(bad("half"), Catch::Contains("--offload 'half': expected a number, got 'half'"));
  CHECK_THAT(bad("0"), Catch::Contains("fraction 0 is outside (0, 1]"));
  CHECK_THAT(bad("1.01"), Catch::Contains("fraction 1.01 is outside (0, 1]"));
  CHECK_THAT(bad("nan"), Catch::Contains("--offload 'nan'"));
  CHECK_THAT(bad("fraction=0"), Catch::Contains("fraction 0 is outside (0, 1]"));
  CHECK_THAT(bad("stages=4-2"), Catch::Contains("range '4-2' runs backwards (4 > 2)"));
  CHECK_THAT(bad("stages=x"), Catch::Contains("expected an integer, got 'x'"));
  CHECK_THAT(bad("stages="), Catch::Contains("--offload 'stages='"));
  CHECK_THAT(bad("stages=-"), Catch::Contains("expected A-B or A"));
  CHECK_THAT(bad("stages=99999999"), Catch::Contains("out of range"));
  CHECK_THAT(bad("chunks=0-x"), Catch::Contains("expected an integer, got 'x'"));
  CHECK_THAT(bad("layers=1"), Catch::Contains("unknown key 'layers' (valid keys: stages, chunks, fraction"));
  CHECK_THAT(bad("fraction"), Catch::Contains("expected a number"));
  CHECK_THAT(bad("auto,fraction=1"), Catch::Contains("--offload 'auto,fraction=1'"));
}

TEST_CASE("the copy key of --costs and a cost file's copy give the time to copy one M_B", "[io][offload]") {
  CHECK(parse_costs("F=1").copy == -1);
  CHECK(parse_costs("F=1,copy=0.5").copy == 500'000);
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_costs("copy=-1"); }),
             Catch::Contains("--costs copy"));
  const CostSpec spec = parse_costs("F=1,B=1,W=1,copy=2");
  const CostSpec back = parse_cost_json(cost_spec_json(spec, ""), "c.json");
  CHECK(back.copy == 2'000'000);
  CHECK(parse_cost_json(cost_spec_json(parse_costs("F=1,B=1,W=1"), ""), "c.json").copy == -1);
}

TEST_CASE("the device presets have a host link and host memory", "[io][offload]") {
  const DeviceSpec a100 = load_device("a100");
  CHECK(a100.host_link_gbytes_per_s == 32);
  CHECK(a100.host_memory_gib == 256);
  CHECK(load_device("h100").host_link_gbytes_per_s == 64);
  CHECK(load_device("h200").host_link_gbytes_per_s == 64);
  const DeviceSpec gh200 = load_device("gh200");
  CHECK(gh200.peak_tflops == 989);
  CHECK(gh200.memory_gib == 96);
  CHECK(gh200.host_link_gbytes_per_s == 450);
  CHECK(gh200.host_memory_gib == 480);
  CHECK_FALSE(gh200.host_link_shared);
  const DeviceSpec d = parse_device_json(
      R"({"schema": "ppsim.device/1", "peak_tflops": 100, "host_link": {"gbytes_per_s": 20,
          "latency_ms": 0.1, "shared": true}, "host_memory_gib": 128})",
      "d.json");
  CHECK(d.host_link_gbytes_per_s == 20);
  CHECK(d.host_link_latency_ms == 0.1);
  CHECK(d.host_link_shared);
  CHECK(d.host_memory_gib == 128);
  const auto bad = [](const std::string& extra) {
    return error_of<ConfigError>([&] {
      (void)parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": 100, )" + extra + "}",
                              "d.json");
    });
  };
  CHECK_THAT(bad(R"("host_link": {"gbytes_per_s": -1})"),
             Catch::Contains("/host_link/gbytes_per_s: expected a number >= 0, got -1"));
  CHECK_THAT(bad(R"("host_link": {"gbytes_per_s": 0})"),
             Catch::Contains("/host_link/gbytes_per_s: 0: expected a positive GB/s"));
  CHECK_THAT(bad(R"("host_link": {"gbytes_per_s": 1, "latency_ms": -2})"),
             Catch::Contains("/host_link/latency_ms: expected a number >= 0, got -2"));
  CHECK_THAT(bad(R"("host_link": {"gbytes_per_s": 1, "latency_ms": 1e7})"),
             Catch::Contains("expected milliseconds in [0, 1e6]"));
  CHECK_THAT(bad(R"("host_link": {"gbytes_per_s": 1, "speed": 2})"), Catch::Contains("speed"));
  CHECK_THAT(bad(R"("host_link": {"shared": false})"), Catch::Contains("gbytes_per_s"));
  CHECK_THAT(bad(R"("host_memory_gib": 0)"), Catch::Contains("/host_memory_gib: 0: expected a positive GiB"));
}
