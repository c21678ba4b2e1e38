// The model a rank trains: the seed's MLP per stage with one activation slot per micro-batch in
// flight, the synthetic data, the MSE loss, and the single-process reference gradients.
#pragma once

#include "model/mlp.hpp"
#include "ppsim/sim/schedule.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace ppsim::exec {

/// The shape of the executed model: every stage has `blocks` blocks of Linear(dim, 4·dim),
/// Linear(4·dim, dim); a micro-batch is `tokens` rows.
struct ModelShape {
  int dim{0};
  int tokens{0};
  int blocks{0};  ///< per (virtual) stage
};

/// Seed of a stage's weights: every rank and the reference build the same weights.
[[nodiscard]] std::uint64_t stage_seed(std::uint64_t seed, int stage);

/// One stage on a rank: its weights and gradients, and activations for each micro-batch between
/// its F and the end of its W (or BW). The GEMMs are calibrate::StageMlp's (the kernels timed by
/// `ppsim calibrate`).
///
///   StageModel m(shape, stage_seed(1, 3), 2);
///   m.forward(0, x); m.backward_input(0, g); m.backward_weight(0);
class StageModel {
public:
  /// `slots`: the most micro-batches in flight at once (ExecPlan's DevicePlan::slots).
  /// `seed_bug`: the seed's unchained multi-block backward (to show the gradient check fails).
  StageModel(const ModelShape& shape, std::uint64_t seed, int slots, bool seed_bug = false);
  ~StageModel();
  StageModel(StageModel&&) noexcept;
  StageModel& operator=(StageModel&&) noexcept;

  void forward(int microbatch, std::span<const float> x);  ///< takes a slot
  [[nodiscard]] std::vector<float> output(int microbatch) const;
  void backward_input(int microbatch, std::span<const float> output_grad);
  void backward_weight(int microbatch);                      ///< frees the slot
  /// B and W fused; returns the input gradient and frees the slot.
  [[nodiscard]] std::vector<float> backward_fused(int microbatch, std::span<const float> output_grad);
  [[nodiscard]] std::vector<float> input_grad(int microbatch) const;

  void zero_weight_grads();
  /// dW1 then dW2 of every block, concatenated (f32).
  [[nodiscard]] std::vector<float> weight_grads() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The input of micro-batch `mb` (tokens × dim), uniform in [-1, 1), the same on every rank.
[[nodiscard]] std::vector<float> microbatch_input(std::uint64_t seed, int mb, const ModelShape&);
/// The label of micro-batch `mb` (tokens × dim).
[[nodiscard]] std::vector<float> microbatch_label(std::uint64_t seed, int mb, const ModelShape&);
/// The gradient of the MSE loss mean((o − label)²): 2 (o − label) / numel.
[[nodiscard]] std::vector<float> mse_grad(std::span<const float> output,
                                          std::span<const float> label);

/// The weight gradients of every stage (StageModel::weight_grads layout) from one process:
/// each micro-batch forward along its route, then the full backward, accumulated over all
/// micro-batches.
[[nodiscard]] std::vector<std::vector<float>> reference_gradients(const Schedule& schedule,
                                                                  const ModelShape& shape,
                                                                  std::uint64_t seed);

/// max |a − b| / max |b| (0 when both are zero); a size mismatch gives infinity.
[[nodiscard]] double relative_difference(std::span<const float> a, std::span<const float> b);

} // namespace ppsim::exec
