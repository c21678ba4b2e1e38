// The seed's zero-bubble MLP for one pipeline stage, with real GEMMs through oneDNN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim::calibrate {

/// Element type of the activations and weights. Gradients of the weights are always f32.
enum class DType : std::uint8_t { f32, bf16 };

[[nodiscard]] std::string_view dtype_name(DType dtype);
/// "f32" or "bf16"; throws ConfigError naming the text otherwise.
[[nodiscard]] DType parse_dtype(std::string_view text);
/// Bytes of one activation element of `dtype`.
[[nodiscard]] std::size_t element_bytes(DType dtype);

/// The shape of one stage: `blocks` blocks of Linear(dim, 4·dim) then Linear(4·dim, dim), no
/// bias, on a micro-batch of `tokens` rows.
struct MlpShape {
  int dim{0};
  int tokens{0};
  int blocks{0};
  DType dtype{DType::f32};
};

/// FLOPs of one kind (F, B or W) for one block: two GEMMs of 2·T·D·4D each, i.e. 16·T·D².
[[nodiscard]] double flops_per_block(int dim, int tokens);
/// Bytes every buffer of a StageMlp of this shape allocates (weights, gradients, and the
/// activations of `slots` micro-batches).
[[nodiscard]] double stage_buffer_bytes(const MlpShape& shape, int slots = 1);

/// Sets the GEMM thread count (OpenMP, which oneDNN runs on) for its lifetime, then restores it.
class ScopedGemmThreads {
public:
  explicit ScopedGemmThreads(int threads);
  ~ScopedGemmThreads();
  ScopedGemmThreads(const ScopedGemmThreads&) = delete;
  ScopedGemmThreads& operator=(const ScopedGemmThreads&) = delete;

private:
  int previous_;
};

/// The thread count oneDNN's GEMMs use now (OpenMP's max threads of the calling thread).
[[nodiscard]] int gemm_threads();

/// The ISA oneDNN dispatches to on this machine, e.g. "avx512_core_amx".
[[nodiscard]] std::string onednn_isa();
/// "2.6.3" (plus the git hash when the build recorded one).
[[nodiscard]] std::string onednn_version();
/// Whether oneDNN and this CPU run bf16 GEMMs natively (AVX-512 BF16 or AMX).
[[nodiscard]] bool bf16_supported();

/// The seed's ZeroBubbleMLP on one stage, its buffers allocated once. Per block k:
///   F  h_k = x_k W1_kᵀ,  x_{k+1} = h_k W2_kᵀ
///   B  dh_k = g_{k+1} W2_k,  g_k = dh_k W1_k     (g_n is the gradient arriving from the next stage)
///   W  dW2_k += g_{k+1}ᵀ h_k,  dW1_k += dh_kᵀ x_k
/// B runs from the last block to the first, chaining each block's input gradient into the block
/// before it. f32 runs dnnl_sgemm; bf16 runs oneDNN matmul primitives (f32 accumulation).
/// The weights and their gradients are shared by `slots` sets of activations (x, h, g, dh), so
/// several micro-batches can be between their F and their W at once (`ppsim execute`); every
/// per-micro-batch call takes the slot, 0 by default.
///
///   StageMlp mlp({1024, 2048, 2, DType::f32}); mlp.set_input(x); mlp.set_output_grad(g);
///   mlp.forward(); mlp.backward_input(); mlp.backward_weight();
class StageMlp {
public:
  /// `seed_bug` reproduces the seed's multi-block backward, which feeds the stage's output
  /// gradient to every block instead of chaining; it exists only so tests can show the gradient
  /// check catches it. Weights start as PyTorch's Linear default, uniform in ±1/sqrt(fan_in).
  explicit StageMlp(const MlpShape& shape, std::uint64_t seed = 1, bool seed_bug = false,
                    int slots = 1);
  ~StageMlp();
  StageMlp(StageMlp&&) noexcept;
  StageMlp& operator=(StageMlp&&) noexcept;
  StageMlp(const StageMlp&) = delete;
  StageMlp& operator=(const StageMlp&) = delete;

  [[nodiscard]] const MlpShape& shape() const;
  /// Sets of activations (micro-batches in flight at once).
  [[nodiscard]] int slots() const;

  void set_input(std::span<const float> x, int slot = 0);        ///< T×D, rounded to the dtype
  void set_output_grad(std::span<const float> g, int slot = 0);  ///< T×D, the stage output's gradient
  /// Weights of one block: W1 is 4D×D, W2 is D×4D (row-major, as torch.nn.Linear stores them).
  void set_weights(int block, std::span<const float> w1, std::span<const float> w2);
  void zero_weight_grads();

  void forward(int slot = 0);          ///< F
  void backward_input(int slot = 0);   ///< B
  void backward_weight(int slot = 0);  ///< W (accumulates into the weight gradients)
  void backward_fused(int slot = 0);   ///< BW: B and W of each block together, as a fused autograd backward

  // Read back as f32 (row-major).
  [[nodiscard]] std::vector<float> input(int slot = 0) const;
  [[nodiscard]] std::vector<float> output(int slot = 0) const;
  [[nodiscard]] std::vector<float> input_grad(int slot = 0) const;
  [[nodiscard]] std::vector<float> weight1(int block) const;
  [[nodiscard]] std::vector<float> weight2(int block) const;
  [[nodiscard]] std::vector<float> weight1_grad(int block) const;
  [[nodiscard]] std::vector<float> weight2_grad(int block) const;

  /// How the GEMMs are carried out, e.g. "dnnl_sgemm" or "matmul brg:avx512_core_amx_bf16".
  [[nodiscard]] std::string gemm_implementation() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ppsim::calibrate
