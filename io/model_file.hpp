// Models as users describe them (`--model NAME|FILE`, schema ppsim.model/1): a decoder-only
// transformer's shape, the presets, and the file reader.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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
  std::string source;  ///< preset or file, for reports

  /// Bytes of one value of `dtype` (2 or 4).
  [[nodiscard]] int dtype_bytes() const { return dtype == "fp32" ? 4 : 2; }
  /// Width of one head: head_dim, or hidden / heads.
  [[nodiscard]] int head_width() const { return head_dim > 0 ? head_dim : hidden / heads; }
  [[nodiscard]] bool moe() const { return experts > 0; }
};

/// The presets: the zero-bubble paper's four models (Qi et al., ICLR 2024, Table 3: zb-1.5b,
/// zb-6.2b, zb-14.6b, zb-28.3b) and public ones (gpt3-175b, llama3-8b, llama3-70b,
/// llama3-405b), and two mixtures of experts (mixtral-8x7b, qwen3-moe-30b-a3b).
[[nodiscard]] std::span<const ModelSpec> model_presets();

/// A preset by name, or a ppsim.model/1 file (a name ending in .json). ConfigError naming the
/// valid presets, or the file and JSON path of what is wrong.
[[nodiscard]] ModelSpec load_model(const std::string& name_or_file);

/// Reads `{"schema": "ppsim.model/1", "layers", "hidden", "heads", "kv_heads"?, "ffn"?, "seq",
/// "microbatch_size"?, "vocab", "dtype"?, "recompute"?, "tied_embeddings"?, "mlp"?,
/// "flash_attention"?, "head_dim"?, "moe"?: {"experts", "top_k", "expert_ffn", "shared_experts"?,
/// "capacity_factor"?}, "name"?}`.
/// Checks sizes (positive, heads dividing hidden unless head_dim is given, kv_heads dividing
/// heads, top_k at most experts) and bounds them.
[[nodiscard]] ModelSpec parse_model_json(std::string_view text, std::string_view where);

/// Checks a model's sizes; ConfigError `where: heads=7 does not divide hidden=4096` style.
void check_model(const ModelSpec& model, std::string_view where);

} // namespace ppsim
