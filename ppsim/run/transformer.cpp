// The transformer cost model: FLOPs, activation memory and training state per layer and stage.
#include "ppsim/run/transformer.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <fmt/format.h>

namespace ppsim {

namespace {

struct TransformerShape {
  double s, b, h, f, a, V, T, n_up;
};

TransformerShape shape_of(const ModelSpec& m) {
  TransformerShape x{};
  x.s = m.seq;
  x.b = m.microbatch_size;
  x.h = m.hidden;
  x.f = m.ffn;
  x.a = m.heads;
  x.V = m.vocab;
  x.T = x.s * x.b;
  x.n_up = m.mlp == MlpKind::swiglu ? 2 : 1;  // matrices into the MLP's inner width
  return x;
}

// One of the first `dense_layers` layers of a mixture of experts: the model with a dense MLP.
ModelSpec dense_layer_model(const ModelSpec& m) {
  ModelSpec d = m;
  d.experts = d.top_k = d.expert_ffn = d.shared_experts = d.dense_layers = 0;
  d.capacity_factor = 0;
  return d;
}

// Bytes of activations relative to the 16-bit formulas of Korthikanti et al.
double width_factor(const ModelSpec& m) { return m.dtype_bytes() / 2.0; }

} // namespace

double state_bytes_per_param(const ModelSpec& model, const TrainingSpec& training) {
  const double weights = model.dtype_bytes();
  const double grads = 4;
  const double master = model.dtype_bytes() == 4 ? 0 : 4;
  const double moments = 8;
  const double optimizer = (master + moments) / (training.zero >= 1 ? std::max(1, training.dp) : 1);
  return weights + grads + optimizer;
}

LayerEstimate decoder_layer(const ModelSpec& m) { return decoder_layer(m, m.recompute); }

LayerEstimate decoder_layer(const ModelSpec& m, Recompute recompute) {
  const TransformerShape x = shape_of(m);
  const AttentionShape at = attention_shape(m);
  LayerEstimate e;
  // GEMMs: the attention's projections (QKV h -> q + 2 h_kv and the output projection q -> h;
  // MLA's four), and the MLP (n_up + 1 matrices h x f), or for a mixture of experts the router
  // (h -> E), every expert and shared expert (n_up + 1 matrices h x f_e each), of which a token
  // passes top_k routed ones (times the capacity factor's padding) and the shared ones.
  const double attention_params = at.params();
  double mlp_params = (x.n_up + 1) * x.h * x.f;
  double mlp_flops = 2 * x.T * mlp_params;
  // Per token: the values the MLP keeps (its input, inner activations and the down
  // projection's input) and W's GEMM inputs and output gradients.
  double routed = 0, fe = 0, fs = 0;
  if (m.moe()) {
    fe = m.expert_ffn;
    fs = static_cast<double>(m.shared_experts) * fe;
    routed = x.T * m.top_k * (m.capacity_factor > 0 ? m.capacity_factor : 1.0);
    const double expert = (x.n_up + 1) * x.h * fe;
    e.expert_params = m.experts * expert;
    mlp_params = x.h * m.experts + e.expert_params + (x.n_up + 1) * x.h * fs;
    mlp_flops = 2 * x.T * x.h * m.experts + 2 * routed * expert + 2 * x.T * (x.n_up + 1) * x.h * fs;
  }
  const double G = 2 * x.T * attention_params + mlp_flops;
  // QK^T and attention x V over every head: 4 b s^2 q for heads of one width.
  const double A = 2 * x.b * x.s * x.s * x.a * (at.head_qk + at.head_v);
  e.F_flops = G + A;
  e.B_flops = G + 2 * A;
  e.W_flops = G;
  if (recompute == Recompute::selective) e.R_flops = A;
  if (recompute == Recompute::full) e.R_flops = G + A;
  e.params = attention_params + mlp_params + 2 * x.h + at.latent / 2;  // and the norms
  // Activation memory per micro-batch, 16-bit values (masks one byte), per Korthikanti et al.:
  // attention 2sbh (QKV input) + 2 sb q + 2 sb h_kv (Q, K) + 2 sb h_kv (V) + 2 sb q (projection
  // input) + sbh (dropout mask) + 5 a s^2 b (softmax, its mask, dropout output), and MLA's
  // latents before and after their norms; MLP 2sbh (input)
  // + 2 n_up sbf (inner activations) + 2sbf (down-projection input) + sbh (mask); two norms
  // 4sbh. For GPT (q = h_kv = h, f = 4h, GELU) that is 34 sbh + 5 a s^2 b. Experts keep, per
  // routed copy, its permuted input (2h) and inner values, the shared experts theirs per token,
  // and the router its fp32 logits and probabilities (8E per token).
  const double sbh = x.T * x.h;
  const double attention = 3 * sbh + 2 * x.T * (at.q + at.k + at.v + at.o) + 2 * x.T * at.latent;
  double mlp = 3 * sbh + (2 * x.n_up + 2) * x.T * x.f;
  if (m.moe())
    mlp = 3 * sbh + routed * (2 * x.h + (2 * x.n_up + 2) * fe) + (2 * x.n_up + 2) * x.T * fs +
          8 * x.T * m.experts;
  const double norms = 4 * sbh;
  const double scores = 5 * x.a * x.s * x.s * x.b;
  const double k = width_factor(m);
  switch (recompute) {
  case Recompute::none: e.act_bytes = k * (attention + mlp + norms) + k * scores; break;
  case Recompute::selective: e.act_bytes = k * (attention + mlp + norms); break;
  case Recompute::full: e.act_bytes = k * 2 * sbh; break;
  }
  // What W needs after B: the inputs of the weight GEMMs (2sbh of QKV's, 2 sb q of the
  // projection's, 2sbh and 2sbf of the MLP's) and their output gradients (2 sb (q + 2 h_kv),
  // 2sbh, 2 n_up sbf, 2sbh): 32 sbh for GPT; MLA's four projections alike. Experts: per routed copy its input and inner values
  // and their gradients, the router's input and fp32 logits' gradient, the shared experts'.
  double mlp_w = 2 * sbh + 2 * x.T * x.f + 2 * x.n_up * x.T * x.f + 2 * sbh;
  if (m.moe())
    mlp_w = 2 * sbh + 4 * x.T * m.experts + routed * (2 * x.h + 2 * fe + 2 * x.n_up * fe + 2 * x.h) +
            x.T * (2 * fs + 2 * x.n_up * fs) + (fs > 0 ? 2 * sbh : 0);
  double attention_w = 0;
  for (const Projection& p : at.projections) attention_w += 2 * x.T * (p.in + p.out);
  e.mw_bytes = k * (attention_w + mlp_w);
  return e;
}

LayerEstimate embedding_layer(const ModelSpec& m) {
  const TransformerShape x = shape_of(m);
  LayerEstimate e;
  e.params = x.V * x.h;
  // NOTE: a lookup and a scatter-add of its gradient: no GEMM, so no FLOPs to speak of. Its
  // output (and dropout mask) is the first activation the stage keeps.
  e.act_bytes = width_factor(m) * 3 * x.T * x.h;
  e.mw_bytes = 0;
  return e;
}

LayerEstimate output_layer(const ModelSpec& m) {
  const TransformerShape x = shape_of(m);
  LayerEstimate e;
  const double flops = 2 * x.T * x.h * x.V;
  e.F_flops = flops;
  e.B_flops = flops;
  e.W_flops = flops;
  e.params = x.V * x.h + 2 * x.h;  // the output matrix (a copy of the tied embedding) and the final norm
  // The final norm's input and the projection's input (2sbh each), the logits in fp32 for the
  // cross-entropy (4 s b V); W needs the projection's input and the logits' gradient.
  e.act_bytes = width_factor(m) * 4 * x.T * x.h + 4 * x.T * x.V;
  e.mw_bytes = width_factor(m) * 2 * x.T * x.h + m.dtype_bytes() * x.T * x.V;
  return e;
}

double parameter_count(const ModelSpec& m) {
  const double layers = (m.layers - m.dense_layers) * decoder_layer(m).params +
                        (m.dense_layers > 0 ? m.dense_layers * decoder_layer(dense_layer_model(m)).params : 0);
  const double embedding = embedding_layer(m).params;
  const double output = output_layer(m).params - (m.tied_embeddings ? embedding : 0);
  return layers + embedding + output;
}

namespace {

// A stage's decoders in model order, as runs of one recompute mode and one kind of MLP (the
// dense first layers of a mixture of experts, or its experts).
struct LayerRun {
  Recompute mode;
  bool dense;
  int n;
};

// A chain of sub-operations in ms, then as shares of its total.
struct OpsInMs {
  std::vector<std::pair<double, bool>> ops;  // ms, comm
  void compute(double ms) {
    if (ms <= 0) return;
    if (!ops.empty() && !ops.back().second) ops.back().first += ms;
    else ops.emplace_back(ms, false);
  }
  void comm(double ms) {
    if (ms > 0) ops.emplace_back(ms, true);
  }
  void append(const OpsInMs& o) {
    for (const auto& [ms, is_comm] : o.ops) is_comm ? comm(ms) : compute(ms);
  }
  [[nodiscard]] std::vector<SubOp> shares() const {
    double total = 0;
    for (const auto& op : ops) total += op.first;
    std::vector<SubOp> out;
    if (total <= 0) return out;
    for (const auto& [ms, is_comm] : ops) out.push_back({ms / total, is_comm});
    return out;
  }
};

// The sub-operations of a stage's F, B and BW (--overlap): per layer the attention block, the
// dispatch, the experts and the combine (backward the reverse, each layer's recomputed forward
// first, BW each layer's W after its B); the TP collectives on the comm stream too with `full`
// (half of a block's before it, as the all-gather, half after, as the reduce-scatter), inside
// the blocks' compute otherwise.
void stage_sub_ops(StageCosts& c, const ModelSpec& m, const ModelSpec& dense, const DeviceSpec& d,
                   const TrainingSpec& training, const StageLayers& st,
                   const std::vector<LayerRun>& runs) {
  const bool tp_on_stream = training.overlap == OverlapMode::full;
  OpsInMs f, b, bw;
  const LayerTimes embed = embedding_layer_times(m, d, training).scaled(st.embedding);
  const LayerTimes loss = output_layer_times(m, d, training).scaled(st.loss);
  f.compute(embed.F.total());
  const auto block = [&](OpsInMs& ops, const TimeParts& compute, double tp) {
    if (tp_on_stream) ops.comm(tp / 2);
    ops.compute(compute.total() + (tp_on_stream ? 0 : tp));
    if (tp_on_stream) ops.comm(tp / 2);
  };
  std::vector<LayerBlocks> layers;  // in model order
  for (const LayerRun& r : runs)
    layers.insert(layers.end(), static_cast<std::size_t>(r.n),
                  decoder_layer_blocks(r.dense ? dense : m, d, training, r.mode));
  for (const LayerBlocks& l : layers) {
    block(f, l.attention.F, l.tp_F);
    f.comm(l.a2a_F);
    block(f, l.mlp.F, l.tp_F);
    f.comm(l.a2a_F);
  }
  f.compute(loss.F.total());
  b.compute(loss.B.total());
  bw.compute(loss.B.total() + loss.W.total());
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const LayerBlocks& l = *it;
    OpsInMs one;
    one.compute(l.attention.R.total() + l.mlp.R.total());
    one.comm(l.a2a_B);
    block(one, l.mlp.B, l.tp_B);
    one.comm(l.a2a_B);
    block(one, l.attention.B, l.tp_B);
    b.append(one);
    bw.append(one);
    bw.compute(l.attention.W.total() + l.mlp.W.total());
  }
  b.compute(embed.B.total());
  bw.compute(embed.B.total() + embed.W.total());
  c.F_ops = f.shares();
  c.B_ops = b.shares();
  c.BW_ops = bw.shares();
}

} // namespace

double active_parameter_count(const ModelSpec& m) {
  if (!m.moe()) return parameter_count(m);
  const double idle = static_cast<double>(m.experts - m.top_k) / m.experts;
  return parameter_count(m) - (m.layers - m.dense_layers) * idle * decoder_layer(m).expert_params;
}

ModelCosts model_costs(const ModelSpec& m, const DeviceSpec& d, const Layout& layout, int devices,
                       const TrainingSpec& training, const std::vector<StageRecompute>& recompute) {
  check_model(m, m.source.empty() ? "model" : m.source);
  if (devices < 1 || devices > limits::kMaxDevices)
    throw ConfigError(fmt::format("model costs: devices={} (expected 1..{})", devices,
                                  limits::kMaxDevices));
  if (layout.stages.empty()) throw ConfigError("model costs: the layout has no stages");
  if (d.peak_tflops <= 0) throw ConfigError(fmt::format("{}: no peak_tflops", d.name));
  if (training.dp < 1 || training.dp > limits::kMaxReplicas)
    throw ConfigError(fmt::format("--dp {}: expected 1..{}", training.dp, limits::kMaxReplicas));
  if (training.tp < 1 || training.tp > 1024)
    throw ConfigError(fmt::format("--tp {}: expected 1..1024", training.tp));
  if (training.ep < 1 || training.ep > limits::kMaxDevices)
    throw ConfigError(fmt::format("--ep {}: expected 1..{}", training.ep, limits::kMaxDevices));
  if (training.ep > 1 && !m.moe())
    throw ConfigError(fmt::format("--ep {}: {} has no experts (a mixture of experts: e.g. "
                                  "mixtral-8x7b, qwen3-moe-30b-a3b)",
                                  training.ep, m.name));
  if (m.moe() && m.experts % training.ep != 0)
    throw ConfigError(fmt::format("--ep {}: does not divide the {} experts of {}", training.ep,
                                  m.experts, m.name));
  if ((training.dp * training.tp) % training.ep != 0)
    throw ConfigError(fmt::format("--ep {}: an expert-parallel group is drawn from the --dp x --tp "
                                  "= {} ranks of a stage, whose tokens it routes (Megatron-Core's "
                                  "MoE parallel folding): give --dp {} or a multiple",
                                  training.ep, training.dp * training.tp,
                                  training.ep / std::gcd(training.ep, training.tp)));
  if (training.comm_streams < 0 || training.comm_streams > 64)
    throw ConfigError(fmt::format("--streams {}: expected 1..64", training.comm_streams));
  if (training.zero != 0 && training.zero != 1)
    throw ConfigError(fmt::format("--zero {}: ppsim models stages 0 and 1", training.zero));
  const std::size_t n_stages = layout.stages.size();
  if (recompute.size() > 1 && recompute.size() != n_stages)
    throw ConfigError(fmt::format("--recompute '{}': {} entries for {} stages (give one, or one "
                                  "per stage)",
                                  excerpt(recompute_text(recompute)), recompute.size(), n_stages));
  const LayerEstimate decoder = decoder_layer(m);
  const ModelSpec dense = dense_layer_model(m);
  const LayerEstimate embed = embedding_layer(m);
  const LayerEstimate out = output_layer(m);
  // NOTE: the unit is one even device-stage's decoder activations, so `2p` means what it means
  // for the paper's schedules; stages with the embedding or the loss hold a little more.
  const double tp = training.tp;
  const double ep = training.ep;
  const double unit = decoder.act_bytes / tp * std::max(1.0, static_cast<double>(m.layers) / devices);

  ModelCosts mc;
  mc.unit_bytes = unit;
  mc.message_bytes = static_cast<double>(m.seq) * m.microbatch_size * m.hidden * m.dtype_bytes() / tp;
  mc.costs.stages.clear();
  mc.costs.memory_unit_bytes = unit;
  const double per_param = state_bytes_per_param(m, training);
  const double rate = d.peak_tflops * 1e12;  // FLOP/s
  const auto ms = [&](double flops, double efficiency, const char* what) {
    const double t = flops / (rate * efficiency) * 1e3;
    return ms_to_ticks(t, fmt::format("{} time of a stage", what));
  };
  int first_decoder = 0;  // of the stage, in model order
  for (std::size_t i = 0; i < n_stages; ++i) {
    const StageLayers& st = layout.stages[i];
    LayerEstimate e;
    const auto add = [&](const LayerEstimate& l, int n) {
      e.F_flops += n * l.F_flops;
      e.B_flops += n * l.B_flops;
      e.W_flops += n * l.W_flops;
      e.R_flops += n * l.R_flops;
      e.act_bytes += n * l.act_bytes;
      e.mw_bytes += n * l.mw_bytes;
      e.params += n * l.params;
      e.expert_params += n * l.expert_params;
    };
    add(embed, st.embedding);
    // NOTE: an MTP layer costs about a decoder layer. Megatron's block method: the first N
    // layers fully recomputed, the others as the model says.
    const int layers = st.decoders + st.mtp;
    // The stage's decoders by how they recompute: {mode, count} twice (the fully recomputed
    // first N, then the rest), or the model's own for all of them.
    std::array<std::pair<Recompute, int>, 2> split{{{m.recompute, layers}, {Recompute::none, 0}}};
    if (!recompute.empty()) {
      const StageRecompute& r = recompute[recompute.size() == 1 ? 0 : i];
      const int full = r.mode != Recompute::full ? 0 : r.layers < 0 ? layers : std::min(layers, r.layers);
      split = {{{Recompute::full, full}, {r.mode == Recompute::full ? r.rest : r.mode, layers - full}}};
    }
    // The first dense_layers decoders of the model have a dense MLP (an MTP layer, after all
    // decoders, never).
    const int dense_here = std::clamp(m.dense_layers - first_decoder, 0, st.decoders);
    first_decoder += st.decoders;
    std::vector<LayerRun> runs;
    for (int pos = 0; const auto& [mode, n] : split) {
      const int d_n = std::clamp(dense_here - pos, 0, n);
      if (d_n > 0) runs.push_back({mode, true, d_n});
      if (n > d_n) runs.push_back({mode, false, n - d_n});
      pos += n;
    }
    for (const LayerRun& r : runs)
      add(r.dense ? decoder_layer(dense, r.mode) : r.mode == m.recompute ? decoder : decoder_layer(m, r.mode), r.n);
    add(out, st.loss);
    LayerTimes times;
    if (kernel_level(d)) {
      times += embedding_layer_times(m, d, training).scaled(st.embedding);
      for (const LayerRun& r : runs)
        times += decoder_layer_times(r.dense ? dense : m, d, training, r.mode).scaled(r.n);
      times += output_layer_times(m, d, training).scaled(st.loss);
    }
    e.F_flops /= tp;
    e.B_flops /= tp;
    e.W_flops /= tp;
    e.R_flops /= tp;
    e.act_bytes /= tp;
    e.mw_bytes /= tp;
    e.params = (e.params - e.expert_params) / tp + e.expert_params / ep;
    e.expert_params /= ep;
    StageCosts c;
    if (kernel_level(d)) {
      c.F = ms_to_ticks(times.F.total(), "F time of a stage");
      c.R = ms_to_ticks(times.R.total(), "recomputed forward time of a stage");
      c.B = add_ticks(ms_to_ticks(times.B.total(), "B time of a stage"), c.R);
      c.W = ms_to_ticks(times.W.total(), "W time of a stage");
      mc.times.push_back(times);
      if (training.overlap != OverlapMode::none) stage_sub_ops(c, m, dense, d, training, st, runs);
    } else {
      c.F = ms(e.F_flops, d.efficiency_F, "F");
      c.R = ms(e.R_flops, d.efficiency_F, "recomputed forward");
      c.B = add_ticks(ms(e.B_flops, d.efficiency_B, "B"), c.R);
      c.W = ms(e.W_flops, d.efficiency_W, "W");
    }
    mc.optimizer_ms.push_back(stage_optimizer_ms(m, d, training, e.params));
    c.MB = e.act_bytes / unit;
    c.MW = e.mw_bytes / unit;
    c.params = e.params;
    c.state_bytes = e.params * per_param;
    mc.stages.push_back(e);
    mc.state_bytes.push_back(c.state_bytes);
    mc.costs.stages.push_back(c);
  }
  const double link_ms =
      d.link_latency_ms + (d.link_gbytes_per_s > 0 ? mc.message_bytes / (d.link_gbytes_per_s * 1e9) * 1e3 : 0);
  mc.costs.comm = ms_to_ticks(link_ms, "link time of a message");
  mc.costs.comm_streams = training.comm_streams;
  mc.costs.source = fmt::format("model {} on {} ({} stages)", m.name, d.name, layout.stages.size());
  return mc;
}

std::string_view overlap_name(OverlapMode mode) {
  switch (mode) {
  case OverlapMode::none: return "none";
  case OverlapMode::a2a: return "a2a";
  case OverlapMode::full: return "full";
  }
  return "?";
}

double stage_optimizer_ms(const ModelSpec& m, const DeviceSpec& d, const TrainingSpec& training,
                          double params) {
  return optimizer_ms(m, d, params / (training.zero >= 1 ? std::max(1, training.dp) : 1));
}

void apply_recompute(WorkloadSpec& w, const RecomputeSpec& r) {
  if (!r.given()) return;
  w.recompute.clear();
  w.recompute_auto = r.automatic;
  if (r.uniform()) w.model.recompute = r.stages.front().mode;
  else if (!r.automatic) w.recompute = r.stages;
}

Layout workload_layout(const WorkloadSpec& w, int devices, int chunks) {
  // Bounded before a layout of devices x chunks stages is made for them.
  if (devices < 1 || devices > limits::kMaxDevices)
    throw ConfigError(fmt::format("model costs: devices={} (expected 1..{})", devices,
                                  limits::kMaxDevices));
  if (chunks < 0 || static_cast<long long>(devices) * std::max(1, chunks) > limits::kMaxStages)
    throw ConfigError(fmt::format("model costs: chunks={} on {} devices (expected 0..{} stages "
                                  "in all)",
                                  chunks, devices, limits::kMaxStages));
  if (!w.layout.empty() && !w.layers_per_stage.empty())
    throw ConfigError("--layout and --layers-per-stage: give one of them");
  Layout layout;
  if (!w.layout.empty()) layout = parse_layout(w.layout, "--layout");
  else if (!w.layers_per_stage.empty()) layout = layout_from_counts(w.layers_per_stage);
  else return default_layout(w.model.layers, devices * std::max(1, chunks));
  const int n = static_cast<int>(layout.stages.size());
  // A user layout has one stage per device (any schedule) or p*v (a schedule with v chunks).
  const int stages = chunks > 0 ? devices * chunks : (n % devices == 0 ? n : devices);
  check_layout(layout, stages, w.model.layers, w.layout.empty() ? "--layers-per-stage" : "--layout");
  return layout;
}

ModelCosts workload_costs(const WorkloadSpec& w, int devices, int chunks) {
  return model_costs(w.model, w.device, workload_layout(w, devices, chunks), devices, w.training,
                     w.recompute);
}

} // namespace ppsim
