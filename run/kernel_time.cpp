// A layer's time kernel by kernel: GEMMs on the roofline, memory-bound work over HBM,
// tensor-parallel collectives, a fixed cost per kernel.
#include "run/kernel_time.hpp"

#include "run/transformer.hpp"

#include <algorithm>

namespace ppsim {

TimeParts& TimeParts::operator+=(const TimeParts& o) {
  gemm += o.gemm;
  attention += o.attention;
  memory += o.memory;
  tp_comm += o.tp_comm;
  overhead += o.overhead;
  return *this;
}

TimeParts TimeParts::scaled(double n) const {
  return {gemm * n, attention * n, memory * n, tp_comm * n, overhead * n};
}

LayerTimes& LayerTimes::operator+=(const LayerTimes& o) {
  F += o.F;
  B += o.B;
  W += o.W;
  R += o.R;
  return *this;
}

LayerTimes LayerTimes::scaled(double n) const { return {F.scaled(n), B.scaled(n), W.scaled(n), R.scaled(n)}; }

bool kernel_level(const DeviceSpec& d) { return d.hbm_gbytes_per_s > 0; }

namespace {

double overhead_ms(const DeviceSpec& d, double kernels) { return kernels * d.kernel_overhead_us * 1e-3; }

// GB/s is bytes per nanosecond: bytes / (GB/s) ns = bytes / (GB/s) * 1e-6 ms.
double bytes_ms(double bytes, double gbytes_per_s) { return bytes / gbytes_per_s * 1e-6; }

// One collective of the TP group over `bytes` of the whole tensor: a ring moves 2 (t - 1) / t
// of it through each rank's link for an all-reduce, or for the all-gather plus reduce-scatter
// that sequence parallelism uses instead (NCCL's busbw is defined so that this is the time).
double tp_collective_ms(const DeviceSpec& d, double bytes, int tp) {
  if (tp <= 1 || d.tp_link_gbytes_per_s <= 0) return 0;
  return bytes_ms(2.0 * (tp - 1) / tp * bytes, d.tp_link_gbytes_per_s);
}

struct KernelDims {
  double s, b, T, h, kv, f, a, V, n_up, k, t;
  double Te;  // tokens of the elementwise work on one rank: T / t with sequence parallelism
};

KernelDims dims_of(const ModelSpec& m, const TrainingSpec& training) {
  KernelDims x{};
  x.s = m.seq;
  x.b = m.microbatch_size;
  x.T = x.s * x.b;
  x.h = m.hidden;
  x.kv = static_cast<double>(m.hidden) * m.kv_heads / m.heads;
  x.f = m.ffn;
  x.a = m.heads;
  x.V = m.vocab;
  x.n_up = m.mlp == MlpKind::swiglu ? 2 : 1;
  x.k = m.dtype_bytes();
  x.t = std::max(1, training.tp);
  x.Te = training.sequence_parallel ? x.T / x.t : x.T;
  return x;
}

// The four weight GEMMs of a layer on one rank, as (m, n, k) of the forward: QKV (h -> h + 2
// h_kv), the output projection (h -> h), the MLP's up (h -> n_up f) and down (f -> h) matrices.
struct GemmShape {
  double m, n, k;
};

template <class Fn>
void for_each_weight_gemm(const KernelDims& x, Fn&& fn) {
  fn(GemmShape{x.T, (x.h + 2 * x.kv) / x.t, x.h});
  fn(GemmShape{x.T, x.h, x.h / x.t});
  fn(GemmShape{x.T, x.n_up * x.f / x.t, x.h});
  fn(GemmShape{x.T, x.h, x.f / x.t});
}

} // namespace

double kernel_ms(const DeviceSpec& d, double flops, double bytes, double efficiency) {
  const double compute = flops / (d.peak_tflops * 1e12 * efficiency) * 1e3;
  return std::max(compute, hbm_ms(d, bytes)) + overhead_ms(d, 1);
}

double gemm_ms(const DeviceSpec& d, double m, double n, double k, double efficiency,
               double value_bytes, double c_bytes, double batch) {
  return kernel_ms(d, 2 * m * n * k * batch,
                   batch * (value_bytes * (m * k + k * n) + c_bytes * m * n), efficiency);
}

double hbm_ms(const DeviceSpec& d, double bytes) {
  return bytes_ms(bytes, d.hbm_gbytes_per_s * d.hbm_efficiency);
}

LayerTimes decoder_layer_times(const ModelSpec& m, const DeviceSpec& d, const TrainingSpec& training,
                               Recompute recompute) {
  const KernelDims x = dims_of(m, training);
  LayerTimes t;
  // Weight GEMMs: F computes Y = X W; B the input gradient dX = dY W^T (m x k from m x n and
  // n x k); W the weight gradient dW = X^T dY (k x n over the m tokens), accumulated in fp32
  // (Megatron's gradient-accumulation fusion).
  for_each_weight_gemm(x, [&](GemmShape g) {
    t.F.gemm += gemm_ms(d, g.m, g.n, g.k, d.efficiency_F, x.k, x.k);
    t.B.gemm += gemm_ms(d, g.m, g.k, g.n, d.efficiency_B, x.k, x.k);
    t.W.gemm += gemm_ms(d, g.k, g.n, g.m, d.efficiency_W, x.k, 4 + 4);
  });
  // The attention core over a / t heads of width h / a.
  const double heads = x.a / x.t;
  const double dh = x.h / x.a;
  const double sb = x.s * x.s * x.b * heads;  // score values on this rank
  TimeParts core_F, core_B;
  if (m.flash_attention) {
    // One kernel each way, compute-bound: QK^T and PV forward (4 b s^2 h / t FLOPs), twice that
    // backward; it reads Q, K, V (and O, dO) and writes O (dQ, dK, dV).
    const double qkv = x.T * (x.h + 2 * x.kv) / x.t * x.k;
    const double o = x.T * x.h / x.t * x.k;
    const double flops = 2 * x.s * x.s * dh * x.b * heads;  // one of QK^T, PV
    core_F.attention = kernel_ms(d, 2 * flops, qkv + o, d.efficiency_F);
    core_B.attention = kernel_ms(d, 4 * flops, 2 * qkv + 2 * o, d.efficiency_B);
  } else {
    // Megatron 2021: scores = Q K^T (a batched GEMM writing s x s per head), the fused scaled
    // masked softmax (read, write), the attention dropout (read, write, a byte of mask), then
    // P V. Backward: dV = P^T dO and dP = dO V^T, the dropout's and the softmax's backward (read
    // two, write one), dQ = dS K and dK = dS^T Q.
    const double bh = x.b * heads;
    core_F.attention = gemm_ms(d, x.s, x.s, dh, d.efficiency_F, x.k, x.k, bh) +
                       gemm_ms(d, x.s, dh, x.s, d.efficiency_F, x.k, x.k, bh);
    core_F.memory = hbm_ms(d, sb * (2 * x.k + 2 * x.k + 1));
    core_F.overhead = overhead_ms(d, 2);
    core_B.attention = gemm_ms(d, x.s, dh, x.s, d.efficiency_B, x.k, x.k, bh) +
                       gemm_ms(d, x.s, x.s, dh, d.efficiency_B, x.k, x.k, bh) +
                       gemm_ms(d, x.s, dh, x.s, d.efficiency_B, x.k, x.k, bh) +
                       gemm_ms(d, dh, x.s, x.s, d.efficiency_B, x.k, x.k, bh);
    core_B.memory = hbm_ms(d, sb * ((2 * x.k + 1) + 3 * x.k));
    core_B.overhead = overhead_ms(d, 2);
  }
  t.F += core_F;
  t.B += core_B;
  // Elementwise work. Forward: two norms (read, write), two bias-dropout-adds (read the output
  // and the residual, write, a byte of mask) on the rank's tokens, the MLP's activation (GELU
  // reads and writes f, SwiGLU reads 2f and writes f). Backward: the norms read dy and x and
  // write dx, the dropout-adds read the gradient and the mask and write, and add the residual's
  // gradient (read two, write one), the activation reads its gradient and inputs and writes the
  // inputs' gradients. W has no activation-gradient work.
  const double eh = x.Te * x.h;
  const double mlp = x.T * x.f / x.t;
  t.F.memory += hbm_ms(d, eh * (2 * 2 * x.k + 2 * (3 * x.k + 1)) + mlp * x.k * (x.n_up + 1));
  t.F.overhead += overhead_ms(d, 5);
  t.B.memory += hbm_ms(d, eh * (2 * 3 * x.k + 2 * (2 * x.k + 1) + 2 * 3 * x.k) +
                              mlp * x.k * (1 + 2 * x.n_up + x.n_up));
  t.B.overhead += overhead_ms(d, 7);
  // Two collectives each way over the layer's s b h activations.
  const double act = x.T * x.h * x.k;
  t.F.tp_comm = 2 * tp_collective_ms(d, act, training.tp);
  t.B.tp_comm = 2 * tp_collective_ms(d, act, training.tp);
  if (recompute == Recompute::selective) t.R = core_F;
  if (recompute == Recompute::full) t.R = t.F;
  return t;
}

LayerTimes embedding_layer_times(const ModelSpec& m, const DeviceSpec& d, const TrainingSpec& training) {
  const KernelDims x = dims_of(m, training);
  LayerTimes t;
  // The lookup writes s b h (each rank its vocabulary shard, summed by one collective), the
  // dropout reads and writes it with a mask; its gradient: the dropout's backward, then a
  // scatter-add into the fp32 gradient (read, write 4 + 4 per value).
  t.F.memory = hbm_ms(d, x.T * x.h * x.k + x.Te * x.h * (2 * x.k + 1));
  t.F.tp_comm = tp_collective_ms(d, x.T * x.h * x.k, training.tp) / 2;
  t.F.overhead = overhead_ms(d, 2);
  t.W.memory = hbm_ms(d, x.Te * x.h * (2 * x.k + 1) + x.T * x.h * (x.k + 8));
  t.W.overhead = overhead_ms(d, 2);
  return t;
}

LayerTimes output_layer_times(const ModelSpec& m, const DeviceSpec& d, const TrainingSpec& training) {
  const KernelDims x = dims_of(m, training);
  LayerTimes t;
  const double v = x.V / x.t;  // the rank's vocabulary shard
  t.F.gemm = gemm_ms(d, x.T, v, x.h, d.efficiency_F, x.k, x.k);
  t.B.gemm = gemm_ms(d, x.T, x.h, v, d.efficiency_B, x.k, x.k);
  t.W.gemm = gemm_ms(d, x.h, v, x.T, d.efficiency_W, x.k, 4 + 4);
  // The final norm; the cross-entropy in fp32 over the shard: the logits read and converted
  // (k + 4), their max, the sum of exponentials and the probabilities (three passes over 4
  // bytes); backward reads the probabilities and writes the logits' gradient.
  t.F.memory = hbm_ms(d, x.Te * x.h * 2 * x.k + x.T * v * (x.k + 4 + 3 * 4));
  t.F.overhead = overhead_ms(d, 5);
  t.B.memory = hbm_ms(d, x.Te * x.h * 3 * x.k + x.T * v * (4 + x.k));
  t.B.overhead = overhead_ms(d, 3);
  return t;
}

double adam_bytes_per_param(const ModelSpec& m) { return 16 + 12 + m.dtype_bytes() + 4 + 4; }

double optimizer_ms(const ModelSpec& m, const DeviceSpec& d, double params) {
  if (!kernel_level(d)) return 0;
  return hbm_ms(d, params * adam_bytes_per_param(m)) + overhead_ms(d, 4);
}

} // namespace ppsim
