// Tests of the models' documents: the presets, costs' model section, validate-model's outcome.
#include "ppsim/viz/models.hpp"

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/viz/page_assets.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>

using namespace ppsim;

namespace {

const ModelSpec& model_named(std::string_view name) {
  const auto presets = model_presets();
  const auto it = std::find_if(presets.begin(), presets.end(),
                               [&](const ModelSpec& m) { return m.name == name; });
  REQUIRE(it != presets.end());
  return *it;
}

} // namespace

TEST_CASE("the models' document: every preset in ppsim.model/1's names, experts and latent "
          "attention where they apply",
          "[viz][models]") {
  const auto presets = model_presets();
  const auto doc = nlohmann::json::parse(models_json(presets));
  REQUIRE(doc.size() == presets.size());
  // in ppsim.model/1's order: the name first, then its parameter count
  const auto ordered = nlohmann::ordered_json::parse(models_json(presets));
  CHECK(ordered[0].begin().key() == "name");
  CHECK(std::next(ordered[0].begin()).key() == "parameters");
  for (std::size_t i = 0; i < presets.size(); ++i) {
    const ModelSpec& m = presets[i];
    const auto& e = doc[i];
    CHECK(e["name"] == m.name);
    CHECK(e["parameters"] == parameter_count(m));
    CHECK(e["layers"] == m.layers);
    CHECK(e["hidden"] == m.hidden);
    CHECK(e["recompute"] == recompute_name(m.recompute));
    CHECK(e.contains("moe") == m.moe());
    CHECK(e.contains("active_parameters") == m.moe());
    CHECK(e.contains("mla") == m.mla());
    if (m.mla()) CHECK_FALSE(e.contains("head_dim"));
  }
  const auto dense = nlohmann::json::parse(models_json(std::span(&model_named("zb-1.5b"), 1)));
  CHECK(dense[0]["ffn"] == 4 * 2304);
  CHECK(dense[0]["mlp"] == "gelu");
  const ModelSpec& v3 = model_named("deepseek-v3");
  const auto moe = nlohmann::json::parse(models_json(std::span(&v3, 1)))[0];
  CHECK(moe["moe"]["experts"] == v3.experts);
  CHECK(moe["moe"]["top_k"] == v3.top_k);
  CHECK(moe["mla"]["kv_lora_rank"] == v3.kv_lora_rank);
  CHECK(moe["active_parameters"] == active_parameter_count(v3));
  CHECK(moe["active_parameters"].get<double>() < moe["parameters"].get<double>());
}

TEST_CASE("costs' model section: the workload, and per stage where each task's time goes",
          "[viz][models]") {
  WorkloadSpec w;
  w.model = model_named("zb-1.5b");
  w.device = load_device("h100");
  w.training.dp = 2;
  const Layout layout = workload_layout(w, 4, 1);
  const ModelCosts mc = model_costs(w.model, w.device, layout, 4, w.training);
  const auto file = nlohmann::json::parse(model_costs_json(w, mc, layout, 4));
  CHECK(file["schema"] == "ppsim.costs/1");
  CHECK(file["description"] == "zb-1.5b on h100, 4 devices");
  CHECK(file["stages"].size() == mc.costs.stages.size());
  const auto& doc = file["model"];
  CHECK(doc["name"] == "zb-1.5b");
  CHECK(doc["device"] == "h100");
  CHECK(doc["peak_tflops"] == w.device.peak_tflops);
  CHECK(doc["layout"] == layout_text(layout));
  CHECK(doc["dp"] == 2);
  CHECK(doc["message_bytes"] == mc.message_bytes);
  REQUIRE(doc["breakdown"].size() == mc.times.size());
  REQUIRE(mc.times.size() == 4);
  for (std::size_t i = 0; i < mc.times.size(); ++i) {
    const auto& s = doc["breakdown"][i];
    CHECK(s["F"]["gemm_ms"] == mc.times[i].F.gemm);
    CHECK(s["B"]["memory_ms"] == mc.times[i].B.memory);
    CHECK(s["W"]["overhead_ms"] == mc.times[i].W.overhead);
    CHECK(s["optimizer_ms"] == mc.optimizer_ms[i]);
  }
  ModelCosts bare = mc;
  bare.times.clear();
  CHECK_FALSE(nlohmann::json::parse(model_costs_json(w, bare, layout, 4))["model"].contains("breakdown"));
}

TEST_CASE("validate-model's document: every run with its prediction, the two summaries",
          "[viz][models]") {
  const PublishedRuns runs =
      parse_published_json(published_megatron_2021(), "data/published/megatron-2021.json");
  const Validation v = validate_published(runs);
  const auto doc = nlohmann::json::parse(validation_json(runs, v));
  CHECK(doc["schema"] == "ppsim.validation/1");
  CHECK(doc["source"] == runs.source);
  CHECK(doc["flops"] == "narayanan2021");
  REQUIRE(doc["rows"].size() == v.rows.size());
  std::size_t fitted = 0;
  for (std::size_t i = 0; i < v.rows.size(); ++i) {
    const auto& e = doc["rows"][i];
    CHECK(e["name"] == v.rows[i].run.name);
    CHECK(e["use"] == (v.rows[i].run.fit ? "fit" : "check"));
    CHECK(e["predicted_tflops"] == v.rows[i].predicted_tflops);
    CHECK(e["error"] == v.rows[i].error);
    fitted += e["use"] == "fit";
  }
  CHECK(doc["fit"]["runs"] == fitted);
  CHECK(doc["fit"]["runs"] == 4);
  CHECK(doc["check"]["runs"] == 6);
  CHECK(doc["check"]["max_abs_error"] == v.check.max_abs_error);
}
