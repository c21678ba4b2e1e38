// Tests of mixtures of experts in the cost model: the presets against their model cards, a
// layer's FLOPs and parameters worked by hand, expert parallelism (the experts a rank holds,
// the all-to-all over NVLink and InfiniBand), the sub-operations --overlap gives a stage, and
// the checks of --ep, --streams and the model file's moe object.
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

// 4 experts of 512, top-2, on a 256-wide GELU layer.
ModelSpec tiny_moe() {
  ModelSpec m;
  m.name = "moe";
  m.layers = 4;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn = 1024;
  m.seq = 128;
  m.microbatch_size = 1;
  m.vocab = 1000;
  m.experts = 4;
  m.top_k = 2;
  m.expert_ffn = 512;
  return m;
}


} // namespace

TEST_CASE("the mixture-of-experts presets have their model cards' parameters", "[run][model][moe]") {
  // Mixtral-8x7B: 46.7B, 12.9B active (Mistral AI); Qwen3-30B-A3B: 30.5B, 3.3B active (Qwen's
  // card; 3.35B with its untied embeddings counted, as here).
  const ModelSpec mixtral = load_model("mixtral-8x7b");
  CHECK(parameter_count(mixtral) / 1e9 == Approx(46.70).margin(0.05));
  CHECK(active_parameter_count(mixtral) / 1e9 == Approx(12.9).margin(0.05));
  const ModelSpec qwen = load_model("qwen3-moe-30b-a3b");
  CHECK(qwen.head_width() == 128);
  CHECK(parameter_count(qwen) / 1e9 == Approx(30.5).margin(0.05));
  CHECK(active_parameter_count(qwen) / 1e9 == Approx(3.3).margin(0.06));  // 3.35B
  // a dense model is all active
  const ModelSpec llama = load_model("llama3-8b");
  CHECK(active_parameter_count(llama) == parameter_count(llama));
}

TEST_CASE("a mixture-of-experts layer's FLOPs and parameters, worked by hand", "[run][model][moe]") {
  const ModelSpec m = tiny_moe();
  const double T = 128, h = 256, E = 4, k = 2, fe = 512;
  const LayerEstimate e = decoder_layer(m, Recompute::none);
  const double attention = 4 * h * h;
  const double expert = 2 * h * fe;  // GELU: up and down
  CHECK(e.expert_params == E * expert);
  CHECK(e.params == attention + h * E + E * expert + 2 * h);
  // GEMMs: attention, the router, and top_k experts per token; attention core 4 b s^2 h
  const double G = 2 * T * attention + 2 * T * h * E + 2 * T * k * expert;
  CHECK(e.W_flops == G);
  CHECK(e.F_flops == G + 4 * T * T * h);
  // a capacity factor of 1.5 pads every expert's tokens by half
  ModelSpec padded = m;
  padded.capacity_factor = 1.5;
  CHECK(decoder_layer(padded, Recompute::none).W_flops == G + 2 * T * k * expert * 0.5);
  // shared experts: a dense MLP of shared x expert_ffn every token passes
  ModelSpec shared = m;
  shared.shared_experts = 1;
  CHECK(decoder_layer(shared, Recompute::none).params == e.params + expert);
  CHECK(decoder_layer(shared, Recompute::none).W_flops == G + 2 * T * expert);
}

TEST_CASE("an expert all-to-all goes over NVLink within a node and InfiniBand across", "[run][moe]") {
  const DeviceSpec d = round_device();  // 8 devices a node
  CHECK(expert_all_to_all_ms(d, 1e9, 1, 1) == 0);
  // 4 ranks on one node: 3/4 of the bytes leave over NVLink: 0.75 GB / 200 GB/s
  CHECK(expert_all_to_all_ms(d, 1e9, 4, 1) == Approx(3.75));
  // 16 ranks on two nodes: 7/16 over NVLink (2.19 ms), 8/16 over InfiniBand (10 ms) at once
  CHECK(expert_all_to_all_ms(d, 1e9, 16, 1) == Approx(10.0));
  // with --tp 4 the ranks lie 4 apart: two a node, so 4 ranks span two nodes
  CHECK(expert_all_to_all_ms(d, 1e9, 4, 4) == Approx(2.0 / 4 / 50 * 1e3));
}

TEST_CASE("expert parallelism (--ep) divides the experts a rank holds and times the all-to-alls", "[run][moe]") {
  const ModelSpec m = tiny_moe();
  const DeviceSpec d = round_device();
  const Layout layout = default_layout(m.layers, 2);
  const ModelCosts one = model_costs(m, d, layout, 2, {});
  const ModelCosts four = model_costs(m, d, layout, 2, {.dp = 4, .ep = 4});
  const double experts = 2 * decoder_layer(m).expert_params;  // two layers a stage
  CHECK(one.costs.stages[1].params - four.costs.stages[1].params == Approx(experts * 3 / 4));
  CHECK(one.times[1].F.ep_comm == 0);
  CHECK(four.times[1].F.ep_comm > 0);
  CHECK(four.times[1].F.ep_comm == Approx(four.times[1].B.ep_comm));
  CHECK(four.times[1].W.ep_comm == 0);
  // per layer two each way over T top_k h bytes: 128 x 2 x 256 x 2 bytes, 3/4 of it on NVLink
  const double a2a = 128 * 2 * 256 * 2.0 * 3 / 4 / 200 * 1e-6;
  CHECK(four.times[1].F.ep_comm == Approx(2 * 2 * a2a));
}

TEST_CASE("overlap (--overlap) gives every stage its sub-operations; none leaves the costs as they were",
          "[run][moe]") {
  const ModelSpec m = tiny_moe();
  const DeviceSpec d = round_device();
  const Layout layout = default_layout(m.layers, 2);
  const ModelCosts plain = model_costs(m, d, layout, 2, {.dp = 4, .ep = 4});
  for (const StageCosts& c : plain.costs.stages) CHECK(c.F_ops.empty());
  const ModelCosts over = model_costs(m, d, layout, 2, {.dp = 4, .ep = 4, .overlap = OverlapMode::a2a});
  REQUIRE(over.costs.stages.size() == 2);
  const StageCosts& c = over.costs.stages[1];
  CHECK(c.F == plain.costs.stages[1].F);
  CHECK(c.B == plain.costs.stages[1].B);
  // per layer: attention, dispatch, experts, combine
  REQUIRE(c.F_ops.size() >= 4);
  double comm = 0, total = 0;
  for (const SubOp& op : c.F_ops) {
    total += op.share;
    if (op.comm) comm += op.share;
  }
  CHECK(total == Approx(1.0));
  CHECK(comm == Approx(over.times[1].F.ep_comm / over.times[1].F.total()));
  // the backward starts with the combine's gradient; BW holds B's and W's time
  CHECK(c.B_ops.size() >= 4);
  CHECK(!c.BW_ops.empty());
  // `full` puts the TP collectives on the stream too; without --tp there are none
  ModelSpec dense = m;
  dense.experts = 0;
  const ModelCosts tp = model_costs(dense, d, layout, 2, {.tp = 2, .overlap = OverlapMode::full});
  bool any_comm = false;
  for (const SubOp& op : tp.costs.stages[1].F_ops) any_comm = any_comm || op.comm;
  CHECK(any_comm);
  const ModelCosts inside = model_costs(dense, d, layout, 2, {.tp = 2, .overlap = OverlapMode::a2a});
  for (const SubOp& op : inside.costs.stages[1].F_ops) CHECK(!op.comm);
}

TEST_CASE("bad --ep, --streams and moe objects are refused with what is wrong", "[run][moe][errors]") {
  const Layout layout = default_layout(4, 2);
  const DeviceSpec d = round_device();
  ModelSpec dense = tiny_moe();
  dense.experts = 0;
  CHECK_THAT(error_of<ConfigError>([&] { (void)model_costs(dense, d, layout, 2, {.dp = 2, .ep = 2}); }),
             Contains("--ep 2: moe has no experts"));
  CHECK_THAT(error_of<ConfigError>([&] { (void)model_costs(tiny_moe(), d, layout, 2, {.dp = 3, .ep = 3}); }),
             Contains("--ep 3: does not divide the 4 experts"));
  CHECK_THAT(error_of<ConfigError>([&] { (void)model_costs(tiny_moe(), d, layout, 2, {.ep = 4}); }),
             Contains("give --dp 4"));
  CHECK_THAT(error_of<ConfigError>([&] { (void)model_costs(tiny_moe(), d, layout, 2, {.ep = 0}); }),
             Contains("--ep 0: expected 1.."));
  CHECK_THAT(error_of<ConfigError>(
                 [&] { (void)model_costs(tiny_moe(), d, layout, 2, {.comm_streams = 99}); }),
             Contains("--streams 99"));
  const std::string base = R"({"schema": "ppsim.model/1", "layers": 2, "hidden": 64, "heads": 4,
                               "seq": 16, "vocab": 100, )";
  CHECK_THAT(error_of<ConfigError>([&] {
               (void)parse_model_json(base + R"("moe": {"experts": 4, "top_k": 5, "expert_ffn": 8}})", "m.json");
             }),
             Contains("/moe/top_k") && Contains("top_k=5 is more than experts=4"));
  CHECK_THAT(error_of<ConfigError>([&] {
               (void)parse_model_json(base + R"("moe": {"experts": 4, "top_k": 1}})", "m.json");
             }),
             Contains("/moe/expert_ffn") && Contains("missing"));
  CHECK_THAT(error_of<ConfigError>([&] {
               (void)parse_model_json(
                   base + R"("moe": {"experts": 4, "top_k": 1, "expert_ffn": 8, "capacity_factor": 0.5}})",
                   "m.json");
             }),
             Contains("/moe/capacity_factor"));
  CHECK_THAT(error_of<ConfigError>([&] {
               (void)parse_model_json(base + R"("moe": {"experts": 4, "top_k": 1, "expert_ffn": 8, "x": 1}})",
                                      "m.json");
             }),
             Contains("/moe"));
  // head_dim lets heads not divide hidden; without it they must
  const std::string three = R"({"schema": "ppsim.model/1", "layers": 2, "hidden": 64, "heads": 3,
                                "seq": 16, "vocab": 100)";
  CHECK(parse_model_json(three + R"(, "head_dim": 32})", "m.json").head_width() == 32);
  CHECK_THAT(error_of<ConfigError>([&] { (void)parse_model_json(three + "}", "m.json"); }),
             Contains("heads=3 does not divide hidden=64"));
}
