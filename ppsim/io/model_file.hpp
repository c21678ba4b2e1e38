// Models as users describe them (`--model NAME|FILE`, schema ppsim.model/1): a decoder-only
// transformer's shape, the presets, and the file reader.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// Activation recomputation (Korthikanti et al., Reducing Activation Recomputation in Large
/// Transformer Models, 2022): none, selective (the attention core; also what flash attention
/// stores), or full (only each layer's input is kept; B recomputes the forward).
enum class Recompute : std::uint8_t { none, selective, full };
/// The MLP block: GELU (two matrices, h -> ffn -> h) or SwiGLU (three, Llama).
enum class MlpKind : std::uint8_t { gelu, swiglu };

[[nodiscard]] std::string_view recompute_name(Recompute r);
[[nodiscard]] std::string_view mlp_name(MlpKind m);

/// A decoder-only transformer. Sizes are the usual symbols: L layers, h hidden, a heads,
/// s sequence, b micro-batch size, V vocabulary.
struct ModelSpec {
  std::string name;
  int layers{0};           ///< L
  int hidden{0};           ///< h
  int heads{0};            ///< a
  int kv_heads{0};         ///< grouped-query attention; = heads for multi-head attention
  int ffn{0};              ///< MLP inner size; 4h for GPT
  int seq{0};              ///< s
  int microbatch_size{1};  ///< b, sequences per micro-batch
  int vocab{0};            ///< V
  std::string dtype{"bf16"};  ///< of weights and activations: bf16, fp16 or fp32
  Recompute recompute{Recompute::none};
  bool tied_embeddings{false};
  MlpKind mlp{MlpKind::gelu};
  /// Attention as one fused kernel that never writes the s x s scores (FlashAttention), or
  /// Megatron's unfused core of 2021: two batched GEMMs with the softmax and the dropout of the
  /// scores between them in HBM. Only the time differs (the memory model is Recompute's).
  bool flash_attention{true};
  /// Width of one attention head; 0 = hidden / heads (Qwen3's 128 with hidden 2048, 32 heads).
  int head_dim{0};
  /// A mixture of experts in place of every layer's MLP (0 = dense): `experts` routed experts of
  /// inner width `expert_ffn`, `top_k` of them per token, `shared_experts` more of that width
  /// that every token passes through, and a capacity factor (0 = dropless; c > 0 pads every
  /// expert to c times its even share of the tokens, as Megatron's
  /// --moe-pad-expert-input-to-capacity).
  int experts{0};
  int top_k{0};
  int expert_ffn{0};
  int shared_experts{0};
  double capacity_factor{0};
  /// With experts: the first `dense_layers` layers keep a dense MLP of width `ffn` (DeepSeek's
  /// first_k_dense_replace), the others have the experts.
  int dense_layers{0};
  /// Multi-head latent attention (DeepSeek-V2/V3), where kv_lora_rank > 0: the keys and values
  /// come from a latent of kv_lora_rank values per token (plus a shared rotary key of
  /// qk_rope_head_dim), the queries from one of q_lora_rank (0: projected from the hidden state
  /// directly); a head's query and key are head_dim (qk_nope_head_dim) + qk_rope_head_dim wide,
  /// its value v_head_dim. kv_heads is heads.
  int q_lora_rank{0};
  int kv_lora_rank{0};
  int qk_rope_head_dim{0};
  int v_head_dim{0};
  std::string source;  ///< preset or file, for reports

  /// Bytes of one value of `dtype` (2 or 4).
  [[nodiscard]] int dtype_bytes() const { return dtype == "fp32" ? 4 : 2; }
  /// Width of one head: head_dim, or hidden / heads.
  [[nodiscard]] int head_width() const { return head_dim > 0 ? head_dim : hidden / heads; }
  [[nodiscard]] bool moe() const { return experts > 0; }
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
};

/// A weight GEMM of the attention block, per token: `in` values to `out`; split over the
/// tensor-parallel ranks by its output (column parallel) or by its input (row parallel).
struct Projection {
  double in{0}, out{0};
  bool row_parallel{false};
};

/// The attention block of one layer, per token over all heads: the widths of Q, K and V as the
/// core reads them and of the output projection's input, a head's query-key and value width, the
/// latents kept (MLA: the down projections' outputs, each kept twice, before and after its norm)
/// and the weight GEMMs in order. Grouped-query attention: QKV (h -> q + 2 h_kv) and the output
/// projection (q -> h). MLA: the down projections fused (h -> q_lora + kv_lora + rope), the
/// queries' and the keys-and-values' up projections, the output projection.
struct AttentionShape {
  double q{0}, k{0}, v{0}, o{0};
  double head_qk{0}, head_v{0};
  double latent{0};
  std::vector<Projection> projections;
  /// Sum of in x out over the projections.
  [[nodiscard]] double params() const;
};
[[nodiscard]] AttentionShape attention_shape(const ModelSpec& model);

/// The presets: the zero-bubble paper's four models (Qi et al., ICLR 2024, Table 3: zb-1.5b,
/// zb-6.2b, zb-14.6b, zb-28.3b) and public ones (gpt3-175b, llama3-8b, llama3-70b,
/// llama3-405b), and three mixtures of experts (mixtral-8x7b, qwen3-moe-30b-a3b, deepseek-v3).
[[nodiscard]] std::span<const ModelSpec> model_presets();

/// A preset by name, or a ppsim.model/1 file (a name ending in .json). ConfigError naming the
/// valid presets, or the file and JSON path of what is wrong.
[[nodiscard]] ModelSpec load_model(const std::string& name_or_file);

/// Reads `{"schema": "ppsim.model/1", "layers", "hidden", "heads", "kv_heads"?, "ffn"?, "seq",
/// "microbatch_size"?, "vocab", "dtype"?, "recompute"?, "tied_embeddings"?, "mlp"?,
/// "flash_attention"?, "head_dim"?, "moe"?: {"experts", "top_k", "expert_ffn", "shared_experts"?,
/// "capacity_factor"?, "dense_layers"?}, "mla"?: {"kv_lora_rank", "q_lora_rank"?,
/// "qk_nope_head_dim", "qk_rope_head_dim"?, "v_head_dim"}, "name"?}`.
/// Checks sizes (positive, heads dividing hidden unless head_dim is given, kv_heads dividing
/// heads, top_k at most experts, dense_layers fewer than layers, no kv_heads with mla) and
/// bounds them.
[[nodiscard]] ModelSpec parse_model_json(std::string_view text, std::string_view where);

/// Checks a model's sizes; ConfigError `where: heads=7 does not divide hidden=4096` style.
void check_model(const ModelSpec& model, std::string_view where);

} // namespace ppsim
