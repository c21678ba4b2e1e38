// Writers of measured runs: import and diff as text and JSON, the bubble inventory, the
// measured-against-simulated Chrome trace.
#include "ppsim/viz/measured.hpp"

#include "ppsim/io/json_text.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/run/detail/fit_document.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/viz/detail/documents.hpp"
#include "ppsim/viz/metrics_json.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>

namespace ppsim {

namespace {

using ojson = nlohmann::ordered_json;

ojson source_json(const MeasuredRun& m) {
  ojson s;
  s["format"] = m.format;
  s["files"] = m.files;
  s["iteration"] = m.iteration;
  s["iterations"] = m.iterations;
  s["clock"] = m.device_time ? "device" : "host";
  s["clock_offset_ms"] = ojson::array();
  for (const Ticks t : m.clock_offset) s["clock_offset_ms"].push_back(ticks_to_ms(t));
  s["comm_actions_skipped"] = m.comm_actions_skipped;
  return s;
}

// The diff document's "errors", which diff's trace also carries in its summary event.
ojson errors_json(const DiffReport& d) {
  ojson e;
  e["makespan_error"] = d.makespan_error;
  e["cost_error"] = d.cost_error;
  e["bubble_rate_error"] = d.bubble_rate_error;
  e["replay_cost_error"] = d.replay_cost_error;
  e["start_error_mean_ms"] = d.start_error_mean_ms;
  e["start_error_max_ms"] = d.start_error_max_ms;
  e["end_error_mean_ms"] = d.end_error_mean_ms;
  e["end_error_max_ms"] = d.end_error_max_ms;
  return e;
}

std::string signed_percent(double x) { return (x >= 0 ? "+" : "") + human_percent(x); }

} // namespace

ojson detail::import_document(const MeasuredRun& m, const CostFit& fit) {
  ojson doc;
  doc["schema"] = "ppsim.import/1";
  doc["source"] = source_json(m);
  doc["measured"] = detail::metrics_document(m.run);
  doc["fit"] = detail::fit_section(fit, m);
  doc["fit"]["comm_ms"] = fit.comm_ms;
  ojson stages = ojson::array();
  for (const StageCosts& c : fit.costs.stages) {
    ojson s;
    s["F"] = ticks_to_ms(c.F);
    s["B"] = ticks_to_ms(c.B);
    s["W"] = ticks_to_ms(c.W);
    if (c.BW >= 0) s["BW"] = ticks_to_ms(c.BW);
    if (c.FB >= 0) s["FB"] = ticks_to_ms(c.FB);
    stages.push_back(std::move(s));
  }
  doc["fit"]["costs"] = std::move(stages);
  return doc;
}

std::string import_json(const MeasuredRun& m, const CostFit& fit) {
  return detail::import_document(m, fit).dump(2);
}

void write_import_report(std::ostream& out, const MeasuredRun& m, const CostFit& fit) {
  out << fmt::format("measured run: {} ({} file{}), {} devices, {} stages, {}, "
                     "iteration {} of {}, {} clock\n",
                     m.format, m.files.size(), m.files.size() == 1 ? "" : "s",
                     m.run.schedule.devices, m.run.schedule.stages(),
                     microbatches_text(m.run.schedule),
                     m.iteration, m.iterations, m.device_time ? "device" : "host");
  bool moved = false;
  for (const Ticks t : m.clock_offset) moved = moved || t != 0;
  if (moved) {
    std::string list;
    for (std::size_t r = 0; r < m.clock_offset.size(); ++r)
      list += fmt::format("{}{}: {} ms", list.empty() ? "" : ", ", r, human_ms(m.clock_offset[r]));
    out << "clocks aligned on message pairs (offset per rank): " << list << "\n";
  }
  write_run_report(out, m.run);
  out << "\nfitted costs (median per stage; spread = median absolute deviation / median)\n";
  out << fmt::format("{:>6} {:>6} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "stage", "device", "F_ms",
                     "B_ms", "W_ms", "BW_ms", "spread");
  for (const StageFit& s : fit.stages) {
    const auto cell = [&](Kind k) {
      const KindFit& f = s.kinds[static_cast<std::size_t>(k)];
      return f.samples == 0 ? std::string("-") : human_number(f.median_ms);
    };
    double spread = 0;
    for (const KindFit& f : s.kinds) spread = std::max(spread, f.spread);
    out << fmt::format("{:>6} {:>6} {:>12} {:>12} {:>12} {:>12} {:>8}\n", s.stage, s.device,
                       cell(Kind::F), cell(Kind::B), cell(Kind::W), cell(Kind::BW),
                       human_percent(spread));
  }
  out << fmt::format("comm          {} ms (median of {} waits for a message)\n",
                     human_number(fit.comm_ms), fit.comm_samples);
  if (fit.link.fitted)
    out << fmt::format("link          latency {} ms, {:.4g} GB/s (through the median wait of each "
                       "of {} message sizes, {} waits; median error {})\n",
                       human_ms(fit.link.latency), fit.link.bandwidth, fit.link.sizes,
                       fit.link.samples, human_percent(fit.link.residual));
  else
    out << "link          not fitted: " << fit.link.note << "\n";
  out << fmt::format("fit           the measured order on the fitted costs costs {} ms against "
                     "{} ms measured ({})\n",
                     human_number(fit.replay_cost_ms), human_ms(m.run.metrics.cost),
                     signed_percent(fit.replay_cost_error));
}

ojson detail::diff_document(const DiffReport& d) {
  ojson doc;
  doc["schema"] = "ppsim.diff/1";
  doc["measured"] = detail::metrics_document(d.measured);
  doc["simulated"] = detail::metrics_document(d.simulated);
  doc["replayed"] = detail::metrics_document(d.replayed);
  doc["errors"] = errors_json(d);
  ojson idle;
  idle["total_ms"] = ticks_to_ms(d.idle_total);
  ojson causes;
  for (int c = 0; c < kIdleCauses; ++c) {
    const Ticks t = d.cause_total[ix(c)];
    causes[std::string(idle_cause_name(static_cast<IdleCause>(c)))] = {
        {"ms", ticks_to_ms(t)},
        {"share", d.idle_total > 0 ? static_cast<double>(t) / static_cast<double>(d.idle_total) : 0.0}};
  }
  idle["causes"] = std::move(causes);
  ojson windows = ojson::array();
  for (const IdleWindow& w : d.windows)
    windows.push_back({{"device", w.device},
                       {"start_ms", ticks_to_ms(w.start)},
                       {"end_ms", ticks_to_ms(w.end)},
                       {"cause", idle_cause_name(w.cause)},
                       {"next_task", to_string(w.next)},
                       {"memory", w.memory},
                       {"free_memory", w.free}});
  idle["windows"] = std::move(windows);
  doc["idle"] = std::move(idle);
  std::size_t stragglers = 0;
  for (const char s : d.straggler) stragglers += s != 0;
  doc["stragglers"] = stragglers;
  return doc;
}

std::string diff_json(const DiffReport& d) { return detail::diff_document(d).dump(2); }

void write_diff_report(std::ostream& out, const DiffReport& d) {
  out << fmt::format("{:<22} {:>14} {:>14} {:>14}\n", "", "measured", "simulated", "replayed");
  const auto row = [&](const char* name, const auto& get) {
    out << fmt::format("{:<22} {:>14} {:>14} {:>14}\n", name, get(d.measured), get(d.simulated),
                       get(d.replayed));
  };
  row("makespan_ms", [](const Run& r) { return human_ms(r.metrics.makespan); });
  row("cost_ms", [](const Run& r) { return human_ms(r.metrics.cost); });
  row("ideal_ms", [](const Run& r) { return human_ms(r.metrics.ideal); });
  row("bubble rate", [](const Run& r) { return human_percent(r.metrics.bubble_rate); });
  out << fmt::format("\nsimulated against measured: makespan {}, cost {}, bubble rate {} "
                     "points; task ends off by {} ms on average ({} at most)\n",
                     signed_percent(d.makespan_error), signed_percent(d.cost_error),
                     human_number(100 * d.bubble_rate_error), human_number(d.end_error_mean_ms),
                     human_number(d.end_error_max_ms));
  out << fmt::format("replayed on the measured durations: cost {} (what the order and the "
                     "messages explain)\n",
                     signed_percent(d.replay_cost_error));
  out << fmt::format("\nidle time {} ms, by cause:\n", human_ms(d.idle_total));
  for (int c = 0; c < kIdleCauses; ++c) {
    const Ticks t = d.cause_total[ix(c)];
    if (t == 0) continue;
    out << fmt::format("  {:<11} {:>12} ms  {:>7}\n", idle_cause_name(static_cast<IdleCause>(c)),
                       human_ms(t),
                       human_percent(static_cast<double>(t) / static_cast<double>(d.idle_total)));
  }
}

void write_idle_csv(std::ostream& out, const DiffReport& d) {
  out << "device,start_ms,end_ms,length_ms,cause,next_task,memory_M_B,free_M_B\n";
  for (const IdleWindow& w : d.windows)
    out << fmt::format("{},{},{},{},{},{},{},{}\n", w.device, ticks_to_ms_text(w.start),
                       ticks_to_ms_text(w.end), ticks_to_ms_text(w.end - w.start),
                       idle_cause_name(w.cause), to_string(w.next), w.memory, w.free);
}

void write_diff_trace(std::ostream& out, const DiffReport& d) {
  const int p = d.measured.timeline.devices;
  std::string b;
  b.reserve(1 << 20);
  b += "{\"otherData\":{\"schema\":\"ppsim.diff-trace/1\"},\n\"traceEvents\":[";
  bool first = true;
  const auto event = [&]() -> std::string& {
    b += first ? "\n" : ",\n";
    first = false;
    return b;
  };
  const auto meta = [&](int pid, int tid, const char* what, const std::string& name) {
    event() += fmt::format("{{\"name\":\"{}\",\"ph\":\"M\",\"ts\":0,\"pid\":{},\"tid\":{},"
                           "\"args\":{{\"name\":",
                           what, pid, tid);
    append_json_string(b, name);
    b += "}}";
  };
  const auto us = [](Ticks t) { return ticks_to_us_text(t); };
  const int summary = 2 * p + 1;
  meta(summary, 0, "process_name", "diff");
  event() += fmt::format("{{\"name\":\"run\",\"cat\":\"summary\",\"ph\":\"X\",\"ts\":0,\"dur\":{},"
                         "\"pid\":{},\"tid\":0,\"args\":",
                         us(std::max(d.measured.metrics.makespan, d.simulated.metrics.makespan)),
                         summary);
  ojson args;
  std::string source;
  for (const auto& [key, value] : d.measured.parameters)
    if (key == "source") source = value;
  args["parameters"] = {{"measured", source}, {"simulated on", d.simulated.costs.source}};
  args["metrics"] = errors_json(d);
  b += args.dump();
  b += "}";
  for (int side = 0; side < 2; ++side) {
    const Run& r = side == 0 ? d.measured : d.simulated;
    for (int dev = 0; dev < p; ++dev) {
      const int pid = side * p + dev + 1;
      meta(pid, 0, "process_name", fmt::format("{} device {}", side == 0 ? "measured" : "simulated", dev));
      meta(pid, 0, "thread_name", "compute");
      if (side == 0) meta(pid, 1, "thread_name", "idle");
      const int begin = r.timeline.device_begin[ix(dev)];
      const auto runs = r.timeline.device_runs(dev);
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const TaskRun& t = runs[i];
        const std::size_t k = ix(begin) + i;
        std::string& e = event();
        e += "{\"name\":";
        append_json_string(e, to_string(t.task));
        e += fmt::format(",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":0",
                         kind_name(t.task.kind), us(t.start), us(t.end - t.start), pid);
        if (side == 0 && k < d.task_error_ms.size()) {
          const double err = d.task_error_ms[k];
          const double dur = ticks_to_ms(t.end - t.start);
          const double rel = dur > 0 ? std::abs(err) / dur : 0.0;
          // chrome://tracing's reserved colours: how far the simulation ends this task off.
          e += fmt::format(",\"cname\":\"{}\"", rel < 0.05 ? "good" : rel < 0.25 ? "bad" : "terrible");
          e += ",\"args\":{\"end_error_ms\":";
          append_json_number(e, err);
          e += fmt::format(",\"straggler\":{}}}", d.straggler[k] != 0 ? "true" : "false");
        }
        e += "}";
      }
    }
  }
  for (const IdleWindow& w : d.windows) {
    std::string& e = event();
    e += fmt::format("{{\"name\":\"{}\",\"cat\":\"idle\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},"
                     "\"tid\":1,\"args\":{{\"next_task\":",
                     idle_cause_name(w.cause), us(w.start), us(w.end - w.start), w.device + 1);
    append_json_string(e, to_string(w.next));
    e += ",\"free_memory\":";
    append_json_number(e, w.free);
    e += "}}";
  }
  b += "\n]}\n";
  out << b;
}

} // namespace ppsim
