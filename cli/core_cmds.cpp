// `ppsim list`, `ppsim simulate` and `ppsim compare`.
#include "cli/commands.hpp"
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/measured.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/task_graph.hpp"
#include "ppsim/viz/ascii.hpp"
#include "ppsim/viz/chrome_trace.hpp"
#include "ppsim/viz/html_report.hpp"
#include "ppsim/viz/metrics_json.hpp"
#include "ppsim/viz/schedule_list.hpp"
#include "ppsim/viz/svg.hpp"

#include <fmt/format.h>
#include <memory>
#include <optional>
#include <ostream>
#include <span>

namespace ppsim::cli {

namespace {

struct SimulateOptions {
  RunOptions run;
  std::string trace;
  bool ascii{false};
  bool json{false};
  bool critical{false};
  int ascii_width{0};
  std::string html;
  std::string svg;
  std::vector<std::string> measured;  ///< compare --measured TRACE...: a measured run as a row
};

void add_output_options(CLI::App& cmd, SimulateOptions& o) {
  cmd.add_option("--trace", o.trace,
                 "write a Chrome trace (Perfetto / chrome://tracing); with several schedules, "
                 "FILE-<schedule>.json each");
  auto* ascii = cmd.add_flag("--ascii", o.ascii, "print the timeline as an ASCII grid");
  cmd.add_option("--ascii-width", o.ascii_width, "columns of the ASCII grid (default automatic)");
  // NOTE: --json is alone on stdout, so that a pipe into a JSON reader always works.
  cmd.add_flag("--json", o.json, "print the metrics as JSON (schema ppsim.metrics/1)")->excludes(ascii);
  cmd.add_option("--svg", o.svg,
                 "write the timeline(s) as one standalone SVG picture (all on one time scale)");
}

// Writes a Chrome trace per run (FILE-<schedule>.json each when there are several), and the
// --svg picture of them all.
void write_traces(const SimulateOptions& o, std::span<const Run> runs) {
  // Every name first: a --trace that cannot take several files fails before any is written.
  std::vector<std::string> traces;
  if (!o.trace.empty())
    for (const Run& r : runs) traces.push_back(path_for(o.trace, r.schedule.name, runs.size() > 1));
  if (!o.svg.empty())
    write_file_atomically(o.svg, [&](std::ostream& f) { write_timelines_picture(f, runs); });
  for (std::size_t i = 0; i < traces.size(); ++i)
    write_file_atomically(traces[i], [&](std::ostream& f) { write_chrome_trace(f, runs[i]); });
}

std::vector<RunRequest> requests_of(const SimulateOptions& o, bool allow_many, Io io) {
  return run_requests(o.run, allow_many, io);
}

} // namespace

std::vector<RunRequest> run_requests(const RunOptions& o, bool allow_many, Io io) {
  RunRequest base = to_request(o, "", resolve_costs(o, io));
  const auto names = split_list(o.schedules, "--schedule");
  if (!allow_many && names.size() > 1)
    throw ConfigError(fmt::format("--schedule '{}': simulate takes one schedule; use compare",
                                  o.schedules));
  std::vector<RunRequest> requests;
  requests.reserve(names.size());
  for (const auto& name : names) {
    base.schedule = name;
    requests.push_back(base);
  }
  return requests;
}

void add_core_commands(CLI::App& app, Io io, Action& action) {
  // list
  auto* list = app.add_subcommand("list", "list the schedules, their constraints and references");
  auto list_json = std::make_shared<bool>(false);
  list->add_flag("--json", *list_json, "print as JSON");
  list->callback([io, &action, list_json] {
    action = [io, list_json] {
      if (*list_json)
        io.out << schedule_list_json(schedule_registry()) << "\n";
      else
        write_schedule_list(io.out, schedule_registry());
      return kExitOk;
    };
  });

  // simulate
  auto sim_opts = std::make_shared<SimulateOptions>();
  auto* sim = app.add_subcommand("simulate", "simulate one schedule and report its metrics");
  add_run_options(*sim, sim_opts->run, Schedules::one);
  add_output_options(*sim, *sim_opts);
  sim->add_flag("--critical-path", sim_opts->critical,
                "print the chain of tasks that sets the makespan (with --json: critical_path)");
  sim->callback([io, &action, sim_opts, sim] {
    require_shape(*sim, sim_opts->run);
    action = [io, sim_opts] {
      const Run r = run_request(requests_of(*sim_opts, false, io).front());
      write_traces(*sim_opts, {&r, 1});
      // The chain of tasks (and messages) that sets the makespan, from the task graph.
      std::optional<CriticalPath> cp;
      if (sim_opts->critical) cp = critical_path(r.schedule, r.costs);
      io.progress.finish();
      if (sim_opts->ascii) {
        write_ascii(io.out, r, AsciiOptions{sim_opts->ascii_width});
        io.out << "\n";
      }
      if (sim_opts->json) {
        io.out << (cp ? metrics_json(r, *cp) : metrics_json(r)) << "\n";
        return 0;
      }
      write_run_report(io.out, r);
      if (cp) write_critical_path(io.out, r, *cp);
      return 0;
    };
  });

  // compare
  auto cmp_opts = std::make_shared<SimulateOptions>();
  auto* cmp = app.add_subcommand("compare", "simulate several schedules on the same model");
  add_run_options(*cmp, cmp_opts->run, Schedules::many);
  add_output_options(*cmp, *cmp_opts);
  cmp->add_option("--html", cmp_opts->html,
                  "write a self-contained HTML report (timelines, metrics, charts) to FILE");
  cmp->add_option("--measured", cmp_opts->measured,
                  "a measured run's traces (as ppsim import reads them): its row and timeline "
                  "beside the simulated ones");
  cmp->callback([io, &action, cmp_opts, cmp] {
    require_shape(*cmp, cmp_opts->run);
    action = [io, cmp_opts] {
      const auto requests = requests_of(*cmp_opts, true, io);
      // A --trace that cannot take one file per schedule is refused before the runs.
      if (!cmp_opts->trace.empty() && !requests.empty())
        (void)path_for(cmp_opts->trace, requests.front().schedule, requests.size() > 1);
      // An infeasible schedule keeps its row (reason, least limit that works); the others run.
      Comparison comparison = run_compare(requests, &io.progress);
      write_traces(*cmp_opts, comparison.runs);
      if (!cmp_opts->measured.empty()) {
        // The real run beside the what-ifs: a row of its own, after the simulated ones.
        MeasuredRun m = measured_run(read_traces(cmp_opts->measured, {}));
        CompareRow row;
        row.schedule = "measured";
        row.devices = m.run.schedule.devices;
        row.microbatches = m.run.schedule.microbatches;
        row.run = static_cast<int>(comparison.runs.size());
        comparison.runs.push_back(std::move(m.run));
        comparison.rows.push_back(std::move(row));
      }
      if (!cmp_opts->html.empty())
        write_file_atomically(cmp_opts->html, [&](std::ostream& f) {
          write_html_report(f, comparison, {.title = "ppsim compare"});
        });
      io.progress.finish();
      if (cmp_opts->ascii)
        for (const Run& r : comparison.runs) {
          io.out << r.schedule.name << ":\n";
          write_ascii(io.out, r, AsciiOptions{cmp_opts->ascii_width});
          io.out << "\n";
        }
      if (cmp_opts->json) io.out << compare_json(comparison) << "\n";
      else write_compare_table(io.out, comparison);
      for (const CompareRow& row : comparison.rows) {
        if (row.ok()) continue;
        io.err << "ppsim: warning: compare: " << row.reason;
        if (row.least_mem_limit >= 0)
          io.err << fmt::format("; the least limit that works: {} M_B",
                                human_number(row.least_mem_limit));
        io.err << "\n";
      }
      comparison.require_any_ran();  // none ran: exit 5
      return 0;
    };
  });
}

} // namespace ppsim::cli
