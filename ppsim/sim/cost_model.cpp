// The expansion of costs over a schedule's stages, durations and memory deltas.
#include "ppsim/sim/cost_model.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

namespace {

std::size_t as_index(int i) { return static_cast<std::size_t>(i); }

Ticks scale(Ticks t, int divisor) {
  if (t < 0 || divisor <= 1) return t;
  return (t + divisor / 2) / divisor;
}

// t * factor to the nanosecond (t < 0: "the sum of the parts" stays so).
Ticks stretch(Ticks t, double factor) {
  if (t < 0 || factor == 1.0) return t;
  const double v = std::round(static_cast<double>(t) * factor);
  if (!(v < 9.2e18)) throw_time_overflow();
  return static_cast<Ticks>(v);
}

void check_factor(double factor, std::string_view where) {
  if (!(factor > 0) || factor > limits::kMaxSlowFactor)
    throw ConfigError(fmt::format("{}: factor {} is outside (0, {:g}]", where, factor,
                                  limits::kMaxSlowFactor));
}

// The slow-down of every device (1 where none is given).
std::vector<double> device_factors(const CostSpec& spec, int devices) {
  std::vector<double> f(as_index(std::max(0, devices)), 1.0);
  std::vector<bool> seen(f.size(), false);
  for (const SlowDevice& s : spec.slow) {
    if (s.device < 0 || s.device >= devices)
      throw ConfigError(fmt::format("--slow device={}: outside 0..{} (the schedule has {} devices)",
                                    s.device, devices - 1, devices));
    if (seen[as_index(s.device)])
      throw ConfigError(fmt::format("--slow device={}: given twice", s.device));
    check_factor(s.factor, fmt::format("--slow device={}", s.device));
    seen[as_index(s.device)] = true;
    f[as_index(s.device)] = s.factor;
  }
  return f;
}

} // namespace

int cost_piece(const Topology& topo, int stage, int pieces) {
  if (pieces == topo.stages()) return stage;  // per virtual stage (also per device-stage at v = 1)
  if (pieces <= 1) return 0;
  return std::min(pieces - 1, topo.model_position(stage) / std::max(1, topo.chunks()));
}

CostModel cost_model_for(const CostSpec& spec, const Schedule& schedule) {
  const Topology topo(schedule);
  const int S = schedule.stages();
  const int p = schedule.devices;
  const int v = schedule.chunks();
  const int n = static_cast<int>(spec.stages.size());
  if (n != 1 && n != p && n != S)
    throw ConfigError(fmt::format(
        "{}: {} stage entries, but the schedule has {} devices and {} stages (give 1, {} or {})",
        spec.source, n, p, S, p, S));
  CostModel model;
  model.comm = spec.comm;
  model.memory_unit_bytes = spec.memory_unit_bytes;
  model.source = spec.source;
  model.slices = spec.slices;
  model.stage.resize(as_index(S));
  const std::vector<double> slow = device_factors(spec, p);
  for (int s = 0; s < S; ++s) {
    StageCosts c;
    int divisor = 1;
    c = spec.stages[as_index(cost_piece(topo, s, n))];
    // NOTE: a per-device-stage profile describes the model cut into p pieces; a virtual stage
    // is 1/v of the piece it lies in, so every schedule runs the same model.
    if (n != S) divisor = v;
    check_factor(c.factor, fmt::format("{}: stage {}", spec.source, s));
    const int d = schedule.stage_device[as_index(s)];
    const double factor = c.factor * (d >= 0 && d < p ? slow[as_index(d)] : 1.0);
    c.factor = 1.0;
    c.F = stretch(c.F, factor);
    c.B = stretch(c.B, factor);
    c.W = stretch(c.W, factor);
    c.BW = stretch(c.BW, factor);
    c.FB = stretch(c.FB, factor);
    c.R = stretch(c.R, factor);
    const bool bw_given = c.BW >= 0;
    c.F = scale(c.F, divisor);
    c.B = scale(c.B, divisor);
    c.W = scale(c.W, divisor);
    c.BW = bw_given ? scale(c.BW, divisor) : c.B + c.W;
    c.FB = scale(c.FB, divisor);
    c.R = std::min(scale(c.R, divisor), c.B);
    c.MB /= divisor;
    c.MW /= divisor;
    c.state_bytes /= divisor;
    c.params /= divisor;
    model.stage[as_index(s)] = std::move(c);
  }
  // The cells of the F and the backwards of each device's stages that have sub-operations.
  const auto has_ops = [&](int s) { return !model.stage[as_index(s)].F_ops.empty(); };
  bool any = false;
  for (int s = 0; s < S; ++s) any = any || has_ops(s);
  if (!any) return model;
  model.cells.resize(as_index(S));
  model.comm_streams = spec.comm_streams;
  for (int d = 0; d < p; ++d) {
    const std::span<const int> held = topo.device_stages(d);
    for (const int f : held) {
      if (!has_ops(f)) continue;
      const StageCosts& fc = model.stage[as_index(f)];
      const std::vector<TimedOp> forward = chain_of(fc.F_ops, fc.F);
      for (const int b : held) {
        if (!has_ops(b)) continue;
        const StageCosts& bc = model.stage[as_index(b)];
        for (const Kind k : {Kind::B, Kind::BW}) {
          const std::vector<TimedOp> backward =
              k == Kind::B ? chain_of(bc.B_ops, bc.B) : chain_of(bc.BW_ops, bc.BW);
          const Ticks time = overlapped_cell(forward, backward, spec.comm_streams);
          Ticks compute = 0, comm = 0;
          for (const auto* chain : {&forward, &backward})
            for (const TimedOp& op : *chain) (op.comm ? comm : compute) += op.time;
          model.cells[as_index(f)].push_back({b, k, time, std::max<Ticks>(0, time - compute), comm});
        }
      }
    }
  }
  return model;
}

Ticks CostModel::duration(const Task& task) const {
  const auto& s = stage[as_index(task.stage)];
  if (!slices.empty() && task.kind != Kind::FB) {
    const SliceCosts& c = slices[slice_index(task.microbatch)];
    const auto share = [](Ticks t, double f) {
      return static_cast<Ticks>(std::llround(static_cast<double>(t) * f));
    };
    switch (task.kind) {
    case Kind::F: return share(s.F, c.F);
    case Kind::B: return share(s.B, c.B);
    case Kind::W: return share(s.W, c.W);
    case Kind::BW: {  // the slice's B and W shares, weighted by the parts' times
      const double parts = static_cast<double>(s.B) + static_cast<double>(s.W);
      return share(s.BW, parts > 0 ? (c.B * static_cast<double>(s.B) + c.W * static_cast<double>(s.W)) / parts
                                   : c.B);
    }
    case Kind::FB: break;
    }
  }
  switch (task.kind) {
  case Kind::F: return s.F;
  case Kind::B: return s.B;
  case Kind::W: return s.W;
  case Kind::BW: return s.BW;
  case Kind::FB: {
    if (s.FB >= 0) return s.FB;
    if (const Cell* c = cell_of(task)) return c->time;
    const auto& b = stage[as_index(task.stage2)];
    return s.F + (task.kind2 == Kind::BW ? b.BW : b.B);
  }
  }
  return 0;
}

namespace {

// A task's sub-operations, or nullptr: F, B and BW have them where their stage does.
const std::vector<SubOp>* ops_of(const StageCosts& s, Kind kind) {
  switch (kind) {
  case Kind::F: return &s.F_ops;
  case Kind::B: return &s.B_ops;
  case Kind::BW: return &s.BW_ops;
  case Kind::W:
  case Kind::FB: break;
  }
  return nullptr;
}

} // namespace

const CostModel::Cell* CostModel::cell_of(const Task& task) const {
  const StageCosts& s = stage[as_index(task.stage)];
  if (task.kind != Kind::FB || s.FB >= 0 || cells.empty()) return nullptr;
  for (const Cell& c : cells[as_index(task.stage)])
    if (c.stage2 == task.stage2 && c.kind2 == task.kind2) return &c;
  return nullptr;
}

Ticks CostModel::task_comm(const Task& task) const {
  if (task.kind != Kind::FB) return exposed_comm(task);
  const Cell* c = cell_of(task);
  return c != nullptr ? c->comm : 0;
}

Ticks CostModel::exposed_comm(const Task& task) const {
  const StageCosts& s = stage[as_index(task.stage)];
  if (s.F_ops.empty()) return 0;
  if (task.kind == Kind::FB) {
    const Cell* c = cell_of(task);
    return c != nullptr ? c->exposed : 0;
  }
  const std::vector<SubOp>* ops = ops_of(s, task.kind);
  if (ops == nullptr) return 0;
  // NOTE: each operation rounded as chain_of rounds it, so that this is comm_ops' sum
  const double total = static_cast<double>(duration(task));
  Ticks sum = 0;
  for (const SubOp& op : *ops)
    if (op.comm) sum += static_cast<Ticks>(std::llround(op.share * total));
  return sum;
}

std::vector<PlacedOp> CostModel::comm_ops(const Task& task) const {
  const StageCosts& s = stage[as_index(task.stage)];
  std::vector<PlacedOp> out;
  if (s.F_ops.empty()) return out;
  if (task.kind == Kind::FB) {
    const StageCosts& b = stage[as_index(task.stage2)];
    if (cell_of(task) == nullptr || b.F_ops.empty()) return out;
    const std::vector<TimedOp> forward = chain_of(s.F_ops, s.F);
    const std::vector<TimedOp> backward =
        task.kind2 == Kind::BW ? chain_of(b.BW_ops, b.BW) : chain_of(b.B_ops, b.B);
    for (const PlacedOp& op : place_cell(forward, backward, comm_streams))
      if (op.stream != 0) out.push_back(op);
    return out;
  }
  const std::vector<SubOp>* ops = ops_of(s, task.kind);
  if (ops == nullptr) return out;
  Ticks at = 0;
  for (const TimedOp& op : chain_of(*ops, duration(task))) {
    if (op.comm) out.push_back({.start = at, .time = op.time, .chain = 0, .stream = 1});
    at = add_ticks(at, op.time);
  }
  return out;
}

Ticks CostModel::recompute_part(const Task& task) const {
  switch (task.kind) {
  case Kind::B:
  case Kind::BW: {
    const Ticks r = stage[as_index(task.stage)].R;
    if (slices.empty() || r == 0) return r;
    const double f = slices[slice_index(task.microbatch)].F;
    return std::min(duration(task), static_cast<Ticks>(std::llround(static_cast<double>(r) * f)));
  }
  case Kind::FB: return stage[as_index(task.stage2)].R;
  case Kind::F:
  case Kind::W: return 0;
  }
  return 0;
}

double CostModel::memory_delta(Kind kind, int s) const {
  const auto& c = stage[as_index(s)];
  switch (kind) {
  case Kind::F: return c.MB;
  case Kind::B: return -(c.MB - c.MW);
  case Kind::W: return -c.MW;
  case Kind::BW: return -c.MB;
  case Kind::FB: return 0.0;  // handled part by part
  }
  return 0.0;
}

double CostModel::memory_delta(Kind kind, int s, int microbatch) const {
  if (slices.empty()) return memory_delta(kind, s);
  const auto& c = stage[as_index(s)];
  const SliceCosts& x = slices[slice_index(microbatch)];
  switch (kind) {
  case Kind::F: return c.MB * x.MB;
  case Kind::B: return -(c.MB * x.MB - c.MW * x.MW);
  case Kind::W: return -c.MW * x.MW;
  case Kind::BW: return -c.MB * x.MB;
  case Kind::FB: return 0.0;  // handled part by part
  }
  return 0.0;
}

} // namespace ppsim
