// Metrics as JSON and as text tables.
#include "ppsim/viz/metrics_json.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/viz/detail/documents.hpp"


#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>

namespace ppsim {

namespace {

using ojson = nlohmann::ordered_json;

// With several iterations the run's schedule is the K-fold one; the shape reported is one
// iteration's, like the metrics.
int iteration_count(const Run& run) { return std::max(1, run.iterations.options.count); }

// The communication model of a run that asked for one (--comm-mode, --link).
ojson comm_json(const CommOptions& c) {
  ojson j;
  j["mode"] = comm_mode_name(c.mode);
  if (c.link.sized) {
    j["latency_ms"] = ticks_to_ms(c.link.latency);
    if (c.link.bandwidth > 0) j["bandwidth_gb_per_s"] = c.link.bandwidth;
  }
  j["contention"] = contention_name(c.link.contention);
  return j;
}

ojson distribution_json(const Distribution& d) {
  ojson j;
  j["mean"] = d.mean;
  j["p50"] = d.p50;
  j["p90"] = d.p90;
  j["p99"] = d.p99;
  j["min"] = d.min;
  j["max"] = d.max;
  return j;
}

// The distribution over noisy samples (--jitter, --samples).
ojson samples_json(const SampleSummary& s) {
  ojson j;
  j["count"] = s.count;
  j["seed"] = s.seed;
  j["cv"] = s.cv;
  j["cost_ms"] = distribution_json(s.cost_ms);
  if (s.iteration_time_ms) j["iteration_time_ms"] = distribution_json(*s.iteration_time_ms);
  if (s.wins) j["wins"] = *s.wins;
  return j;
}

ojson to_json(const Run& run) {
  const Metrics& m = run.metrics;
  const Schedule& s = run.schedule;
  const int K = iteration_count(run);
  ojson j;
  j["schema"] = "ppsim.metrics/1";
  j["schedule"] = s.name;
  j["devices"] = s.devices;
  j["stages"] = s.stages();
  j["chunks"] = s.chunks();
  j["microbatches"] = s.whole_microbatches() / K;
  if (s.slices > 1) j["slices"] = s.slices;
  j["placement"] = placement_name(s);
  j["tasks"] = s.task_count() / static_cast<std::size_t>(K);
  j["makespan_ms"] = ticks_to_ms(m.makespan);
  j["cost_ms"] = ticks_to_ms(m.cost);
  j["ideal_ms"] = ticks_to_ms(m.ideal);
  j["bubble_rate"] = m.bubble_rate;
  j["bubble_over_ideal"] = m.bubble_over_ideal;
  j["idle_fraction"] = m.idle_fraction;
  if (run.has_lower_bound()) {  // automatic schedules only: how far from optimal
    j["lower_bound_ms"] = ticks_to_ms(run.lower_bound);
    j["optimality_gap"] = run.optimality_gap;
    j["lower_bound_mem_limit"] = run.bound_mem_limit;
  }
  if (!run.notes.empty()) j["search_notes"] = run.notes;
  j["peak_memory"] = m.peak_memory;
  if (m.peak_memory_bytes > 0) j["peak_memory_bytes"] = m.peak_memory_bytes;
  if (m.peak_bytes > 0) {
    j["peak_bytes"] = m.peak_bytes;
    j["total_peak_bytes"] = m.total_peak_bytes;
  }
  if (run.mem_limit >= 0) j["mem_limit"] = run.mem_limit;
  j["comm_ms"] = ticks_to_ms(run.costs.comm);
  if (run.comm.requested()) j["comm"] = comm_json(run.comm);
  const bool offload = run.offload.any();
  if (offload) {
    ojson o;
    o["fraction"] = run.offload.fraction;  // per stage
    o["copy_ms_per_mb"] = run.offload.ns_per_unit / 1e6;
    o["latency_ms"] = ticks_to_ms(run.offload.latency);
    j["offload"] = std::move(o);
    j["exposed_copy_ms"] = ticks_to_ms(m.exposed_copy);
    j["host_peak_memory"] = m.host_peak_memory;
    if (m.host_peak_bytes > 0) j["host_peak_bytes"] = m.host_peak_bytes;
  }
  j["costs"] = run.costs.source;
  const bool dp = run.data_parallel.any();
  if (dp) {
    const DataParallelSync& sync = run.data_parallel;
    ojson o;
    o["replicas"] = sync.replicas;
    o["gradients"] = std::string(collective_name(sync.shard ? CollectiveKind::ReduceScatter
                                                            : CollectiveKind::AllReduce));
    o["zero"] = sync.shard ? 1 : 0;
    o["latency_ms"] = ticks_to_ms(sync.latency);
    o["gbytes_per_s"] = sync.gbytes_per_s;
    o["grad_bytes_per_param"] = sync.grad_bytes_per_param;
    j["data_parallel"] = std::move(o);
    j["exposed_dp_ms"] = ticks_to_ms(m.exposed_dp);
  }
  if (run.iterations.options.requested()) {
    j["iterations"] = K;
    j["optimizer_step_ms"] = ticks_to_ms(run.iterations.options.optimizer_step);
    j["sync"] = sync_name(run.iterations.options.sync);
    j["peak_memory_all_iterations"] = peak_memory_all_iterations(run);
  }
  if (has_iteration_time(run)) j["iteration_time_ms"] = ticks_to_ms(run.iterations.iteration_time);
  if (run.samples) j["samples"] = samples_json(*run.samples);
  ojson per = ojson::array();
  for (const DeviceMetrics& d : m.per_device) {
    ojson e;
    e["device"] = d.device;
    e["busy_ms"] = ticks_to_ms(d.busy);
    e["span_ms"] = ticks_to_ms(d.span);
    e["idle_ms"] = ticks_to_ms(d.idle);
    e["peak_memory"] = d.peak_memory;
    if (run.costs.memory_unit_bytes > 0)
      e["peak_memory_bytes"] = d.peak_memory * run.costs.memory_unit_bytes;
    e["p2p_bytes_sent"] = d.p2p_bytes_sent;
    e["p2p_messages"] = d.p2p_messages;
    e["comm_wait_ms"] = ticks_to_ms(d.comm_wait);
    if (d.recompute > 0) e["recompute_ms"] = ticks_to_ms(d.recompute);
    if (d.task_comm > 0) {  // with --overlap: the collectives inside its tasks
      e["task_comm_ms"] = ticks_to_ms(d.task_comm);
      e["exposed_comm_ms"] = ticks_to_ms(d.exposed_comm);
    }
    if (d.state_bytes > 0) e["state_bytes"] = d.state_bytes;
    if (d.peak_bytes > 0) e["peak_bytes"] = d.peak_bytes;
    if (offload) {
      e["copy_busy_ms"] = ticks_to_ms(d.copy_busy);
      e["exposed_copy_ms"] = ticks_to_ms(d.exposed_copy);
      e["offloaded_memory"] = d.offloaded_memory;
      e["reloaded_memory"] = d.reloaded_memory;
      if (run.costs.memory_unit_bytes > 0) {
        e["offloaded_bytes"] = d.offloaded_bytes;
        e["reloaded_bytes"] = d.reloaded_bytes;
      }
      e["host_peak_memory"] = d.host_peak_memory;
      if (run.costs.memory_unit_bytes > 0) e["host_peak_bytes"] = d.host_peak_bytes;
    }
    if (dp) {
      e["dp_busy_ms"] = ticks_to_ms(d.dp_busy);
      e["exposed_dp_ms"] = ticks_to_ms(d.exposed_dp);
    }
    per.push_back(std::move(e));
  }
  j["per_device"] = std::move(per);
  return j;
}

std::string memory(double x) { return human_number(x); }

// A task of the critical path: its action text at its device, `2F0@d1`.
std::string task_at(const Run& run, const Slot& at) {
  return fmt::format("{}@d{}",
                     to_string(run.schedule.order[static_cast<std::size_t>(at.device)]
                                                 [static_cast<std::size_t>(at.index)]),
                     at.device);
}

} // namespace

ojson detail::metrics_document(const Run& run) { return to_json(run); }

std::string metrics_json(const Run& run) {
  return to_json(run).dump(2);
}

std::string metrics_json(const Run& run, const CriticalPath& path) {
  ojson j = to_json(run);
  ojson tasks = ojson::array();
  for (const Slot& at : path.tasks) tasks.push_back(task_at(run, at));
  j["critical_path"] = {{"length_ms", ticks_to_ms(path.length)}, {"tasks", tasks}};
  return j.dump(2);
}

std::string metrics_json_array(std::span<const Run> runs) {
  ojson a = ojson::array();
  for (const Run& r : runs) a.push_back(to_json(r));
  return a.dump(2);
}

void write_critical_path(std::ostream& out, const Run& run, const CriticalPath& path) {
  constexpr std::size_t kShown = 64;
  out << fmt::format("\ncritical path: {} tasks, {} ms\n ", path.tasks.size(), human_ms(path.length));
  for (std::size_t i = 0; i < path.tasks.size(); ++i) {
    if (path.tasks.size() > kShown && i == kShown / 2) {
      out << fmt::format(" ... ({} more)", path.tasks.size() - kShown);
      i = path.tasks.size() - kShown / 2;
    }
    out << " " << task_at(run, path.tasks[i]);
  }
  out << "\n";
}

void write_run_report(std::ostream& out, const Run& run) {
  const Metrics& m = run.metrics;
  for (const auto& [key, value] : run.parameters) out << fmt::format("{:<13} {}\n", key, value);
  out << fmt::format("{:<13} {} ms\n", "makespan", human_ms(m.makespan));
  out << fmt::format("{:<13} {} ms   (max per-device span)\n", "cost", human_ms(m.cost));
  out << fmt::format("{:<13} {} ms   (max per-device busy)\n", "ideal", human_ms(m.ideal));
  out << fmt::format("{:<13} {}   (cost - ideal) / cost\n", "bubble rate", human_percent(m.bubble_rate));
  out << fmt::format("{:<13} {}   (cost - ideal) / ideal\n", "bubble/ideal",
                     human_percent(m.bubble_over_ideal));
  out << fmt::format("{:<13} {}\n", "idle", human_percent(m.idle_fraction));
  if (run.has_lower_bound())
    out << fmt::format("{:<13} {} ms   (no order of these tasks within {} M_B is cheaper; gap "
                       "(cost - bound) / cost {})\n",
                       "lower bound", human_ms(run.lower_bound),
                       memory(run.bound_mem_limit), human_percent(run.optimality_gap));
  for (const std::string& note : run.notes) out << fmt::format("{:<13} {}\n", "search", note);
  out << fmt::format("{:<13} {} M_B", "peak memory", memory(m.peak_memory));
  if (m.peak_memory_bytes > 0) out << fmt::format("  ({})", human_bytes(m.peak_memory_bytes));
  out << "\n";
  const bool offload = run.offload.any();
  if (offload) {
    out << fmt::format("{:<13} {} M_B", "host peak", memory(m.host_peak_memory));
    if (m.host_peak_bytes > 0) out << fmt::format("  ({})", human_bytes(m.host_peak_bytes));
    out << "   (offloaded activations held on the host, max per device)\n";
    out << fmt::format("{:<13} {} ms   (backwards waiting for their reload, all devices)\n",
                       "exposed copy", human_ms(m.exposed_copy));
  }
  const bool dp = run.data_parallel.any();
  if (dp)
    out << fmt::format("{:<13} {} ms   (of the data-parallel collectives, what the pipeline's tail "
                       "did not hide)\n",
                       "exposed dp", human_ms(m.exposed_dp));
  if (run.iterations.options.requested()) {
    out << fmt::format("{:<13} {} ms   (steady state: between the ends of the last two of {} "
                       "iterations, {})\n",
                       "iteration", human_ms(run.iterations.iteration_time), iteration_count(run),
                       sync_name(run.iterations.options.sync));
    out << fmt::format("{:<13} {} M_B   (peak over all iterations)\n", "peak (all)",
                       memory(peak_memory_all_iterations(run)));
  } else if (dp || run.iterations.iteration_time > 0) {
    out << fmt::format("{:<13} {} ms   (from the first task to the end of {})\n", "iteration",
                       human_ms(run.iterations.iteration_time),
                       dp ? "the last collective or optimizer step" : "the optimizer step");
  }
  if (run.samples) {
    const SampleSummary& s = *run.samples;
    const auto line = [&](std::string_view name, const Distribution& d) {
      out << fmt::format("{:<13} mean {}  p50 {}  p90 {}  p99 {}  min {}  max {} ms\n", name,
                         human_number(d.mean), human_number(d.p50), human_number(d.p90),
                         human_number(d.p99), human_number(d.min), human_number(d.max));
    };
    out << fmt::format("{:<13} {} (jitter cv {:g}, seed {})\n", "samples", s.count, s.cv, s.seed);
    line("cost", s.cost_ms);
    if (s.iteration_time_ms) line("iteration", *s.iteration_time_ms);
  }
  out << "\n";
  // With a communication model asked for, what each device sent and how long it waited on it.
  const bool comm = run.comm.requested();
  // The recomputed forwards' share of busy, when anything is recomputed.
  const bool recomputes = std::any_of(m.per_device.begin(), m.per_device.end(),
                                      [](const DeviceMetrics& d) { return d.recompute > 0; });
  // The collectives the compute waited for, when the costs have sub-operations (--overlap).
  const bool exposes = std::any_of(m.per_device.begin(), m.per_device.end(),
                                   [](const DeviceMetrics& d) { return d.exposed_comm > 0; });
  out << fmt::format("{:>6} {:>12} {:>12} {:>12} {:>10}", "device", "busy_ms", "span_ms",
                     "idle_ms", "peak_M_B");
  if (recomputes) out << fmt::format(" {:>13}", "recompute_ms");
  if (exposes) out << fmt::format(" {:>16}", "exposed_comm_ms");
  out << (comm ? fmt::format(" {:>9} {:>14} {:>13}", "messages", "bytes_sent", "comm_wait_ms")
               : std::string());
  out << (offload ? fmt::format(" {:>12} {:>12} {:>13} {:>10}", "copy_busy_ms", "exposed_ms",
                                "offloaded_M_B", "host_M_B")
                  : std::string());
  out << (dp ? fmt::format(" {:>11} {:>14}\n", "dp_busy_ms", "exposed_dp_ms") : std::string("\n"));
  for (const DeviceMetrics& d : m.per_device) {
    out << fmt::format("{:>6} {:>12} {:>12} {:>12} {:>10}", d.device, human_ms(d.busy),
                       human_ms(d.span), human_ms(d.idle), memory(d.peak_memory));
    if (recomputes) out << fmt::format(" {:>13}", human_ms(d.recompute));
    if (exposes) out << fmt::format(" {:>16}", human_ms(d.exposed_comm));
    out << (comm ? fmt::format(" {:>9} {:>14} {:>13}", d.p2p_messages,
                               human_bytes(d.p2p_bytes_sent), human_ms(d.comm_wait))
                 : std::string());
    out << (offload ? fmt::format(" {:>12} {:>12} {:>13} {:>10}", human_ms(d.copy_busy),
                                  human_ms(d.exposed_copy), memory(d.offloaded_memory),
                                  memory(d.host_peak_memory))
                    : std::string());
    out << (dp ? fmt::format(" {:>11} {:>14}\n", human_ms(d.dp_busy), human_ms(d.exposed_dp))
               : std::string("\n"));
  }
}

std::string compare_json(const Comparison& comparison) {
  ojson a = ojson::array();
  for (const CompareRow& row : comparison.rows) {
    if (row.ok()) {
      ojson j = to_json(comparison.run_of(row));
      j["status"] = "ok";
      a.push_back(std::move(j));
      continue;
    }
    ojson j;
    j["schema"] = "ppsim.metrics/1";
    j["schedule"] = row.schedule;
    j["status"] = row.rejected ? "rejected" : "infeasible";
    j["reason"] = row.reason;
    if (row.least_mem_limit >= 0) j["least_mem_limit"] = row.least_mem_limit;
    else j["least_mem_limit"] = nullptr;
    if (row.out_of_memory) j["out_of_memory"] = true;
    a.push_back(std::move(j));
  }
  return a.dump(2);
}

namespace {

// One line of the compare table: a run, or a row that did not run.
struct TableRow {
  const Run* run;
  const CompareRow* row;
};

void write_table(std::ostream& out, const std::vector<TableRow>& rows) {
  // The steady-state iteration time and the bound get columns only when some run has them.
  bool iterations = false, bounds = false, samples = false, wins = false;
  for (const TableRow& t : rows) {
    if (t.run == nullptr) continue;
    iterations = iterations || has_iteration_time(*t.run);
    bounds = bounds || t.run->has_lower_bound();
    samples = samples || t.run->samples.has_value();
    wins = wins || (t.run->samples && t.run->samples->wins);
  }
  out << fmt::format("{:<18} {:>4} {:>5} {:>3} {:>12} {:>12} {:>12} {:>8} {:>8} {:>7} {:>8}",
                     "schedule", "p", "m", "v", "makespan_ms", "cost_ms", "ideal_ms", "bubble",
                     "b/ideal", "idle", "peak_M_B");
  if (bounds) out << fmt::format(" {:>12} {:>7}", "bound_ms", "gap");
  if (iterations) out << fmt::format(" {:>12}", "iteration_ms");
  // Over the samples: the cost's mean and tail, and how often the schedule was the cheapest.
  if (samples)
    out << fmt::format(" {:>10} {:>10} {:>10} {:>10}", "mean_ms", "p50_ms", "p90_ms", "p99_ms");
  if (wins) out << fmt::format(" {:>7}", "wins");
  out << "\n";
  for (const TableRow& t : rows) {
    if (t.run == nullptr) {
      const CompareRow& c = *t.row;
      const auto shape = [](int x) { return x > 0 ? fmt::format("{}", x) : std::string("-"); };
      out << fmt::format("{:<18} {:>4} {:>5} {:>3} {}: ", c.schedule, shape(c.devices),
                         shape(c.microbatches), shape(c.chunks),
                         c.out_of_memory ? "out of memory" : c.rejected ? "rejected" : "infeasible");
      if (c.rejected) {
        out << c.reason << "\n";
        continue;
      }
      if (c.out_of_memory) {
        // the reason names the device and its bytes: "...: device 0 needs ... GiB (...)"
        const auto at = c.reason.find("device ");
        out << (at == std::string::npos ? c.reason : c.reason.substr(at)) << "\n";
        continue;
      }
      out << (c.least_mem_limit >= 0
                  ? fmt::format("the least limit that works is {} M_B\n", memory(c.least_mem_limit))
                  : std::string("no limit found that works\n"));
      continue;
    }
    const Run& r = *t.run;
    const Metrics& m = r.metrics;
    out << fmt::format("{:<18} {:>4} {:>5} {:>3} {:>12} {:>12} {:>12} {:>8} {:>8} {:>7} {:>8}",
                       r.schedule.name, r.schedule.devices,
                       r.schedule.whole_microbatches() / iteration_count(r),
                       r.schedule.chunks(),
                       human_ms(m.makespan), human_ms(m.cost), human_ms(m.ideal),
                       human_percent(m.bubble_rate), human_percent(m.bubble_over_ideal),
                       human_percent(m.idle_fraction), memory(m.peak_memory));
    if (bounds)
      out << (r.has_lower_bound() ? fmt::format(" {:>12} {:>7}", human_ms(r.lower_bound),
                                                human_percent(r.optimality_gap))
                                  : fmt::format(" {:>12} {:>7}", "-", "-"));
    if (iterations) out << fmt::format(" {:>12}", human_ms(r.iterations.iteration_time));
    if (samples) {
      if (r.samples) {
        const Distribution& d = r.samples->cost_ms;
        out << fmt::format(" {:>10} {:>10} {:>10} {:>10}", human_number(d.mean),
                           human_number(d.p50), human_number(d.p90), human_number(d.p99));
      } else {
        out << fmt::format(" {:>10} {:>10} {:>10} {:>10}", "-", "-", "-", "-");
      }
    }
    if (wins) {
      const auto& s = r.samples;
      out << (s && s->wins ? fmt::format(" {:>6.1f}%", 100.0 * *s->wins / s->count)
                           : fmt::format(" {:>7}", "-"));
    }
    out << "\n";
  }
}

} // namespace

void write_compare_table(std::ostream& out, const Comparison& comparison) {
  std::vector<TableRow> rows;
  for (const CompareRow& c : comparison.rows)
    rows.push_back({c.ok() ? &comparison.run_of(c) : nullptr, &c});
  write_table(out, rows);
}

void write_compare_table(std::ostream& out, std::span<const Run> runs) {
  std::vector<TableRow> rows;
  for (const Run& r : runs) rows.push_back({&r, nullptr});
  write_table(out, rows);
}

} // namespace ppsim
