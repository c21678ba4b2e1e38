// Tests of multi-head latent attention (DeepSeek-V2/V3) and of a mixture of experts' first dense
// layers in the cost model: the deepseek-v3 preset against its model card, an MLA layer's FLOPs,
// memory and attention-core time worked by hand, dense layers placed on the stages that hold
// them, and the checks of the model file's mla object and dense_layers.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/kernel_time.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;
using Catch::Matchers::Contains;
using ppsim::test::error_of;
using ppsim::test::round_device;

namespace {

// 4 heads of 32 + 16 (rope) for Q and K, values of 64, latents of 64 (queries) and 32 (keys and
// values), on a 256-wide GELU layer.
ModelSpec tiny_mla() {
  ModelSpec m;
  m.name = "mla";
  m.layers = 4;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.head_dim = 32;
  m.qk_rope_head_dim = 16;
  m.v_head_dim = 64;
  m.q_lora_rank = 64;
  m.kv_lora_rank = 32;
  m.ffn = 1024;
  m.seq = 1024;
  m.vocab = 1000;
  m.recompute = Recompute::none;
  return m;
}


} // namespace

TEST_CASE("deepseek-v3 has its model card's parameters", "[run][model][mla]") {
  // DeepSeek-V3: 671B parameters, 36.6B activated (its README_WEIGHTS: the output head
  // included, the embedding not; counted here as for the other presets, with the embedding's
  // 0.93B). Its multi-token prediction module is not part of the preset.
  const ModelSpec ds = load_model("deepseek-v3");
  CHECK(ds.mla());
  CHECK(ds.dense_layers == 3);
  const AttentionShape a = attention_shape(ds);
  CHECK(a.params() == 7168.0 * (1536 + 512 + 64) + 1536.0 * 128 * 192 + 512.0 * 128 * 256 +
                          128.0 * 128 * 7168);
  CHECK(parameter_count(ds) / 1e9 == Approx(671.0).margin(0.05));
  const double embedding = 129280.0 * 7168;
  CHECK((active_parameter_count(ds) - embedding) / 1e9 == Approx(36.6).margin(0.05));
}

TEST_CASE("an MLA layer's projections, FLOPs and memory, worked by hand", "[run][model][mla]") {
  const ModelSpec m = tiny_mla();
  const AttentionShape a = attention_shape(m);
  CHECK(a.q == 4 * 48);
  CHECK(a.k == 4 * 48);
  CHECK(a.v == 4 * 64);
  CHECK(a.o == 4 * 64);
  REQUIRE(a.projections.size() == 4);
  // the down projections fused (h -> 64 + 32 + 16), the two up projections, the output one
  CHECK(a.projections[0].in == 256);
  CHECK(a.projections[0].out == 112);
  CHECK(a.projections[1].out == 4 * 48);
  CHECK(a.projections[2].in == 32);
  CHECK(a.projections[2].out == 4 * (32 + 64));
  CHECK(a.projections[3].row_parallel);
  const double T = 1024, h = 256, f = 1024;
  const double attention = 256.0 * 112 + 64.0 * 192 + 32.0 * 384 + 256.0 * 256;
  const LayerEstimate e = decoder_layer(m, Recompute::none);
  CHECK(e.params == attention + 2 * h * f + 2 * h + (64 + 32));
  const double G = 2 * T * (attention + 2 * h * f);
  // the core: QK^T over 48 and PV over 64 per head
  const double A = 2 * T * T * 4 * (48 + 64);
  CHECK(e.W_flops == G);
  CHECK(e.F_flops == G + A);
  CHECK(e.B_flops == G + 2 * A);
  // kept for B (bf16): Q, K, V and the projection's input, both latents twice, the MLP's, the
  // norms', the scores
  const double sbh = T * h;
  const double kept = 3 * sbh + 2 * T * (192 + 192 + 256 + 256) + 2 * T * 2 * (64 + 32) + 3 * sbh +
                      4 * T * f + 4 * sbh + 5 * 4 * T * T;
  CHECK(e.act_bytes == kept);
  // W's GEMMs' inputs and output gradients
  const double w = 2 * T * (256 + 112) + 2 * T * (64 + 192) + 2 * T * (32 + 384) + 2 * T * (256 + 256) +
                   2 * sbh + 4 * T * f + 2 * sbh;
  CHECK(e.mw_bytes == w);
}

TEST_CASE("an MLA layer's fused attention core is timed on its query-key and value widths", "[run][mla]") {
  const ModelSpec m = tiny_mla();
  const DeviceSpec d = round_device();
  const LayerTimes t = decoder_layer_times(m, d, {}, Recompute::none);
  // compute-bound: 2 s^2 b a (48 + 64) FLOPs at 50 TFLOP/s
  const double flops = 2.0 * 1024 * 1024 * 4 * (48 + 64);
  CHECK(t.F.attention == Approx(flops / 50e12 * 1e3));
  CHECK(t.B.attention == Approx(2 * flops / 50e12 * 1e3));
  // the same widths for every head give grouped-query attention's time: 4 heads of 56
  ModelSpec plain = m;
  plain.kv_lora_rank = plain.q_lora_rank = plain.qk_rope_head_dim = plain.v_head_dim = 0;
  plain.head_dim = 56;
  CHECK(decoder_layer_times(plain, d, {}, Recompute::none).F.attention == Approx(t.F.attention));
}

TEST_CASE("a mixture of experts' dense first layers sit on the stages that hold them", "[run][model][mla]") {
  ModelSpec m = tiny_mla();
  m.experts = 4;
  m.top_k = 2;
  m.expert_ffn = 512;
  ModelSpec dense = m;
  dense.dense_layers = 1;
  const DeviceSpec d = round_device();
  const Layout layout = default_layout(m.layers, 2);
  REQUIRE(layout.stages[0].decoders == 2);
  ModelSpec one_dense = m;
  one_dense.experts = one_dense.top_k = one_dense.expert_ffn = 0;
  const double moe_layer = decoder_layer(m).params, dense_layer = decoder_layer(one_dense).params;
  CHECK(parameter_count(dense) - parameter_count(m) == dense_layer - moe_layer);
  const ModelCosts all = model_costs(m, d, layout, 2, {.dp = 4, .ep = 4});
  const ModelCosts first = model_costs(dense, d, layout, 2, {.dp = 4, .ep = 4});
  // the first stage holds the dense layer, whole over its replicas; the second is as before
  const double experts_held = decoder_layer(m).expert_params / 4;
  CHECK(first.costs.stages[0].params ==
        Approx(all.costs.stages[0].params - (moe_layer - decoder_layer(m).expert_params) - experts_held +
               dense_layer));
  CHECK(first.costs.stages[1].params == all.costs.stages[1].params);
  CHECK(first.costs.stages[1].F == all.costs.stages[1].F);
  // one of the first stage's two layers has the all-to-alls
  CHECK(first.times[0].F.ep_comm == Approx(all.times[0].F.ep_comm / 2));
  // and with --overlap its sub-operations show one layer's dispatch and combine
  const ModelCosts over = model_costs(dense, d, layout, 2, {.dp = 4, .ep = 4, .overlap = OverlapMode::a2a});
  int comm_ops = 0;
  for (const SubOp& op : over.costs.stages[0].F_ops) comm_ops += op.comm ? 1 : 0;
  CHECK(comm_ops == 2);
}

TEST_CASE("bad mla objects and dense_layers are refused with what is wrong", "[run][mla][errors]") {
  const std::string base = R"({"schema": "ppsim.model/1", "layers": 2, "hidden": 64, "heads": 4,
                               "seq": 16, "vocab": 100, )";
  const auto error = [&](const std::string& body) {
    return error_of<ConfigError>([&] { (void)parse_model_json(base + body + "}", "m.json"); });
  };
  const ModelSpec m = parse_model_json(
      base + R"("mla": {"kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
                          "v_head_dim": 16}})",
      "m.json");
  CHECK(m.mla());
  CHECK(m.q_lora_rank == 0);
  CHECK(m.kv_heads == 4);
  // without a query latent the queries come from the hidden state: h -> q + kv latent + rope
  CHECK(attention_shape(m).projections.size() == 3);
  CHECK(attention_shape(m).projections[0].out == 4 * 24 + 32 + 8);
  CHECK_THAT(error(R"("mla": {"qk_nope_head_dim": 16, "v_head_dim": 16})"),
             Contains("/mla/kv_lora_rank") && Contains("missing"));
  CHECK_THAT(error(R"("mla": {"kv_lora_rank": 32, "qk_nope_head_dim": 16})"),
             Contains("/mla/v_head_dim") && Contains("missing"));
  CHECK_THAT(error(R"("mla": {"kv_lora_rank": 0, "qk_nope_head_dim": 16, "v_head_dim": 16})"),
             Contains("/mla/kv_lora_rank"));
  CHECK_THAT(error(R"("head_dim": 16, "mla": {"kv_lora_rank": 8, "qk_nope_head_dim": 16, "v_head_dim": 16})"),
             Contains("/head_dim") && Contains("qk_nope_head_dim"));
  CHECK_THAT(error(R"("kv_heads": 2, "mla": {"kv_lora_rank": 8, "qk_nope_head_dim": 16, "v_head_dim": 16})"),
             Contains("/kv_heads") && Contains("kv_heads = heads=4"));
  CHECK_THAT(error(R"("mla": {"kv_lora_rank": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "x": 1})"),
             Contains("/mla"));
  CHECK_THAT(error(R"("moe": {"experts": 4, "top_k": 1, "expert_ffn": 8, "dense_layers": 3})"),
             Contains("/moe/dense_layers") && Contains("dense_layers=3 is more than layers=2"));
  CHECK_THAT(error(R"("moe": {"experts": 4, "top_k": 1, "expert_ffn": 8, "dense_layers": -1})"),
             Contains("/moe/dense_layers"));
  // a spec built in code is checked the same way
  ModelSpec stray = tiny_mla();
  stray.kv_lora_rank = 0;
  CHECK_THAT(error_of<ConfigError>([&] { check_model(stray, "x"); }), Contains("need kv_lora_rank > 0"));
  ModelSpec dense_only = tiny_mla();
  dense_only.dense_layers = 1;
  CHECK_THAT(error_of<ConfigError>([&] { check_model(dense_only, "x"); }), Contains("dense_layers needs experts"));
}
