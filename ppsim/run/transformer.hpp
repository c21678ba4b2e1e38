// From a model, a device and a layout to per-stage costs: FLOPs of F, B and W (the
// zero-bubble paper's Table 1, generalised), activation memory (Korthikanti et al. 2022),
// weights, gradients and optimizer state, and the messages between stages.
//
//   ModelCosts mc = model_costs(load_model("zb-6.2b"), load_device("h100"),
//                               even_layout(30, 8), {});
//   Run r = run_request({.schedule = "zb-auto", .devices = 8, .microbatches = 24,
//                        .costs = mc.costs});
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/recompute_text.hpp"
#include "ppsim/run/kernel_time.hpp"
#include "ppsim/sim/cost_model.hpp"

#include <vector>

namespace ppsim {

/// How the training state is stored: Megatron's mixed precision (model-dtype weights, fp32
/// gradients, Adam's fp32 master weights and two moments), the optimizer state optionally
/// sharded over `dp` data-parallel replicas (ZeRO-1 / Megatron's distributed optimizer).
/// Overlap inside F and B (--overlap): none (every collective inside its task's time, as
/// today), a2a (the expert all-to-alls on a comm stream, under the other micro-batch's compute
/// in an overlapped cell: DualPipe's FB, Combined 1F1B), full (the TP collectives too).
enum class OverlapMode : std::uint8_t { none, a2a, full };
[[nodiscard]] std::string_view overlap_name(OverlapMode mode);

struct TrainingSpec {
  int dp{1};    ///< data-parallel replicas
  int zero{0};  ///< 0 = no sharding, 1 = optimizer state / dp
  /// Tensor-parallel ranks per pipeline stage, with sequence parallelism (Megatron's default
  /// with TP): FLOPs, parameters, activations and messages of a stage are divided by tp, and
  /// each layer's TP collectives take their ring time over the device's tp_link (kernel_time).
  int tp{1};
  /// With tp > 1: sequence parallelism (the norms, dropouts and residuals on s/tp tokens, the
  /// collectives all-gathers and reduce-scatters) or Megatron's tensor parallelism of 2021 (they
  /// run on every token of every rank, the collectives all-reduces of the same ring traffic).
  bool sequence_parallel{true};
  /// The gradient reduction of a stage may start when its last backward starts (PyTorch DDP's
  /// buckets, Megatron's --overlap-grad-reduce) instead of after its last weight gradients.
  bool overlap_grad_reduce{false};
  /// Expert-parallel ranks (a mixture of experts): each holds experts / ep of every layer's
  /// experts and the tokens reach them by all-to-alls; 1 = every rank holds all.
  int ep{1};
  OverlapMode overlap{OverlapMode::none};
  /// Comm streams for an overlapped cell (--streams): 0 = one per micro-batch, 1 = one (its two
  /// micro-batches' collectives never run at once: CUDA_DEVICE_MAX_CONNECTIONS=1).
  int comm_streams{0};
};

/// Bytes of training state per parameter: weights (2 for bf16/fp16, 4 for fp32), fp32
/// gradients (4), and Adam's fp32 master copy (4, not for fp32 weights) and two moments (8),
/// the optimizer part divided by dp under ZeRO-1.
[[nodiscard]] double state_bytes_per_param(const ModelSpec& model, const TrainingSpec& training);

/// What one layer costs for one micro-batch.
struct LayerEstimate {
  double F_flops{0};
  double B_flops{0};  ///< input gradients
  double W_flops{0};  ///< weight gradients
  double R_flops{0};  ///< the forward recomputed before B (activation recomputation)
  double act_bytes{0};  ///< M_B: what F leaves for the backward
  double mw_bytes{0};   ///< M_W: what W still needs after B
  double params{0};
  double expert_params{0};  ///< of params, the routed experts' (divided by ep, not tp)
};

/// A decoder layer: GEMMs G = 2 T (h (h + 2 h_kv) + h^2 + n h f) for T = s b tokens, n = 2
/// (GELU) or 3 (SwiGLU), attention A = 4 b s^2 h; F = G + A, B = G + 2A, W = G, which for
/// h_kv = h, f = 4h is the paper's sbh(24h + 4s), sbh(24h + 8s), 24sbh^2. Selective recompute
/// recomputes A before B, full recompute G + A (R_flops). Memory (16-bit): 34sbh + 5as^2b as
/// Korthikanti et al. with GQA and f generalised; selective drops the 5as^2b term, full keeps
/// only the 2sbh input; M_W = the inputs and output gradients of the four weight GEMMs, 32sbh for
/// GPT. The first form uses the model's own `recompute`.
[[nodiscard]] LayerEstimate decoder_layer(const ModelSpec& model);
[[nodiscard]] LayerEstimate decoder_layer(const ModelSpec& model, Recompute recompute);
/// The embedding (first stage): V h parameters, its output as activation, no FLOPs to speak of.
[[nodiscard]] LayerEstimate embedding_layer(const ModelSpec& model);
/// The output layer and the loss (last stage): 2 T h V FLOPs each for F, B and W; the logits
/// kept in fp32 for the cross-entropy (4 s b V bytes) and the layer's input.
[[nodiscard]] LayerEstimate output_layer(const ModelSpec& model);

/// Every parameter of the model (one embedding matrix when tied).
[[nodiscard]] double parameter_count(const ModelSpec& model);
/// The parameters one token passes through: of a mixture of experts, top_k of its routed
/// experts per layer (Mixtral-8x7B: 12.9B of 46.7B); the whole model otherwise.
[[nodiscard]] double active_parameter_count(const ModelSpec& model);

/// The costs of every stage of `layout` on `device`, with the estimates they came from.
struct ModelCosts {
  CostSpec costs;  ///< per layout stage; memory in units of one even device-stage's M_B
  std::vector<LayerEstimate> stages;    ///< the sums per stage
  std::vector<double> state_bytes;      ///< per stage
  double message_bytes{0};  ///< one activation (forward) or gradient (backward): s b h dtype
  double unit_bytes{0};     ///< bytes of one M_B
  /// Per stage, where its F, B (without R), W and R time goes (ppsim/run/kernel_time.hpp); only on a
  /// device that knows its HBM bandwidth (kernel_level), else empty.
  std::vector<LayerTimes> times;
  /// Per stage, its optimizer step in ms (Adam over its parameters on one rank, memory-bound;
  /// a ZeRO-1 replica steps its shard); 0 where the device does not know its HBM bandwidth.
  std::vector<double> optimizer_ms;
};

/// On a device that knows its HBM bandwidth, a task's time is its kernels' (ppsim/run/kernel_time.hpp:
/// GEMMs on the roofline, the memory-bound work, the tensor-parallel collectives, a cost per
/// kernel); otherwise FLOPs / (peak * efficiency of the kind). A recomputed forward is part of
/// B's time and StageCosts::R. comm is the device's link latency plus
/// message_bytes / bandwidth. `devices` sets the memory unit: the M_B of layers/devices decoder
/// layers (one device-stage of the even split) under the model's own `recompute`, so
/// `--mem-limit 2p` keeps its meaning. `recompute` is each stage's choice (one entry: every
/// stage; empty: the model's own); a `full:N` of more layers than a stage has recomputes them all.
[[nodiscard]] ModelCosts model_costs(const ModelSpec& model, const DeviceSpec& device,
                                     const Layout& layout, int devices,
                                     const TrainingSpec& training,
                                     const std::vector<StageRecompute>& recompute = {});

/// The optimizer step of `params` parameters on one rank (kernel_time's optimizer_ms), of its
/// shard of them under ZeRO-1: what model_costs reports per stage and a run's tail per device.
[[nodiscard]] double stage_optimizer_ms(const ModelSpec& model, const DeviceSpec& device,
                                        const TrainingSpec& training, double params);

/// A model on a device, as the user gives it (`--model`, `--device`, `--layout` or
/// `--layers-per-stage`, `--dp`, `--zero`).
struct WorkloadSpec {
  ModelSpec model;
  DeviceSpec device;
  std::string layout;                 ///< Megatron's syntax; "" = default_layout
  std::vector<int> layers_per_stage;  ///< decoders per stage; empty = none given
  TrainingSpec training;
  /// --recompute: per stage of the layout (one entry: every stage; empty: the model's own). A
  /// uniform choice is written into model.recompute instead (as a model file's field), `auto` is
  /// resolved by ppsim/run/recompute.hpp into a list before costs are built.
  std::vector<StageRecompute> recompute;
  bool recompute_auto{false};
};

/// Puts a parsed --recompute into the workload: a uniform choice into model.recompute (as a
/// model file's field, so the memory unit follows it), `auto` into recompute_auto, anything else
/// (full:N, one per stage) into recompute. Not given: the workload is unchanged.
void apply_recompute(WorkloadSpec& workload, const RecomputeSpec& recompute);

/// The layout of a workload for `devices` devices and `chunks` chunks per device (0 = one
/// stage per device-stage, which a chunked schedule then divides evenly): the user's, checked
/// against the model (layers) and the stage count, or default_layout.
[[nodiscard]] Layout workload_layout(const WorkloadSpec& workload, int devices, int chunks);

/// model_costs() of the workload's layout. A user layout of p*v stages fixes the chunks.
[[nodiscard]] ModelCosts workload_costs(const WorkloadSpec& workload, int devices, int chunks);

} // namespace ppsim
