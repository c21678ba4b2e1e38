// Model presets and ppsim.model/1 files.
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <array>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using nlohmann::json;
using detail::JsonReader;

constexpr int kMaxHidden = 1 << 20;
constexpr int kMaxHeads = 1 << 14;
using limits::kMaxSeq;
constexpr int kMaxMicrobatchSize = 1 << 16;
constexpr int kMaxVocab = 1 << 24;
constexpr int kMaxExperts = 1 << 16;

ModelSpec preset(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn,
                 int seq, int b, int vocab, bool tied, MlpKind mlp,
                 Recompute recompute = Recompute::none) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.seq = seq;
  m.microbatch_size = b;
  m.vocab = vocab;
  m.tied_embeddings = tied;
  m.mlp = mlp;
  m.recompute = recompute;
  m.source = "preset " + m.name;
  return m;
}

// A mixture of experts over a preset's attention: every layer's MLP replaced by `experts` of
// width `expert_ffn`, `top_k` per token.
ModelSpec moe(ModelSpec m, int head_dim, int experts, int top_k, int expert_ffn) {
  m.head_dim = head_dim;
  m.experts = experts;
  m.top_k = top_k;
  m.expert_ffn = expert_ffn;
  return m;
}

// DeepSeek's multi-head latent attention and first dense layers over a mixture of experts.
ModelSpec latent(ModelSpec m, int q_lora, int kv_lora, int rope, int v_head, int shared, int dense) {
  m.q_lora_rank = q_lora;
  m.kv_lora_rank = kv_lora;
  m.qk_rope_head_dim = rope;
  m.v_head_dim = v_head;
  m.shared_experts = shared;
  m.dense_layers = dense;
  return m;
}

} // namespace

double AttentionShape::params() const {
  double n = 0;
  for (const Projection& p : projections) n += p.in * p.out;
  return n;
}

AttentionShape attention_shape(const ModelSpec& m) {
  AttentionShape a;
  const double heads = m.heads, h = m.hidden, dh = m.head_width();
  if (!m.mla()) {
    a.head_qk = a.head_v = dh;
    a.q = a.o = dh * heads;
    a.k = a.v = dh * m.kv_heads;
    a.projections = {{h, a.q + a.k + a.v, false}, {a.o, h, true}};
    return a;
  }
  const double rope = m.qk_rope_head_dim, cq = m.q_lora_rank, ckv = m.kv_lora_rank;
  a.head_qk = dh + rope;
  a.head_v = m.v_head_dim;
  a.q = a.k = a.head_qk * heads;
  a.v = a.o = a.head_v * heads;
  a.latent = 2 * (cq + ckv);
  a.projections.push_back({h, (cq > 0 ? cq : a.q) + ckv + rope, false});
  if (cq > 0) a.projections.push_back({cq, a.q, false});
  a.projections.push_back({ckv, heads * (dh + a.head_v), false});
  a.projections.push_back({a.o, h, true});
  return a;
}

std::string_view recompute_name(Recompute r) {
  switch (r) {
  case Recompute::none: return "none";
  case Recompute::selective: return "selective";
  case Recompute::full: return "full";
  }
  return "?";
}

std::string_view mlp_name(MlpKind m) { return m == MlpKind::gelu ? "gelu" : "swiglu"; }

std::span<const ModelSpec> model_presets() {
  // NOTE: the zero-bubble paper's models (Table 3: layers, heads, hidden, sequence 1024,
  // micro-batch size) with its training recipe's 32,000-token SentencePiece vocabulary and
  // tied embeddings: 12 L h^2 + V h is then 1.48B, 6.17B, 14.63B and 28.28B parameters, the
  // names' 1.5B, 6.2B, 14.6B and 28.3B. Their layer counts are k p - 2 (one layer fewer on the
  // first and last stage, for the embedding and the loss).
  static const std::array<ModelSpec, 11> presets = {
      preset("zb-1.5b", 22, 2304, 24, 24, 4 * 2304, 1024, 6, 32000, true, MlpKind::gelu),
      preset("zb-6.2b", 30, 4096, 32, 32, 4 * 4096, 1024, 3, 32000, true, MlpKind::gelu),
      preset("zb-14.6b", 46, 5120, 40, 40, 4 * 5120, 1024, 1, 32000, true, MlpKind::gelu),
      preset("zb-28.3b", 62, 6144, 48, 48, 4 * 6144, 1024, 1, 32000, true, MlpKind::gelu),
      // Brown et al. 2020, Table 2.1; GPT-2's tokenizer.
      preset("gpt3-175b", 96, 12288, 96, 96, 4 * 12288, 2048, 1, 50257, true, MlpKind::gelu),
      // Meta's Llama 3 / 3.1 model cards: grouped-query attention with 8 KV heads, SwiGLU;
      // trained with flash attention, which keeps no s^2 scores: "selective" in memory.
      preset("llama3-8b", 32, 4096, 32, 8, 14336, 8192, 1, 128256, false, MlpKind::swiglu,
             Recompute::selective),
      preset("llama3-70b", 80, 8192, 64, 8, 28672, 8192, 1, 128256, false, MlpKind::swiglu,
             Recompute::selective),
      preset("llama3-405b", 126, 16384, 128, 8, 53248, 8192, 1, 128256, false, MlpKind::swiglu,
             Recompute::selective),
      // Mixtral-8x7B's config.json (mistralai/Mixtral-8x7B-v0.1): 32 layers, hidden 4096, 32
      // heads of 128, 8 KV heads, 8 experts of 14336 (SwiGLU), top-2, vocabulary 32000, untied.
      moe(preset("mixtral-8x7b", 32, 4096, 32, 8, 14336, 4096, 1, 32000, false, MlpKind::swiglu,
                 Recompute::selective),
          128, 8, 2, 14336),
      // Qwen3-30B-A3B's config.json (Qwen/Qwen3-30B-A3B): 48 layers, hidden 2048, 32 heads of
      // 128 (so 4096 wide), 4 KV heads, 128 experts of 768, top-8, no shared expert, vocabulary
      // 151936, untied.
      moe(preset("qwen3-moe-30b-a3b", 48, 2048, 32, 4, 6144, 4096, 1, 151936, false,
                 MlpKind::swiglu, Recompute::selective),
          128, 128, 8, 768),
      // DeepSeek-V3's config.json (deepseek-ai/DeepSeek-V3): 61 layers, hidden 7168, 128 heads,
      // multi-head latent attention (q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
      // qk_rope_head_dim 64, v_head_dim 128), the first 3 layers dense (intermediate 18432), the
      // others 256 routed experts of 2048 with top-8 and 1 shared expert, vocabulary 129280,
      // untied; sequence 4096 as its pre-training (DeepSeek-V3 report, 4.3). Its multi-token
      // prediction module is not in the preset (a layout's `m` places one).
      latent(moe(preset("deepseek-v3", 61, 7168, 128, 128, 18432, 4096, 1, 129280, false,
                        MlpKind::swiglu, Recompute::selective),
                 128, 256, 8, 2048),
             1536, 512, 64, 128, 1, 3),
  };
  return presets;
}

void check_model(const ModelSpec& m, std::string_view where) {
  const auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw ConfigError(fmt::format("{}: {}", where, what));
  };
  need(m.layers >= 1 && m.layers <= limits::kMaxLayers,
       fmt::format("layers={} (expected 1..{})", m.layers, limits::kMaxLayers));
  need(m.hidden >= 1 && m.hidden <= kMaxHidden,
       fmt::format("hidden={} (expected 1..{})", m.hidden, kMaxHidden));
  need(m.heads >= 1 && m.heads <= kMaxHeads,
       fmt::format("heads={} (expected 1..{})", m.heads, kMaxHeads));
  need(m.head_dim > 0 || m.hidden % m.heads == 0,
       fmt::format("heads={} does not divide hidden={} (or give head_dim)", m.heads, m.hidden));
  need(m.head_dim >= 0 && m.head_dim <= kMaxHidden,
       fmt::format("head_dim={} (expected 1..{})", m.head_dim, kMaxHidden));
  need(static_cast<double>(m.heads) * m.head_width() <= 64.0 * kMaxHidden,
       fmt::format("heads={} x head_dim={} is too wide", m.heads, m.head_width()));
  need(m.experts >= 0 && m.experts <= kMaxExperts,
       fmt::format("experts={} (expected 0..{})", m.experts, kMaxExperts));
  if (m.moe()) {
    need(m.top_k >= 1 && m.top_k <= m.experts,
         fmt::format("top_k={} (expected 1..experts={})", m.top_k, m.experts));
    need(m.expert_ffn >= 1 && m.expert_ffn <= 64 * kMaxHidden,
         fmt::format("expert_ffn={} must be positive", m.expert_ffn));
    need(m.shared_experts >= 0 && m.shared_experts <= kMaxExperts,
         fmt::format("shared_experts={} (expected 0..{})", m.shared_experts, kMaxExperts));
    need(m.capacity_factor == 0 || (m.capacity_factor >= 1 && m.capacity_factor <= 64),
         fmt::format("capacity_factor={} (expected 0 for dropless, or 1..64)", m.capacity_factor));
  }
  need(m.dense_layers >= 0 && m.dense_layers <= m.layers,
       fmt::format("dense_layers={} (expected 0..layers={})", m.dense_layers, m.layers));
  need(m.moe() || m.dense_layers == 0, "dense_layers needs experts (moe)");
  if (m.mla()) {
    need(m.kv_lora_rank <= kMaxHidden,
         fmt::format("kv_lora_rank={} (expected 1..{})", m.kv_lora_rank, kMaxHidden));
    need(m.q_lora_rank >= 0 && m.q_lora_rank <= kMaxHidden,
         fmt::format("q_lora_rank={} (expected 0..{})", m.q_lora_rank, kMaxHidden));
    need(m.qk_rope_head_dim >= 0 && m.qk_rope_head_dim <= kMaxHidden,
         fmt::format("qk_rope_head_dim={} (expected 0..{})", m.qk_rope_head_dim, kMaxHidden));
    need(m.v_head_dim >= 1 && m.v_head_dim <= kMaxHidden,
         fmt::format("v_head_dim={} (expected 1..{})", m.v_head_dim, kMaxHidden));
    need(m.head_dim >= 1, "mla needs head_dim (its qk_nope_head_dim)");
    need(m.kv_heads == m.heads,
         fmt::format("kv_heads={}: multi-head latent attention has kv_heads = heads={}",
                     m.kv_heads, m.heads));
    need(static_cast<double>(m.heads) * (m.head_dim + m.qk_rope_head_dim + m.v_head_dim) <=
             64.0 * kMaxHidden,
         fmt::format("heads={} x (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) is too wide",
                     m.heads));
  } else {
    need(m.kv_lora_rank == 0 && m.q_lora_rank == 0 && m.qk_rope_head_dim == 0 && m.v_head_dim == 0,
         "q_lora_rank, qk_rope_head_dim and v_head_dim need kv_lora_rank > 0 (mla)");
  }
  need(m.kv_heads >= 1 && m.heads % m.kv_heads == 0,
       fmt::format("kv_heads={} does not divide heads={}", m.kv_heads, m.heads));
  need(m.ffn >= 1 && m.ffn <= 64 * kMaxHidden, fmt::format("ffn={} must be positive", m.ffn));
  need(m.seq >= 1 && m.seq <= kMaxSeq, fmt::format("seq={} (expected 1..{})", m.seq, kMaxSeq));
  need(m.microbatch_size >= 1 && m.microbatch_size <= kMaxMicrobatchSize,
       fmt::format("microbatch_size={} (expected 1..{})", m.microbatch_size, kMaxMicrobatchSize));
  need(m.vocab >= 1 && m.vocab <= kMaxVocab,
       fmt::format("vocab={} (expected 1..{})", m.vocab, kMaxVocab));
  need(m.dtype == "bf16" || m.dtype == "fp16" || m.dtype == "fp32",
       fmt::format("dtype '{}' (expected bf16, fp16 or fp32)", excerpt(m.dtype)));
}

ModelSpec parse_model_json(std::string_view text, std::string_view where) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  ModelSpec m;
  m.name = "model";
  m.source = std::string(where);
  const auto integer = [&r](int& field, int lo, int hi) {
    return [&r, &field, lo, hi](const json& v, const std::string& at) {
      field = r.integer(v, at, lo, hi);
    };
  };
  const detail::Field moe_fields[] = {
      {"experts", true, "missing", integer(m.experts, 1, kMaxExperts)},
      {"top_k", true, "missing", integer(m.top_k, 1, kMaxExperts)},
      {"expert_ffn", true, "missing", integer(m.expert_ffn, 1, 64 * kMaxHidden)},
      {"shared_experts", false, "", integer(m.shared_experts, 0, kMaxExperts)},
      {"capacity_factor", false, "",
       [&](const json& v, const std::string& at) {
         m.capacity_factor = r.number(v, at);
         if (m.capacity_factor != 0 && (m.capacity_factor < 1 || m.capacity_factor > 64))
           r.fail(at, fmt::format("{}: expected 0 (dropless) or 1..64", m.capacity_factor));
       }},
      {"dense_layers", false, "", integer(m.dense_layers, 0, limits::kMaxLayers)},
  };
  const detail::Field mla_fields[] = {
      {"kv_lora_rank", true, "missing", integer(m.kv_lora_rank, 1, kMaxHidden)},
      {"q_lora_rank", false, "", integer(m.q_lora_rank, 0, kMaxHidden)},
      {"qk_nope_head_dim", true, "missing", integer(m.head_dim, 1, kMaxHidden)},
      {"qk_rope_head_dim", false, "", integer(m.qk_rope_head_dim, 0, kMaxHidden)},
      {"v_head_dim", true, "missing", integer(m.v_head_dim, 1, kMaxHidden)},
  };
  const detail::Field fields[] = {
      detail::schema_field(r, "ppsim.model/1"),
      {"name", false, "", [&](const json& v, const std::string& at) { m.name = r.name(v, at); }},
      {"layers", true, "missing", integer(m.layers, 1, limits::kMaxLayers)},
      {"hidden", true, "missing", integer(m.hidden, 1, kMaxHidden)},
      {"heads", true, "missing", integer(m.heads, 1, kMaxHeads)},
      {"kv_heads", false, "", integer(m.kv_heads, 1, kMaxHeads)},
      {"ffn", false, "", integer(m.ffn, 1, 64 * kMaxHidden)},
      {"seq", true, "missing", integer(m.seq, 1, kMaxSeq)},
      {"microbatch_size", false, "", integer(m.microbatch_size, 1, kMaxMicrobatchSize)},
      {"vocab", true, "missing", integer(m.vocab, 1, kMaxVocab)},
      {"dtype", false, "",
       [&](const json& v, const std::string& at) {
         m.dtype = r.string(v, at);
         if (m.dtype != "bf16" && m.dtype != "fp16" && m.dtype != "fp32")
           r.fail(at, fmt::format("'{}': expected bf16, fp16 or fp32", excerpt(m.dtype)));
       }},
      {"recompute", false, "",
       [&](const json& v, const std::string& at) {
         const std::string s = r.string(v, at);
         if (s == "none") m.recompute = Recompute::none;
         else if (s == "selective") m.recompute = Recompute::selective;
         else if (s == "full") m.recompute = Recompute::full;
         else r.fail(at, fmt::format("'{}': expected none, selective or full", excerpt(s)));
       }},
      {"tied_embeddings", false, "",
       [&](const json& v, const std::string& at) {
         if (!v.is_boolean()) r.fail(at, fmt::format("expected true or false, got {}", JsonReader::shown(v)));
         m.tied_embeddings = v.get<bool>();
       }},
      {"flash_attention", false, "",
       [&](const json& v, const std::string& at) {
         if (!v.is_boolean()) r.fail(at, fmt::format("expected true or false, got {}", JsonReader::shown(v)));
         m.flash_attention = v.get<bool>();
       }},
      {"head_dim", false, "", integer(m.head_dim, 1, kMaxHidden)},
      {"moe", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, moe_fields); }},
      {"mla", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, mla_fields); }},
      {"mlp", false, "",
       [&](const json& v, const std::string& at) {
         const std::string s = r.string(v, at);
         if (s == "gelu") m.mlp = MlpKind::gelu;
         else if (s == "swiglu") m.mlp = MlpKind::swiglu;
         else r.fail(at, fmt::format("'{}': expected gelu or swiglu", excerpt(s)));
       }},
  };
  const auto seen = detail::read_fields(r, doc, "", fields);
  if (seen.has("mla") && seen.has("head_dim"))
    r.fail("/head_dim", "with mla a head's width is mla's qk_nope_head_dim: give that one");
  if (seen.has("mla") && seen.has("kv_heads") && m.kv_heads != m.heads)
    r.fail("/kv_heads", fmt::format("kv_heads={}: multi-head latent attention has kv_heads = "
                                    "heads={}",
                                    m.kv_heads, m.heads));
  if (!seen.has("kv_heads")) m.kv_heads = m.heads;
  if (!seen.has("ffn")) m.ffn = 4 * m.hidden;
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    r.fail("/heads", fmt::format("heads={} does not divide hidden={} (or give head_dim)", m.heads,
                                 m.hidden));
  if (m.moe() && m.top_k > m.experts)
    r.fail("/moe/top_k", fmt::format("top_k={} is more than experts={}", m.top_k, m.experts));
  if (m.dense_layers > m.layers)
    r.fail("/moe/dense_layers",
           fmt::format("dense_layers={} is more than layers={}", m.dense_layers, m.layers));
  if (m.heads % m.kv_heads != 0)
    r.fail("/kv_heads", fmt::format("kv_heads={} does not divide heads={}", m.kv_heads, m.heads));
  check_model(m, where);
  return m;
}

ModelSpec load_model(const std::string& name) {
  if (name.size() > 5 && name.ends_with(".json"))
    return parse_model_json(read_text_file(name, "model file"), name);
  for (const ModelSpec& m : model_presets())
    if (m.name == name) return m;
  std::string valid;
  for (const ModelSpec& m : model_presets()) valid += (valid.empty() ? "" : ", ") + m.name;
  throw ConfigError(fmt::format("--model: unknown model '{}' (presets: {}; or a ppsim.model/1 "
                                "*.json file)",
                                excerpt(name), valid));
}

} // namespace ppsim
