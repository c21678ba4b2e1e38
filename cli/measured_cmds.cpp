// `ppsim import` (a measured run: its metrics, schedule and fitted costs) and `ppsim diff` (the
// same order simulated beside it, every idle window with its cause).
//
//   ppsim import rank0.json.gz rank1.json.gz --costs-out fitted.json --schedule-out run.csv
//   ppsim diff rank*.json.gz --idle-csv bubbles.csv --trace diff.json --html diff.html
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/run/measured.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/viz/chrome_trace.hpp"
#include "ppsim/viz/html_report.hpp"
#include "ppsim/viz/measured.hpp"

#include <fmt/format.h>
#include <memory>
#include <ostream>

namespace ppsim::cli {

namespace {

// What import and diff both take: the traces and how to read them.
struct TraceOptions {
  std::vector<std::string> files;
  std::string format{"auto"};
  std::vector<std::string> maps;
  std::optional<int> iteration;
};

void add_trace_options(CLI::App& cmd, TraceOptions& o) {
  cmd.add_option("TRACE", o.files,
                 "measured traces: PyTorch profiler (Kineto) JSON or .json.gz, one per rank or "
                 "one merged; Megatron's per-micro-batch timer dumps; a ppsim trace")
      ->required();
  cmd.add_option("--format", o.format, "auto (default), kineto, megatron-timers or ppsim")
      ->check(CLI::IsMember({"auto", "kineto", "megatron-timers", "ppsim"}));
  cmd.add_option("--map", o.maps,
                 "REGEX=KIND: ranges named REGEX are actions of KIND (F, B, W, BW; or optimizer), "
                 "groups (?<stage>..) (?<mb>..) (?<chunk>..); repeatable");
  cmd.add_option("--iteration", o.iteration,
                 "which iteration of a trace holding several (0-based; default the last complete)");
}

MeasuredRun measured_of(const TraceOptions& o) {
  ImportOptions io;
  io.format = parse_trace_format(o.format);
  for (const std::string& m : o.maps) io.maps.push_back(parse_trace_map(m));
  io.iteration = o.iteration;
  return measured_run(read_traces(o.files, io));
}

struct ImportCmd {
  TraceOptions traces;
  std::string output;
  std::string costs_out;
  std::string schedule_out;
  bool json{false};
};

struct DiffCmd {
  TraceOptions traces;
  RunOptions run;  // --costs, --costs-file, --comm-mode, --link
  double straggler{1.5};
  bool sender_progress{false};
  std::string html;
  std::string trace;
  std::string idle_csv;
  bool json{false};
};

int run_import(const ImportCmd& o, Io io) {
  for (const auto& [path, what] : {std::pair{o.output, "-o"}, {o.costs_out, "--costs-out"},
                                   {o.schedule_out, "--schedule-out"}})
    if (!path.empty()) check_output_path(path, what);
  const MeasuredRun m = measured_of(o.traces);
  const CostFit fit = fit_costs(m);
  if (!o.output.empty())
    write_file_atomically(o.output, [&](std::ostream& f) { write_chrome_trace(f, m.run); });
  if (!o.costs_out.empty())
    write_file_atomically(o.costs_out, [&](std::ostream& f) { f << fitted_costs_json(fit, m); });
  if (!o.schedule_out.empty()) {
    const bool csv = o.schedule_out.ends_with(".csv");
    if (!csv && !o.schedule_out.ends_with(".json"))
      throw ConfigError(fmt::format("--schedule-out '{}': a *.csv (PyTorch) or *.json (ppsim) file",
                                    excerpt(o.schedule_out)));
    write_file_atomically(o.schedule_out, [&](std::ostream& f) {
      if (csv) write_pytorch_csv(f, m.run.schedule);
      else write_schedule_json(f, m.run.schedule);
    });
  }
  io.progress.finish();
  if (o.json) io.out << import_json(m, fit) << "\n";
  else write_import_report(io.out, m, fit);
  return kExitOk;
}

int run_diff(const DiffCmd& o, Io io) {
  for (const auto& [path, what] : {std::pair{o.html, "--html"}, {o.trace, "--trace"},
                                   {o.idle_csv, "--idle-csv"}})
    if (!path.empty()) check_output_path(path, what);
  if (!(o.straggler > 1) || o.straggler > 1e6)
    throw ConfigError(fmt::format("--straggler {}: expected a factor above 1", o.straggler));
  const MeasuredRun m = measured_of(o.traces);
  // The costs to simulate on: given (a cost file, --costs on top), or fitted from the run.
  CostSpec costs = fit_costs(m).costs;
  if (!o.run.costs_file.empty() || !o.run.calibrate.empty()) costs = resolve_costs(o.run, io);
  else if (!o.run.costs.empty()) apply_costs(costs, o.run.costs);
  DiffOptions d;
  d.straggler_factor = o.straggler;
  d.sender_progress = o.sender_progress;
  d.comm = with_cost_link(comm_options(o.run), costs);
  const DiffReport r = diff_measured(m, costs, d);
  if (!o.trace.empty())
    write_file_atomically(o.trace, [&](std::ostream& f) { write_diff_trace(f, r); });
  if (!o.idle_csv.empty())
    write_file_atomically(o.idle_csv, [&](std::ostream& f) { write_idle_csv(f, r); });
  if (!o.html.empty()) {
    const std::vector<Run> runs{r.measured, r.simulated, r.replayed};
    write_file_atomically(o.html, [&](std::ostream& f) {
      write_html_report(f, runs, {.title = "ppsim diff: measured, simulated, replayed"});
    });
  }
  io.progress.finish();
  if (o.json) io.out << diff_json(r) << "\n";
  else write_diff_report(io.out, r);
  return kExitOk;
}

} // namespace

void add_measured_commands(CLI::App& app, Io io, Action& action) {
  auto im = std::make_shared<ImportCmd>();
  auto* imp = app.add_subcommand(
      "import", "read a measured run (PyTorch profiler, Megatron timers, ppsim): its metrics, "
                "its schedule, the costs fitted from it");
  add_trace_options(*imp, im->traces);
  imp->add_option("-o,--output", im->output,
                  "write the measured run as a ppsim trace (Perfetto; `ppsim diff` reads it back)");
  imp->add_option("--costs-out", im->costs_out,
                  "write the fitted costs as a ppsim.costs/1 file (for --costs-file)");
  imp->add_option("--schedule-out", im->schedule_out,
                  "write the measured order: *.csv (PyTorch compute-only) or *.json (ppsim)");
  imp->add_flag("--json", im->json, "print JSON (ppsim.import/1: `measured` is ppsim.metrics/1)");
  imp->callback([io, &action, im] { action = [io, im] { return run_import(*im, io); }; });

  auto df = std::make_shared<DiffCmd>();
  auto* dif = app.add_subcommand(
      "diff", "simulate a measured run's order beside it: errors, and every idle window's cause");
  add_trace_options(*dif, df->traces);
  add_cost_options(*dif, df->run);
  add_comm_options(*dif, df->run);
  dif->add_option("--straggler", df->straggler,
                  "a task is a straggler above this times its stage's median (default 1.5)");
  dif->add_flag("--sender-progress", df->sender_progress,
                "replay: a message leaves when its sender is next inside MPI (Open MPI's "
                "rendezvous for large messages, as `ppsim execute` runs)");
  dif->add_option("--html", df->html, "write the report: measured, simulated and replayed runs");
  dif->add_option("--trace", df->trace,
                  "write both timelines on one time axis as a Chrome trace (Perfetto)");
  dif->add_option("--idle-csv", df->idle_csv,
                  "write the bubble inventory: device, start, length, cause, free memory");
  dif->add_flag("--json", df->json, "print JSON (ppsim.diff/1)");
  dif->callback([io, &action, df] { action = [io, df] { return run_diff(*df, io); }; });
}

} // namespace ppsim::cli
