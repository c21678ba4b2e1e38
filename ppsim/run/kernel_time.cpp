// A layer's time kernel by kernel: GEMMs on the roofline, memory-bound work over HBM,
// tensor-parallel collectives, a fixed cost per kernel.
#include "ppsim/run/kernel_time.hpp"

#include "ppsim/run/transformer.hpp"

#include <algorithm>

namespace ppsim {

TimeParts& TimeParts::operator+=(const TimeParts& o) {
  gemm += o.gemm;
  attention += o.attention;
  memory += o.memory;
  tp_comm += o.tp_comm;
  ep_comm += o.ep_comm;
  overhead += o.overhead;
  return *this;
}

TimeParts TimeParts::scaled(double n) const {
  return {gemm * n, attention * n, memory * n, tp_comm * n, ep_comm * n, overhead * n};
}

LayerTimes& LayerTimes::operator+=(const LayerTimes& o) {
  F += o.F;
  B += o.B;
  W += o.W;
  R += o.R;
  return *this;
}

LayerTimes LayerTimes::scaled(double n) const { return {F.scaled(n), B.scaled(n), W.scaled(n), R.scaled(n)}; }

TimeParts LayerTimes::all() const {
  TimeParts sum = F;
  sum += B;
  sum += W;
  sum += R;
  return sum;
}

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

} // namespace

double expert_all_to_all_ms(const DeviceSpec& d, double bytes, int ep, int tp) {
  if (ep <= 1) return 0;
  // The ep ranks of a group lie tp apart: gpus_per_node / tp of them share a node.
  const int per_node = std::max(1, d.gpus_per_node / std::max(1, tp));
  const double near = std::min(per_node, ep) - 1;
  const double far = ep - std::min(per_node, ep);
  const double per_peer = bytes / ep;
  const double nvlink = d.tp_link_gbytes_per_s > 0 ? d.tp_link_gbytes_per_s : d.link_gbytes_per_s;
  double t = 0;
  if (near > 0 && nvlink > 0) t = std::max(t, bytes_ms(near * per_peer, nvlink));
  if (far > 0 && d.link_gbytes_per_s > 0)
    t = std::max(t, bytes_ms(far * per_peer, d.link_gbytes_per_s) + d.link_latency_ms);
  return t > 0 ? t + overhead_ms(d, 1) : 0;
}

namespace {

struct KernelDims {
  double s, b, T, h, f, a, V, n_up, k, t;
  double Te;  // tokens of the elementwise work on one rank: T / t with sequence parallelism
};

KernelDims dims_of(const ModelSpec& m, const TrainingSpec& training) {
  KernelDims x{};
  x.s = m.seq;
  x.b = m.microbatch_size;
  x.T = x.s * x.b;
  x.h = m.hidden;
  x.f = m.ffn;
  x.a = m.heads;
  x.V = m.vocab;
  x.n_up = m.mlp == MlpKind::swiglu ? 2 : 1;
  x.k = m.dtype_bytes();
  x.t = std::max(1, training.tp);
  x.Te = training.sequence_parallel ? x.T / x.t : x.T;
  return x;
}

// A weight GEMM of a layer on one rank, as (m, n, k) of the forward: the attention's
// projections, the MLP's up (h -> n_up f) and down (f -> h) matrices.
struct GemmShape {
  double m, n, k;
};

} // namespace

double kernel_ms(const DeviceSpec& d, double flops, double bytes, double efficiency) {
  const double compute = flops / (d.peak_tflops * 1e12 * efficiency) * 1e3;
  return std::max(compute, hbm_ms(d, bytes)) + overhead_ms(d, 1);
}

double gemm_ms(const DeviceSpec& d, double m, double n, double k, double efficiency,
               double value_bytes, double c_bytes, double batch) {
  const double flops = 2 * m * n * k * batch;
  return kernel_ms(d, flops, batch * (value_bytes * (m * k + k * n) + c_bytes * m * n),
                   efficiency * gemm_fraction(d, flops));
}

double hbm_ms(const DeviceSpec& d, double bytes) {
  return bytes_ms(bytes, d.hbm_gbytes_per_s * d.hbm_efficiency);
}

LayerTimes LayerBlocks::total() const {
  LayerTimes t = attention;
  t += mlp;
  t.F.tp_comm += 2 * tp_F;
  t.B.tp_comm += 2 * tp_B;
  t.F.ep_comm += 2 * a2a_F;
  t.B.ep_comm += 2 * a2a_B;
  return t;
}

LayerBlocks decoder_layer_blocks(const ModelSpec& m, const DeviceSpec& d, const TrainingSpec& training,
                                 Recompute recompute) {
  const KernelDims x = dims_of(m, training);
  LayerBlocks l;
  LayerTimes& at = l.attention;
  LayerTimes& mt = l.mlp;
  // Weight GEMMs: F computes Y = X W; B the input gradient dX = dY W^T (m x k from m x n and
  // n x k); W the weight gradient dW = X^T dY (k x n over the m tokens), accumulated in fp32
  // (Megatron's gradient-accumulation fusion). `batch` GEMMs of one shape: an expert group.
  const auto weight_gemm = [&](LayerTimes& t, GemmShape g, double batch) {
    t.F.gemm += gemm_ms(d, g.m, g.n, g.k, d.efficiency_F, x.k, x.k, batch);
    t.B.gemm += gemm_ms(d, g.m, g.k, g.n, d.efficiency_B, x.k, x.k, batch);
    t.W.gemm += gemm_ms(d, g.k, g.n, g.m, d.efficiency_W, x.k, 4 + 4, batch);
  };
  // The attention's projections: QKV and the output projection (MLA: the fused down
  // projections, the two up projections, the output projection), column parallel over the TP
  // ranks but for the last, row parallel.
  const AttentionShape shape = attention_shape(m);
  for (const Projection& p : shape.projections)
    weight_gemm(at, p.row_parallel ? GemmShape{x.T, p.out, p.in / x.t} : GemmShape{x.T, p.out / x.t, p.in}, 1);
  // The attention core over a / t heads, QK^T of width dqk and PV of dv (dh both, but for MLA).
  const double heads = x.a / x.t;
  const double dqk = shape.head_qk, dv = shape.head_v;
  const double sb = x.s * x.s * x.b * heads;  // score values on this rank
  TimeParts core_F, core_B;
  if (m.flash_attention) {
    // One kernel each way, compute-bound: QK^T and PV forward (2 b s^2 a (dqk + dv) / t FLOPs),
    // twice that backward; it reads Q, K, V (and O, dO) and writes O (dQ, dK, dV).
    const double qkv = x.T * (shape.q + shape.k + shape.v) / x.t * x.k;
    const double o = x.T * shape.o / x.t * x.k;
    const double flops = x.s * x.s * (dqk + dv) * x.b * heads;  // half of QK^T and PV
    core_F.attention = kernel_ms(d, 2 * flops, qkv + o, d.efficiency_F);
    core_B.attention = kernel_ms(d, 4 * flops, 2 * qkv + 2 * o, d.efficiency_B);
  } else {
    // Megatron 2021: scores = Q K^T (a batched GEMM writing s x s per head), the fused scaled
    // masked softmax (read, write), the attention dropout (read, write, a byte of mask), then
    // P V. Backward: dV = P^T dO and dP = dO V^T, the dropout's and the softmax's backward (read
    // two, write one), dQ = dS K and dK = dS^T Q.
    const double bh = x.b * heads;
    core_F.attention = gemm_ms(d, x.s, x.s, dqk, d.efficiency_F, x.k, x.k, bh) +
                       gemm_ms(d, x.s, dv, x.s, d.efficiency_F, x.k, x.k, bh);
    core_F.memory = hbm_ms(d, sb * (2 * x.k + 2 * x.k + 1));
    core_F.overhead = overhead_ms(d, 2);
    core_B.attention = gemm_ms(d, x.s, dv, x.s, d.efficiency_B, x.k, x.k, bh) +
                       gemm_ms(d, x.s, x.s, dv, d.efficiency_B, x.k, x.k, bh) +
                       gemm_ms(d, x.s, dqk, x.s, d.efficiency_B, x.k, x.k, bh) +
                       gemm_ms(d, dqk, x.s, x.s, d.efficiency_B, x.k, x.k, bh);
    core_B.memory = hbm_ms(d, sb * ((2 * x.k + 1) + 3 * x.k));
    core_B.overhead = overhead_ms(d, 2);
  }
  at.F += core_F;
  at.B += core_B;
  // Elementwise work, per block. Forward: a norm (read, write) and a bias-dropout-add (read the
  // output and the residual, write, a byte of mask) on the rank's tokens. Backward: the norm
  // reads dy and x and writes dx, the dropout-add reads the gradient and the mask and writes,
  // and the residual's gradient is added (read two, write one). W has no activation-gradient
  // work.
  const double eh = x.Te * x.h;
  for (LayerTimes* t : {&at, &mt}) {
    t->F.memory += hbm_ms(d, eh * (2 * x.k + (3 * x.k + 1)));
    t->B.memory += hbm_ms(d, eh * (3 * x.k + (2 * x.k + 1) + 3 * x.k));
  }
  at.F.overhead += overhead_ms(d, 2);
  at.B.overhead += overhead_ms(d, 3);
  // The MLP's activation (GELU reads and writes its f values, SwiGLU reads 2f and writes f;
  // backward reads the gradient and the inputs and writes the inputs' gradients) on `values`
  // inner values per matrix.
  const auto activation = [&](LayerTimes& t, double values) {
    t.F.memory += hbm_ms(d, values * x.k * (x.n_up + 1));
    t.B.memory += hbm_ms(d, values * x.k * (1 + 2 * x.n_up + x.n_up));
  };
  if (!m.moe()) {
    weight_gemm(mt, GemmShape{x.T, x.n_up * x.f / x.t, x.h}, 1);
    weight_gemm(mt, GemmShape{x.T, x.h, x.f / x.t}, 1);
    activation(mt, x.T * x.f / x.t);
    mt.F.overhead += overhead_ms(d, 3);
    mt.B.overhead += overhead_ms(d, 4);
  } else {
    // Experts (ETP 1: each rank's Te tokens, every expert whole): the router's GEMM (h -> E) and
    // its softmax and top-k in fp32; the routed copies permuted into expert order before the
    // dispatch and back after the combine (read, write); each of the ep ranks' E / ep experts a
    // GEMM of the tokens routed to it (grouped); shared experts as a dense MLP split over tp.
    const double E = m.experts;
    const double ep = std::max(1, training.ep);
    const double local = E / ep;
    const double routed = x.Te * m.top_k * (m.capacity_factor > 0 ? m.capacity_factor : 1.0);
    const double per_expert = routed / local;
    const double fe = m.expert_ffn;
    weight_gemm(mt, GemmShape{x.Te, E, x.h}, 1);
    weight_gemm(mt, GemmShape{per_expert, x.n_up * fe, x.h}, local);
    weight_gemm(mt, GemmShape{per_expert, x.h, fe}, local);
    activation(mt, routed * fe);
    const double permute = 2 * 2 * routed * x.h * x.k + x.Te * E * 4 * 3;
    mt.F.memory += hbm_ms(d, permute);
    mt.B.memory += hbm_ms(d, permute);
    if (m.shared_experts > 0) {
      const double fs = static_cast<double>(m.shared_experts) * fe;
      weight_gemm(mt, GemmShape{x.T, x.n_up * fs / x.t, x.h}, 1);
      weight_gemm(mt, GemmShape{x.T, x.h, fs / x.t}, 1);
      activation(mt, x.T * fs / x.t);
    }
    mt.F.overhead += overhead_ms(d, 8);
    mt.B.overhead += overhead_ms(d, 9);
    // The dispatch and the combine each move every routed copy (model dtype) to its expert's
    // rank; backward the same two the other way.
    l.a2a_F = l.a2a_B = expert_all_to_all_ms(d, routed * x.h * x.k, training.ep, training.tp);
  }
  // One collective per block each way over the layer's s b h activations.
  const double act = x.T * x.h * x.k;
  l.tp_F = l.tp_B = tp_collective_ms(d, act, training.tp);
  if (recompute == Recompute::selective) at.R = core_F;
  if (recompute == Recompute::full) {
    // The whole forward again, its collectives included (as compute time of the backward).
    const LayerTimes all = l.total();
    mt.R = all.F;
  }
  return l;
}

LayerTimes decoder_layer_times(const ModelSpec& m, const DeviceSpec& d, const TrainingSpec& training,
                               Recompute recompute) {
  return decoder_layer_blocks(m, d, training, recompute).total();
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
