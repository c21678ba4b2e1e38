// What one layer's F, B and W cost in time on a device, kernel by kernel: its GEMMs on the
// roofline (a GEMM reaches the device's GEMM efficiency of the peak only when its arithmetic
// intensity allows; small and skinny ones are bound by HBM), the memory-bound work beside them
// (norms, activation functions, dropouts, residual adds, the unfused attention's softmax, the
// cross-entropy) as bytes over HBM bandwidth, the tensor-parallel collectives, and a fixed cost
// per kernel. The optimizer step is memory-bound too.
//
//   LayerTimes t = decoder_layer_times(load_model("gpt3-175b"), load_device("a100"),
//                                      {.tp = 8}, Recompute::full);
//   t.F.total()  // ms of one micro-batch's forward through one layer on one TP rank
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"

namespace ppsim {

struct TrainingSpec;

/// Where the time of one task goes, in ms.
struct TimeParts {
  double gemm{0};       ///< the weight GEMMs
  double attention{0};  ///< the attention core (its batched GEMMs or its fused kernel)
  double memory{0};     ///< elementwise and reduction kernels, bound by HBM
  double tp_comm{0};    ///< the tensor-parallel collectives (not overlapped, as Megatron's)
  double ep_comm{0};    ///< the expert-parallel all-to-alls (dispatch and combine)
  double overhead{0};   ///< a fixed cost per kernel
  [[nodiscard]] double total() const {
    return gemm + attention + memory + tp_comm + ep_comm + overhead;
  }
  TimeParts& operator+=(const TimeParts& o);
  [[nodiscard]] TimeParts scaled(double n) const;
};

/// One layer, one micro-batch, one tensor-parallel rank. R is the forward that B recomputes
/// (selective: the attention core; full: all of F); B does not include it.
struct LayerTimes {
  TimeParts F, B, W, R;
  LayerTimes& operator+=(const LayerTimes& o);
  [[nodiscard]] LayerTimes scaled(double n) const;
  /// F + B + W + R: where one micro-batch's time goes, over all its tasks.
  [[nodiscard]] TimeParts all() const;
};

/// True when the device knows its HBM bandwidth, so that the times below apply; otherwise a
/// task's time is its FLOPs over the peak at the kind's efficiency (the presets know it, a
/// device file may give "hbm").
[[nodiscard]] bool kernel_level(const DeviceSpec& device);

/// One kernel of `flops` that moves `bytes`: max(flops / (peak efficiency), bytes / (HBM
/// bandwidth x its efficiency)) + its overhead, in ms.
[[nodiscard]] double kernel_ms(const DeviceSpec& device, double flops, double bytes, double efficiency);

/// One GEMM C[m x n] = A[m x k] B[k x n], `batch` times, as one kernel_ms of 2mnk FLOPs and its
/// operands' bytes, at `efficiency` times the device's gemm_fraction for that kernel's FLOPs. `c_bytes` is the width of C (a weight gradient accumulated in fp32 reads and
/// writes 4 + 4).
[[nodiscard]] double gemm_ms(const DeviceSpec& device, double m, double n, double k,
                             double efficiency, double value_bytes, double c_bytes,
                             double batch = 1);

/// `bytes` through HBM by elementwise kernels, in ms (no overhead).
[[nodiscard]] double hbm_ms(const DeviceSpec& device, double bytes);

/// A decoder layer as the two blocks its sub-operations form, each its own compute (the
/// attention block: its norm, QKV, core, projection and dropout-add; the MLP or the experts:
/// norm, router, expert GEMMs, permutes, activation, dropout-add) and, between and around
/// them, one TP collective per block each way and, for a mixture of experts, two all-to-alls
/// each way (the dispatch before the experts and the combine after; backward the reverse).
/// A recomputed forward (R) is in the block it recomputes (full: the MLP's holds all of it).
struct LayerBlocks {
  LayerTimes attention;
  LayerTimes mlp;
  double tp_F{0}, tp_B{0};    ///< one tensor-parallel collective, forward and backward
  double a2a_F{0}, a2a_B{0};  ///< one expert all-to-all, forward and backward
  /// The layer's times: both blocks with two TP collectives and two all-to-alls each way.
  [[nodiscard]] LayerTimes total() const;
};

[[nodiscard]] LayerBlocks decoder_layer_blocks(const ModelSpec& model, const DeviceSpec& device,
                                               const TrainingSpec& training, Recompute recompute);
/// decoder_layer_blocks(...).total().
[[nodiscard]] LayerTimes decoder_layer_times(const ModelSpec& model, const DeviceSpec& device,
                                             const TrainingSpec& training, Recompute recompute);

/// One all-to-all of an expert-parallel group of `ep` ranks, `tp` apart on the devices, where
/// each rank sends `bytes` spread evenly over the group (its own share stays): the share for
/// the ranks on its node over the tp_link (NVLink), the rest over `link` (InfiniBand) at the
/// same time, the slower of the two, plus the link's latency across nodes and one kernel. 0
/// for ep = 1.
[[nodiscard]] double expert_all_to_all_ms(const DeviceSpec& device, double bytes, int ep, int tp);
/// The embedding's lookup and dropout (F) and the scatter-add of its gradient (W).
[[nodiscard]] LayerTimes embedding_layer_times(const ModelSpec& model, const DeviceSpec& device,
                                               const TrainingSpec& training);
/// The final norm, the output projection and the cross-entropy in fp32.
[[nodiscard]] LayerTimes output_layer_times(const ModelSpec& model, const DeviceSpec& device,
                                            const TrainingSpec& training);

/// Bytes moved per parameter by one step of Megatron's mixed-precision Adam: the fp32 gradient,
/// master weight and two moments read (16) and the three written (12), the model-dtype copy
/// written, the gradient read once more for its norm and the inf check (4) and zeroed (4).
[[nodiscard]] double adam_bytes_per_param(const ModelSpec& model);

/// One optimizer step over `params` parameters (a ZeRO-1 replica steps params / dp), in ms.
[[nodiscard]] double optimizer_ms(const ModelSpec& model, const DeviceSpec& device, double params);

} // namespace ppsim
