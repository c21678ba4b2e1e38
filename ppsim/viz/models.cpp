// The documents about models: the presets, costs' model section, validate-model's outcome.
#include "ppsim/viz/models.hpp"

#include "ppsim/io/detail/cost_document.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/viz/detail/documents.hpp"
#include "ppsim/viz/page_assets.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using ojson = nlohmann::ordered_json;

ojson summary_json(const ValidationSummary& s) {
  ojson j;
  j["runs"] = s.count;
  j["mean_abs_error"] = s.mean_abs_error;
  j["max_abs_error"] = s.max_abs_error;
  return j;
}

// A model's shape as JSON, in ppsim.model/1's key names, with its parameter count.
ojson model_json(const ModelSpec& m) {
  ojson j;
  j["name"] = m.name;
  j["parameters"] = parameter_count(m);
  if (m.moe()) j["active_parameters"] = active_parameter_count(m);
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["ffn"] = m.ffn;
  j["seq"] = m.seq;
  j["microbatch_size"] = m.microbatch_size;
  j["vocab"] = m.vocab;
  j["dtype"] = m.dtype;
  j["recompute"] = recompute_name(m.recompute);
  j["mlp"] = mlp_name(m.mlp);
  j["tied_embeddings"] = m.tied_embeddings;
  if (m.head_dim > 0 && !m.mla()) j["head_dim"] = m.head_dim;
  if (m.mla()) {
    ojson a;
    a["kv_lora_rank"] = m.kv_lora_rank;
    a["q_lora_rank"] = m.q_lora_rank;
    a["qk_nope_head_dim"] = m.head_dim;
    a["qk_rope_head_dim"] = m.qk_rope_head_dim;
    a["v_head_dim"] = m.v_head_dim;
    j["mla"] = std::move(a);
  }
  if (m.moe()) {
    ojson e;
    e["experts"] = m.experts;
    e["top_k"] = m.top_k;
    e["expert_ffn"] = m.expert_ffn;
    e["shared_experts"] = m.shared_experts;
    e["capacity_factor"] = m.capacity_factor;
    if (m.dense_layers > 0) e["dense_layers"] = m.dense_layers;
    j["moe"] = std::move(e);
  }
  return j;
}

// The `model` section of the costs of `w` (model_costs_json).
ojson model_section(const WorkloadSpec& w, const ModelCosts& mc, const Layout& layout) {
  ojson j = model_json(w.model);
  j["source"] = w.model.source;
  j["device"] = w.device.name;
  j["device_source"] = w.device.source;
  j["peak_tflops"] = w.device.peak_tflops;
  j["layout"] = layout_text(layout);
  j["message_bytes"] = mc.message_bytes;
  j["dp"] = w.training.dp;
  j["zero"] = w.training.zero;
  j["tp"] = w.training.tp;
  j["ep"] = w.training.ep;
  j["overlap"] = overlap_name(w.training.overlap);
  if (!mc.times.empty()) {
    // where each stage's time goes, per task kind (B without R, R its recomputed forward)
    const auto parts = [](const TimeParts& t) {
      ojson e;
      e["gemm_ms"] = t.gemm;
      e["attention_ms"] = t.attention;
      e["memory_ms"] = t.memory;
      e["tp_comm_ms"] = t.tp_comm;
      e["ep_comm_ms"] = t.ep_comm;
      e["overhead_ms"] = t.overhead;
      return e;
    };
    ojson stages = ojson::array();
    for (std::size_t i = 0; i < mc.times.size(); ++i) {
      ojson e;
      e["F"] = parts(mc.times[i].F);
      e["B"] = parts(mc.times[i].B);
      e["W"] = parts(mc.times[i].W);
      e["R"] = parts(mc.times[i].R);
      e["optimizer_ms"] = mc.optimizer_ms[i];
      stages.push_back(std::move(e));
    }
    j["breakdown"] = std::move(stages);
  }
  return j;
}

} // namespace

std::string models_json(std::span<const ModelSpec> models) {
  ojson all = ojson::array();
  for (const ModelSpec& m : models) all.push_back(model_json(m));
  return all.dump(2);
}

namespace detail {

ojson model_costs_document(const WorkloadSpec& w, const ModelCosts& mc, const Layout& layout,
                           int devices) {
  ojson doc = detail::cost_spec_document(
      mc.costs, fmt::format("{} on {}, {} devices", w.model.name, w.device.name, devices));
  doc["model"] = model_section(w, mc, layout);
  return doc;
}

ojson validation_document(const PublishedRuns& runs, const Validation& v) {
  ojson doc;
  doc["schema"] = "ppsim.validation/1";
  doc["source"] = runs.source;
  doc["flops"] = runs.flops;
  ojson rows = ojson::array();
  for (const ValidationRow& r : v.rows) {
    ojson e;
    e["name"] = r.run.name;
    e["use"] = r.run.fit ? "fit" : "check";
    e["source"] = r.run.source;
    e["device"] = r.run.device.name;
    e["schedule"] = r.run.schedule;
    e["tp"] = r.run.tp;
    e["pp"] = r.run.pp;
    e["dp"] = r.dp;
    e["microbatches"] = r.microbatches;
    e["measured_tflops"] = r.run.measured_tflops;
    e["predicted_tflops"] = r.predicted_tflops;
    e["error"] = r.error;
    e["iteration_ms"] = r.iteration_ms;
    e["bubble_rate"] = r.bubble_rate;
    e["peak_gib"] = r.peak_gib;
    rows.push_back(std::move(e));
  }
  doc["rows"] = std::move(rows);
  doc["fit"] = summary_json(v.fit);
  doc["check"] = summary_json(v.check);
  return doc;
}

} // namespace detail

std::string model_costs_json(const WorkloadSpec& w, const ModelCosts& mc, const Layout& layout,
                             int devices) {
  return detail::model_costs_document(w, mc, layout, devices).dump(2) + "\n";
}

PublishedRuns builtin_published_runs() {
  return parse_published_json(published_megatron_2021(),
                              "data/published/megatron-2021.json (built in)");
}

std::string validation_json(const PublishedRuns& runs, const Validation& v) {
  return detail::validation_document(runs, v).dump(2);
}

} // namespace ppsim
