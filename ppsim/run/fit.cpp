// Costs fitted from a measured run: per stage and kind the medians and their spread, the
// latency of its messages, and how well the fit explains the run.
#include "ppsim/run/measured.hpp"

#include "ppsim/io/detail/cost_document.hpp"
#include "ppsim/run/detail/fit_document.hpp"
#include "ppsim/run/detail/run_graph.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

using detail::kNoRun;

using detail::durations_by_stage;
using detail::median_of;
using detail::quantile_of;
using detail::rel_error;
using detail::run_graph;
using detail::RunGraph;

namespace {

// The waits that show a message's latency: the consumer's device idle before it, this message
// the last of its inputs to be ready.
std::vector<Ticks> message_waits(const Run& r) {
  const RunGraph g = run_graph(r.schedule, r.timeline);
  const auto& runs = r.timeline.runs;
  std::vector<Ticks> waits;
  for (std::size_t c = 0; c < runs.size(); ++c) {
    int last = kNoRun;
    for (const int q : g.needs[c])
      if (last == kNoRun || runs[ix(q)].end > runs[ix(last)].end) last = q;
    if (last == kNoRun || g.device[ix(last)] == g.device[c]) continue;
    const Ticks free = g.prev[c] == kNoRun ? 0 : runs[ix(g.prev[c])].end;
    if (runs[c].start <= free) continue;  // the device was busy: the wait says nothing
    const Ticks gap = runs[c].start - runs[ix(last)].end;
    if (gap >= 0) waits.push_back(gap);
  }
  return waits;
}

} // namespace

CostFit fit_costs(const MeasuredRun& m) {
  const Run& r = m.run;
  const int S = r.schedule.stages();
  const auto by_stage = durations_by_stage(r);
  CostFit fit;
  fit.costs.stages.assign(ix(S), StageCosts{});
  fit.costs.source = fmt::format("fitted from a measured run ({})", m.format);
  const Topology topo(r.schedule);
  for (int s = 0; s < S; ++s) {
    StageFit sf;
    sf.stage = s;
    sf.device = topo.device_of(s);
    std::array<Ticks, 5> med{};
    std::array<bool, 5> has{};
    for (std::size_t k = 0; k < 5; ++k) {
      const auto& v = by_stage[ix(s)][k];
      KindFit& kf = sf.kinds[k];
      kf.samples = static_cast<int>(v.size());
      if (v.empty()) continue;
      has[k] = true;
      med[k] = median_of(v);
      kf.median_ms = ticks_to_ms(med[k]);
      kf.p10_ms = ticks_to_ms(quantile_of(v, 0.1));
      kf.p90_ms = ticks_to_ms(quantile_of(v, 0.9));
      std::vector<Ticks> dev;
      dev.reserve(v.size());
      for (const Ticks x : v) dev.push_back(std::abs(x - med[k]));
      kf.spread = med[k] > 0 ? static_cast<double>(median_of(dev)) / static_cast<double>(med[k]) : 0.0;
    }
    StageCosts& c = fit.costs.stages[ix(s)];
    const auto at = [](Kind k) { return static_cast<std::size_t>(k); };
    c.F = has[at(Kind::F)] ? med[at(Kind::F)] : 0;
    if (has[at(Kind::B)] || has[at(Kind::W)]) {
      c.B = has[at(Kind::B)] ? med[at(Kind::B)] : 0;
      c.W = has[at(Kind::W)] ? med[at(Kind::W)] : 0;
      c.BW = has[at(Kind::BW)] ? med[at(Kind::BW)] : -1;
    } else if (has[at(Kind::BW)]) {
      // NOTE: a fused backward does not say how it splits; for every GEMM dX and dW cost the same
      // FLOPs, so B = W = BW / 2, which add up to the measured BW exactly (BW stays "B + W", so
      // that --costs B=..,W=.. on top of the fit moves it too).
      const Ticks bw = med[at(Kind::BW)];
      c.B = bw / 2;
      c.W = bw - c.B;
      c.BW = -1;
    }
    c.FB = has[at(Kind::FB)] ? med[at(Kind::FB)] : -1;
    // One entry per virtual stage: the measured run's own memory per stage, as it is.
    c.MB = r.costs.stage[ix(s)].MB;
    c.MW = r.costs.stage[ix(s)].MW;
    c.act_bytes = r.costs.stage[ix(s)].act_bytes;
    c.grad_bytes = r.costs.stage[ix(s)].grad_bytes;
    fit.stages.push_back(sf);
  }
  fit.costs.memory_unit_bytes = r.costs.memory_unit_bytes;
  const std::vector<Ticks> waits = message_waits(r);
  fit.comm_samples = static_cast<int>(waits.size());
  fit.costs.comm = median_of(waits);
  fit.comm_ms = ticks_to_ms(fit.costs.comm);
  double total = 0;
  for (const DeviceMetrics& d : r.metrics.per_device) total += static_cast<double>(d.busy);
  const double mean = total / static_cast<double>(std::max<std::size_t>(1, r.metrics.per_device.size()));
  for (const DeviceMetrics& d : r.metrics.per_device)
    fit.device_load.push_back(mean > 0 ? static_cast<double>(d.busy) / mean : 1.0);
  const Run replay = run_schedule(r.schedule, fit.costs);
  fit.replay_cost_ms = ticks_to_ms(replay.metrics.cost);
  fit.replay_cost_error = rel_error(static_cast<double>(replay.metrics.cost),
                                    static_cast<double>(r.metrics.cost));
  return fit;
}

nlohmann::ordered_json detail::fit_section(const CostFit& fit, const MeasuredRun& m) {
  nlohmann::ordered_json f;
  f["method"] = "per stage and kind, the median of the measured durations; comm, the median "
                "wait of a consumer for its last input from another device";
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageFit& sf : fit.stages) {
    nlohmann::ordered_json s;
    s["stage"] = sf.stage;
    s["device"] = sf.device;
    for (const Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW, Kind::FB}) {
      const KindFit& kf = sf.kinds[static_cast<std::size_t>(k)];
      if (kf.samples == 0) continue;
      s[std::string(kind_name(k))] = {{"samples", kf.samples},  {"median_ms", kf.median_ms},
                                      {"p10_ms", kf.p10_ms},    {"p90_ms", kf.p90_ms},
                                      {"spread", kf.spread}};
    }
    stages.push_back(std::move(s));
  }
  f["stages"] = std::move(stages);
  f["comm_samples"] = fit.comm_samples;
  f["device_load"] = fit.device_load;
  f["replay_cost_ms"] = fit.replay_cost_ms;
  f["measured_cost_ms"] = ticks_to_ms(m.run.metrics.cost);
  f["replay_cost_error"] = fit.replay_cost_error;
  return f;
}

std::string fitted_costs_json(const CostFit& fit, const MeasuredRun& m) {
  nlohmann::ordered_json doc = detail::cost_spec_document(
      fit.costs, fmt::format("fitted by ppsim import from {} ({}), iteration {} of {}",
                             m.files.empty() ? std::string("a trace") : m.files.front(), m.format,
                             m.iteration, m.iterations));
  doc["fit"] = detail::fit_section(fit, m);
  return doc.dump(2) + "\n";
}

} // namespace ppsim
