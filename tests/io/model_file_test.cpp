// Tests of model and device files and presets, and of Megatron's layout syntax.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/sim/errors.hpp"

#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace ppsim;
using namespace ppsim::test;
using Catch::Contains;

TEST_CASE("the presets are the zero-bubble paper's models and public ones", "[io][model]") {
  const ModelSpec zb = load_model("zb-6.2b");
  CHECK(zb.layers == 30);
  CHECK(zb.hidden == 4096);
  CHECK(zb.heads == 32);
  CHECK(zb.seq == 1024);
  CHECK(zb.microbatch_size == 3);
  const ModelSpec llama = load_model("llama3-70b");
  CHECK(llama.kv_heads == 8);
  CHECK(llama.ffn == 28672);
  CHECK(llama.mlp == MlpKind::swiglu);
  for (const ModelSpec& m : model_presets()) CHECK_NOTHROW(check_model(m, m.name));
  CHECK_THAT(error_of<ConfigError>([] { (void)load_model("gpt5"); }),
             Contains("unknown model 'gpt5'") && Contains("zb-1.5b, zb-6.2b"));
}

TEST_CASE("model files are read with their defaults and every bad value names its path",
          "[io][model]") {
  const ModelSpec m = parse_model_json(
      R"({"schema": "ppsim.model/1", "layers": 4, "hidden": 64, "heads": 4, "seq": 32,
          "vocab": 100})",
      "m.json");
  CHECK(m.kv_heads == 4);
  CHECK(m.ffn == 256);
  CHECK(m.microbatch_size == 1);
  CHECK(m.dtype == "bf16");
  CHECK(m.recompute == Recompute::none);
  // `body` is `, "key": value`; a key of the valid document is replaced, not given twice (a
  // key given twice is an error of its own).
  const auto bad = [](const std::string& body) {
    const auto q = body.find('"');
    const std::string key = body.substr(q + 1, body.find('"', q + 1) - q - 1);
    std::string doc = R"({"schema": "ppsim.model/1")";
    const std::pair<const char*, const char*> valid[] = {
        {"layers", "4"}, {"hidden", "64"}, {"heads", "4"}, {"seq", "32"}, {"vocab", "100"}};
    for (const auto& [k, v] : valid)
      if (key != k) doc += std::string(", \"") + k + "\": " + v;
    return error_of<ConfigError>([&] { (void)parse_model_json(doc + body + "}", "m.json"); });
  };
  CHECK_THAT(bad(R"(, "colour": 1)"), Contains("m.json: /colour: unknown key (valid: schema, name"));
  CHECK_THAT(bad(R"(, "heads": 6)"), Contains("/heads: heads=6 does not divide hidden=64"));
  CHECK_THAT(bad(R"(, "kv_heads": 3)"), Contains("/kv_heads: kv_heads=3 does not divide heads=4"));
  CHECK_THAT(bad(R"(, "layers": -1)"), Contains("/layers: expected an integer in 1..4096"));
  CHECK_THAT(bad(R"(, "recompute": "some")"), Contains("/recompute: 'some': expected none"));
  CHECK_THAT(bad(R"(, "dtype": "int8")"), Contains("/dtype: 'int8'"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_model_json(R"({"schema": "ppsim.model/1"})", "m.json"); }),
             Contains("m.json: /layers: missing"));
}

TEST_CASE("device presets and files", "[io][model]") {
  CHECK(load_device("h100").peak_tflops == 989);
  CHECK(load_device("a100").memory_gib == 80);
  const DeviceSpec d = parse_device_json(
      R"({"schema": "ppsim.device/1", "peak_tflops": 100, "efficiency": {"F": 0.5},
          "link": {"latency_ms": 0.01, "gbytes_per_s": 10}})",
      "d.json");
  CHECK(d.efficiency_F == 0.5);
  CHECK(d.efficiency_B == 0.6);
  CHECK(d.link_gbytes_per_s == 10);
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": 100, "efficiency": {"F": 1.5}})", "d.json"); }),
             Contains("d.json: /efficiency/F: 1.5: expected a fraction in (0, 1]"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": -1})", "d.json"); }),
             Contains("d.json: /peak_tflops: expected a number >= 0"));
  CHECK_THAT(error_of<ConfigError>([] { (void)load_device("tpu"); }), Contains("unknown device 'tpu'"));
}

TEST_CASE("layouts read Megatron's documented examples", "[io][layout]") {
  // DeepSeek-V3's example in Megatron-Core's documentation: PP16 x VPP2, 61 decoders, one MTP.
  const Layout v3 = parse_layout("Et*3|(tt|)*29,m|L", "--layout");
  REQUIRE(v3.stages.size() == 32);
  CHECK(v3.stages[0] == StageLayers{1, 3, 0, 0});
  for (std::size_t i = 1; i <= 29; ++i) CHECK(v3.stages[i] == StageLayers{0, 2, 0, 0});
  CHECK(v3.stages[30] == StageLayers{0, 0, 1, 0});
  CHECK(v3.stages[31] == StageLayers{0, 0, 0, 1});
  CHECK(v3.decoders() == 61);
  // Empty stages are legal.
  const Layout gap = parse_layout("E||t|L", "--layout");
  REQUIRE(gap.stages.size() == 4);
  CHECK(gap.stages[1] == StageLayers{});
  // Nested groups, commas and spaces.
  CHECK(parse_layout("E, (t*2|(t|)*2)*2 L", "x").decoders() == 8);
  // Round trip of the canonical text.
  const Layout even = even_layout(8, 4);
  CHECK(layout_text(even) == "Ett|tt|tt|ttL");
  CHECK(parse_layout(layout_text(even), "x") == even);
  const Layout big = layout_from_counts(std::vector<int>{5, 6, 6, 5});
  CHECK(parse_layout(layout_text(big), "x") == big);
}

TEST_CASE("bad layouts name the position of the problem", "[io][layout]") {
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_layout("Et*3|x|L", "--layout"); }),
             Contains("--layout: position 6: unexpected 'x'"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_layout("E(tt|L", "--layout"); }),
             Contains("position 2: '(' without its ')'"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_layout("Ett)|L", "--layout"); }),
             Contains("position 4: unexpected ')'"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_layout("Et*|L", "--layout"); }),
             Contains("position 3: '*' needs a count"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_layout("Et*0|L", "--layout"); }),
             Contains("position 4: repetition count must be at least 1"));
  CHECK_THAT(error_of<ConfigError>([] { (void)parse_layout("((t*1000)*1000)*1000", "--layout"); }),
             Contains("expands to more than 1000000"));
  CHECK_THAT(error_of<ConfigError>([] { (void)even_layout(10, 4); }),
             Contains("the even split needs layers % stages == 0 (got layers=10, stages=4)"));
  CHECK_THAT(error_of<ConfigError>([] { check_layout(parse_layout("Et|t|tL", "x"), 3, 4, "--layout"); }),
             Contains("--layout: 3 decoder layers (t), but the model has 4"));
  CHECK_THAT(error_of<ConfigError>([] { check_layout(parse_layout("Et|t|tL", "x"), 4, 3, "--layout"); }),
             Contains("--layout: 3 stages, but the schedule has 4"));
  CHECK_THAT(error_of<ConfigError>([] { check_layout(parse_layout("t|Et|tL", "x"), 3, 3, "--layout"); }),
             Contains("one embedding (E), on the first stage"));
}
