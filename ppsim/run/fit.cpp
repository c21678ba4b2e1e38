// Costs fitted from a measured run: per stage and kind the medians and their spread, the
// latency of its messages, and how well the fit explains the run.
#include "ppsim/run/measured.hpp"

#include "ppsim/io/detail/cost_document.hpp"
#include "ppsim/run/detail/fit_document.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/run/detail/run_graph.hpp"
#include "ppsim/sim/comm.hpp"

#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace ppsim {

using detail::kNoRun;

using detail::durations_by_stage;
using detail::median_of;
using detail::quantile_of;
using detail::rel_error;
using detail::run_graph;
using detail::RunGraph;

namespace {

struct MessageWait {
  Ticks gap{0};
  Task producer;
};

// The waits that show a message's time: the consumer's device idle before it, this message
// the last of its inputs to be ready.
std::vector<MessageWait> message_waits(const Run& r) {
  const RunGraph g = run_graph(r.schedule, r.timeline);
  const auto& runs = r.timeline.runs;
  std::vector<MessageWait> waits;
  for (std::size_t c = 0; c < runs.size(); ++c) {
    int last = kNoRun;
    for (const int q : g.needs[c])
      if (last == kNoRun || runs[ix(q)].end > runs[ix(last)].end) last = q;
    if (last == kNoRun || g.device[ix(last)] == g.device[c]) continue;
    const Ticks free = g.prev[c] == kNoRun ? 0 : runs[ix(g.prev[c])].end;
    if (runs[c].start <= free) continue;  // the device was busy: the wait says nothing
    const Ticks gap = runs[c].start - runs[ix(last)].end;
    if (gap >= 0) waits.push_back({gap, runs[ix(last)].task});
  }
  return waits;
}

// The size of the message a producer sent: the trace's own, else its stage's act_bytes or
// grad_bytes when the costs give them; 0 when unknown.
class MessageSizes {
public:
  explicit MessageSizes(const MeasuredRun& m) : run_(m.run) {
    for (const MeasuredMessage& msg : m.messages)
      sizes_.emplace(std::tuple(msg.part, msg.stage, msg.microbatch), msg.bytes);
  }
  [[nodiscard]] double of(const Task& producer) const {
    const Kind part = producer.kind == Kind::F ? Kind::F : Kind::B;
    if (const auto it = sizes_.find(std::tuple(part, producer.stage, producer.microbatch));
        it != sizes_.end())
      return it->second;
    const StageCosts& c = run_.costs.stage[ix(producer.stage)];
    return part == Kind::F ? c.act_bytes : c.grad_bytes;
  }

private:
  const Run& run_;
  std::map<std::tuple<Kind, int, int>, double> sizes_;
};

// wait = latency + bytes / bandwidth through the median wait of each size, weighted by its
// samples.
LinkFit fit_link(const std::vector<MessageWait>& waits, const MessageSizes& sizes) {
  LinkFit fit;
  std::vector<std::pair<double, Ticks>> sized;  // bytes, wait
  std::map<double, std::vector<Ticks>> by_size;
  for (const MessageWait& w : waits)
    if (const double b = std::round(sizes.of(w.producer)); b > 0) {
      sized.emplace_back(b, w.gap);
      by_size[b].push_back(w.gap);
    }
  fit.samples = static_cast<int>(sized.size());
  fit.sizes = static_cast<int>(by_size.size());
  if (fit.samples == 0) {
    fit.note = "no message of known size (a trace gives sizes in PyTorch's SEND ranges or "
               "ppsim's message slices)";
    return fit;
  }
  if (fit.sizes < 2) {
    fit.note = fmt::format("every message is {}: latency and bandwidth cannot be told apart",
                           human_bytes(by_size.begin()->first));
    return fit;
  }
  double sw = 0, sx = 0, sy = 0;
  std::vector<std::array<double, 3>> points;  // bytes, median wait, samples
  for (const auto& [bytes, gaps] : by_size) {
    const double n = static_cast<double>(gaps.size());
    const double y = static_cast<double>(median_of(gaps));
    points.push_back({bytes, y, n});
    sw += n;
    sx += n * bytes;
    sy += n * y;
  }
  const double mx = sx / sw, my = sy / sw;
  double sxx = 0, sxy = 0;
  for (const auto& [x, y, n] : points) {
    sxx += n * (x - mx) * (x - mx);
    sxy += n * (x - mx) * (y - my);
  }
  double slope = sxy / sxx;  // ns per byte
  double intercept = my - slope * mx;
  if (intercept < 0) {  // a line through 0: latency 0
    double num = 0, den = 0;
    for (const auto& [x, y, n] : points) {
      num += n * x * y;
      den += n * x * x;
    }
    slope = num / den;
    intercept = 0;
  }
  if (!(slope > 0)) {
    fit.note = "the waits do not grow with the message size";
    return fit;
  }
  fit.fitted = true;
  fit.latency = static_cast<Ticks>(std::llround(intercept));
  fit.bandwidth = 1.0 / slope;
  std::vector<double> errors;
  for (const auto& [b, gap] : sized)
    if (gap > 0)
      errors.push_back(std::abs(intercept + b * slope - static_cast<double>(gap)) /
                       static_cast<double>(gap));
  if (!errors.empty()) fit.residual = median_of(errors);
  return fit;
}

// Each stage's act_bytes and grad_bytes: the median sizes of the messages it sent.
void stage_message_bytes(CostSpec& costs, const std::vector<MeasuredMessage>& messages) {
  std::map<std::pair<int, Kind>, std::vector<double>> by;
  for (const MeasuredMessage& m : messages) by[{m.stage, m.part}].push_back(m.bytes);
  for (auto& [key, v] : by) {
    const auto [stage, part] = key;
    if (stage >= static_cast<int>(costs.stages.size())) continue;
    (part == Kind::F ? costs.stages[ix(stage)].act_bytes : costs.stages[ix(stage)].grad_bytes) =
        median_of(v);
  }
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
  const std::vector<MessageWait> waits = message_waits(r);
  std::vector<Ticks> gaps;
  gaps.reserve(waits.size());
  for (const MessageWait& w : waits) gaps.push_back(w.gap);
  fit.comm_samples = static_cast<int>(waits.size());
  fit.costs.comm = median_of(gaps);
  fit.comm_ms = ticks_to_ms(fit.costs.comm);
  fit.link = fit_link(waits, MessageSizes(m));
  if (fit.link.fitted) {
    fit.costs.link = LinkModel{.sized = true, .latency = fit.link.latency, .bandwidth = fit.link.bandwidth};
    stage_message_bytes(fit.costs, m.messages);
  }
  double total = 0;
  for (const DeviceMetrics& d : r.metrics.per_device) total += static_cast<double>(d.busy);
  const double mean = total / static_cast<double>(std::max<std::size_t>(1, r.metrics.per_device.size()));
  for (const DeviceMetrics& d : r.metrics.per_device)
    fit.device_load.push_back(mean > 0 ? static_cast<double>(d.busy) / mean : 1.0);
  const Run replay = run_schedule(r.schedule, fit.costs, with_cost_link({}, fit.costs));
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
  nlohmann::ordered_json link;
  link["samples"] = fit.link.samples;
  link["sizes"] = fit.link.sizes;
  if (fit.link.fitted) {
    link["latency_ms"] = ticks_to_ms(fit.link.latency);
    link["bandwidth_gb_per_s"] = fit.link.bandwidth;
    link["residual"] = fit.link.residual;
  } else {
    link["note"] = fit.link.note;
  }
  f["link"] = std::move(link);
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
