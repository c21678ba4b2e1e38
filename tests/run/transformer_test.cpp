// Tests of the transformer cost model: the paper's FLOPs, Korthikanti's memory, parameter
// counts, bytes of training state, and how layouts turn into per-stage costs.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/transformer.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace ppsim;

namespace {

ModelSpec gpt(int layers, int h, int a, int s, int b, int V) {
  ModelSpec m;
  m.name = "gpt";
  m.layers = layers;
  m.hidden = h;
  m.heads = a;
  m.kv_heads = a;
  m.ffn = 4 * h;
  m.seq = s;
  m.microbatch_size = b;
  m.vocab = V;
  return m;
}

} // namespace

TEST_CASE("a GPT layer costs the zero-bubble paper's Table 1 FLOPs", "[run][model]") {
  const ModelSpec m = gpt(4, 1024, 16, 512, 2, 1000);
  const double s = 512, b = 2, h = 1024;
  const LayerEstimate e = decoder_layer(m);
  CHECK(e.F_flops == s * b * h * (24 * h + 4 * s));
  CHECK(e.B_flops == s * b * h * (24 * h + 8 * s));
  CHECK(e.W_flops == 24 * s * b * h * h);
}

TEST_CASE("a GPT layer keeps Korthikanti's sbh(34 + 5as/h) bytes and M_W = 32sbh", "[run][model]") {
  ModelSpec m = gpt(4, 1024, 16, 512, 2, 1000);
  const double s = 512, b = 2, h = 1024, a = 16;
  CHECK(decoder_layer(m).act_bytes == s * b * h * (34 + 5 * a * s / h));
  CHECK(decoder_layer(m).mw_bytes == 32 * s * b * h);
  CHECK(decoder_layer(m).R_flops == 0);
  m.recompute = Recompute::selective;
  // selective drops exactly the 5as^2b term and recomputes the attention core, 4bs^2h FLOPs
  CHECK(decoder_layer(m).act_bytes == 34 * s * b * h);
  CHECK(decoder_layer(m).B_flops == s * b * h * (24 * h + 8 * s));
  CHECK(decoder_layer(m).R_flops == 4 * b * s * s * h);
  m.recompute = Recompute::full;
  // full keeps the 2sbh input and recomputes the whole forward
  CHECK(decoder_layer(m).act_bytes == 2 * s * b * h);
  CHECK(decoder_layer(m).R_flops == decoder_layer(m, Recompute::none).F_flops);
  CHECK(decoder_layer(m).R_flops == s * b * h * (24 * h + 4 * s));
}

TEST_CASE("grouped-query attention and SwiGLU change the GEMMs as worked by hand", "[run][model]") {
  ModelSpec m = gpt(1, 64, 8, 16, 1, 100);
  m.kv_heads = 2;  // K and V are 16 wide
  m.ffn = 96;
  m.mlp = MlpKind::swiglu;
  // QKV 64 x (64 + 32) + projection 64 x 64 + 3 MLP matrices 64 x 96 = 6144 + 4096 + 18432
  const double gemm_params = 64.0 * 96 + 64 * 64 + 3 * 64 * 96;
  CHECK(decoder_layer(m).params == gemm_params + 2 * 64);
  CHECK(decoder_layer(m).W_flops == 2 * 16 * gemm_params);
  CHECK(decoder_layer(m).F_flops == 2 * 16 * gemm_params + 4 * 1 * 16 * 16 * 64);
}

TEST_CASE("the paper's models have 12 L h^2 plus embedding parameters: 1.5B, 6.2B, 14.6B, 28.3B",
          "[run][model]") {
  const auto billions = [](const char* name) {
    const ModelSpec m = load_model(name);
    // the count 12 L h^2 + V h, rounded as the paper names them
    CHECK(std::abs(parameter_count(m) - (12.0 * m.layers * m.hidden * m.hidden +
                                         static_cast<double>(m.vocab) * m.hidden)) <
          0.001 * parameter_count(m));
    return std::round(parameter_count(m) / 1e8) / 10;
  };
  CHECK(billions("zb-1.5b") == 1.5);
  CHECK(billions("zb-6.2b") == 6.2);
  CHECK(billions("zb-14.6b") == 14.6);
  CHECK(billions("zb-28.3b") == 28.3);
  CHECK(std::round(parameter_count(load_model("gpt3-175b")) / 1e9) == 175);
  CHECK(std::round(parameter_count(load_model("llama3-8b")) / 1e9) == 8);
  CHECK(std::round(parameter_count(load_model("llama3-70b")) / 1e9) == 71);  // 70.6B
  CHECK(std::round(parameter_count(load_model("llama3-405b")) / 1e9) == 406);  // 405.9B
}

TEST_CASE("training state is 18 bytes a bf16 parameter, 6 + 12/dp with ZeRO-1", "[run][model]") {
  ModelSpec m = gpt(1, 64, 4, 16, 1, 10);
  CHECK(state_bytes_per_param(m, {}) == 18);
  CHECK(state_bytes_per_param(m, {.dp = 4, .zero = 1}) == 2 + 4 + 12.0 / 4);
  m.dtype = "fp32";
  CHECK(state_bytes_per_param(m, {}) == 16);
}

TEST_CASE("an even layout of a uniform model gives equal middle stages and the embedding and "
          "loss on the ends",
          "[run][model]") {
  const ModelSpec m = gpt(8, 256, 4, 128, 1, 1000);
  DeviceSpec d;
  d.name = "d";
  d.peak_tflops = 1;
  d.efficiency_F = d.efficiency_B = d.efficiency_W = 1;
  const ModelCosts mc = model_costs(m, d, even_layout(8, 4), 4, {});
  REQUIRE(mc.costs.stages.size() == 4);
  CHECK(mc.costs.stages[1] == mc.costs.stages[2]);
  CHECK(mc.costs.stages[1].MB == 1.0);  // the unit is one even device-stage
  CHECK(mc.costs.stages[0].MB > 1.0);   // plus the embedding's output
  CHECK(mc.costs.stages[3].F > mc.costs.stages[1].F);  // plus the output layer
  // time = FLOPs / peak: two decoder layers at 1 TFLOP/s
  CHECK(mc.costs.stages[1].F == ms_to_ticks(2 * decoder_layer(m).F_flops / 1e12 * 1e3, "x"));
  CHECK(mc.message_bytes == 128.0 * 1 * 256 * 2);
  // a layer moved from stage 1 to stage 2 changes only those two
  const ModelCosts moved = model_costs(m, d, layout_from_counts(std::vector<int>{2, 1, 3, 2}), 4, {});
  CHECK(moved.costs.stages[0] == mc.costs.stages[0]);
  CHECK(moved.costs.stages[3] == mc.costs.stages[3]);
  CHECK(moved.costs.stages[1].F < mc.costs.stages[1].F);
  CHECK(moved.costs.stages[2].F > mc.costs.stages[2].F);
}

TEST_CASE("a workload's layout bounds its devices and chunks before it is made",
          "[run][model][bad-input]") {
  WorkloadSpec w;
  w.model = load_model("zb-1.5b");
  w.device = load_device("h100");
  CHECK(workload_layout(w, 4, 0).stages.size() == 4);
  CHECK(workload_layout(w, 4, 2).stages.size() == 8);
  // a billion devices were a billion-entry layout (gigabytes) before the model's check
  CHECK_THAT(
      test::message_of<ConfigError>([&] { (void)workload_layout(w, 1'000'000'000, 0); }),
      Catch::Contains("devices=1000000000 (expected 1..4096)"));
  CHECK_THAT(test::message_of<ConfigError>([&] { (void)workload_layout(w, 0, 0); }),
             Catch::Contains("devices=0"));
  CHECK_THAT(test::message_of<ConfigError>([&] { (void)workload_layout(w, 4096, 4096); }),
             Catch::Contains("chunks=4096 on 4096 devices (expected 0..65536 stages"));
  CHECK_THAT(test::message_of<ConfigError>([&] { (void)workload_layout(w, 4, -1); }),
             Catch::Contains("chunks=-1"));
}

TEST_CASE("bytes per device of a small model, worked by hand", "[run][model]") {
  // h = 64, 4 heads, s = 16, b = 1, V = 100, 2 layers on 2 stages, bf16, no ZeRO.
  const ModelSpec m = gpt(2, 64, 4, 16, 1, 100);
  DeviceSpec d;
  d.name = "d";
  d.peak_tflops = 1;
  const ModelCosts mc = model_costs(m, d, even_layout(2, 2), 2, {});
  // decoder layer: 12 h^2 + 2h = 49,280 parameters; embedding V h = 6,400; output V h + 2h = 6,528
  CHECK(mc.stages[0].params == 49280 + 6400);
  CHECK(mc.stages[1].params == 49280 + 6528);
  CHECK(mc.state_bytes[0] == 18.0 * (49280 + 6400));
  // activations: the layer's sbh(34 + 5as/h) = 1024 (34 + 5) = 39,936 bytes; the embedding's
  // output (2sbh) and dropout mask (sbh)
  CHECK(mc.unit_bytes == 1024.0 * 39);
  CHECK(mc.stages[0].act_bytes == 1024.0 * 39 + 3 * 1024);
  // the output layer: the final norm's and the projection's inputs (2sbh each) and the fp32
  // logits (4 s b V)
  CHECK(mc.stages[1].act_bytes == 1024.0 * 39 + 4 * 1024 + 4 * 16 * 100);
}
