// Measured vs predicted: the two Runs, the errors, the JSON document and the text table.
#include "exec/report.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/run/measured.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/viz/detail/documents.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>

namespace ppsim::exec {

namespace {

using ojson = nlohmann::ordered_json;

ojson error_value(double predicted, double measured) {
  const double e = relative_error(predicted, measured);
  return std::isfinite(e) ? ojson(e) : ojson(nullptr);
}

std::string percent(double e) {
  return std::isfinite(e) ? fmt::format("{:+.1f}%", 100.0 * e) : std::string("n/a");
}

} // namespace

int reported_iteration(const std::vector<Ticks>& costs) {
  if (costs.empty()) return 0;
  const int first = costs.size() > 1 ? 1 : 0;
  std::vector<int> idx(costs.size() - ix(first));
  std::iota(idx.begin(), idx.end(), first);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int a, int b) { return costs[ix(a)] < costs[ix(b)]; });
  return idx[(idx.size() - 1) / 2];
}

double relative_error(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (predicted - measured) / measured;
}

CommOptions prediction_comm(const ExecResult& result, const CommOptions& asked) {
  CommOptions c = asked;
  c.mode = result.comm_mode;
  if (!asked.link.sized && result.link.sized) {
    c.link = result.link;
    c.link.contention = asked.link.contention;
  }
  return c;
}

ExecReport make_report(const Schedule& schedule, const ExecResult& result,
                       const ModelShape& shape, const CommOptions& asked) {
  ExecReport r;
  r.result = result;
  r.shape = shape;
  // Every message carries one activation (or its gradient) of the executed shape.
  CostSpec costs = result.costs;
  for (StageCosts& c : costs.stages) {
    if (c.act_bytes <= 0) c.act_bytes = result.message_bytes;
    if (c.grad_bytes <= 0) c.grad_bytes = result.message_bytes;
  }
  r.predicted = run_schedule(schedule, costs, prediction_comm(result, asked));
  r.predicted.parameters.emplace_back("mode", "simulated");
  for (const Timeline& tl : result.iterations)
    r.iteration_costs.push_back(measure(tl, r.predicted.costs).cost);
  r.reported_iteration = reported_iteration(r.iteration_costs);
  Run& m = r.measured;
  m.schedule = schedule;
  m.costs = r.predicted.costs;
  m.costs.source = fmt::format("measured on {} MPI rank{}", schedule.devices,
                               schedule.devices == 1 ? "" : "s");
  if (!result.iterations.empty()) {
    m.timeline = result.iterations[ix(r.reported_iteration)];
  } else {
    m.timeline.devices = schedule.devices;
    m.timeline.device_begin.assign(ix(schedule.devices) + 1, 0);
  }
  m.metrics = measure(m.timeline, m.costs);
  m.parameters = r.predicted.parameters;
  m.parameters.back() = {"mode", fmt::format("measured (iteration {} of {})",
                                             r.reported_iteration + 1, result.iterations.size())};
  // The replay: the measured durations; the messages over the link the prelude measured (or at
  // the ping-pong's latency), under the executed send mode.
  ReplayComm replay_comm;
  replay_comm.latency = ms_to_ticks(result.comm_ms, "comm");
  replay_comm.options = prediction_comm(result, asked);
  r.replayed = replay_measured(schedule, m.timeline, r.predicted.costs, replay_comm);
  r.replayed.parameters = r.predicted.parameters;
  r.replayed.parameters.back() = {"mode", "replayed (measured durations)"};
  for (auto* run : {&r.predicted, &m, &r.replayed}) {
    run->parameters.emplace_back("model", fmt::format("dim={},tokens={},blocks={} per stage",
                                                      shape.dim, shape.tokens, shape.blocks));
    run->parameters.emplace_back("threads per rank", fmt::format("{}", result.threads));
  }
  return r;
}

std::string execute_json(const ExecReport& r) {
  const Schedule& s = r.predicted.schedule;
  const Metrics& mm = r.measured.metrics;
  const Metrics& pm = r.predicted.metrics;
  ojson j;
  j["schema"] = "ppsim.execute/1";
  j["schedule"] = s.name;
  j["devices"] = s.devices;
  j["stages"] = s.stages();
  j["chunks"] = s.chunks();
  j["microbatches"] = s.microbatches;
  j["tasks"] = s.task_count();
  j["model"] = {{"dim", r.shape.dim},
                {"tokens", r.shape.tokens},
                {"blocks_per_stage", r.shape.blocks},
                {"dtype", "f32"}};
  j["threads_per_rank"] = r.result.threads;
  ojson ranks = ojson::array();
  for (std::size_t k = 0; k < r.result.hosts.size(); ++k)
    ranks.push_back({{"rank", k}, {"host", r.result.hosts[k]}});
  j["ranks"] = std::move(ranks);
  j["comm_ms"] = r.result.comm_ms;
  j["comm_mode"] = comm_mode_name(r.result.comm_mode);
  if (r.result.link.sized)
    j["link"] = {{"latency_ms", ticks_to_ms(r.result.link.latency)},
                 {"bandwidth_gb_per_s", r.result.link.bandwidth},
                 {"message_bytes", r.result.message_bytes}};
  j["prediction_comm"] = describe(r.predicted.comm);
  j["costs"] = r.predicted.costs.source;
  ojson costs_ms = ojson::array();
  for (std::size_t k = 0; k < r.iteration_costs.size(); ++k)
    costs_ms.push_back(ticks_to_ms(r.iteration_costs[k]));
  j["iterations"] = {{"count", r.iteration_costs.size()},
                     {"reported", r.reported_iteration},
                     {"cost_ms", std::move(costs_ms)}};
  j["measured"] = detail::metrics_document(r.measured);
  j["predicted"] = detail::metrics_document(r.predicted);
  j["replayed"] = detail::metrics_document(r.replayed);
  ojson err;
  err["replay_cost"] = error_value(ticks_to_ms(r.replayed.metrics.cost), ticks_to_ms(mm.cost));
  err["cost"] = error_value(ticks_to_ms(pm.cost), ticks_to_ms(mm.cost));
  err["makespan"] = error_value(ticks_to_ms(pm.makespan), ticks_to_ms(mm.makespan));
  err["ideal"] = error_value(ticks_to_ms(pm.ideal), ticks_to_ms(mm.ideal));
  err["bubble_rate"] = error_value(pm.bubble_rate, mm.bubble_rate);
  err["bubble_rate_points"] = pm.bubble_rate - mm.bubble_rate;
  ojson per = ojson::array();
  for (std::size_t d = 0; d < mm.per_device.size() && d < pm.per_device.size(); ++d) {
    const DeviceMetrics& a = mm.per_device[d];
    const DeviceMetrics& b = pm.per_device[d];
    per.push_back({{"device", d},
                   {"busy", error_value(ticks_to_ms(b.busy), ticks_to_ms(a.busy))},
                   {"idle", error_value(ticks_to_ms(b.idle), ticks_to_ms(a.idle))},
                   {"idle_ms_difference", ticks_to_ms(b.idle) - ticks_to_ms(a.idle)}});
  }
  err["per_device"] = std::move(per);
  j["error"] = std::move(err);
  double worst = 0;
  ojson stages = ojson::array();
  for (const StageGradientCheck& g : r.result.gradients) {
    worst = std::max(worst, g.rel_diff);
    stages.push_back({{"stage", g.stage}, {"device", g.device}, {"rel_diff", g.rel_diff}});
  }
  j["gradient_check"] = {{"reference", "single process, full backward over all micro-batches"},
                         {"tolerance", r.result.gradient_tolerance},
                         {"max_rel_diff", worst},
                         {"passed", r.result.gradients_ok},
                         {"stages", std::move(stages)}};
  return j.dump(2);
}

void write_execute_report(std::ostream& out, const ExecReport& r) {
  const Schedule& s = r.predicted.schedule;
  const Metrics& mm = r.measured.metrics;
  const Metrics& pm = r.predicted.metrics;
  std::string hosts;
  for (const auto& h : r.result.hosts)
    if (hosts.find(h) == std::string::npos) hosts += (hosts.empty() ? "" : ", ") + h;
  out << fmt::format("ppsim execute: {} on {} MPI rank{} ({}), {} stages, {} micro-batches\n",
                     s.name, s.devices, s.devices == 1 ? "" : "s", hosts, s.stages(),
                     s.microbatches);
  out << fmt::format("model: dim={} tokens={} blocks={} per stage, f32, {} GEMM thread{} per rank\n",
                     r.shape.dim, r.shape.tokens, r.shape.blocks, r.result.threads,
                     r.result.threads == 1 ? "" : "s");
  out << fmt::format("prediction: {}; comm {} ms (MPI ping-pong)\n", r.predicted.costs.source,
                     human_number(r.result.comm_ms));
  if (r.result.link.sized)
    out << fmt::format("link: latency {} ms, {} GB/s (ping-pong at 4 B and {}); simulated {}\n",
                       human_ms(r.result.link.latency), human_number(r.result.link.bandwidth),
                       human_bytes(r.result.message_bytes), describe(r.predicted.comm));
  std::string its;
  for (Ticks c : r.iteration_costs) its += " " + human_ms(c);
  out << fmt::format("measured cost per iteration (ms):{}; reported: iteration {}\n\n", its,
                     r.reported_iteration + 1);
  out << fmt::format("{:<16}{:>12}{:>12}{:>9}\n", "", "measured", "predicted", "error");
  const auto row = [&](std::string_view name, std::string a, std::string b, std::string e) {
    out << fmt::format("{:<16}{:>12}{:>12}{:>9}\n", name, a, b, e);
  };
  const auto ms_row = [&](std::string_view name, Ticks a, Ticks b) {
    row(name, human_ms(a), human_ms(b), percent(relative_error(ticks_to_ms(b), ticks_to_ms(a))));
  };
  ms_row("cost_ms", mm.cost, pm.cost);
  ms_row("makespan_ms", mm.makespan, pm.makespan);
  ms_row("ideal_ms", mm.ideal, pm.ideal);
  row("bubble_rate", human_percent(mm.bubble_rate), human_percent(pm.bubble_rate),
      fmt::format("{:+.1f}pt", 100.0 * (pm.bubble_rate - mm.bubble_rate)));
  for (std::size_t d = 0; d < mm.per_device.size() && d < pm.per_device.size(); ++d) {
    ms_row(fmt::format("device {} busy", d), mm.per_device[d].busy, pm.per_device[d].busy);
    ms_row(fmt::format("device {} idle", d), mm.per_device[d].idle, pm.per_device[d].idle);
  }
  out << fmt::format("\nreplayed on the measured durations: cost {} ms ({} against measured): the "
                     "order and the messages, without the calibration's kernel timings\n",
                     human_ms(r.replayed.metrics.cost),
                     percent(relative_error(ticks_to_ms(r.replayed.metrics.cost), ticks_to_ms(mm.cost))));
  double worst = 0;
  for (const auto& g : r.result.gradients) worst = std::max(worst, g.rel_diff);
  out << fmt::format("\ngradient check: {} (max relative difference {:.3g} vs the single-process "
                     "reference, tolerance {:.0e}, {} stages)\n",
                     r.result.gradients_ok ? "passed" : "FAILED", worst,
                     r.result.gradient_tolerance, r.result.gradients.size());
}

} // namespace ppsim::exec
